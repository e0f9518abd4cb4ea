"""The Tasks tab: a progress bar and one card per task; edited outputs are collected here.

When the project binds a program (``[tool.crewpoint] app``), each task is marked against it (changed, moved,
dropped; the program's new tasks on a line above): the verdicts come from the command line's dry run, run as a
child process in a thread, so the user's program is never imported in the app's process."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import ProgressBar, Static
from textual.worker import get_current_worker

from crewpoint.checkpoint.ops import CheckpointInfo
from crewpoint.checkpoint.program import project_app
from crewpoint.providers.formats import format_of_id
from crewpoint.tui.launcher import PlanUnavailable, ProgramPlan, read_plan
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import EditedDetail, Rerun
from crewpoint.tui.widgets.tab_view import ViewFilled
from crewpoint.tui.widgets.task_card import TaskCard, clipped, info_command

VERDICTS_DELAY = 0.4
"""Seconds a checkpoint stays shown before its verdicts are asked for: moving through the tree starts no child."""


class TasksView(VerticalScroll):
    """The tasks of ``edited`` (with its edited outputs), redrawn when it changes; ``rerun`` marks the tasks a fork
    would run again. Posts :class:`TasksView.OutputsEdited` with every output that differs."""

    DEFAULT_CSS = """
    TasksView { padding: 0 1; }
    TasksView > #tasks-summary { margin-bottom: 1; }
    TasksView > ProgressBar { margin-bottom: 1; }
    TasksView > #tasks-verdicts { color: $warning; margin-bottom: 1; }
    TasksView > #tasks-verdicts.-empty { display: none; }
    """

    @dataclass
    class OutputsEdited(Message):
        checkpoint_id: str
        outputs: dict[int, str]
        """Every edited output of that checkpoint (0-based task index → text as typed)."""

    edited: reactive[EditedDetail | None] = reactive(None, init=False, always_update=True)
    rerun: reactive[Rerun | None] = reactive(None, init=False, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.edits: dict[int, str] = {}
        self.checkpoint_id: str | None = None
        self._generation = 0
        self._verdicts_timer: Timer | None = None
        self.plan: ProgramPlan | None = None
        """The verdicts of the shown checkpoint's tasks against the bound program (None: none bound, or not yet)."""
        self.plan_error: str | None = None
        """Why the bound program gave no verdicts, in one line (None: it did, or none is bound)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="tasks-summary", markup=False)
        yield ProgressBar(total=1, show_eta=False, id="tasks-progress")
        yield Static("", id="tasks-verdicts", markup=False, classes="-empty")

    async def watch_edited(self, edited: EditedDetail | None) -> None:
        if edited is None:
            return
        await self.show(edited.detail.info, edited.detail.status, edited.edits.outputs)
        self.watch_rerun(self.rerun)
        self.post_message(ViewFilled(self, edited))

    def watch_rerun(self, rerun: Rerun | None) -> None:
        if rerun is not None and rerun.checkpoint_id == self.checkpoint_id:
            self.mark_rerun(list(rerun.tasks))

    async def show(self, info: CheckpointInfo | None, message: str = "", edits: dict[int, str] | None = None) -> None:
        self.checkpoint_id = info.meta.id if info is not None else None
        self.edits = dict(edits or {})
        self._generation += 1
        self.plan, self.plan_error = None, None
        self._say_verdicts()
        if self._verdicts_timer is not None:
            self._verdicts_timer.stop()  # the cursor moved on: no child for the checkpoint it left
        await self.remove_children(TaskCard)
        bar = self.query_one(ProgressBar)
        summary = self.query_one("#tasks-summary", Static)
        if info is None or not info.tasks:
            summary.update(Text(message or "This checkpoint holds no tasks.", style="dim"))
            bar.display = False
            return
        done = sum(1 for t in info.tasks if t.done)
        bar.display = True
        bar.update(total=len(info.tasks), progress=done)
        summary.update(Text(f"{done} of {len(info.tasks)} tasks done. Edit a finished output (Enter), then fork (f)."))
        see_all = info_command(info.meta) if any(clipped(t.output or "") is not None for t in info.tasks) else ""
        cards = [
            TaskCard(
                task,
                info.meta.id,
                self.edits.get(task.index),
                id=f"task-{self._generation}-{task.index}",
                see_all=see_all,
            )
            for task in info.tasks
        ]
        await self.mount_all(cards)
        # the checkpoint's own file or ``DB#ID``: the child finds its store from it; another tool's has no verdicts
        program = project_app()  # none bound: no child, the tab as it always was
        if program and info.meta.location and not format_of_id(info.meta.id).foreign:
            checkpoint_id, ref = info.meta.id, info.meta.location
            self._verdicts_timer = self.set_timer(
                VERDICTS_DELAY, lambda: self._read_verdicts(checkpoint_id, ref, program)
            )

    @work(thread=True, exclusive=True, exit_on_error=False, group="task-verdicts")
    def _read_verdicts(self, checkpoint_id: str, ref: str, app: str) -> None:
        """The verdicts against the bound program ``app``, from a child dry run (a fork's: it is refused for no
        live or finished run)."""
        plan: ProgramPlan | None = None
        error: str | None = None
        try:
            plan = read_plan(ref, "", app, action="fork")
        except PlanUnavailable as exc:
            error = str(exc)
        if not get_current_worker().is_cancelled:
            self.app.call_from_thread(self.mark_verdicts, checkpoint_id, plan, error)

    def mark_verdicts(self, checkpoint_id: str, plan: ProgramPlan | None, error: str | None = None) -> None:
        """Mark each card with its verdict in ``plan`` (or say ``error``), if ``checkpoint_id`` is still shown."""
        if not self.is_attached or checkpoint_id != self.checkpoint_id:
            return  # the tab is gone, or shows another checkpoint now
        self.plan, self.plan_error = plan, error
        verdicts = plan.by_saved() if plan is not None else {}
        for card in self.query(TaskCard):
            card.set_verdict(verdicts.get(card.task_info.index))
        self._say_verdicts()

    def _say_verdicts(self) -> None:
        """The line above the cards: why there are no verdicts, or the program's new tasks (they have no card)."""
        line = self.query_one("#tasks-verdicts", Static)
        said = ""
        if self.plan_error is not None:
            said = f"✗ {self.plan_error}"
        elif self.plan is not None:
            new = [t.line() for t in self.plan.tasks if t.verdict == "new"]
            if new:
                said = f"The program {self.plan.program} adds: " + "; ".join(new)
        line.update(Text(visible(said, one_line=True)))
        line.set_class(not said, "-empty")

    def mark_rerun(self, rerun: list[int]) -> None:
        wanted = set(rerun)
        for card in self.query(TaskCard):
            card.set_rerun(card.task_info.index in wanted)

    @on(TaskCard.OutputEdited)
    def _edited(self, event: TaskCard.OutputEdited) -> None:
        event.stop()
        if event.checkpoint_id != self.checkpoint_id:
            return  # from a card of a checkpoint shown before
        card = next((c for c in self.query(TaskCard) if c.task_info.index == event.index), None)
        original = card.shown_output if card is not None else ""
        if event.text == original:
            self.edits.pop(event.index, None)
        else:
            self.edits[event.index] = event.text
        self.post_message(self.OutputsEdited(event.checkpoint_id, dict(self.edits)))
