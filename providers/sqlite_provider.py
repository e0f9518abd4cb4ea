"""SQLite store: one database file, metadata in indexed columns, bodies split into shared chunks.

Tables (schema v1):

* ``checkpoints``: one row of metadata per checkpoint; list views read only this table;
* ``bodies``: per checkpoint, a small zlib-compressed manifest of its body;
* ``chunks``: content-addressed, zlib-compressed pieces of bodies (see :mod:`crewpoint.providers.chunks`),
  shared by every checkpoint that contains them, so a checkpoint costs only what changed since its parent;
* ``chunk_refs``: for each chunk, how many manifests and chunks refer to it. Deleting a checkpoint releases
  its references; a chunk nobody refers to any more is removed at once (and releases its own);
* ``schema_meta``: the store's own schema version; older stores are migrated in order, newer ones refused.

The database runs in WAL mode with ``synchronous=NORMAL`` and a busy timeout, so several processes can write
at once. Each provider keeps one connection per database file (reopened after ``fork``), guarded by a lock.
Reads and writes of records, claims and run records are the one SQL store's
(:class:`~crewpoint.providers.sql_provider.SqlProvider`, in SQLite's dialect
:class:`~crewpoint.providers.sqlite_schema.SqliteDialect`); this module opens the file and streams the listing.
"""

from __future__ import annotations

import builtins
import itertools
import os
import sqlite3
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crewpoint.providers import OPEN_DATABASES, has_sqlite_header
from crewpoint.providers.base import (
    LISTED_COLUMNS,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    DamagedCheckpoint,
    new_meta,
)
from crewpoint.providers.files import (
    nearest_existing,
    probe_file,
    remove_stale_temp_files,
)
from crewpoint.providers.listed import ListedRow, all_sound, as_meta, listed_row, newest_rows, row_of
from crewpoint.providers.prune import newest_first
from crewpoint.providers.refs import damaged_meta, meta_problem, split_ref
from crewpoint.providers.sql_provider import SqlProvider
from crewpoint.providers.sql_store import BODY_ROW, Mode, by_time, row_meta
from crewpoint.providers.sqlite_schema import MIGRATIONS as MIGRATIONS  # the schema's names, importable here too
from crewpoint.providers.sqlite_schema import (
    SCHEMA_VERSION,
    Conn,
    Db,
    SqliteDialect,
    create_store,
    immediate,
    migrate,
    old_columns,
    settle_version,
    snapshot,
)
from crewpoint.providers.sqlite_schema import Migration as Migration
from crewpoint.providers.sqlite_schema import read_schema_version as read_schema_version

if TYPE_CHECKING:
    from crewpoint.providers.watch import WatchSpec


_SELECT_META = "SELECT " + ", ".join(f'"{c}"' for c in LISTED_COLUMNS) + " FROM checkpoints"
_LIST_META = "SELECT " + ", ".join(f'c."{c}"' for c in LISTED_COLUMNS) + " FROM checkpoints c"
"""A listing's rows; each is checked against :data:`_SOUND_BODIES`, read in the same transaction."""
_ROW_TAIL = ("location", "damaged", "body_length", "digest")
_ROWS_POSITIONAL = (*LISTED_COLUMNS, *_ROW_TAIL) == ListedRow._fields
"""Whether a row of :data:`_LIST_ROWS` is a :class:`ListedRow` in order."""
_LIST_ROWS = _LIST_META.replace(" FROM ", ", ? || '#' || c.id, NULL, 0, '' FROM ")
"""A listing's rows as :class:`ListedRow` values (the store's path is the parameter before any other): each
made in one call; a row that fails its checks is made again from its listed columns (:func:`_checked_row`)."""
_SOUND_BODIES = "SELECT id FROM bodies WHERE length(manifest) != 0"
"""The ids whose body row is there and not empty, in one narrow pass (no body is read): cheaper than a join."""

# Connections inherited through fork(): the child must neither use nor close them.
_inherited: list[sqlite3.Connection] = []


@dataclass(slots=True)
class _Store:
    path: str
    db: Db
    version: int
    file: tuple[int, int] | None
    read_only: str | None = None


def _file_id(path: str) -> tuple[int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino)


class SqliteProvider(SqlProvider[SqliteDialect]):
    """Checkpoints in one SQLite database file; ``location`` is its path, ``path#id`` names one checkpoint.

    ``meta.size`` of a listed checkpoint is the length of its body as compact JSON (what a JSON file of it
    would hold); the bytes it adds to the database are usually far fewer.
    """

    kind = "sqlite"
    SETTINGS = {"busy_timeout": 10.0}

    def __init__(self, busy_timeout: float = 10.0) -> None:
        self.busy_timeout = busy_timeout
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self._stores: dict[str, _Store] = {}

    def _let_go(self) -> builtins.list[Db]:
        stores, self._stores = self._stores, {}
        return [store.db for store in stores.values()]

    # connections

    @contextmanager
    def _use(self, path: str, create: bool) -> Iterator[_Store]:
        if os.getpid() != self._pid:
            _inherited.extend(s.db.conn for s in self._stores.values())
            self._reset()
        key = os.path.abspath(path)
        with self._lock:
            store = self._stores.get(key)
            if store is not None and store.file != _file_id(key):
                # Deleted or replaced since it was opened: the connection points at the old file.
                store.db.close()
                del self._stores[key]
                store = None
            if store is None:
                store = self._connect_store(path, create)
                self._stores[key] = store
            if store.version == 0 and not create:
                # An empty database another process may have set up since: look again.
                store.version = self._guard(path, lambda: settle_version(store.db, path))
                self._guard(path, lambda: old_columns(store.db, store.version))
            if create and store.read_only is not None:
                raise CheckpointError(f"cannot write to {path}: {store.read_only}")
            if create and store.version < SCHEMA_VERSION:
                store.version = self._guard(path, lambda: migrate(store.db, path))
            try:
                yield store
            except sqlite3.Error as exc:
                raise _as_error(path, exc) from exc

    def _connect_store(self, path: str, create: bool) -> _Store:
        if os.path.isdir(path):
            raise CheckpointError(f"{path} is a folder, not a crewpoint SQLite store")
        if not os.path.exists(path):
            if not create:
                raise CheckpointNotFound(f"no checkpoint store at {path}")
            self._guard(path, lambda: create_store(path))
        elif os.path.getsize(path) and not has_sqlite_header(path):
            raise CheckpointError(f"{path} is not a crewpoint SQLite store")
        try:
            return self._connect(path, read_only=None)
        except _CannotWrite as exc:
            if create:
                raise CheckpointError(f"cannot write to {path}: {exc}") from None
        # A store in a folder this process cannot write to: read it without creating -wal/-shm files.
        try:
            return self._connect(path, read_only="its folder or file is read-only")
        except _CannotWrite:
            return self._connect(path, read_only="its folder or file is read-only", immutable=True)

    def _connect(self, path: str, read_only: str | None, immutable: bool = False) -> _Store:
        if read_only is None:
            conn = sqlite3.connect(path, timeout=self.busy_timeout, check_same_thread=False)
        else:
            from urllib.parse import quote

            flags = "mode=ro&immutable=1" if immutable else "mode=ro"
            uri = f"file:{quote(os.path.abspath(path))}?{flags}"
            conn = sqlite3.connect(uri, uri=True, timeout=self.busy_timeout, check_same_thread=False)
        OPEN_DATABASES.add(os.path.abspath(path))
        try:
            db = Conn(conn)
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
            # Is it a crewpoint store? Asked before anything is written: a foreign database is never changed.
            version = settle_version(db, path)
            old_columns(db, version)
            if read_only is None:
                if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    conn.execute("PRAGMA journal_mode = wal")
                conn.execute("PRAGMA synchronous = NORMAL")
                # Reading a WAL database needs its -shm file: fails here when the folder is read-only.
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        except sqlite3.OperationalError as exc:
            conn.close()
            text = str(exc)
            if "readonly" in text or "unable to open" in text or "read-only" in text:
                raise _CannotWrite(text) from exc
            raise _as_error(path, exc) from exc
        except sqlite3.DatabaseError as exc:
            conn.close()
            if "not a database" in str(exc) or "encrypted" in str(exc):
                raise CheckpointError(f"{path} is not a crewpoint SQLite store") from exc
            raise _as_error(path, exc) from exc
        except BaseException:
            conn.close()
            raise
        if read_only is None and not (
            os.access(path, os.W_OK) and os.access(os.path.dirname(os.path.abspath(path)), os.W_OK)
        ):
            read_only = "the database or its folder is read-only"
        return _Store(path, db, version, _file_id(path), read_only)

    @staticmethod
    def _guard(path: str, action: Callable[[], int]) -> int:
        try:
            return action()
        except sqlite3.Error as exc:
            raise _as_error(path, exc) from exc

    @contextmanager
    def _open(self, location: str, mode: Mode = "read") -> Iterator[SqliteDialect]:
        path, _ = split_ref(location)
        if mode == "upgrade" and not os.path.exists(path):
            raise CheckpointNotFound(f"no checkpoint store at {path}")
        with self._use(path, create=mode != "read") as store:
            yield SqliteDialect(store.db, path, store.version, read_only=store.read_only)

    def _memo_key(self, location: str) -> str:
        return os.path.abspath(split_ref(location)[0])

    # the listing, streamed from the index by time

    def list_newest(self, location: str, limit: int, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        """The first ``limit`` of :meth:`list`, from the index by time while no clock ever stepped back in the
        store (else from a full listing)."""
        with self._open(location) as sql:
            if sql.version == 0:
                return []
            with sql.reading():
                if not by_time(sql):
                    return self._list(sql, branch)[: max(0, limit)]
        return builtins.list(itertools.islice(self.iter_list(location, branch), max(0, limit)))

    def iter_list(self, location: str, branch: str | None = None) -> Iterator[CheckpointMeta]:
        """Rows stream from the index by time while no clock ever stepped back in the store."""
        return (new_meta(*row) for row in self.iter_list_rows(location, branch))

    def iter_list_rows(self, location: str, branch: str | None = None) -> Iterator[ListedRow]:
        """What :meth:`iter_list` gives, as rows (:class:`~crewpoint.providers.listed.ListedRow`)."""
        with self._open(location) as sql:
            if sql.version == 0:
                return
            db, path = sql.conn, sql.name
            with sql.reading():
                if not by_time(sql):
                    yield from _list_rows(db, path, branch)
                    return
                where, args = (" WHERE c.branch = ?", [path, branch]) if branch is not None else ("", [path])
                newest = " ORDER BY c.created_at DESC, c.sequence DESC, c.id DESC"
                sound = _sound_ids(db) if _few_rows(db) else None  # a big store: each chunk's body rows alone
                cursor = db.execute(_LIST_ROWS + where + newest, args)
                damaged: builtins.list[ListedRow] = []
                while rows := cursor.fetchmany(2000):
                    known = sound if sound is not None else _sound_among(db, [row[0] for row in rows])
                    for row in _rows(db, rows, path, known):
                        if row.damaged is not None and row.created_at == 0.0:
                            damaged.append(row)  # a time that is no number: listed last, as list() does
                        else:
                            yield row
                yield from newest_rows(damaged)

    def _latest(self, sql: SqliteDialect, branch: str | None) -> CheckpointMeta | None:
        """The first good checkpoint ``list`` would give, from the head (highest sequence) of each run's
        branch instead of every row: order never depends on the clock within a branch."""
        db, path = sql.conn, sql.name
        where, args = (" WHERE branch = ?", [branch]) if branch is not None else ("", [])
        heads = db.execute(
            _SELECT_META
            + " AS c JOIN (SELECT lineage AS hl, branch AS hb, max(sequence) AS hs FROM checkpoints"
            + where
            + " GROUP BY lineage, branch) ON c.lineage = hl AND c.branch = hb AND c.sequence = hs"
            " ORDER BY c.created_at DESC, c.sequence DESC, c.id DESC LIMIT 8",
            args,
        ).fetchall()
        metas = newest_first(row_meta(row, path) for row in heads)
        odd = db.execute("SELECT 1 FROM checkpoints WHERE typeof(sequence) != 'integer' LIMIT 1").fetchone()
        if odd is not None or (metas and metas[0].damaged):
            # a damaged row may stand in for its branch's head: look at every row
            metas = self._list(sql, branch)
        return next((m for m in metas if m.damaged is None), None)

    def _list(self, sql: SqliteDialect, branch: str | None) -> builtins.list[CheckpointMeta]:
        return [new_meta(*row) for row in _list_rows(sql.conn, sql.name, branch)]

    def collect_garbage(self, location: str) -> int:
        """Recount every chunk reference from the manifests, remove unreachable chunks; return how many.

        Normal use never leaves garbage (deletes release chunks at once); this repairs a store edited by hand.
        """
        from crewpoint.providers import chunks  # bodies only: a listing never loads the chunk code

        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return 0
            db = store.db
            with immediate(db):
                children: dict[bytes, set[bytes]] = {}
                for digest, data in db.execute("SELECT hash, data FROM chunks"):
                    children[bytes(digest)] = chunks.children_of(zlib.decompress(data))
                counts: dict[bytes, int] = {}
                frontier: list[bytes] = []
                for (manifest,) in db.execute("SELECT manifest FROM bodies"):
                    frontier.extend(chunks.children_of(zlib.decompress(manifest)))
                while frontier:
                    following: list[bytes] = []
                    for digest in frontier:
                        seen = digest in counts
                        counts[digest] = counts.get(digest, 0) + 1
                        if not seen:
                            following.extend(children.get(digest, ()))
                    frontier = following
                dead = [h for h in children if h not in counts]
                conn = db.conn
                conn.executemany("DELETE FROM chunks WHERE hash = ?", [(h,) for h in dead])
                db.execute("DELETE FROM chunk_refs")
                conn.executemany(
                    "INSERT INTO chunk_refs (hash, refs) VALUES (?, ?)",
                    [(h, n) for h, n in counts.items() if h in children],
                )
                return len(dead)

    # the store

    def clean(self, location: str) -> int:
        """Remove half-made stores (``.<name>.<pid>-<n>.new``) that a process killed while creating left."""
        path, _ = split_ref(location)
        return remove_stale_temp_files(os.path.dirname(os.path.abspath(path)), prefix=f".{os.path.basename(path)}.")

    def store_at(self, location: str) -> str:
        path, _ = split_ref(location)
        with self._use(path, create=False):
            return path

    def check_writable(self, location: str) -> None:
        """Refuse, before a run starts, a database this process cannot write: not a crewpoint store, a file
        opened read-only, a folder where SQLite cannot make its journal, a full disk (a write probe, removed)."""
        path, _ = split_ref(location)
        folder = nearest_existing(os.path.dirname(os.path.abspath(path)))
        if not os.path.isdir(folder):
            raise CheckpointError(f"cannot write checkpoints to {path}: {folder} is not a folder")
        if os.path.lexists(path):
            # Never a descriptor of a database this process is connected to: closing it drops SQLite's locks,
            # and another process closing the store would then delete the WAL our later writes go to.
            if os.path.abspath(path) not in OPEN_DATABASES:
                try:
                    os.close(os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)))
                except OSError as exc:
                    raise CheckpointError(f"cannot write checkpoints to {path}: {exc.strerror}") from None
            with self._use(path, create=False) as store:
                if store.read_only is not None:
                    raise CheckpointError(f"cannot write checkpoints to {path}: {store.read_only}")
        probe_file(folder, f"checkpoints to {path}")

    def watch_spec(self, location: str) -> WatchSpec:
        # lazy: `checkpoint list` never loads providers.watch
        from crewpoint.providers.watch import database_spec

        return database_spec(location)


class _CannotWrite(Exception):
    """The database (or its folder) cannot be written by this process."""


def _list_rows(db: Db, path: str, branch: str | None) -> builtins.list[ListedRow]:
    if not db.conn.in_transaction:  # the rows and their body rows, as one state of the store
        with snapshot(db):
            return _list_rows(db, path, branch)
    sound = _sound_ids(db)
    if branch is None:
        rows = db.execute(_LIST_ROWS, [path]).fetchall()
    else:
        rows = db.execute(_LIST_ROWS + " WHERE c.branch = ?", [path, branch]).fetchall()
    return newest_rows(_rows(db, rows, path, sound))


def _sound_ids(db: Db) -> set[str]:
    """The ids whose body row is there and not empty (see :data:`_SOUND_BODIES`)."""
    return {checkpoint_id for (checkpoint_id,) in db.execute(_SOUND_BODIES)}


def _sound_among(db: Db, ids: builtins.list[str]) -> set[str]:
    """Those of ``ids`` (a chunk of a listing) whose body row is there and not empty: a look-up each, so the first
    rows of a store of a million come without a pass over all its bodies."""
    found: set[str] = set()
    for start in range(0, len(ids), 500):  # within any SQLite's limit on parameters
        part = ids[start : start + 500]
        marks = ",".join("?" * len(part))
        found.update(checkpoint_id for (checkpoint_id,) in db.execute(f"{_SOUND_BODIES} AND id IN ({marks})", part))
    return found


_FEW_ROWS = 50_000
"""Up to this many checkpoints (by the highest rowid, an upper bound), a streamed listing reads every sound body id
in one pass; above it, each chunk's alone."""


def _few_rows(db: Db) -> bool:
    found = db.execute("SELECT max(rowid) FROM checkpoints").fetchone()
    return found is None or found[0] is None or found[0] <= _FEW_ROWS


def _checked_meta(db: Db, row: Sequence[Any], path: str, sound: set[str]) -> CheckpointMeta:
    """A row of :data:`_LIST_META`: its metadata, damaged when its body row is missing or empty (``sound``:
    :func:`_sound_ids`, read in the same transaction; a row not in it is looked at on its own)."""
    meta = row_meta(row, path)
    if meta.damaged is not None or row[0] in sound:
        return meta
    found = db.execute("SELECT length(manifest) FROM bodies WHERE id = ?", [row[0]]).fetchone()
    if found is None:
        return damaged_meta(meta, BODY_ROW[1])
    return damaged_meta(meta, BODY_ROW[2]) if found[0] == 0 else meta


def _rows(db: Db, rows: builtins.list[Any], path: str, sound: set[str]) -> builtins.list[ListedRow]:
    """Rows of :data:`_LIST_ROWS` as :class:`ListedRow` values: what :func:`_checked_meta` makes of each, in one
    call for the usual row (its fields of their types, checked for all rows at once, and its body row there)."""
    width = len(LISTED_COLUMNS)
    if not _ROWS_POSITIONAL:
        return [row_of(_checked_meta(db, values[:width], path, sound)) for values in rows]
    made = list(map(listed_row, rows))
    typed = all_sound(made)
    if typed and sound.issuperset([row[0] for row in made]):
        return made
    return [
        row
        if (typed or meta_problem(as_meta(row)) is None) and row[0] in sound
        else row_of(_checked_meta(db, row[:width], path, sound))
        for row in made
    ]


def _as_error(path: str, exc: sqlite3.Error) -> CheckpointError:
    text = str(exc)
    if "locked" in text or "busy" in text:
        return CheckpointError(f"{path} is busy: another process kept it locked too long ({text})")
    if "disk is full" in text or "disk I/O error" in text:
        return CheckpointError(
            f"{path}: no room to write ({text}); SQLite needs a little free space even to delete: free some and retry"
        )
    if "readonly" in text or "read-only" in text:
        return CheckpointError(f"cannot write to {path}: the database or its folder is read-only ({text})")
    if isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text):
        return DamagedCheckpoint(f"{path} is damaged: {text}")
    return CheckpointError(f"{path}: SQLite error: {text}")
