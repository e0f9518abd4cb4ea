"""One task in the Tasks tab: status, agent, and its output (editable when the task has finished)."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static, TextArea

from crewpoint.checkpoint.ops import TaskInfo
from crewpoint.tui.read_only import is_read_only
from crewpoint.tui.widgets.checkpoint_tree import attach_gaps


class TaskCard(Vertical):
    """A task. Editing its output posts :class:`TaskCard.OutputEdited`; ``rerun`` marks it as going to run."""

    DEFAULT_CSS = """
    TaskCard { height: auto; margin-bottom: 1; padding: 0 1; border-left: thick $panel; }
    TaskCard.-done { border-left: thick $success; }
    TaskCard.-edited { border-left: thick $warning; }
    TaskCard.-rerun { border-left: thick $accent; }
    TaskCard > .task-title { text-style: bold; }
    TaskCard > .task-note { color: $text-muted; }
    TaskCard > .task-status { color: $accent; text-style: bold; }
    TaskCard > .task-status.-empty { display: none; }
    TaskCard > TextArea { height: auto; max-height: 12; }
    """

    @dataclass
    class OutputEdited(Message):
        index: int
        text: str
        """The output as edited now (equal to the original when the edit was undone)."""

    def __init__(self, task: TaskInfo, *, id: str | None = None) -> None:
        super().__init__(id=id, classes="-done" if task.done else "")
        self.task_info = task

    def compose(self) -> ComposeResult:
        task = self.task_info
        mark = "✓" if task.done else "○"
        title = Text(f"{mark} {task.index + 1}. {task.name}")
        if task.agent:
            title.append(f"  — {task.agent}", style="italic")
        yield Static(attach_gaps(title), classes="task-title", markup=False)
        yield Static(Text(task.description), classes="task-note", markup=False)
        yield Static("", classes="task-status -empty", markup=False)
        if task.done:
            yield TextArea(
                task.output or "",
                soft_wrap=True,
                tab_behavior="focus",
                read_only=is_read_only(self),
                id=f"output-{task.index}",
            )
        else:
            yield Static(Text("not run yet", style="dim italic"), markup=False)

    @property
    def edited(self) -> bool:
        return self.has_class("-edited")

    def set_rerun(self, rerun: bool) -> None:
        self.set_class(rerun, "-rerun")
        self._update_status()

    def _update_status(self) -> None:
        status = self.query_one(".task-status", Static)
        notes = []
        if self.has_class("-edited"):
            notes.append("✎ output edited")
        if self.has_class("-rerun"):
            notes.append("↻ will re-run" if self.task_info.done else "▶ will run")
        status.update(Text("   ".join(notes)))
        status.set_class(not notes, "-empty")

    @on(TextArea.Changed)
    def _changed(self, event: TextArea.Changed) -> None:
        event.stop()
        text = event.text_area.text
        self.set_class(text != (self.task_info.output or ""), "-edited")
        self._update_status()
        self.post_message(self.OutputEdited(self.task_info.index, text))
