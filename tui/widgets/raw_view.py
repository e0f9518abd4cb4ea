"""The Raw tab: the checkpoint's body as highlighted JSON (rich ``Syntax``: never read as markup).

Only what is shown is formatted: the body is written out piece by piece up to :data:`RAW_LIMIT` characters (a
string longer than that is cut before it is encoded), so a huge output costs the tab no more memory than it shows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from crewpoint.text import format_size
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import Detail

RAW_LIMIT = 400_000
"""Characters shown; a bigger body is cut (the file itself holds it all)."""


def _string(text: str, limit: int) -> str:
    return json.dumps(text[:limit] if len(text) > limit else text, ensure_ascii=False)


def _key(key: object) -> str:
    return key if isinstance(key, str) else json.dumps(key) if isinstance(key, (int, float, bool)) else str(key)


def _pieces(value: Any, depth: int, limit: int) -> Iterator[str]:
    """``json.dumps(value, indent=2, ensure_ascii=False, default=str)`` in pieces, each string cut at ``limit``."""
    if isinstance(value, (dict, list, tuple)):
        items = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        opening, closing = ("{", "}") if isinstance(value, dict) else ("[", "]")
        if not items:
            yield opening + closing
            return
        pad = "\n" + "  " * (depth + 1)
        yield opening
        for n, (key, item) in enumerate(items):
            lead = "," + pad if n else pad
            yield lead + _string(_key(key), limit) + ": " if isinstance(value, dict) else lead
            yield from _pieces(item, depth + 1, limit)
        yield "\n" + "  " * depth + closing
    elif isinstance(value, str):
        yield _string(value, limit)
    elif value is None or isinstance(value, (bool, int, float)):
        yield json.dumps(value)
    else:
        yield _string(str(value), limit)


def raw_text(body: Any, limit: int = RAW_LIMIT) -> tuple[str, bool]:
    """The body as indented JSON, at most ``limit`` characters, and whether it was cut."""
    parts: list[str] = []
    size = 0
    for piece in _pieces(body, 0, limit):
        if size + len(piece) > limit:
            parts.append(piece[: limit - size])
            return "".join(parts), True
        parts.append(piece)
        size += len(piece)
    return "".join(parts), False


class RawView(VerticalScroll):
    """The body of ``detail``, redrawn when it changes."""

    DEFAULT_CSS = """
    RawView { padding: 0 1; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)

    def compose(self) -> ComposeResult:
        yield Static("", id="raw-body", markup=False)

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is not None:
            body = detail.record.body if detail.record is not None and detail.info is not None else None
            stored = detail.record.meta.size if detail.record is not None else 0
            self.show(body, detail.status, stored)

    def show(self, body: dict[str, Any] | None, message: str = "", stored: int = 0) -> None:
        """Draw ``body`` (``stored``: its size in the store, said when it is cut), or ``message`` without one."""
        target = self.query_one("#raw-body", Static)
        if body is None:
            target.update(Text(message or "nothing to show", style="dim"))
            return
        text, cut = raw_text(body)
        if cut:
            whole = f" of {format_size(stored)}" if stored else ""
            text += f"\n… (cut: the first {RAW_LIMIT:,} characters{whole} are shown; open the file to see the rest)"
        target.update(Syntax(visible(text), "json", word_wrap=True, background_color="default"))
