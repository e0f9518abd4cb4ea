"""CrewAI's SQLite store, read-only: ``checkpoints(id, created_at, parent_id, branch, data JSONB)``.

``data`` is a SQLite JSONB blob: turning it into JSON needs SQLite 3.45 or newer (``json(data)``). Python 3.11
ships 3.40, so crewpoint reads these stores through ``apsw`` (installed by ``pip install 'crewpoint[crewai]'``),
which bundles a current SQLite; a stdlib SQLite that is new enough is used as it is. Without either, listing
and reading say what to install.

Rows are never changed by CrewAI (only added and pruned), so what a listing learns from a row's body is kept
by id and length; a live view reads only new rows.
"""

from __future__ import annotations

import builtins
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointError,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
)
from crewpoint.providers.crewai.common import parse_json, parse_stamp, to_body
from crewpoint.providers.crewai.listing import Entry, Facts, LazyListing, ListsLazily, describe_dump, entity_facts
from crewpoint.providers.refs import split_ref
from crewpoint.providers.watch import WatchSpec, database_spec

JSONB_VERSION = (3, 45, 0)
_WATCHED = 8
"""Stores a provider keeps a connection open on, to tell cheaply whether they changed."""
_SQL_ROWS = "SELECT rowid, id, created_at, parent_id, branch FROM checkpoints"
"""The narrow columns of every row: all a store's order needs. A row's size (``length(data)`` would visit every
row's page) is learnt with its facts, for the rows a view asks for."""
_SQL_SIZES = "SELECT id, length(data) FROM checkpoints WHERE id IN ({marks})"
INSTALL_HINT = (
    "this CrewAI SQLite store keeps checkpoints as SQLite JSONB, which needs SQLite 3.45 or newer "
    f"(this Python has {sqlite3.sqlite_version}): pip install 'crewpoint[crewai]'"
)


def _apsw() -> Any:
    try:
        import apsw
    except ImportError:
        return None
    return apsw


@contextmanager
def connect(path: str, write: bool = False) -> Iterator[Any]:
    """A connection that can read JSONB: the stdlib's when its SQLite is new enough, else apsw's."""
    con = _open(path, write)
    try:
        yield con
    finally:
        con.close()


def _open(path: str, write: bool = False) -> Any:
    if sqlite3.sqlite_version_info >= JSONB_VERSION:
        uri = f"file:{path}" + ("" if write else "?mode=ro")
        con: Any = sqlite3.connect(uri, uri=True, timeout=10, isolation_level=None, check_same_thread=False)
    else:
        apsw = _apsw()
        if apsw is None:
            raise CheckpointError(INSTALL_HINT)
        flags = apsw.SQLITE_OPEN_URI | (apsw.SQLITE_OPEN_READWRITE if write else apsw.SQLITE_OPEN_READONLY)
        try:
            con = apsw.Connection(path, flags=flags)
        except apsw.Error as exc:
            raise CheckpointError(f"cannot open {path}: {exc}") from exc
        con.set_busy_timeout(10_000)
    return con


def _errors() -> tuple[type[BaseException], ...]:
    """What reading a CrewAI database can raise: SQLite's errors, and text that is not UTF-8 (a damaged JSONB
    blob turned into text)."""
    apsw = _apsw()
    return (sqlite3.Error, UnicodeDecodeError) if apsw is None else (sqlite3.Error, apsw.Error, UnicodeDecodeError)


class CrewAISqliteProvider(ListsLazily, BaseProvider):
    """Reads CrewAI's SQLite checkpoint stores; every key in them is masked."""

    kind = "crewai-sqlite"
    newest_is_cheap = True  # the order comes from names (or narrow columns); only the newest rows are read

    def __init__(self) -> None:
        super().__init__()
        self._watchers: dict[str, tuple[Any, tuple[int, int]]] = {}

    def __repr__(self) -> str:
        return "CrewAISqliteProvider()"

    def _version(self, path: str) -> tuple[int, int, int] | None:
        """A value that changes whenever the database does: the file's identity and the ``data_version`` of a
        connection kept open on it (SQLite changes it whenever another connection commits). None when it
        cannot be told, and the rows are read again."""
        failures: tuple[type[BaseException], ...] = (OSError, CheckpointError, *_errors())
        try:
            stat = os.stat(path)
            with self._lock:
                con, identity = self._watchers.get(path, (None, (0, 0)))
                if con is None or identity != (stat.st_dev, stat.st_ino):
                    if con is not None:
                        self._watchers.pop(path)
                        con.close()
                    while len(self._watchers) >= _WATCHED:  # the longest kept goes
                        self._watchers.pop(next(iter(self._watchers)))[0].close()
                    con = _open(path)
                    self._watchers[path] = (con, (stat.st_dev, stat.st_ino))
                [(version,)] = builtins.list(con.execute("PRAGMA data_version"))
            return stat.st_dev, stat.st_ino, int(version)
        except failures:
            return None

    def watch_spec(self, location: str) -> WatchSpec:
        """The database file and its WAL or journal."""
        return database_spec(location)

    def _lazy(self, location: str, branch: str | None) -> LazyListing:
        """The table's rows in order (its narrow columns only); facts are read from the JSONB as asked for."""
        path = os.path.abspath(split_ref(location)[0])
        if not os.path.isfile(path):
            raise CheckpointNotFound(f"no CrewAI checkpoint store at {path}")

        def rows() -> builtins.list[Entry]:
            try:
                with connect(path) as con:
                    return _entries(path, builtins.list(con.execute(_SQL_ROWS)))
            except _errors() as exc:
                raise CheckpointError(f"cannot read the CrewAI store {path}: {exc}") from exc

        listing = self._listing(path, lambda: self._version(path), rows, lambda m: _learn(path, m))
        if branch is not None:
            listing.entries = [e for e in listing.entries if e.branch == branch]
        return listing

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        path, ref_id = split_ref(location)
        chosen = self._lazy(path, None).pick(checkpoint_id or ref_id, path)
        if chosen is None:
            raise CheckpointNotFound(f"no checkpoints in {path}")
        if chosen.damaged:
            raise DamagedCheckpoint(f"{chosen.location}: damaged checkpoint ({chosen.damaged})")
        dump = read_dump(os.path.abspath(path), chosen.id)
        try:
            return CheckpointRecord(chosen, to_body(dump, chosen))
        except (ValueError, TypeError, AttributeError) as exc:
            raise DamagedCheckpoint(f"{chosen.location}: {exc}") from None


def _entries(path: str, rows: builtins.list[Any]) -> builtins.list[Entry]:
    """The rows as their narrow columns tell them; a row's size comes with its facts. CrewAI never changes a row:
    its cache stamp is its rowid, which a row deleted and written anew does not keep."""
    return [  # id, parent_id, branch, created_at, tiebreak, size, location, key, stamp
        Entry(
            key,
            str(parent) if parent else None,
            str(row_branch or "main"),
            parse_stamp(str(created or key)),
            int(rowid),
            0,
            f"{path}#{key}",
            key,
            int(rowid),
        )
        for rowid, cid, created, parent, row_branch in rows
        for key in (str(cid),)
    ]


def read_dump(path: str, checkpoint_id: str, masked: bool = True) -> dict[str, Any]:
    """One row's ``data`` as a dict; keys masked unless ``masked=False``."""
    try:
        with connect(path) as con:
            rows = list(con.execute("SELECT json(data) FROM checkpoints WHERE id = ?", (checkpoint_id,)))
    except _errors() as exc:
        raise CheckpointError(f"cannot read {path}#{checkpoint_id}: {exc}") from exc
    if not rows:
        raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r} in {path}")
    try:
        dump = parse_json(rows[0][0], masked)
    except (TypeError, ValueError) as exc:
        raise DamagedCheckpoint(f"{path}#{checkpoint_id}: the data is not JSON ({exc})") from None
    if not isinstance(dump, dict) or "entities" not in dump:
        raise DamagedCheckpoint(f"{path}#{checkpoint_id}: not a CrewAI checkpoint (no entities)")
    return dump


PARALLEL_FROM = 200
"""Rows to learn from which two connections read side by side (SQLite works without Python's lock)."""


def _learn(path: str, entries: builtins.list[Entry]) -> dict[str, Facts]:
    """Facts of the rows ``entries`` name, read inside SQLite from the JSONB; a row whose facts need its events
    (an agent, a flow without a name) is read whole; a row SQLite cannot read is damaged on its own."""
    ids = [e.key for e in entries]
    if len(ids) < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        return _learn_ids(path, ids)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2, thread_name_prefix="crewpoint-crewai-facts") as pool:
        halves = pool.map(lambda half: _learn_ids(path, half), (ids[0::2], ids[1::2]))
        learnt: dict[str, Facts] = {}
        for half in halves:
            learnt |= half
        return learnt


def _learn_ids(path: str, ids: builtins.list[str]) -> dict[str, Facts]:
    learnt: dict[str, Facts] = {}
    try:
        with connect(path) as con:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                learnt |= _facts_of(con, chunk)
                for cid, length in _rows(con, _SQL_SIZES, chunk, 2):
                    if type(length) is int and str(cid) in learnt:
                        learnt[str(cid)]["size"] = length
    except _errors() as exc:
        raise CheckpointError(f"cannot read the CrewAI store {path}: {exc}") from exc
    return learnt


def _facts_of(con: Any, ids: builtins.list[str]) -> dict[str, Facts]:
    """Facts of the rows ``ids``: a crew first in its entities by :data:`SQL_CREW_FIRST`, others by
    :data:`SQL_FACTS`, agents and unnamed flows whole."""
    learnt: dict[str, Facts] = {}
    others: builtins.list[str] = []
    for cid, head, flags in _rows(con, SQL_CREW_FIRST, ids, 3):
        facts = crew_first_facts(head, flags) if isinstance(head, str) else None
        if facts is not None:
            learnt[str(cid)] = facts
        elif isinstance(head, dict):  # damaged
            learnt[str(cid)] = head
        else:
            others.append(str(cid))
    whole: builtins.list[str] = []
    for cid, version, trigger, kind, name, done, total, completed in _rows(con, SQL_FACTS, others, 8):
        if isinstance(version, dict):  # damaged
            learnt[str(cid)] = version
            continue
        facts = crew_facts(kind, name, done, total, completed, version, trigger)
        if facts is None:
            whole.append(str(cid))
        else:
            learnt[str(cid)] = facts
    for cid in whole:
        learnt[cid] = _whole_facts(con, cid)
    return learnt


def crew_facts(kind: Any, name: Any, done: Any, total: Any, completed: Any, version: Any, trigger: Any) -> Facts | None:
    """Facts from the columns the SQLite listing query reads (:data:`SQL_FACTS`); None when the entity needs
    its events (an agent, a flow without a name) or a column is not what it should be."""
    if kind == "crew" and isinstance(done, int) and isinstance(total, int):
        entity = {"entity_type": "crew", "name": name}
        return entity_facts(entity, [], version, trigger) | {"tasks_done": done, "tasks_total": total}
    if kind == "flow" and name and isinstance(completed, int):
        entity = {"entity_type": "flow", "name": name}
        return entity_facts(entity, [], version, trigger) | {"tasks_done": completed, "tasks_total": completed}
    return None


SQL_CREW_FIRST = """
SELECT id,
  json_extract(data, '$.crewai_version', '$.trigger', '$.entities[0].entity_type', '$.entities[0].name',
    '$.entities[0].usage_metrics'),
  (SELECT json_group_array(CASE WHEN t.type <> 'object' THEN -1
                                WHEN json_type(t.value, '$.output') NOT IN ('null') THEN 1 ELSE 0 END)
   FROM jsonb_each(data, '$.entities[0].tasks') t)
FROM checkpoints WHERE id IN ({marks})
"""
"""The rows ``{marks}`` names, as a crew first in its entities gives its facts: ``[version, trigger, kind, name,
usage_metrics]`` and a flag per task (1 finished, 0 not, -1 not a task), read inside SQLite from the JSONB with the
row loaded once (:func:`crew_first_facts`); rows of another shape go through :data:`SQL_FACTS`."""


def crew_first_facts(head: Any, flags: Any) -> Facts | None:
    """Facts from a :data:`SQL_CREW_FIRST` row; None when its first entity is not a crew."""
    try:
        version, trigger, kind, name, metrics = json.loads(head)
        marks = json.loads(flags)
    except (TypeError, ValueError, RecursionError):
        return None
    if kind != "crew" or not isinstance(marks, list):
        return None
    done = sum(1 for m in marks if m == 1)
    total = sum(1 for m in marks if m in (0, 1))
    return entity_facts({"entity_type": "crew", "name": name, "usage_metrics": metrics}, [], version, trigger) | {
        "tasks_done": done,
        "tasks_total": total,
    }


SQL_FACTS = """
WITH m AS (
  SELECT id, data,
    coalesce((SELECT min(e.key) FROM jsonb_each(data, '$.entities') e WHERE e.value ->> '$.entity_type' = 'crew'), 0)
      AS i
  FROM checkpoints WHERE id IN ({marks})
)
SELECT id, data ->> '$.crewai_version', data ->> '$.trigger',
  json_extract(data, '$.entities[' || i || '].entity_type'),
  json_extract(data, '$.entities[' || i || '].name'),
  (SELECT count(*) FROM jsonb_each(data, '$.entities[' || i || '].tasks') t
   WHERE t.type = 'object' AND json_type(t.value, '$.output') NOT IN ('null')),
  (SELECT count(*) FROM jsonb_each(data, '$.entities[' || i || '].tasks') t WHERE t.type = 'object'),
  json_array_length(data, '$.entities[' || i || '].checkpoint_completed_methods')
FROM m
"""
"""Facts of the rows ``{marks}`` names, read inside SQLite from the JSONB (no row is turned into text)."""


_UNREADABLE = {"damaged": "the data is not readable JSONB (damaged or half-written)"}


def _rows(con: Any, query: str, ids: builtins.list[str], width: int) -> builtins.list[tuple[Any, ...]]:
    """``query`` (``width`` columns) over the rows ``ids``; a row SQLite cannot read comes back as
    ``(id, {damaged}, None, ...)``."""
    if not ids:
        return []
    try:
        return builtins.list(con.execute(query.format(marks=",".join("?" * len(ids))), ids))
    except _errors():
        if len(ids) == 1:
            return [(ids[0], dict(_UNREADABLE), *([None] * (width - 2)))]
        out: builtins.list[tuple[Any, ...]] = []
        for one in ids:
            out += _rows(con, query, [one], width)
        return out


def _whole_facts(con: Any, checkpoint_id: str) -> Facts:

    try:
        rows = list(con.execute("SELECT json(data) FROM checkpoints WHERE id = ?", (checkpoint_id,)))
    except _errors():
        return dict(_UNREADABLE)
    if not rows:
        return {"damaged": "vanished while it was read"}
    try:
        dump = parse_json(rows[0][0])
        if not isinstance(dump, dict):
            raise ValueError("not a CrewAI checkpoint")
        return describe_dump(dump)
    except (TypeError, ValueError, AttributeError) as exc:
        return {"damaged": " ".join(str(exc).split()) or type(exc).__name__}
