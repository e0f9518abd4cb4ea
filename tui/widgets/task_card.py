"""One task in the Tasks tab: status, agent, and its output (editable when the task has finished).

An output longer than :data:`VIEW_LIMIT` characters is shown clipped, read-only (an edit of a part would replace
the whole), with a line saying so and the command that prints all of it: no view holds a huge output whole."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Static, TextArea

from crewpoint.checkpoint.ops import TaskInfo
from crewpoint.providers.base import CheckpointError, CheckpointMeta
from crewpoint.tui.launcher import TaskVerdict
from crewpoint.tui.read_only import is_read_only
from crewpoint.tui.render import attach_gaps
from crewpoint.tui.visible import visible

VIEW_LIMIT = 64 * 1024
"""Characters of one output a view shows; the rest is left out, and a line says how to see it all."""


def clipped(text: str, limit: int = VIEW_LIMIT) -> str | None:
    """The first ``limit`` characters of ``text`` when it is longer, else None (shown whole)."""
    return text[:limit] if len(text) > limit else None


def clip_note(length: int, command: str, limit: int = VIEW_LIMIT) -> str:
    """The line under a clipped output: how much is shown, and the command that prints all of it."""
    see = f"; all of it: {command}" if command else ""
    return f"✂ clipped: the first {limit:,} of {length:,} characters shown, read-only here{see}"


def info_command(meta: CheckpointMeta) -> str:
    """The command that prints the checkpoint ``meta`` whole (every output, its request), as typed in this folder;
    empty when its store cannot be named here."""
    # lazy: naming a command reads the providers' rules, only for a checkpoint with a huge text
    from crewpoint.feedback import command_at

    try:
        return command_at("info", meta) + " --json"
    except (CheckpointError, OSError, ValueError):
        return ""


class TaskCard(Vertical):
    """A task. Editing its output posts :class:`TaskCard.OutputEdited`; ``rerun`` marks it as going to run."""

    DEFAULT_CSS = """
    TaskCard { height: auto; margin-bottom: 1; padding: 0 1; border-left: thick $panel; }
    TaskCard.-done { border-left: thick $success; }
    TaskCard.-edited { border-left: thick $warning; }
    TaskCard.-rerun { border-left: thick $accent; }
    TaskCard.-program-changed { border-left: thick $error; }
    TaskCard > .task-title { text-style: bold; }
    TaskCard > .task-note { color: $text-muted; }
    TaskCard > .task-status { color: $accent; text-style: bold; }
    TaskCard > .task-status.-empty { display: none; }
    TaskCard > .task-clipped { color: $warning; }
    TaskCard > TextArea { height: auto; max-height: 12; }
    """

    @dataclass
    class OutputEdited(Message):
        checkpoint_id: str
        index: int
        text: str
        """The output as edited now (equal to the original when the edit was undone)."""

    def __init__(
        self,
        task: TaskInfo,
        checkpoint_id: str,
        edited: str | None = None,
        *,
        id: str | None = None,
        see_all: str = "",
    ) -> None:
        super().__init__(id=id, classes="-done" if task.done else "")
        self.task_info = task
        self.checkpoint_id = checkpoint_id
        self.clip = clipped(task.output or "")
        """The part of a huge output shown (None: shown whole)."""
        self.see_all = see_all
        """The command that prints a clipped output whole."""
        self.edited_text = edited
        """The unsaved edit this card starts with, if any."""
        self.verdict: TaskVerdict | None = None
        """What the bound program does with this task (changed, moved, dropped; kept), when it is known."""

    def compose(self) -> ComposeResult:
        task = self.task_info
        mark = "✓" if task.done else "○"
        title = Text(f"{mark} {task.index + 1}. {visible(task.name, one_line=True)}")
        if task.agent:
            title.append(f"  — {visible(task.agent, one_line=True)}", style="italic")
        yield Static(attach_gaps(title), classes="task-title", markup=False)
        yield Static(Text(visible(task.description)), classes="task-note", markup=False)
        yield Static("", classes="task-status -empty", markup=False)
        if task.done:
            yield TextArea(
                self.start_text,
                soft_wrap=True,
                tab_behavior="focus",
                read_only=is_read_only(self) or self.clip is not None,
                id=f"output-{task.index}",
            )
            if self.clip is not None:
                note = clip_note(len(task.output or ""), self.see_all)
                yield Static(Text(visible(note, one_line=True)), classes="task-clipped", markup=False)
        else:
            yield Static(Text("not run yet", style="dim italic"), markup=False)

    def on_mount(self) -> None:
        if self.edited_text is not None and self.edited_text != self.shown_output:
            self.add_class("-edited")
            self._update_status()

    @property
    def start_text(self) -> str:
        if self.clip is not None:
            return self.shown_output  # read-only: no edit applies to a clipped output
        return self.edited_text if self.edited_text is not None else self.shown_output

    @property
    def shown_output(self) -> str:
        """The output as the editor shows it (control characters as escapes; clipped when huge)."""
        return visible(self.clip if self.clip is not None else self.task_info.output or "")

    @property
    def edited(self) -> bool:
        return self.has_class("-edited")

    def set_rerun(self, rerun: bool) -> None:
        self.set_class(rerun, "-rerun")
        self._update_status()

    def set_verdict(self, verdict: TaskVerdict | None) -> None:
        """Mark the task with what the bound program does with it (None: no verdict known)."""
        self.verdict = verdict
        self.set_class(verdict is not None and verdict.verdict != "kept", "-program-changed")
        self._update_status()

    def _update_status(self) -> None:
        found = self.query(".task-status").results(Static)
        status = next(found, None)
        if status is None:
            return  # not composed yet, or going away
        notes = []
        if self.has_class("-edited"):
            notes.append("✎ output edited")
        if self.has_class("-rerun"):
            notes.append("↻ will re-run" if self.task_info.done else "▶ will run")
        verdict = self.verdict
        if verdict is not None and verdict.verdict != "kept":
            why = f": {', '.join(verdict.reasons)}" if verdict.reasons else ""
            notes.append(visible(f"≠ {verdict.verdict} in the program{why}", one_line=True))
        status.update(Text("   ".join(notes)))
        status.set_class(not notes, "-empty")

    @on(TextArea.Changed)
    def _changed(self, event: TextArea.Changed) -> None:
        event.stop()
        text = event.text_area.text
        self.set_class(text != self.shown_output, "-edited")
        self._update_status()
        self.post_message(self.OutputEdited(self.checkpoint_id, self.task_info.index, text))
