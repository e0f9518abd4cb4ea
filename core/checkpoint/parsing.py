"""Small parsers for the command line: ages, NAME=VALUE pairs, one-line text."""

from __future__ import annotations

import re
from typing import Any

from crewpoint.text import clip

_AGE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_age(text: str) -> float:
    """``"7d"``, ``"24h"``, ``"30m"``, ``"45s"`` (and ``"2w"``) as seconds."""
    match = _AGE_RE.match(text or "")
    if not match:
        raise ValueError(f"invalid age {text!r}: use a number and a unit, like 7d, 24h, 30m or 45s")
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


def parse_assignments(pairs: list[str] | tuple[str, ...], what: str) -> dict[str, str]:
    """``["key=value", ...]`` as a dict; ValueError naming the bad item."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"invalid {what} {pair!r}: write it as NAME=VALUE")
        out[key.strip()] = value
    return out


def short(text: Any, width: int = 200) -> str:
    """One line of at most ``width`` characters."""
    return clip(text, width)
