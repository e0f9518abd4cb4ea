"""The fork confirmation: source, branch name, what changed and which tasks will re-run."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import Button, Footer, Input, Label, Static

from crewpoint.checkpoint.ops import CheckpointInfo, ForkPlan
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.refs import branch_problem
from crewpoint.screens.resume_confirm import RunDialog
from crewpoint.text import clip
from crewpoint.tui.store_index import progress_text
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.overview_view import plain, shown


@dataclass(slots=True)
class ForkRequest:
    """What the user confirmed: fork ``source_id`` onto ``branch`` with these edits."""

    source_id: str
    branch: str
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[int, str] = field(default_factory=dict)
    rerun: list[int] = field(default_factory=list)
    app: str = ""
    """The program to run it with (``--app``); empty: rebuilt from the checkpoint alone."""
    budget: float | None = None
    """The dollars the run may spend (``--budget``); None: no limit."""
    fleet: bool = False
    """Queue it for the store's fleet instead of running it here."""


def default_branch_name(now: float | None = None) -> str:
    return "fork-" + time.strftime("%Y%m%d-%H%M%S", time.localtime(now if now is not None else time.time()))


def short(text: str, limit: int = 160) -> str:
    return clip(visible(" ".join(text.split()), one_line=True), limit)


class ForkScreen(RunDialog[ForkRequest | None]):
    """Confirm a fork. ``y``/enter starts it, ``n``/escape cancels."""

    CSS_PATH = "fork_confirm.tcss"
    PLAN_ACTION = "fork"

    BINDINGS = [
        Binding("y", "confirm", "Fork"),
        Binding("n,escape", "cancel", "Cancel"),
        Binding("pagedown", "scroll_body(1)", "Scroll down", key_display="PgDn"),
        Binding("pageup", "scroll_body(-1)", "Scroll up", show=False),
    ]

    def __init__(
        self,
        meta: CheckpointMeta,
        info: CheckpointInfo,
        plan: ForkPlan,
        branch: str | None = None,
        taken: set[str] | None = None,
        app: str | None = None,
        body: Mapping[str, Any] | None = None,
        later: str | None = None,
        plan_at: tuple[str, str] | None = None,
        fleet: str | None = None,
    ) -> None:
        super().__init__(app, body, later, plan_at, fleet)
        self.meta = meta
        self.info = info
        self.plan = plan
        self.branch = branch or default_branch_name()
        self.taken = taken or set()

    def compose(self) -> ComposeResult:
        with Vertical(id="fork-dialog"):
            yield Label("Fork a new branch", id="fork-heading")
            with VerticalScroll(id="fork-body"):  # what it runs first: a short terminal shows the top
                yield Static(self._source(), markup=False, id="fork-source")
                yield Static(self._rerun(), markup=False, id="fork-rerun")
                yield from self.plan_field("fork")
                if self.plan.rerun:
                    yield from self.estimate_field("fork", self.plan.rerun)
                yield Label("Branch name", id="fork-branch-label")
                yield Input(value=self.branch, id="fork-branch", compact=True, select_on_focus=False)
                yield Static("", id="fork-branch-error", markup=False, classes="-empty")
                yield Static(self._changes(), markup=False, id="fork-changes")
                yield from self.run_fields("fork")
            yield from self.button_row("fork-buttons", ("Fork (y)", "fork-confirm"), ("Cancel (n)", "fork-cancel"))
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#fork-confirm", Button).focus()

    def _source(self) -> Text:
        meta = self.meta
        text = Text.assemble(
            ("From  ", "bold"),
            visible(f"{meta.entity_kind} {meta.entity_name}  ⎇ {meta.branch}  {meta.id[:12]}", one_line=True),
        )
        if meta.tasks_total:
            text.append(f"  ({progress_text(meta)})")
        return text

    def _changes(self) -> Table | Text:
        plan = self.plan
        if not plan.changed_inputs and not plan.edited_outputs:
            return Text("No edits: the fork continues from this checkpoint as it is.", style="italic")
        table = Table(title="Changes", title_justify="left", expand=True, show_lines=False)
        table.add_column("what", no_wrap=True, style="bold")
        table.add_column("before", ratio=1)
        table.add_column("after", ratio=1)
        for key, value in plan.changed_inputs.items():
            before = self.info.inputs.get(key)
            table.add_row(
                Text(visible(f"input {key}", one_line=True)),
                Text(short(shown(before)) if before is not None else "—", style="red"),
                Text(short(shown(value)), style="green"),
            )
        tasks = {t.index: t for t in self.info.tasks}
        for index, output in sorted(plan.edited_outputs.items()):
            task = tasks.get(index)
            name = task.name if task is not None else str(index + 1)
            table.add_row(
                Text(visible(f"output {index + 1}. {name}", one_line=True)),
                Text(short(task.output or "") if task is not None else "—", style="red"),
                Text(short(output), style="green"),
            )
        return table

    def plan_shown(self) -> None:
        self.query_one("#fork-rerun", Static).update(self._rerun())

    def will_run(self) -> list[str]:
        """The tasks "Will run" names: with the program's plan, what it runs (its new and changed tasks too) and
        what the edits re-run of the tasks it keeps; without, what the edits re-run and what had not run yet."""
        program = self.program_plan
        if program is not None:
            names = [t.name for t in program.tasks if t.runs]
            saved = program.by_saved()
            for index in self.plan.rerun:  # an edit upstream re-runs a task the program kept
                verdict = saved.get(index)
                if verdict is not None and verdict.verdict != "dropped" and verdict.name not in names:
                    names.append(verdict.name)
            return names
        tasks = {t.index: t for t in self.info.tasks}
        names = []
        for index in self.plan.rerun:
            task = tasks.get(index)
            label = f"{index + 1}. {task.name if task is not None else '?'}"
            if task is not None and task.done:
                label += " (re-run)"
            names.append(label)
        return names

    def _rerun(self) -> Text:
        names = self.will_run()
        if not names:
            return Text("Nothing will re-run: every task is done and no edit changes any.", style="italic")
        text = Text("Will run: ", style="bold")
        text.append(visible(", ".join(names), one_line=True), style="")
        return text

    def _request(self) -> ForkRequest | None:
        branch = self.query_one("#fork-branch", Input).value.strip()
        error = self.query_one("#fork-branch-error", Static)
        problem = None
        if not branch:
            problem = "give the new branch a name"
        elif branch in self.taken:
            problem = f"branch {branch!r} already exists: choose another name"
        else:
            problem = branch_problem(branch)  # the one rule the API and the command line apply too
        if problem is not None:
            error.update(Text(visible(problem)))
            error.remove_class("-empty")
            body = self.query_one("#fork-body", VerticalScroll)
            body.scroll_to_widget(self.query_one("#fork-branch", Input), animate=False)
            self.query_one("#fork-branch", Input).focus()
            return None
        chosen = self.program_and_budget()
        if chosen is None:
            return None
        app, budget = chosen
        error.update("")
        error.add_class("-empty")
        plan = self.plan
        return ForkRequest(
            source_id=self.meta.id,
            branch=branch,
            inputs={k: plain(v) for k, v in plan.changed_inputs.items()},
            outputs=dict(plan.edited_outputs),
            rerun=list(plan.rerun),
            app=app,
            budget=budget,
            fleet=self.on_fleet(),
        )

    def action_confirm(self) -> None:
        request = self._request()
        if request is not None:
            self.dismiss(request)

    def action_cancel(self) -> None:
        self.dismiss(None)

    def action_scroll_body(self, pages: int) -> None:
        """PageDown / PageUp scroll the dialog's body wherever the focus is (the buttons, the branch field)."""
        body = self.query_one("#fork-body", VerticalScroll)
        if pages > 0:
            body.scroll_page_down(animate=False)
        else:
            body.scroll_page_up(animate=False)

    @on(Input.Submitted)
    def _submitted(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#fork-confirm")
    def _confirm_pressed(self) -> None:
        self.action_confirm()

    @on(Button.Pressed, "#fork-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()
