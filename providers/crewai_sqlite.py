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
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
)
from crewpoint.providers.crewai_common import FactsCache, describe_dump, loads_masked, order, parse_stamp, to_body
from crewpoint.providers.crewai_json import READ_ONLY
from crewpoint.providers.prune import newest_first
from crewpoint.providers.refs import match_prefix, split_ref

if TYPE_CHECKING:
    from crewpoint.providers.watch import WatchSpec

JSONB_VERSION = (3, 45, 0)
INSTALL_HINT = (
    "this CrewAI SQLite store keeps checkpoints as SQLite JSONB, which needs SQLite 3.45 or newer "
    f"(this Python has {sqlite3.sqlite_version}): pip install 'crewpoint[crewai]'"
)


def is_crewai_database(path: str) -> bool:
    """Does the SQLite file at ``path`` hold CrewAI's ``checkpoints`` table (and no crewpoint tables)?"""
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return False
    try:
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "checkpoints" not in tables or "bodies" in tables or "schema_meta" in tables:
            return False
        columns = {row[1] for row in con.execute("PRAGMA table_info(checkpoints)")}
        return {"id", "created_at", "parent_id", "branch", "data"} <= columns
    except sqlite3.Error:
        return False
    finally:
        con.close()


def _apsw() -> Any:
    try:
        import apsw
    except ImportError:
        return None
    return apsw


@contextmanager
def connect(path: str, write: bool = False) -> Iterator[Any]:
    """A connection that can read JSONB: the stdlib's when its SQLite is new enough, else apsw's."""
    if sqlite3.sqlite_version_info >= JSONB_VERSION:
        uri = f"file:{path}" + ("" if write else "?mode=ro")
        con: Any = sqlite3.connect(uri, uri=True, timeout=10, isolation_level=None)
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
    try:
        yield con
    finally:
        con.close()


def _errors() -> tuple[type[BaseException], ...]:
    apsw = _apsw()
    return (sqlite3.Error,) if apsw is None else (sqlite3.Error, apsw.Error)


class CrewAISqliteProvider(BaseProvider):
    """Reads CrewAI's SQLite checkpoint stores; every key in them is masked."""

    kind = "crewai-sqlite"
    read_only = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[str, FactsCache] = {}

    def __repr__(self) -> str:
        return "CrewAISqliteProvider()"

    def write(self, location: str, record: CheckpointRecord) -> str:
        raise CheckpointError(READ_ONLY)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        raise CheckpointError(READ_ONLY)

    def watch_spec(self, location: str) -> WatchSpec:
        """The database file and its WAL or journal."""
        from crewpoint.providers.watch import WatchSpec, waiting_spec

        path = os.path.abspath(split_ref(location)[0])
        if not os.path.exists(path):
            return waiting_spec(location, path)
        names = {path, f"{path}-wal", f"{path}-journal"}
        return WatchSpec(location, True, os.path.dirname(path), False, lambda changed: changed in names)

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        path = os.path.abspath(split_ref(location)[0])
        if not os.path.isfile(path):
            raise CheckpointNotFound(f"no CrewAI checkpoint store at {path}")
        damaged: dict[str, dict[str, Any]] = {}
        with self._lock:
            cache = self._caches.get(path)
            if cache is None:
                cache = self._caches[path] = FactsCache(path)
            try:
                with connect(path) as con:
                    rows = list(
                        con.execute("SELECT rowid, id, created_at, parent_id, branch, length(data) FROM checkpoints")
                    )
                    missing = [str(r[1]) for r in rows if cache.get(str(r[1]), r[5] or 0, 0) is None]
                    for start in range(0, len(missing), 500):
                        chunk = missing[start : start + 500]
                        for cid, length, found in _read_facts(con, chunk):
                            if "damaged" not in found:
                                cache.put(cid, length, 0, found)
                            else:
                                damaged[cid] = found
            except _errors() as exc:
                raise CheckpointError(f"cannot read the CrewAI store {path}: {exc}") from exc
            facts = [
                cache.get(str(r[1]), r[5] or 0, 0) or damaged.get(str(r[1])) or {"damaged": "row vanished"}
                for r in rows
            ]
            cache.keep_only({str(r[1]) for r in rows})
            cache.save()
        metas = []
        for (rowid, cid, created, parent, row_branch, length), known in zip(rows, facts, strict=True):
            fields: dict[str, Any] = {
                "id": str(cid),
                "parent_id": str(parent) if parent else None,
                "branch": str(row_branch or "main"),
                "lineage": "",
                "sequence": int(rowid),
                "created_at": parse_stamp(str(created or cid)),
                "trigger": "",
                "size": int(length or 0),
                "location": f"{path}#{cid}",
            }
            try:
                metas.append(CheckpointMeta(**(fields | known)))
            except TypeError:
                metas.append(CheckpointMeta(**fields, damaged="unreadable cached facts: list again"))
        ordered = newest_first(order(metas))
        return ordered if branch is None else [m for m in ordered if m.branch == branch]

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        return next((m for m in self.list(location) if m.id == checkpoint_id), None)

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        path, ref_id = split_ref(location)
        wanted = checkpoint_id or ref_id
        metas = self.list(path)
        if not metas:
            raise CheckpointNotFound(f"no checkpoints in {path}")
        if wanted is None:
            chosen = next((m for m in metas if not m.damaged), metas[0])
        else:
            full = match_prefix([m.id for m in metas], wanted, path)
            chosen = next(m for m in metas if m.id == full)
        if chosen.damaged:
            raise DamagedCheckpoint(f"{chosen.location}: damaged checkpoint ({chosen.damaged})")
        dump = read_dump(os.path.abspath(path), chosen.id)
        try:
            return CheckpointRecord(chosen, to_body(dump, chosen))
        except (ValueError, TypeError, AttributeError) as exc:
            raise DamagedCheckpoint(f"{chosen.location}: {exc}") from None


def read_dump(path: str, checkpoint_id: str, masked: bool = True) -> dict[str, Any]:
    """One row's ``data`` as a dict; keys masked unless ``masked=False``."""
    import json

    try:
        with connect(path) as con:
            rows = list(con.execute("SELECT json(data) FROM checkpoints WHERE id = ?", (checkpoint_id,)))
    except _errors() as exc:
        raise CheckpointError(f"cannot read {path}#{checkpoint_id}: {exc}") from exc
    if not rows:
        raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r} in {path}")
    try:
        dump = loads_masked(rows[0][0]) if masked else json.loads(rows[0][0])
    except (TypeError, ValueError) as exc:
        raise DamagedCheckpoint(f"{path}#{checkpoint_id}: the data is not JSON ({exc})") from None
    if not isinstance(dump, dict) or "entities" not in dump:
        raise DamagedCheckpoint(f"{path}#{checkpoint_id}: not a CrewAI checkpoint (no entities)")
    return dump


def _read_facts(con: Any, ids: builtins.list[str]) -> builtins.list[tuple[str, int, dict[str, Any]]]:
    """(id, length, facts) of the rows ``ids``; a row whose blob SQLite cannot read is damaged on its own."""
    marks = ",".join("?" * len(ids))
    query = f"SELECT id, length(data), json(data) FROM checkpoints WHERE id IN ({marks})"
    try:
        return [(str(cid), int(length or 0), _facts(text)) for cid, length, text in con.execute(query, ids)]
    except _errors():
        if len(ids) == 1:
            reason = {"damaged": "the data is not readable JSONB (damaged or half-written)"}
            return [(ids[0], -1, reason)]
        out = []
        for one in ids:
            out += _read_facts(con, [one])
        return out


def _facts(text: Any) -> dict[str, Any]:
    import json

    try:
        dump = json.loads(text)
        if not isinstance(dump, dict):
            raise ValueError("not a CrewAI checkpoint")
        return describe_dump(dump)
    except (TypeError, ValueError, AttributeError) as exc:
        return {"damaged": " ".join(str(exc).split()) or type(exc).__name__}
