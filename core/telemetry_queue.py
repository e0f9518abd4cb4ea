"""Around the span maker (:mod:`crewpoint.telemetry_spans`): from a run's thread to the thread that makes its spans,
and from there to the collector.

The run's thread only puts what an event's moment knows onto a bounded queue (:meth:`Handoff.put`: the few things it
reads of the run, :func:`role_of` and :func:`asked_in_history` among them); spans are opened, ended and exported on a
thread of their own, in the order the events came. A full queue drops what does not fit and says so once, in one
warning, as :class:`OnceExporter` says a collector that cannot be reached: the run never waits for its traces.
"""

from __future__ import annotations

import logging
import queue
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

if TYPE_CHECKING:
    from collections.abc import Sequence

    from crewpoint.runtime import RuntimeState

log = logging.getLogger("crewpoint.telemetry")

_STOP = object()
_ASKED = {"human_feedback_received": "human_feedback_requested", "flow_input_received": "flow_input_requested"}
_ASKED_BY = {"human_feedback_requested": "request_id", "flow_input_requested": "method_name"}


class Handoff:
    """Items put on the run's thread, handed to ``handle`` one by one on a daemon thread of their own."""

    def __init__(self, handle: Callable[[Any], None], size: int) -> None:
        self._handle = handle
        self._size = size
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._warned = False
        self._thread = threading.Thread(target=self._work, name="crewpoint-spans", daemon=True)
        self._thread.start()

    def put(self, item: Any, must: bool = False) -> None:
        """Queue ``item``; when the queue is full it is dropped (said once), unless the run's end ``must`` go."""
        if not must and self._queue.qsize() >= self._size:
            if not self._warned:
                self._warned = True
                log.warning(
                    "traces are missing spans: %d events wait to become spans already; the run goes on", self._size
                )
            return
        self._queue.put(item)

    def _work(self) -> None:
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            if isinstance(item, threading.Event):
                item.set()
                continue
            try:
                self._handle(item)
            except Exception:  # a span never stops the thread that makes them
                log.debug("no span for %r", item, exc_info=True)

    def drain(self, timeout_s: float) -> bool:
        """Wait until what was put before this call became spans; False when it took longer than ``timeout_s``."""
        if not self._thread.is_alive():
            return True
        done = threading.Event()
        self._queue.put(done)
        return done.wait(timeout_s)

    def stop(self, timeout_s: float) -> None:
        """Make spans of what is queued, then end the thread."""
        self.drain(timeout_s)
        self._queue.put(_STOP)
        self._thread.join(timeout_s)


class OnceExporter(SpanExporter):
    """The OTLP exporter, saying once (in one warning) that spans could not be sent, and again once they go."""

    def __init__(self, inner: SpanExporter, where: str) -> None:
        self.inner = inner
        self.where = where
        self.failing = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception:  # a failing collector never reaches the run
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS and not self.failing:
            self.failing = True
            log.warning(
                "traces could not be sent to %s: is the collector running? The run goes on; its spans are dropped",
                self.where,
            )
        elif result is SpanExportResult.SUCCESS:
            self.failing = False
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self.inner.force_flush(timeout_millis)


def role_of(crew: Any, task_id: object) -> str | None:
    """The role of the agent the crew gives its task ``task_id`` (a task's events name the task only)."""
    for task in getattr(crew, "tasks", None) or ():
        if getattr(task, "id", None) == task_id:
            role = getattr(getattr(task, "agent", None), "role", None)
            return role if isinstance(role, str) else None
    return None


def asked_in_history(state: RuntimeState, kind: str, key: str) -> float | None:
    """When the request ``key`` was made, from the run's event history (asked by the run that waited)."""
    wanted = _ASKED[kind]
    field_name = _ASKED_BY[wanted]
    for item in reversed(state.events.compacts()):
        if item.get("type") == wanted and str(item.get(field_name)) == key:
            stamp = item.get("timestamp")
            return float(stamp) if isinstance(stamp, int | float) else None
    return None
