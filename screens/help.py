"""The help screen: every key of the browser, and what the marks in the tree mean."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, Static

from crewpoint.tui.render import STATE_MARKS

STATE_MEANINGS = {
    "running": "a run is writing this branch now (its process beats)",
    "waiting": "the run waits for a person's answer: a on its newest checkpoint answers it",
    "finished": "the run on this branch finished",
    "interrupted": "the run was stopped (Ctrl+C or a signal): resume it with e",
    "crashed": "the run's process died without a word, or stopped beating",
    "failed": "the run ended with an error",
    "lost": "the run's record stopped beating on another machine",
}
"""What each run state's mark in the tree means; the marks themselves come from the tree's one table."""

LEGEND = [
    *((STATE_MARKS[state][0], meaning) for state, meaning in STATE_MEANINGS.items()),
    ("✗", "a damaged checkpoint, or one from a newer crewpoint: its reason is shown"),
    ("◆", "the checkpoint marked with m: the Diff tab compares against it"),
    ("2/4", "tasks done of the crew's tasks at that checkpoint"),
    ("step 3", "a flow's methods run so far (its routers choose which of its methods run)"),
    ("run 224794", "which run, when a branch has several: the start of the run's lineage id"),
]


def keys_of(bindings: list[BindingType]) -> list[tuple[str, str]]:
    rows = []
    for binding in bindings:
        if isinstance(binding, Binding) and binding.description:
            rows.append((binding.key_display or binding.key, binding.description))
    return rows


class HelpScreen(ModalScreen[None]):
    CSS_PATH = "help.tcss"

    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close")]

    def __init__(self, keys: list[tuple[str, str]]) -> None:
        super().__init__()
        self.keys = keys

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-dialog"):
            yield Label("crewpoint checkpoint: keys", id="help-heading")
            table = Table.grid(padding=(0, 3))
            table.add_column(style="bold", no_wrap=True)
            table.add_column()
            for key, description in self.keys:
                table.add_row(Text(key), Text(description))
            yield Static(table, markup=False)
            yield Label("Marks in the tree", classes="help-sub")
            legend = Table.grid(padding=(0, 3))
            legend.add_column(style="bold", no_wrap=True)
            legend.add_column()
            for mark, meaning in LEGEND:
                legend.add_row(Text(mark), Text(meaning))
            yield Static(legend, markup=False)
            yield Label("Filter", classes="help-sub")
            yield Static(
                Text(
                    "/ then words: every word must match the id, branch, trigger or entity. "
                    "branch:NAME, trigger:NAME and entity:NAME match one field; live, done, interrupted, crashed "
                    "and failed match a run's status. Escape clears."
                ),
                markup=False,
            )
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
