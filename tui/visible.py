"""Checkpoint text made safe to print: control and format characters are shown as escapes, never sent.

A checkpoint's text (task outputs, names, inputs) can hold terminal escapes that would set the window title,
clear the screen or change colours, and bidirectional or other invisible format characters (Unicode category
``Cf``: U+202E RIGHT-TO-LEFT OVERRIDE, U+2066..U+2069 isolates, U+200E/U+200F marks, U+200B, U+FEFF, …) that
make text read differently from what it holds. Every view and command shows such text through :func:`visible`:
a control character as ``\\x1b``, a format character, line or paragraph separator as ``\\u202e``. Headless:
imports nothing but the standard library.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""C0 controls but tab and newline, DEL, and C1 controls."""
_CONTROL_LINE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
"""Every control character, tab and newline too: for text shown on one line."""
_BEYOND_ASCII = re.compile(r"[^\x00-\x7f]+")
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
"""Controls, format characters (bidi controls among them), lone surrogates, line and paragraph separators."""


def _escape(match: re.Match[str]) -> str:
    return f"\\x{ord(match.group()):02x}"


def _escape_char(char: str) -> str:
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _escape_unseen(match: re.Match[str]) -> str:
    run = match.group()
    if run.isprintable():
        return run
    return "".join(
        _escape_char(c) if not c.isprintable() and unicodedata.category(c) in _ESCAPED_CATEGORIES else c for c in run
    )


def visible(text: Any, *, one_line: bool = False) -> str:
    """``text`` (made a string) with each control character shown as ``\\xNN`` and each format character (bidi
    controls included), line or paragraph separator as ``\\uNNNN``; ``one_line`` escapes tab and newline too."""
    value = text if isinstance(text, str) else str(text)
    if value.isprintable():  # no control or format character (most text): nothing to search
        return value
    value = (_CONTROL_LINE if one_line else _CONTROL).sub(_escape, value)
    if value.isascii():
        return value
    return _BEYOND_ASCII.sub(_escape_unseen, value)
