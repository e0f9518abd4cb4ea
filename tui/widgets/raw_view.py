"""The Raw tab: the checkpoint's body as highlighted JSON (rich ``Syntax``: never read as markup)."""

from __future__ import annotations

import json
from typing import Any

from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import Detail

RAW_LIMIT = 400_000
"""Characters shown; a bigger body is cut (the file itself holds it all)."""


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
            self.show(body, detail.status)

    def show(self, body: dict[str, Any] | None, message: str = "") -> None:
        target = self.query_one("#raw-body", Static)
        if body is None:
            target.update(Text(message or "nothing to show", style="dim"))
            return
        text = json.dumps(body, indent=2, ensure_ascii=False, default=str)
        if len(text) > RAW_LIMIT:
            text = text[:RAW_LIMIT] + "\n… (cut: open the file to see the rest)"
        target.update(Syntax(visible(text), "json", word_wrap=True, background_color="default"))
