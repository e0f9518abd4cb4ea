"""The resume confirmation: what continues, from where, which program runs it, and what it may spend."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import Button, Checkbox, Footer, Input, Label, Static
from textual.worker import get_current_worker

from crewpoint.budget import budget_from_state, parse_usd
from crewpoint.checkpoint.plan import rebuild_models
from crewpoint.estimate import pending_tasks
from crewpoint.tui.launcher import PlanUnavailable, ProgramPlan, read_plan
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.app_field import AppField
from crewpoint.tui.widgets.cost_view import EstimateView

T = TypeVar("T")

BOUND = "[tool.crewpoint] app"
"""How a suggestion from the project's own setting says where it comes from: such a program is bound to the store."""
PLAN_DELAY = 0.6
"""Seconds the App field rests before the plan of the program it names is asked for (not one child per key)."""


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


class RunDialog(ModalScreen[T]):
    """A dialog that starts a run from a checkpoint (Resume, Fork, Answer): one block for what they share, the
    estimate of what will run, the program that runs it (App) and what it may spend (Budget)."""

    PLAN_ACTION = "resume"
    """The dry run whose plan the dialog shows (resume; the Fork dialog's is a fork's)."""

    def __init__(
        self,
        app: str | None,
        body: Mapping[str, Any] | None = None,
        later: str | None = None,
        plan_at: tuple[str, str] | None = None,
        fleet: str | None = None,
    ) -> None:
        super().__init__()
        self.fleet = fleet
        """What the store's fleet has up (``2 workers``), when the run may go to it instead of a local process;
        None: no "run on the fleet" choice."""
        self.app_spec = app
        """The program the App field starts from (a suggestion), or None."""
        self.body = body
        """The checkpoint's body: the estimate of what will run is priced from its chain's usage."""
        self.later = later
        """Where the newest checkpoint after this one is: the estimate looks there for what ran after it."""
        self.plan_at = plan_at
        """The checkpoint's id and store, for the plan of the program in the App field (None: no plan is read)."""
        self.program_plan: ProgramPlan | None = None
        """The plan of the program in the App field: each task's verdict and what will run (None: not read)."""
        self.plan_error: str | None = None
        """Why the program gave no plan, in one line."""
        self._plan_timer: Timer | None = None

    def run_models(self) -> dict[str, tuple[str, str]]:
        """The models the run will call, as the command line's dry run prices them: rebuilt from the checkpoint
        alone (the App field empty), crewpoint's models are the one ``CREWPOINT_LLM`` names; a program's own models
        are known only once it is loaded, which nothing does before the run (their recorded models are priced)."""
        if self.app_spec or not isinstance(self.body, Mapping) or not isinstance(self.body.get("entity"), Mapping):
            return {}
        return rebuild_models(self.body["entity"])

    def estimate_field(self, name: str, rerun: Sequence[int]) -> ComposeResult:
        """The estimate of the tasks ``rerun`` (0-based) at the models the run calls, when the body is known."""
        if self.body is not None:
            yield EstimateView(self.body, rerun, later=self.later, models=self.run_models(), id=f"{name}-estimate")

    def plan_field(self, name: str) -> ComposeResult:
        """The plan lines of the program in the App field (id ``{name}-plan``), filled once a child dry run read it."""
        shown = Static("", markup=False, id=f"{name}-plan", classes="run-plan")
        shown.display = False  # until a plan or why there is none: the dialog keeps its height without a program
        yield shown

    @on(AppField.Named)
    def _program_named(self, message: AppField.Named) -> None:
        """Read the plan of the program the App field names: the project's bound program, or one the user typed (a
        suggestion recorded in the checkpoint is not run before the user confirms it)."""
        message.stop()
        field = self.query_one(AppField)
        bound = field.suggested and (field.source or "").startswith(BOUND)
        if self.plan_at is None or not (bound or field.typed):
            return
        if self._plan_timer is not None:
            self._plan_timer.stop()
        spec = message.spec
        if message.file is None:  # no program named now: the plan of the one named before no longer holds
            self._show_plan(spec, None, None)
            return
        self._plan_timer = self.set_timer(PLAN_DELAY, lambda: self._read_plan(spec))

    @work(thread=True, exclusive=True, exit_on_error=False, group="run-plan")
    def _read_plan(self, spec: str) -> None:
        assert self.plan_at is not None
        plan: ProgramPlan | None = None
        error: str | None = None
        try:
            plan = read_plan(*self.plan_at, spec, action=self.PLAN_ACTION)
        except PlanUnavailable as exc:
            error = str(exc)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self._show_plan, spec, plan, error)

    def _show_plan(self, spec: str, plan: ProgramPlan | None, error: str | None) -> None:
        if not self.is_attached or spec != self.query_one(AppField).spec:
            return  # the dialog is gone, or its field names another program now
        self.program_plan, self.plan_error = plan, error
        lines = [f"✗ {error}"] if error is not None else plan.lines() if plan is not None else []
        for shown in self.query(".run-plan").results(Static):
            shown.update(Text("\n".join(visible(line, one_line=True) for line in lines)))
            shown.display = bool(lines)
        self.plan_shown()

    def plan_shown(self) -> None:
        """What a dialog redraws once the plan is read (the Fork dialog's "Will run")."""

    def run_fields(self, name: str) -> ComposeResult:
        """The App and Budget fields (ids ``{name}-app`` and ``{name}-budget``), then the "run on the fleet" choice
        (id ``{name}-fleet``) when the store's fleet has workers up."""
        yield AppField(self.app_spec, id=f"{name}-app")
        yield BudgetField(self.body, id=f"{name}-budget")
        if self.fleet is not None:
            said = f"Run on the fleet ({self.fleet}): a worker started with --app and the program above runs it"
            yield Checkbox(Text(visible(said, one_line=True)), id=f"{name}-fleet", compact=True)

    @staticmethod
    def button_row(box: str, confirm: tuple[str, str], cancel: tuple[str, str]) -> ComposeResult:
        """The row ``box`` of the confirm button (its label and id, the primary one) and the cancel button."""
        with Horizontal(id=box):
            yield Button(confirm[0], variant="primary", id=confirm[1], compact=True)
            yield Button(cancel[0], id=cancel[1], compact=True)

    def on_fleet(self) -> bool:
        """Was "run on the fleet" chosen?"""
        return any(box.value for box in self.query(Checkbox).results(Checkbox) if (box.id or "").endswith("-fleet"))

    def program_and_budget(self) -> tuple[str, float | None] | None:
        """The program (``""``: rebuilt from the checkpoint) and the budget in dollars (None: the run's own), or
        None when either is refused (the reason is shown and the field focused)."""
        field = self.query_one(AppField)
        if not field.confirmed():
            return None
        ok, budget = self.query_one(BudgetField).verify()
        return (field.spec, budget) if ok else None


@dataclass(frozen=True, slots=True)
class ResumeAnswer:
    """What the user confirmed: the program to run (``""``: rebuilt from the checkpoint) and its budget in dollars
    (None: the budget the run had, if any)."""

    app: str
    budget: float | None = None
    fleet: bool = False
    """Queue it for the store's fleet instead of running it here."""


class ResumeScreen(RunDialog[ResumeAnswer | None]):
    """Answers the app spec to resume with ("" for none) and a budget, or None when cancelled. ``y`` resumes,
    ``n``/escape cancels; a bad spec or budget is refused with its reason."""

    CSS_PATH = "confirm.tcss"

    BINDINGS = [
        Binding("y", "confirm", "Resume"),
        Binding("n,escape", "cancel", "Cancel"),
    ]

    def __init__(self, question: Text, app: str | None, **given: Any) -> None:
        """``given``: the :class:`RunDialog`'s body, later, plan_at and fleet."""
        super().__init__(app, **given)
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-dialog"):
            yield Label("Resume the run", id="confirm-heading")
            yield Static(self.question, markup=False, id="confirm-question")
            yield from self.estimate_field("resume", pending_tasks(self.body or {}))
            yield from self.plan_field("resume")
            yield from self.run_fields("resume")
            yield from self.button_row("confirm-buttons", ("Resume (y)", "confirm-yes"), ("Cancel (n)", "confirm-no"))
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#confirm-yes", Button).focus()

    def action_confirm(self) -> None:
        chosen = self.program_and_budget()
        if chosen is not None:
            self.dismiss(ResumeAnswer(*chosen, fleet=self.on_fleet()))

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
