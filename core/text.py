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
