"""The Tasks tab: a progress bar and one card per task; edited outputs are collected here."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import ProgressBar, Static

from crewpoint.checkpoint.ops import CheckpointInfo
from crewpoint.tui.widgets.detail_state import EditedDetail, Rerun
from crewpoint.tui.widgets.tab_view import ViewFilled
from crewpoint.tui.widgets.task_card import TaskCard, clipped, info_command


class TasksView(VerticalScroll):
    """The tasks of ``edited`` (with its edited outputs), redrawn when it changes; ``rerun`` marks the tasks a fork
    would run again. Posts :class:`TasksView.OutputsEdited` with every output that differs."""

    DEFAULT_CSS = """
    TasksView { padding: 0 1; }
    TasksView > #tasks-summary { margin-bottom: 1; }
    TasksView > ProgressBar { margin-bottom: 1; }
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

    def compose(self) -> ComposeResult:
        yield Static("", id="tasks-summary", markup=False)
        yield ProgressBar(total=1, show_eta=False, id="tasks-progress")

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
