"""The background checkpoint writer: captures are handed over here and written in order, best effort."""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass

from crewpoint.providers.base import BaseProvider, CheckpointRecord

log = logging.getLogger("crewpoint.checkpoint")

Done = Callable[[str | None, BaseException | None], None]
Prepare = Callable[[CheckpointRecord], CheckpointRecord]


@dataclass(slots=True)
class _Job:
    provider: BaseProvider
    location: str
    record: CheckpointRecord
    done: Done | None
    prepare: Prepare | None = None


class BackgroundWriter:
    """One daemon thread writing checkpoint records in FIFO order. ``flush`` waits for all queued writes."""

    def __init__(self) -> None:
        self._queue: queue.Queue[_Job | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self.written = 0
        self.failed = 0
        self._used: list[BaseProvider] = []

    def submit(
        self,
        provider: BaseProvider,
        location: str,
        record: CheckpointRecord,
        done: Done | None,
        prepare: Prepare | None = None,
    ) -> None:
        """Queue ``record``; ``prepare`` may adjust it just before it is written (after every earlier write of
        the queue finished), ``done`` is told the reference written or the error."""
        self._ensure_thread()
        self._queue.put(_Job(provider, location, record, done, prepare))

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
            try:
                if job.prepare is not None:
                    job.record = job.prepare(job.record)
                ref = job.provider.write(job.location, job.record)
                self.written += 1
            except Exception as exc:  # best effort: log, count, go on
                error = exc
                self.failed += 1
                log.warning("checkpoint %s was not written: %s", job.record.meta.id[:12], exc)
            if job.done is not None:
                try:
                    job.done(ref, error)
                except Exception:
                    log.exception("checkpoint completion hook failed")


writer = BackgroundWriter()
atexit.register(writer.flush)
