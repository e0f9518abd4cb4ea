"""The resume confirmation: what continues, from where, which program runs it, and what it may spend."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from crewpoint.budget import budget_from_state, parse_usd
from crewpoint.estimate import pending_tasks
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.app_field import AppField
from crewpoint.tui.widgets.cost_view import EstimateView


class BudgetField(Vertical):
    """The dollars a run started from a dialog may spend (``--budget``); empty: the budget the run had (saved in
    ``body``'s entity), else no limit. A bad number is refused in one line below the field (:meth:`verify`)."""

    DEFAULT_CSS = """
    BudgetField { height: auto; }
    BudgetField > Label { text-style: bold; }
    BudgetField > .budget-error { color: $error; }
    """

    def __init__(self, body: Mapping[str, Any] | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.saved = budget_from_state(body.get("entity") if isinstance(body, Mapping) else None)
        """The budget the checkpoint's run had: a run rebuilt from the checkpoint keeps it unless one is given."""

    def compose(self) -> ComposeResult:
        empty = "no limit" if self.saved is None else f"the run's own, {self.saved}"
        yield Label(Text(visible(f"Budget (dollars this run may spend; empty: {empty})", one_line=True)))
        yield Input(placeholder="USD, like 5 or 2.50", compact=True, select_on_focus=False, classes="budget-input")
        yield Static("", markup=False, classes="budget-error")

    def verify(self) -> tuple[bool, float | None]:
        """``(True, dollars or None)`` for a number above 0 or nothing; ``(False, None)`` with the reason shown below
        the field and the field focused."""
        field = self.query_one(".budget-input", Input)
        error = self.query_one(".budget-error", Static)
        try:
            budget = parse_usd(field.value)
        except ValueError as exc:
            error.update(Text(visible(str(exc), one_line=True)))
            field.focus()
            return False, None
        error.update("")
        return True, budget


@dataclass(frozen=True, slots=True)
class ResumeAnswer:
    """What the user confirmed: the program to run (``""``: rebuilt from the checkpoint) and its budget in dollars
    (None: the budget the run had, if any)."""

    app: str
    budget: float | None = None


class ResumeScreen(ModalScreen[ResumeAnswer | None]):
    """Answers the app spec to resume with ("" for none) and a budget, or None when cancelled. ``y`` resumes,
    ``n``/escape cancels; a bad spec or budget is refused with its reason."""

    CSS_PATH = "confirm.tcss"

    BINDINGS = [
        Binding("y", "confirm", "Resume"),
        Binding("n,escape", "cancel", "Cancel"),
    ]

    def __init__(
        self, question: Text, app: str | None, body: Mapping[str, Any] | None = None, later: str | None = None
    ) -> None:
        super().__init__()
        self.body = body
        """The checkpoint's body: the estimate of what will run is priced from its chain's usage."""
        self.later = later
        """Where the newest checkpoint after this one is: the estimate looks there for what ran after it."""
        self.question = question
        self.app_spec = app

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label("Resume the run", id="confirm-heading")
            yield Static(self.question, markup=False, id="confirm-question")
            if self.body is not None:
                yield EstimateView(self.body, pending_tasks(self.body), later=self.later, id="resume-estimate")
            yield AppField(self.app_spec, id="resume-app")
            yield BudgetField(self.body, id="resume-budget")
            with Horizontal(id="confirm-buttons"):
                yield Button("Resume (y)", variant="primary", id="confirm-yes", compact=True)
                yield Button("Cancel (n)", id="confirm-no", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-yes", Button).focus()

    def action_confirm(self) -> None:
        field = self.query_one(AppField)
        if not field.confirmed():
            return
        ok, budget = self.query_one(BudgetField).verify()
        if ok:
            self.dismiss(ResumeAnswer(field.spec, budget))

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
