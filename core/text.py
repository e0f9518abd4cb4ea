"""Text helpers with no heavy imports: ``{placeholder}`` discovery and interpolation."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def placeholders(*texts: str) -> list[str]:
    """Every ``{name}`` placeholder in the texts, in first-seen order."""
    seen: dict[str, None] = {}
    for text in texts:
        for match in _PLACEHOLDER.finditer(text or ""):
            seen.setdefault(match.group(1), None)
    return list(seen)


def interpolate(text: str, inputs: Mapping[str, Any]) -> str:
    """Replace ``{name}`` with ``inputs[name]``; unknown names and other braces stay as written."""
    if not inputs or "{" not in text:
        return text

    def sub(match: re.Match[str]) -> str:
        key = match.group(1)
        return str(inputs[key]) if key in inputs else match.group(0)

    return _PLACEHOLDER.sub(sub, text)


def format_size(n: int) -> str:
    """A size in bytes as people read it: ``512 B``, ``1.5 KiB``, ``3.2 MiB``, ``1.0 GiB``: the one size format."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


ELLIPSIS = "…"


def clip(text: object, width: int, *, one_line: bool = True) -> str:
    """``text`` cut to at most ``width`` characters, ending in ``…`` when cut: the one clipper every message, label
    and table cell uses. With ``one_line`` (the default) runs of whitespace, newlines included, become one space
    first; otherwise lines are kept and only the length is bounded."""
    line = " ".join(str(text).split()) if one_line else str(text)
    if len(line) <= width:
        return line
    return line[: width - 1].rstrip() + ELLIPSIS if width > 0 else ""


def a_or_an(word: str) -> str:
    """``word`` with its indefinite article, for messages that name a type or a kind: ``an int``, ``a crew``."""
    return f"{'an' if word[:1].lower() in _VOWEL_SOUNDS and word[:1] else 'a'} {word}"


_VOWEL_SOUNDS = "aeio"
"""First letters read with a vowel sound in type and kind names (``u`` is left out: a UUID, a user class)."""


def unknown_inputs(given: Mapping[str, Any], known: list[str]) -> str | None:
    """The one-line refusal of inputs that are not among ``known`` (the entity's ``{placeholder}`` names and the
    inputs it already has), or None when every input is known. The API and the command line say the same."""
    unknown = [key for key in given if key not in known]
    if not unknown:
        return None
    return f"unknown input {', '.join(map(repr, unknown))}: this crew's inputs are {', '.join(known) or 'none'}"
