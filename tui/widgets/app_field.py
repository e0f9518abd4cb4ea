"""The App field of the Resume and Fork dialogs: which program runs the checkpoint, and the file it executes.

The field is the user's: it starts from a suggestion only when there is one (the project's ``[tool.crewpoint] app``,
or the checkpoint's recorded program when that is a file of this project), and says where the suggestion comes
from. Checking what the text names reads folders only: nothing is imported before the user confirms.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Input, Label, Static
from textual.worker import get_current_worker

from crewpoint.checkpoint.program import AppError, app_file
from crewpoint.tui.visible import visible


class AppField(Vertical):
    """``FILE.py:attr`` or ``package.module:attr``; empty rebuilds the entity from the checkpoint alone. Below it,
    before anything runs, the file it names (or why it names none) and, while it holds the suggestion, where the
    suggestion comes from (``spec`` may carry it as ``source``, see ``crewpoint.checkpoint.program.SuggestedApp``)."""

    DEFAULT_CSS = """
    AppField { height: auto; }
    AppField > Label { text-style: bold; }
    AppField > #app-file { color: $text-muted; }
    AppField.-bad > #app-file { color: $error; }
    """

    @dataclass
    class Checked(Message):
        spec: str
        file: str | None
        error: str | None

    @dataclass
    class Named(Message):
        """What the field names after each check: ``file`` is the program's file, None when it names none (empty,
        or a spec that cannot run), posted on to the dialog."""

        spec: str
        file: str | None

    def __init__(self, spec: str | None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.initial = spec or ""
        self.source: str | None = getattr(spec, "source", None) if spec else None
        """Where the pre-filled text comes from (None: nothing was suggested)."""
        self.file: str | None = None
        self.error: str | None = None
        self.checked_spec: str | None = None
        self.typed = False
        """Has the user changed the text from what the field started with (then it names their choice)?"""

    def compose(self) -> ComposeResult:
        yield Label("App (your program; empty: rebuild from the checkpoint alone)")
        yield Input(
            value=self.initial, placeholder="FILE.py:attr or package.module:attr", select_on_focus=False, compact=True
        )
        yield Static("", id="app-file", markup=False)

    def on_mount(self) -> None:
        self._check(self.initial)

    @property
    def spec(self) -> str:
        return self.query_one(Input).value.strip()

    @property
    def suggested(self) -> bool:
        """Does the field still hold the suggestion it was given?"""
        return self.source is not None and self.spec == self.initial.strip()

    def verify(self) -> str | None:
        """Why the field cannot be run with (None: it can). Checks now if the last check was of other text."""
        spec = self.spec
        if not spec:
            return None
        if self.checked_spec != spec:
            try:
                app_file(spec)
            except AppError as exc:
                return " ".join(str(exc).split())
            return None
        return self.error

    def confirmed(self) -> bool:
        """Can the dialog run with the field? If not, the reason is notified as an error and the field focused."""
        problem = self.verify()
        if problem is not None:
            self.query_one(Input).focus()
            self.notify(visible(problem), severity="error", markup=False)
        return problem is None

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        self.typed = self.typed or event.value.strip() != self.initial.strip()
        self._check(event.value.strip())

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-file")
    def _check(self, spec: str) -> None:
        file, error = None, None
        if spec:
            try:
                file = app_file(spec)
            except AppError as exc:
                error = " ".join(str(exc).split())
        if not get_current_worker().is_cancelled:
            self.post_message(self.Checked(spec, file, error))

    @on(Checked)
    def _checked(self, message: Checked) -> None:
        message.stop()
        if message.spec != self.spec:
            return
        self.checked_spec, self.file, self.error = message.spec, message.file, message.error
        self.post_message(self.Named(message.spec, message.file))
        note = self.query_one("#app-file", Static)
        self.set_class(message.error is not None, "-bad")
        if message.error is not None:
            note.update(Text(visible(f"✗ {message.error}")))
        elif message.file is not None:
            shown = visible(f"runs {message.file}", one_line=True)
            if self.suggested:
                shown += "\n" + visible(f"suggested: {self.source}", one_line=True)
            note.update(Text(shown))
        else:
            note.update(Text("no program: the entity is rebuilt from the checkpoint (code it names is not loaded)"))
