"""Progress of a resumed or forked run, fed by the event bus: a Rich display on stderr, or JSON lines on stdout.

The JSON stream (``--progress json``) is what the terminal app reads from a run it starts as a subprocess:
one object per line, each with an ``"event"`` key:

* ``started``: ``source`` (checkpoint id), ``fork``, ``branch``, ``kind``, ``name``, ``store``, ``tasks``
  (names in order), ``rerun`` (0-based indexes of the tasks that will run);
* one line per event of interest (``task_started``, ``task_completed``, ``method_execution_finished``,
  ``llm_call_started``, ``checkpoint_completed``, ...) with ``task_index`` (0-based) and ``task_name`` when
  the event concerns a task, ``checkpoint_id`` (the newest checkpoint of the run, or for ``checkpoint_*``
  events the one written), ``branch``, and a shortened ``output``, ``result`` or ``error`` when there is one;
* last, ``finished`` (``result``, ``checkpoint_id``, ``branch``), ``failed`` (``error``) or ``interrupted``.

This module loads rich only for the Rich display and never loads textual.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import sys
import threading
from types import TracebackType
from typing import IO, TYPE_CHECKING, Any

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
    from crewpoint.flow import to_jsonable

    return to_jsonable(result)


class RunProgress:
    """Subscribes to the event bus while the run is inside ``with``; subclasses decide how to show it.

    Handlers only queue a summary of each event; one printer thread shows them in order. Events arrive on the
    run's thread and on the checkpoint writer's thread, and a signal handler may run on the run's thread at
    any moment and wait for the writer: nothing here may hold a lock the writer's thread needs.
    """

    def __init__(self, run: PreparedRun) -> None:
        self.run = run
        self._queue: queue.SimpleQueue[dict[str, Any] | None] = queue.SimpleQueue()
        self._printer: threading.Thread | None = None

    def __enter__(self) -> RunProgress:
        from crewpoint.events import event_bus

        self._printer = threading.Thread(target=self._drain, name="crewpoint-progress", daemon=True)
        self._printer.start()
        self.post(self.started_record())
        for name in WATCHED:
            event_bus.register(name, self._on_event)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        from crewpoint.events import event_bus

        event_bus.off(self._on_event)
        self.close()

    def post(self, record: dict[str, Any]) -> None:
        self._queue.put(record)

    def _drain(self) -> None:
        while True:
            record = self._queue.get()
            if record is None:
                return
            try:
                self.show(record)
            except Exception:  # a display problem must never stop the run
                log.exception("progress display failed on %s", record.get("event"))

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

    def record(self, event: BaseEvent) -> dict[str, Any]:
        """The JSON-ready summary of ``event``."""
        from crewpoint.checkpoint.ops import short

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
        return out

    def started_record(self) -> dict[str, Any]:
        run = self.run
        return {
            "event": "started",
            "source": run.source.id,
            "fork": run.fork,
            "branch": run.branch,
            "kind": run.kind,
            "name": run.source.entity_name,
            "store": os.path.abspath(run.store),
            "tasks": run.task_names,
            "rerun": run.plan.rerun,
            "checkpoint_id": run.latest_id,
        }

    def finished(self, result: Any) -> None:
        record = {"event": "finished", "result": result_text(result)}
        self.post({**record, "checkpoint_id": self.run.latest_id, "branch": self.run.branch})
        self.close()

    def failed(self, error: BaseException) -> None:
        message = " ".join(str(error).split()) or type(error).__name__
        self.post({"event": "failed", "error": message, "checkpoint_id": self.run.latest_id, "branch": self.run.branch})
        self.close()

    def interrupted(self) -> None:
        self.post({"event": "interrupted", "checkpoint_id": self.run.latest_id, "branch": self.run.branch})
        self.close()

    # what subclasses do
    def show(self, record: dict[str, Any]) -> None:
        """Show one record; runs on the printer thread."""

    def stop(self) -> None:
        """Stop the display; runs on the caller's thread after every record was shown."""


class JsonProgress(RunProgress):
    """One JSON object per line on ``stream`` (stdout), flushed at once."""

    def __init__(self, run: PreparedRun, stream: IO[str] | None = None) -> None:
        super().__init__(run)
        self.stream = stream if stream is not None else sys.stdout

    def show(self, record: dict[str, Any]) -> None:
        self.stream.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self.stream.flush()


class RichProgress(RunProgress):
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
        if run.kind == "crew":
            total = len(run.task_ids)
            return total - len(run.plan.rerun), total
        return run.source.tasks_done, run.source.tasks_total

    def line(self, *parts: tuple[str, str]) -> None:
        from rich.text import Text

        self.progress.console.print(Text.assemble(*parts), soft_wrap=True)

    def show(self, record: dict[str, Any]) -> None:
        kind = record["event"]
        label = self._label(record)
        if kind == "started":
            self._started()
        elif kind in ("task_started", "method_execution_started", "lite_agent_execution_started"):
            self.progress.update(self.bar, description=label or kind)
        elif kind in ("task_completed", "method_execution_finished", "lite_agent_execution_completed"):
            self.done += 1
            self.progress.update(self.bar, completed=min(self.done, self.total) if self.total else self.done)
            text = record.get("output") or record.get("result") or ""
            self.line(("✓ ", "green"), (label or kind, "bold"), ("  ", ""), (_clip(str(text), 100), "dim"))
        elif kind in ("task_failed", "method_execution_failed", "lite_agent_execution_error"):
            self.line(("✗ ", "red"), (label or kind, "bold"), ("  ", ""), (str(record.get("error", "")), "red"))
        elif kind == "checkpoint_completed":
            checkpoint = str(record.get("checkpoint_id") or "")[:12]
            self.line(("  checkpoint ", "dim"), (checkpoint, "cyan"), (f" {record.get('trigger') or ''}", "dim"))
        elif kind == "checkpoint_failed":
            self.line(("  checkpoint not written: ", "yellow"), (str(record.get("error", "")), "yellow"))
        elif kind == "finished":
            self.progress.stop()
            where = f"  branch {record['branch']}, latest checkpoint "
            self.line(("done", "green bold"), (where, ""), (str(record["checkpoint_id"])[:12], "cyan"))
        elif kind in ("failed", "interrupted"):
            self.progress.stop()

    def _started(self) -> None:
        run = self.run
        verb, where = ("forking", "onto") if run.fork else ("resuming", "on")
        self.line(
            (
                f"{verb} {run.kind} {run.source.entity_name} from {run.source.id[:12]} {where} branch {run.branch}",
                "bold",
            )
        )
        if run.kind == "crew":
            names = run.task_names
            todo = ", ".join(f"{i + 1}. {names[i]}" for i in run.plan.rerun) or "nothing: every task is done"
            self.line(("to run: ", "dim"), (todo, ""))
        self.progress.start()

    def _label(self, record: dict[str, Any]) -> str:
        index = record.get("task_index")
        name = record.get("task_name") or ""
        return f"{index + 1}. {name}" if isinstance(index, int) else str(name)

    def stop(self) -> None:
        if self.progress.live.is_started:
            self.progress.stop()


def _clip(text: str, width: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def make_progress(mode: str, run: PreparedRun) -> RunProgress:
    """``"json"`` → :class:`JsonProgress`, ``"none"`` → silent, anything else → :class:`RichProgress`."""
    if mode == "json":
        return JsonProgress(run)
    if mode == "none":
        return RunProgress(run)
    return RichProgress(run)
