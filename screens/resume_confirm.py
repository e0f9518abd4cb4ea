"""The resume confirmation: what continues, from where, and which program runs it."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.app_field import AppField


class ResumeScreen(ModalScreen[str | None]):
    """Answers the app spec to resume with ("" for none), or None when cancelled. ``y`` resumes, ``n``/escape
    cancels; a bad spec is refused with its reason."""

    CSS_PATH = "confirm.tcss"

    BINDINGS = [
        Binding("y", "confirm", "Resume"),
        Binding("n,escape", "cancel", "Cancel"),
    ]

    def __init__(self, question: Text, app: str | None) -> None:
        super().__init__()
        self.question = question
        self.app_spec = app

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label("Resume the run", id="confirm-heading")
            yield Static(self.question, markup=False, id="confirm-question")
            yield AppField(self.app_spec, id="resume-app")
            with Horizontal(id="confirm-buttons"):
                yield Button("Resume (y)", variant="primary", id="confirm-yes", compact=True)
                yield Button("Cancel (n)", id="confirm-no", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-yes", Button).focus()

    def action_confirm(self) -> None:
        field = self.query_one(AppField)
        problem = field.verify()
        if problem is not None:
            field.query_one(Input).focus()
            self.notify(visible(problem), severity="error", markup=False)
            return
        self.dismiss(field.spec)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#confirm-yes")
    def _yes(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#confirm-no")
    def _no(self) -> None:
        self.action_cancel()
