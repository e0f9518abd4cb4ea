"""A yes/no question, answered with ``y`` / ``n`` / escape or the buttons."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    CSS_PATH = "confirm.tcss"

    BINDINGS = [
        Binding("y", "answer(True)", "Yes"),
        Binding("n,escape", "answer(False)", "No"),
    ]

    def __init__(self, title: str, question: Text | str, yes: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.question = question if isinstance(question, Text) else Text(question)
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label(Text(self.title_text), id="confirm-heading")
            yield Static(self.question, markup=False, id="confirm-question")
            with Horizontal(id="confirm-buttons"):
                yield Button(f"{self.yes} (y)", variant="primary", id="confirm-yes", compact=True)
                yield Button("Cancel (n)", id="confirm-no", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-yes", Button).focus()

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")
