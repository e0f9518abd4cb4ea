"""Run heartbeats: a small record per running run (pid, host, start, last beat, status) kept in the store.

A run beats every few seconds while it goes and writes its final status when it ends, so readers can tell
running, finished, failed, interrupted and crashed runs apart: a run of this host still marked ``running``
whose beat is stale, or whose process is gone, has crashed. A stale beat from another host reads ``lost``:
from here it cannot be told whether the run died or its host went quiet, until that host reports (a store
shared by hosts records ``crashed`` when a reader on the run's own host finds its process gone).

Each provider keeps run records its own way (a JSON store: one small file per run under ``.runs/``; a SQLite
store: a ``runs`` table); :func:`read_runs` and :func:`write_run` go through the provider of a location.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

from crewpoint.providers import provider_for
from crewpoint.providers.files import pid_alive

BEAT_INTERVAL = 2.0
"""Seconds between beats."""

STALE_AFTER = 3 * BEAT_INTERVAL + 4.0
"""A ``running`` run whose last beat is older than this has crashed."""

STATUSES = ("running", "finished", "failed", "interrupted", "crashed", "waiting", "answered", "budget")
"""What a run record can hold: ``waiting`` is a run that stopped to wait for a person's feedback (its newest
checkpoint holds the request), ``answered`` a waiting run whose request someone has answered since (the answer
goes on in a new run), ``budget`` a run that stopped at its budget (its newest checkpoint, trigger
``budget_exceeded``, is where a resume with a larger budget goes on)."""


@dataclass(frozen=True, slots=True)
class RunInfo:
    run_id: str
    pid: int
    host: str
    started_at: float
    last_beat: float
    status: str = "running"
    branch: str = "main"
    lineage: str = ""
    entity_kind: str = ""
    entity_name: str = ""
    checkpoint_id: str | None = None

    def beat(self, **changes: Any) -> RunInfo:
        return replace(self, last_beat=time.time(), **changes)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunInfo:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


def this_host() -> str:
    import socket  # here: a listing with no run records never asks, and socket costs a listing's import time

    return socket.gethostname()


def classify(run: RunInfo, now: float | None = None, host: str | None = None) -> str:
    """The run's state as a reader sees it: a ``running`` record can turn out ``crashed`` (this host) or
    ``lost`` (a stale beat from another host)."""
    if run.status != "running":
        return run.status
    now = time.time() if now is None else now
    here = run.host == (host or this_host())
    if now - run.last_beat > STALE_AFTER:
        return "crashed" if here else "lost"
    if here and not pid_alive(run.pid):
        return "crashed"
    return "running"


def run_from_dict(data: object) -> RunInfo | None:
    """A run record from stored data, or ``None`` when it is not one (a damaged record is skipped)."""
    if not isinstance(data, dict):
        return None
    try:
        run = RunInfo.from_dict(data)
    except TypeError:
        return None
    types = (
        isinstance(run.run_id, str)
        and type(run.pid) is int
        and isinstance(run.host, str)
        and type(run.started_at) in (int, float)
        and type(run.last_beat) in (int, float)
        and run.status in STATUSES
        and isinstance(run.branch, str)
        and isinstance(run.lineage, str)
        and (run.checkpoint_id is None or isinstance(run.checkpoint_id, str))
    )
    return run if types else None


def write_run(location: str, run: RunInfo) -> None:
    """Record ``run`` in the store at ``location``, through the provider that owns it."""
    provider_for(location).write_run(location, run)


def read_runs(location: str) -> list[RunInfo]:
    """Every run recorded in the store at ``location``, newest start first (through its provider)."""
    try:
        return provider_for(location).read_runs(location)
    except Exception:  # run records are a convenience: a store that cannot tell has none
        return []
