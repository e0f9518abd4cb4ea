"""Progress of a resumed or forked run, fed by the event bus: a Rich display on stderr, or JSON lines on stdout.

The JSON stream (``--progress json``) is what the terminal app reads from a run it starts as a subprocess; its
records are :class:`crewpoint.tui.run_protocol.ProgressRecord` (the module documents them). A reader that goes
away (``| head``) ends the stream quietly; the run goes on and checkpoints as usual.

This module loads rich only for the Rich display and never loads textual.
"""

from __future__ import annotations

import logging
import os
import queue
import sys
import threading
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

from crewpoint.checkpoint.ops import short
from crewpoint.entities import kind_of
from crewpoint.events import event_bus
from crewpoint.flow import to_jsonable
from crewpoint.providers.refs import short_id
from crewpoint.text import clip
from crewpoint.tui import run_protocol as protocol
from crewpoint.tui.progress_view import ProgressView
from crewpoint.tui.run_protocol import ProgressRecord
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.ops import PreparedRun
    from crewpoint.events.base import BaseEvent
    from crewpoint.runtime import RuntimeState

WATCHED = (
    "crew_kickoff_started",
    "crew_kickoff_completed",
    "crew_kickoff_failed",
    "task_started",
    "task_completed",
    "task_failed",
    "flow_started",
    "flow_finished",
    "method_execution_started",
    "method_execution_finished",
    "method_execution_failed",
    "lite_agent_execution_started",
    "lite_agent_execution_completed",
    "lite_agent_execution_error",
    "llm_call_started",
    "tool_usage_started",
    "checkpoint_completed",
    "checkpoint_failed",
)
OUTPUT_WIDTH = 200
log = logging.getLogger("crewpoint.progress")


def result_text(result: Any) -> Any:
    """A JSON-ready form of a run's result: a crew's or agent's text, a flow's last output."""
    raw = getattr(result, "raw", None)
    if isinstance(raw, str):
        return raw

    return to_jsonable(result)


class RunProgress:
    """Subscribes to the event bus while the run is inside ``with``; subclasses decide how to show it.

    Handlers only queue a summary of each event; one printer thread shows them in order. Events arrive on the
    run's thread and on the checkpoint writer's thread, and a signal handler may run on the run's thread at
    any moment and wait for the writer: nothing here may hold a lock the writer's thread needs.
    """

    def __init__(self, run: PreparedRun) -> None:
        self.run = run
        self._queue: queue.SimpleQueue[ProgressRecord | None] = queue.SimpleQueue()
        self._printer: threading.Thread | None = None
        self._taken: str | None = None

    def __enter__(self) -> RunProgress:
        self._printer = threading.Thread(target=self._drain, name="crewpoint-progress", daemon=True)
        self._printer.start()
        self._taken = self.run.latest_id
        self.post(self.started_record())
        for name in WATCHED:
            event_bus.register(name, self._on_event)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        event_bus.off(self._on_event)
        self.close()

    def post(self, record: ProgressRecord) -> None:
        self._queue.put(record)

    def _drain(self) -> None:
        while True:
            record = self._queue.get()
            if record is None:
                return
            try:
                self.show(record)
            except Exception:  # a display problem must never stop the run
                log.exception("progress display failed on %s", record.event)

    def close(self) -> None:
        """Show everything queued, then stop the display. Safe to call twice."""
        printer, self._printer = self._printer, None
        if printer is not None:
            self._queue.put(None)
            printer.join(timeout=10)
        self.stop()

    def _on_event(self, source: Any, event: BaseEvent, state: RuntimeState | None) -> None:
        runtime = self.run.state
        if event.type.startswith("checkpoint_"):
            if source is not runtime:
                return  # written by another run in this process
        elif state is not None and runtime is not None and state is not runtime:
            return
        self.post(self.record(event))
        latest = self.run.latest_id
        if not event.type.startswith("checkpoint_") and latest != self._taken:
            self._taken = latest  # this event took a checkpoint: say so now, before the next step starts
            self.post(
                ProgressRecord(protocol.CHECKPOINT, checkpoint_id=latest, branch=self.run.branch, trigger=event.type)
            )

    def record(self, event: BaseEvent) -> ProgressRecord:
        """The summary of ``event``."""
        out: dict[str, Any] = {"event": event.type}
        task_id = event.task_id
        name = getattr(event, "task_name", None) or getattr(event, "method_name", None)
        if task_id and task_id in self.run.task_ids:
            out["task_index"] = index = self.run.task_ids.index(task_id)
            name = name or self.run.task_names[index]
        if name:
            out["task_name"] = name
        if event.type.startswith("checkpoint_"):
            out["checkpoint_id"] = getattr(event, "checkpoint_id", None)
            out["branch"] = getattr(event, "branch", None) or self.run.branch
            for key in ("location", "trigger"):
                if getattr(event, key, None):
                    out[key] = getattr(event, key)
        else:
            out["checkpoint_id"] = self.run.latest_id
            out["branch"] = self.run.branch
        for key in ("output", "result", "error"):
            value = getattr(event, key, None)
            if value is not None:
                out[key] = short(value, OUTPUT_WIDTH)
        role = getattr(event, "agent_role", None)
        if role:
            out["agent"] = role
        return ProgressRecord.from_dict(out)

    def started_record(self) -> ProgressRecord:
        run = self.run
        return ProgressRecord(
            protocol.STARTED,
            source=run.source.id,
            fork=run.fork,
            branch=run.branch,
            kind=run.kind,
            name=run.source.entity_name,
            store=os.path.abspath(run.store),
            tasks=list(run.task_names),
            rerun=list(run.plan.rerun),
            checkpoint_id=run.latest_id,
        )

    def finished(self, result: Any) -> None:
        # lazy: the engine's feedback module is loaded by the run that just ended; list and info never need it
        from crewpoint.feedback import FeedbackPending

        run = self.run
        if isinstance(result, FeedbackPending):  # the run waits for a person: not done; the record says how to answer
            post = ProgressRecord(protocol.WAITING, text=result.command, checkpoint_id=run.latest_id, branch=run.branch)
            self.post(post)
        else:
            self.post(
                ProgressRecord(
                    protocol.FINISHED, result=result_text(result), checkpoint_id=run.latest_id, branch=run.branch
                )
            )
        self.close()

    def failed(self, error: BaseException) -> None:
        message = " ".join(str(error).split()) or type(error).__name__
        self.post(
            ProgressRecord(protocol.FAILED, error=message, checkpoint_id=self.run.latest_id, branch=self.run.branch)
        )
        self.close()

    def stopped_at_budget(self, spent: str) -> None:
        """The run stopped at its budget (``spent``: what it spent of it): not a failure, and said as such."""
        run = self.run
        post = ProgressRecord(protocol.STOPPED_AT_BUDGET, text=spent, checkpoint_id=run.latest_id, branch=run.branch)
        self.post(post)
        self.close()

    def interrupted(self) -> None:
        self.post(ProgressRecord(protocol.INTERRUPTED, checkpoint_id=self.run.latest_id, branch=self.run.branch))
        self.close()

    # what subclasses do
    def show(self, record: ProgressRecord) -> None:
        """Show one record; runs on the printer thread."""

    def stop(self) -> None:
        """Stop the display; runs on the caller's thread after every record was shown."""


class JsonProgress(RunProgress):
    """One JSON object per line on ``stream`` (stdout), flushed at once."""

    def __init__(self, run: PreparedRun, stream: IO[str] | None = None) -> None:
        super().__init__(run)
        self.stream = stream if stream is not None else sys.stdout
        self.closed = False
        """The reader went away: nothing more is written (the run goes on)."""

    def show(self, record: ProgressRecord) -> None:
        if self.closed:
            return
        try:
            self.stream.write(record.to_json() + "\n")
            self.stream.flush()
        except BrokenPipeError:
            self.closed = True
            _quiet_stdout(self.stream)


class RichProgress(RunProgress, ProgressView):
    """A progress bar of the tasks with a line per finished task, on stderr. Text from the run is shown
    literally (never parsed as markup); colours follow NO_COLOR and whether stderr is a terminal."""

    def __init__(self, run: PreparedRun) -> None:
        super().__init__(run)
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True, highlight=False)
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}", markup=False),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.console,
            transient=True,
        )
        self.done, self.total = self._initial()
        self.bar = self.progress.add_task("starting", total=self.total or None, completed=self.done)

    def _initial(self) -> tuple[int, int]:
        run = self.run
        if kind_of(run.kind).has_tasks:
            total = len(run.task_ids)
            return total - len(run.plan.rerun), total
        return run.source.tasks_done, run.source.tasks_total

    def line(self, *parts: tuple[str, str]) -> None:
        from rich.text import Text

        self.progress.console.print(Text.assemble(*((visible(t), style) for t, style in parts)), soft_wrap=True)

    def show(self, record: ProgressRecord) -> None:
        self.draw(record)

    def draw_started(self, record: ProgressRecord) -> None:
        self._started()

    def draw_step_started(self, record: ProgressRecord) -> None:
        self.progress.update(self.bar, description=visible(record.step_label or record.event, one_line=True))

    def draw_step_done(self, record: ProgressRecord) -> None:
        self.done += 1
        self.progress.update(self.bar, completed=min(self.done, self.total) if self.total else self.done)
        text = record.output or record.result or ""
        label = record.step_label or record.event
        self.line(("✓ ", "green"), (label, "bold"), ("  ", ""), (clip(text, 100), "dim"))

    def draw_step_failed(self, record: ProgressRecord) -> None:
        label = record.step_label or record.event
        self.line(("✗ ", "red"), (label, "bold"), ("  ", ""), (record.error or "", "red"))

    def draw_checkpoint(self, record: ProgressRecord) -> None:
        checkpoint = _shown_id(record.checkpoint_id or "")
        self.line(("  checkpoint ", "dim"), (checkpoint, "cyan"), (f" {record.trigger or ''}", "dim"))

    def draw_write_failed(self, record: ProgressRecord) -> None:
        self.line(("  checkpoint not written: ", "yellow"), (record.error or "", "yellow"))

    def draw_finished(self, record: ProgressRecord) -> None:
        self.progress.stop()
        where = f"  branch {record.branch}, latest checkpoint "
        self.line(("done", "green bold"), (where, ""), (_shown_id(record.checkpoint_id or ""), "cyan"))

    def draw_waiting(self, record: ProgressRecord) -> None:
        self.progress.stop()
        where = f"  branch {record.branch}, at checkpoint "
        self.line(("waiting", "yellow bold"), (where, ""), (_shown_id(record.checkpoint_id or ""), "cyan"))

    def draw_stopped(self, record: ProgressRecord) -> None:
        self.progress.stop()
        where = f"  {record.text or ''}; branch {record.branch}, at checkpoint "
        self.line(("stopped at budget", "yellow bold"), (where, ""), (_shown_id(record.checkpoint_id or ""), "cyan"))

    def draw_cut_short(self, record: ProgressRecord) -> None:
        self.progress.stop()

    def _started(self) -> None:
        run = self.run
        verb, where = ("forking", "onto") if run.fork else ("resuming", "on")
        source = _shown_id(run.source.id)
        self.line((f"{verb} {run.kind} {run.source.entity_name} from {source} {where} branch {run.branch}", "bold"))
        kind = kind_of(run.kind)
        if kind.has_tasks:
            names = run.task_names
            todo = ", ".join(f"{i + 1}. {names[i]}" for i in run.plan.rerun) or f"nothing: every {kind.unit} is done"
            self.line(("to run: ", "dim"), (todo, ""))
        self.progress.start()

    def stop(self) -> None:
        if self.progress.live.is_started:
            self.progress.stop()


def _quiet_stdout(stream: IO[str]) -> None:
    """After the reader of stdout went away: point it at /dev/null, so nothing (not even the flush at exit)
    fails on it again."""
    try:
        if stream is sys.stdout:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _shown_id(checkpoint_id: str) -> str:
    """An id as the command line shows it (the one rule: :func:`crewpoint.providers.refs.short_id`)."""
    return short_id(checkpoint_id, 12, typeable=True)


def make_progress(mode: str, run: PreparedRun) -> RunProgress:
    """``"json"`` → :class:`JsonProgress`, ``"none"`` → silent, anything else → :class:`RichProgress`."""
    if mode == "json":
        return JsonProgress(run)
    if mode == "none":
        return RunProgress(run)
    return RichProgress(run)
