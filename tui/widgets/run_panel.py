"""The run panel: starts a resume or fork as a child process and streams its progress.

The child prints one JSON object per line (``--progress json``); errors go to stderr. Cancelling sends SIGINT,
on which the child stops (its finished tasks are in its checkpoints) and exits with 130.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on, work
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import Label, ProgressBar, RichLog

from crewpoint.tui import run_protocol as protocol
from crewpoint.tui.diagnostics import ExitCode, ending
from crewpoint.tui.progress_view import ProgressView
from crewpoint.tui.run_controller import RunRequest
from crewpoint.tui.run_protocol import ProgressRecord
from crewpoint.tui.visible import visible

EXIT_INTERRUPTED = ExitCode.INTERRUPTED

__all__ = ["EXIT_INTERRUPTED", "RunPanel", "RunRequest"]


class RunPanel(Vertical, ProgressView):
    """Shown while a run goes and after it ends. Posts :class:`Progress` per line and :class:`Finished` once."""

    DEFAULT_CSS = """
    RunPanel { height: 12; border-top: solid $accent; padding: 0 1; display: none; }
    RunPanel.-shown { display: block; }
    RunPanel > #run-title { text-style: bold; }
    RunPanel.-failed > #run-title { color: $error; }
    RunPanel.-ok > #run-title { color: $success; }
    RunPanel.-paused > #run-title { color: $warning; }
    RunPanel > RichLog { height: 1fr; background: $surface; }
    """

    @dataclass
    class Progress(Message):
        record: ProgressRecord

    @dataclass
    class Finished(Message):
        request: RunRequest
        returncode: int
        error: str = ""
        result: Any = None
        checkpoints: list[str] = field(default_factory=list)
        queued: str = ""
        """What the run's last record said of the fleet's job that goes on with it (nothing ran here)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.request: RunRequest | None = None
        self.process: subprocess.Popen[str] | None = None
        self.cancelled = False
        self._done = 0

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self, request: RunRequest) -> None:
        self.request = request
        self.cancelled = False
        self._done = 0
        self.remove_class("-failed", "-ok", "-paused")
        self.add_class("-shown")
        self.call_later(self._begin, request)

    async def _begin(self, request: RunRequest) -> None:
        if not self.children:  # built for the first run: the app starts without them
            await self.mount_all(
                [
                    Label("", id="run-title", markup=False),
                    ProgressBar(total=1, show_eta=False, id="run-progress"),
                    RichLog(id="run-log", wrap=True, markup=False, max_lines=2000),
                ]
            )
        self.query_one("#run-title", Label).update(Text(visible(f"▶ {request.title}", one_line=True)))
        bar = self.query_one(ProgressBar)
        bar.update(total=max(request.total, 1), progress=0)
        log = self.query_one(RichLog)
        log.clear()
        self._run(request)

    def cancel(self) -> bool:
        """Ask the child to stop (SIGINT: it checkpoints, then exits). False when nothing runs."""
        process = self.process
        if process is None or process.poll() is not None:
            return False
        self.cancelled = True
        process.send_signal(signal.SIGINT)
        self.query_one(RichLog).write(Text("cancelling: sent SIGINT, waiting for the run to stop…", style="bold"))
        return True

    def hide(self) -> None:
        if not self.running:
            self.remove_class("-shown")

    def on_unmount(self) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()

    @work(thread=True, exclusive=True, exit_on_error=False, group="run")
    def _run(self, request: RunRequest) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        try:
            process = subprocess.Popen(
                request.argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
                env=env,
                start_new_session=True,
            )
        except OSError as exc:
            self.post_message(self.Finished(request, -1, f"could not start the run: {exc.strerror}"))
            return
        self.process = process
        errors: list[str] = []
        reader = threading.Thread(target=_drain, args=(process, errors), daemon=True)
        reader.start()
        result: Any = None
        checkpoints: list[str] = []
        queued = ""
        assert process.stdout is not None
        for line in process.stdout:
            line = line.strip()
            if not line:
                continue
            record = ProgressRecord.parse(line)
            if record.event == protocol.FINISHED:
                result = record.result
            if record.event == protocol.QUEUED:
                queued = record.text or "queued on the fleet"
            if record.event in (protocol.CHECKPOINT, protocol.WRITTEN, protocol.FINISHED) and record.checkpoint_id:
                if not checkpoints or checkpoints[-1] != record.checkpoint_id:
                    checkpoints.append(record.checkpoint_id)
            self.post_message(self.Progress(record))
        returncode = process.wait()
        reader.join(timeout=5)
        error = next((e for e in reversed(errors) if e.strip()), "")
        self.post_message(self.Finished(request, returncode, error.strip(), result, checkpoints, queued))

    @on(Progress)
    def _progress(self, message: Progress) -> None:
        self.draw(message.record)

    def _say(self, *parts: tuple[str, str] | str, style: str = "") -> None:
        self.query_one(RichLog).write(Text.assemble(*parts, style=style))

    def draw_started(self, record: ProgressRecord) -> None:
        if record.rerun is not None:
            self.query_one(ProgressBar).update(total=max(len(record.rerun), 1))
        what = "fork" if record.fork else "resume"
        where = f"{what} of {record.kind or ''} {record.name or ''} on ⎇ {record.branch or ''}"
        self._say(visible(where, one_line=True))

    def draw_step_started(self, record: ProgressRecord) -> None:
        self._say(("▶ ", "bold"), f"{_label(record)} started")

    def draw_step_done(self, record: ProgressRecord) -> None:
        self._done += 1
        self.query_one(ProgressBar).update(progress=self._done)
        output = visible(" ".join((record.output or "").split()), one_line=True)
        parts: list[tuple[str, str] | str] = [("✓ ", "bold green"), f"{_label(record)} done"]
        if output:
            parts.append((f": {output[:160]}", "dim"))
        self._say(*parts)

    def draw_step_failed(self, record: ProgressRecord) -> None:
        error = visible(record.error or "", one_line=True)
        self._say(("✗ ", "bold red"), f"{_label(record)} failed: ", (error, "red"))

    def draw_checkpoint(self, record: ProgressRecord) -> None:
        ident = (record.checkpoint_id or "")[:8]
        self._say(visible(f"◆ checkpoint {ident} on {record.branch or ''}", one_line=True), style="dim")

    def draw_write_failed(self, record: ProgressRecord) -> None:
        self._say(visible(f"✗ checkpoint not written: {record.error or ''}", one_line=True), style="yellow")

    def draw_finished(self, record: ProgressRecord) -> None:
        self._say("■ finished", style="bold")

    def draw_waiting(self, record: ProgressRecord) -> None:
        self._say("◷ waiting for feedback", style="bold")

    def draw_stopped(self, record: ProgressRecord) -> None:
        said = visible(f"■ stopped at budget: {record.text or ''}".rstrip(": "), one_line=True)
        self._say(said, style="bold yellow")

    def draw_queued(self, record: ProgressRecord) -> None:
        self._say(visible(f"⇢ {record.text or 'queued on the fleet'}", one_line=True), style="bold")

    def draw_log(self, record: ProgressRecord) -> None:
        self._say(visible(record.text or ""), style="dim")

    def draw_cut_short(self, record: ProgressRecord) -> None:
        self.draw_other(record)  # the title says how the run ended, once the process has exited

    def draw_other(self, record: ProgressRecord) -> None:
        self._say(visible(f"· {record.event} {_label(record)}".rstrip(), one_line=True), style="dim")

    @on(Finished)
    def _finished(self, message: Finished) -> None:
        self.process = None
        title = self.query_one("#run-title", Label)
        request = message.request
        code = message.returncode
        mark, said, failed = ending(code)
        if code == ExitCode.WAITING:
            said += "; answer it (a) to go on"
        elif code == ExitCode.BUDGET:
            said += "; resume (e) with a larger budget to go on"
        elif code == EXIT_INTERRUPTED or (self.cancelled and failed):
            mark, said = "■", "cancelled; resume (e) from its last checkpoint to go on"
        cut = code == EXIT_INTERRUPTED or (self.cancelled and failed)  # stopped half-way, as a failure is
        self.add_class("-ok" if code == 0 else "-failed" if failed or cut else "-paused")
        title.update(Text(visible(f"{mark} {request.title}: {said}", one_line=True)))
        if message.error:  # the run's last word on stderr: red only when it failed
            self.query_one(RichLog).write(Text(visible(message.error), style="red" if failed else "yellow"))


def _label(record: ProgressRecord) -> str:
    return visible(record.step_label, one_line=True)


def _drain(process: subprocess.Popen[str], into: list[str]) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        into.append(line.rstrip("\n"))
        del into[:-50]
