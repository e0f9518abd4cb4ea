"""The Raw tab: the checkpoint's body as highlighted JSON (rich ``Syntax``: never read as markup).

Only what is shown is formatted: the body is written out piece by piece up to :data:`RAW_LIMIT` characters (a
string longer than that is cut before it is encoded), so a huge output costs the tab no more memory than it shows.
The text is highlighted once per shown checkpoint and its lines wrapped once per width (only a line wider than
the tab is wrapped at all); a frame draws only the lines in sight (the line API), each turned into segments once,
so layout and scrolling never highlight, wrap or render the whole body again. The scrollbar's
gutter is always kept, so a scrollbar coming or going never changes the width the lines were wrapped for.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual import events
from textual.cache import LRUCache
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

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


class RawView(ScrollView, can_focus=True):
    """The body of ``detail``, redrawn when it changes."""

    DEFAULT_CSS = """
    RawView { padding: 0 1; overflow-x: hidden; scrollbar-gutter: stable; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown = Text("")
        """The text on the tab, highlighted: what its lines are wrapped from."""
        self._source: list[Text] = []
        self._lines: list[Text] = []
        self._strips: LRUCache[int, Strip] = LRUCache(1024)
        self._width = 0

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is not None:
            body = detail.record.body if detail.record is not None and detail.info is not None else None
            stored = detail.record.meta.size if detail.record is not None else 0
            self.show(body, detail.status, stored)

    def show(self, body: dict[str, Any] | None, message: str = "", stored: int = 0) -> None:
        """Draw ``body`` (``stored``: its size in the store, said when it is cut), or ``message`` without one."""
        if body is None:
            self.shown = Text(message or "nothing to show", style="dim")
        else:
            text, cut = raw_text(body)
            if cut:
                whole = f" of {format_size(stored)}" if stored else ""
                text += f"\n… (cut: the first {RAW_LIMIT:,} characters{whole} are shown; open the file to see the rest)"
            code = visible(text)
            self.shown = Syntax(code, "json", background_color="default").highlight(code)
            self.shown.rstrip()  # the newline highlighting adds
        self._source = list(self.shown.split("\n", allow_blank=True))
        self._width = 0
        self.scroll_home(animate=False, immediate=True)
        self._wrap()
        self.refresh()

    def _wrap(self) -> None:
        """Wrap the shown text into lines for the width the tab has now, unless they were wrapped for it."""
        width = self.scrollable_content_region.width
        if width <= 0 or width == self._width:
            return
        lines: list[Text] = []
        for line in self._source:
            if line.cell_len <= width:
                lines.append(line)
            else:
                lines.extend(line.wrap(self.app.console, width))
        self._lines = lines
        self._strips.clear()
        self._width = width
        self.virtual_size = Size(width, len(self._lines))

    def on_resize(self, _event: events.Resize) -> None:
        self._wrap()

    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        width = self.scrollable_content_region.width
        style = self.rich_style
        number = scroll_y + y
        if number >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(number)
        if strip is None:
            line = self._lines[number]
            strip = self._strips[number] = Strip(line.render(self.app.console, end=""), line.cell_len)
        return strip.crop_extend(scroll_x, scroll_x + width, style).apply_offsets(scroll_x, number)
