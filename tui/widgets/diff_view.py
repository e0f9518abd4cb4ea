"""The Diff tab: what changed between two checkpoints (the parent, or one marked with ``m``)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from crewpoint.checkpoint.ops import DiffEntry
from crewpoint.text import clip
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.overview_view import shown

CELL_LIMIT = 2000


def cell(value: object, style: str = "") -> Text:
    if value is None:
        return Text("—", style="dim")
    text = shown(value)
    return Text(clip(text, CELL_LIMIT, one_line=False), style=style)


class DiffView(VerticalScroll):
    """A table of the differences ``detail`` holds, redrawn when it changes; long values wrap. Every cell is plain
    text, never markup."""

    DEFAULT_CSS = """
    DiffView { padding: 0 1; }
    DiffView > #diff-title { margin-bottom: 1; text-style: bold; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)

    def compose(self) -> ComposeResult:
        yield Static("", id="diff-title", markup=False)
        yield Static("", id="diff-table", markup=False)

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is None:
            return
        if detail.loading:
            self.show("", None, "loading…")
        else:
            self.show(detail.diff_title, detail.diff, detail.problem_message or detail.diff_note)

    def show(self, title: str, entries: list[DiffEntry] | None, message: str = "") -> None:
        self.query_one("#diff-title", Static).update(Text(visible(title)))
        body = self.query_one("#diff-table", Static)
        if entries is None:
            body.update(Text(message or "nothing to compare with", style="dim"))
            return
        if not entries:
            body.update(Text("no differences", style="dim"))
            return
        table = Table(expand=True, show_lines=True, box=None, padding=(0, 1))
        table.add_column("section", no_wrap=True, style="bold")
        table.add_column("key", ratio=1)
        table.add_column("before", ratio=2)
        table.add_column("after", ratio=2)
        for entry in entries:
            table.add_row(
                Text(entry.section),
                Text(visible(entry.key, one_line=True)),
                cell(entry.before, "red"),
                cell(entry.after, "green"),
            )
        body.update(table)
