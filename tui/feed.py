"""The store feed: reading a store's checkpoints and run records off the app's thread, as messages.

The screen's workers call :func:`read_store` and :func:`read_runs_of`; :class:`StoreReader` reads
first, while the app is drawn. Nothing here touches a widget.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future

from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.runs import read_runs
from crewpoint.tui.messages import RunsRead, StoreListed
from crewpoint.tui.store_index import StoreIndex, waiting_requests


def read_store(location: str, query: str = "") -> StoreListed:
    """The store's metadata and its grouping (``query`` filters); run records are read next, by :func:`read_runs_of`."""
    started = time.monotonic()
    try:
        store = ops.find_store(location)
        metas = ops.list_checkpoints(store)
    except CheckpointError as exc:
        return StoreListed(location, error=str(exc), read_at=started)
    return StoreListed(location, metas, StoreIndex.build(metas, query), None, read_at=started)


EARLY_ROWS = 500
"""A store with more checkpoints than this shows its newest ones first, while the rest is read."""


def read_newest(location: str) -> StoreListed | None:
    """The newest :data:`EARLY_ROWS` checkpoints of a big store that can tell them cheaply, else None."""
    started = time.monotonic()
    try:
        metas = ops.newest_checkpoints(location, EARLY_ROWS)
    except CheckpointError:
        return None
    if metas is None or len(metas) < EARLY_ROWS:
        return None
    return StoreListed(location, metas, StoreIndex.build(metas, ""), None, read_at=started, partial=True)


def read_runs_of(location: str, read_at: float) -> RunsRead:
    """The store's run records, each request waiting once as ``list`` shows them (:func:`waiting_requests`); none
    when they cannot be read (they only add a mark to a branch)."""
    try:
        store = ops.find_store(location)
        runs, _ = waiting_requests(store, read_runs(store))
    except Exception:
        runs = []
    return RunsRead(runs, read_at)


class StoreReader:
    """Reads a store in a thread of its own, started by :meth:`start` as the app loads, so the app is drawn
    meanwhile: its checkpoints first, then, once the screen has drawn them (``shown``), its run records. The screen
    takes each result when it is up. ``make_app`` makes it; the app starts it."""

    def __init__(self, location: str) -> None:
        self.early: Future[StoreListed | None] = Future()
        self.listed: Future[StoreListed] = Future()
        self.runs: Future[RunsRead] = Future()
        self.shown = threading.Event()
        self.location = location
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Begin reading (once)."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._read, name="crewpoint-read-store", daemon=True)
            self._thread.start()

    def _read(self) -> None:
        try:
            early = read_newest(self.location)
        except Exception:
            early = None
        self.early.set_result(early)
        try:
            listed = read_store(self.location)
        except Exception as exc:
            listed = StoreListed(self.location, error=f"cannot read the store: {exc}")
        self.listed.set_result(listed)
        self.shown.wait(timeout=2.0)
        self.runs.set_result(read_runs_of(self.location, listed.read_at))
