"""The background checkpoint writer: captures are handed over here and written in order, best effort."""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from crewpoint.checkpoint.record import with_parent
from crewpoint.providers.base import BaseProvider, CheckpointRecord

log = logging.getLogger("crewpoint.checkpoint")

Done = Callable[[str | None, BaseException | None], None]


@dataclass(slots=True)
class _Job:
    provider: BaseProvider
    location: str
    record: CheckpointRecord
    done: Done | None


class BackgroundWriter:
    """One daemon thread writing checkpoint records in FIFO order. ``flush`` waits for all queued writes."""

    def __init__(self) -> None:
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.written = 0
        self.failed = 0
        self._used: list[BaseProvider] = []
        self._lost: dict[str, str | None] = {}  # a checkpoint that could not be written -> the parent it named

    def submit(
        self,
        provider: BaseProvider,
        location: str,
        record: CheckpointRecord,
        done: Done | None,
    ) -> None:
        """Queue ``record``; ``done`` is told the reference written or the error. A record whose parent could not
        be written names, when its turn comes, the parent that one named instead (the newest written before it),
        so the chain never names a missing parent."""
        self._ensure_thread()
        self._queue.put(_Job(provider, location, record, done))

    def flush(self, timeout: float | None = 30.0) -> None:
        """Block until every queued write has been attempted."""
        if self._thread is None or threading.current_thread() is self._thread:
            return
        finished = threading.Event()
        self._markers.append(finished)
        self._queue.put(None)
        finished.wait(timeout)

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._markers: list[threading.Event] = []
                self._thread = threading.Thread(target=self._loop, name="crewpoint-writer", daemon=True)
                self._thread.start()

    def _loop(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                for provider in self._used:
                    try:
                        provider.flush()
                    except Exception as exc:
                        log.warning("flushing checkpoints failed: %s", exc)
                self._used.clear()
                if self._markers:
                    self._markers.pop(0).set()
                continue
            if not any(p is job.provider for p in self._used):
                self._used.append(job.provider)
            ref: str | None = None
            error: BaseException | None = None
            parent = job.record.meta.parent_id
            if parent is not None and parent in self._lost:
                job.record = with_parent(job.record, self._lost[parent])
            try:
                ref = job.provider.write(job.location, job.record)
                self.written += 1
            except Exception as exc:  # best effort: log, count, go on
                error = exc
                self.failed += 1
                self._lost[job.record.meta.id] = job.record.meta.parent_id
                log.warning("checkpoint %s was not written: %s", job.record.meta.id[:12], exc)
            if job.done is not None:
                try:
                    job.done(ref, error)
                except Exception:
                    log.exception("checkpoint completion hook failed")


writer = BackgroundWriter()
atexit.register(writer.flush)
