"""Run heartbeats: a small record per running run (pid, host, start, last beat, status) kept in the store.

A run beats every few seconds while it goes and writes its final status when it ends, so readers can tell
running, finished, failed, interrupted and crashed runs apart: a run still marked ``running`` whose beat is
stale, or whose process is gone from this host, has crashed.

JSON stores keep one small file per run under ``<location>/.runs/``; SQLite stores keep a ``runs`` table.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from dataclasses import asdict, dataclass, replace
from typing import Any

BEAT_INTERVAL = 2.0
"""Seconds between beats."""

STALE_AFTER = 3 * BEAT_INTERVAL + 4.0
"""A ``running`` run whose last beat is older than this has crashed."""

STATUSES = ("running", "finished", "failed", "interrupted", "crashed")


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
    return socket.gethostname()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def classify(run: RunInfo, now: float | None = None, host: str | None = None) -> str:
    """The run's state as a reader sees it: a ``running`` record can turn out ``crashed``."""
    if run.status != "running":
        return run.status
    now = time.time() if now is None else now
    if now - run.last_beat > STALE_AFTER:
        return "crashed"
    if run.host == (host or this_host()) and not _pid_alive(run.pid):
        return "crashed"
    return "running"


def _is_sqlite(location: str) -> bool:
    from crewpoint.providers import is_sqlite_location

    return is_sqlite_location(location)


_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, pid INTEGER, host TEXT, started_at REAL, "
    "last_beat REAL, status TEXT, branch TEXT, lineage TEXT, entity_kind TEXT, entity_name TEXT, checkpoint_id TEXT)"
)


def write_run(location: str, run: RunInfo, sqlite: bool | None = None) -> None:
    """Record ``run`` in the store at ``location`` (atomically replacing its previous beat). ``sqlite`` says the
    store's kind when the caller knows it (a store nothing has been written to yet cannot be sniffed)."""
    if sqlite if sqlite is not None else _is_sqlite(location):
        from crewpoint.providers import split_ref

        path = split_ref(location)[0]
        if not os.path.exists(path):
            return  # the store is made by the first checkpoint, not by a heartbeat
        con = sqlite3.connect(path, timeout=10)
        try:
            con.execute(_SCHEMA)
            fields = asdict(run)
            names = ", ".join(fields)
            marks = ", ".join("?" for _ in fields)
            con.execute(f"INSERT OR REPLACE INTO runs ({names}) VALUES ({marks})", list(fields.values()))
            con.commit()
        finally:
            con.close()
        return
    folder = os.path.join(location, ".runs")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    target = os.path.join(folder, f"{run.run_id}.json")
    temp = f"{target}.{os.getpid()}.tmp"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(asdict(run), handle)
    os.replace(temp, target)


def read_runs(location: str) -> list[RunInfo]:
    """Every run recorded in the store, newest start first. A store without runs gives an empty list."""
    runs: list[RunInfo] = []
    if _is_sqlite(location):
        from crewpoint.providers import split_ref

        path = split_ref(location)[0]
        if not os.path.exists(path):
            return []
        try:
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
        except sqlite3.Error:
            return []
        try:
            con.row_factory = sqlite3.Row
            rows = con.execute("SELECT * FROM runs").fetchall()
            runs = [RunInfo.from_dict(dict(row)) for row in rows]
        except sqlite3.Error:
            return []
        finally:
            con.close()
    else:
        folder = os.path.join(location, ".runs")
        try:
            names = os.listdir(folder)
        except OSError:
            return []
        for name in names:
            if not name.endswith(".json"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    runs.append(RunInfo.from_dict(json.load(handle)))
            except (OSError, ValueError, TypeError):
                continue
    runs.sort(key=lambda r: r.started_at, reverse=True)
    return runs
