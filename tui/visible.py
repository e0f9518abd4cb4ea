"""Checkpoint text made safe to print: control characters are shown as escapes (``\\x1b``), never sent.

A checkpoint's text (task outputs, names, inputs) can hold terminal escapes that would set the window title,
clear the screen or change colours. Every view and command shows such text through :func:`visible`. Headless:
imports nothing but the standard library.
"""

from __future__ import annotations

import re
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls."""
_CONTROL_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Every control character, tab and newline too: for text shown on one line."""


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def visible(text: Any, *, one_line: bool = False) -> str:
    """``text`` (made a string) with each control character shown as ``\\xNN``; ``one_line`` escapes tab and
    newline too."""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():  # no control character (most text): nothing to search
        return value
    return (_CONTROL_LINE if one_line else _CONTROL).sub(_escape, value)


def has_control(text: str) -> bool:
    """Does ``text`` hold a control character other than tab and newline?"""
    return _CONTROL.search(text) is not None
