"""The SQLite store's schema: its tables, the migration chain between versions, a new store made whole
(:func:`create_store`), and its dialect of the one SQL store (:class:`SqliteDialect`): the transactions and
connection type its reads and writes run in (:mod:`crewpoint.providers.sqlite_provider`).

Reading never migrates: an older store is read as it is, and the first write brings it up to
:data:`SCHEMA_VERSION` in one transaction. A newer store is refused; a database that is no crewpoint store is left
untouched.
"""

from __future__ import annotations

import builtins
import os
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, Protocol

from crewpoint.providers.base import CheckpointError, UnsupportedSchema
from crewpoint.providers.files import make_private_dirs, temp_name
from crewpoint.providers.sql_store import Dialect

if TYPE_CHECKING:
    from sqlite_utils import Database


class Db(Protocol):
    """What the provider needs of a connection: sqlite-utils' ``Database``, or :class:`Conn` for reads."""

    conn: sqlite3.Connection

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor: ...

    def table_names(self) -> builtins.list[str]: ...

    def close(self) -> None: ...


class Conn:
    """The few calls that reading a store needs, straight on sqlite3, so that opening a store to list or read
    it does not import sqlite-utils (60 ms of a command's start). Creating and migrating use sqlite-utils."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def execute(self, sql: str, parameters: Any = None) -> sqlite3.Cursor:
        return self.conn.execute(sql, parameters if parameters is not None else ())

    def table_names(self) -> builtins.list[str]:
        return [row[0] for row in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]

    def close(self) -> None:
        self.conn.close()


def database(db: Db) -> Database:
    """A sqlite-utils ``Database`` over the same connection."""
    from sqlite_utils import Database

    return db if not isinstance(db, Conn) else Database(db.conn, execute_plugins=False)  # type: ignore[return-value]


SCHEMA_VERSION = 5


def _schema_v1(db: Database) -> None:
    columns = {
        "id": str,
        "parent_id": str,
        "branch": str,
        "lineage": str,
        "sequence": int,
        "created_at": float,
        "trigger": str,
        "entity_kind": str,
        "entity_name": str,
        "tasks_done": int,
        "tasks_total": int,
        "schema_version": int,
        "version": str,
        "size": int,
    }
    db.table("checkpoints").create(
        columns,
        pk="id",
        not_null=[c for c in columns if c != "parent_id"],
    )
    checkpoints = db.table("checkpoints")
    checkpoints.create_index(["lineage", "branch", "sequence"])
    checkpoints.create_index(["branch"])
    checkpoints.create_index(["parent_id"])
    db.execute("CREATE TABLE bodies (id TEXT PRIMARY KEY, manifest BLOB NOT NULL) WITHOUT ROWID")
    db.execute("CREATE TABLE chunks (hash BLOB PRIMARY KEY, data BLOB NOT NULL)")
    db.execute("CREATE TABLE chunk_refs (hash BLOB PRIMARY KEY, refs INTEGER NOT NULL) WITHOUT ROWID")


def _schema_v2(db: Database) -> None:
    """Run records (heartbeats) live in the store, written through the provider's own connection (a v1 store
    may already hold this table: earlier versions added it beside the schema). An index by time serves
    ``list --limit``; ``order`` in ``schema_meta`` records whether a clock ever stepped back within a run's
    branch (then only a full listing orders it right)."""
    db.execute("CREATE INDEX IF NOT EXISTS checkpoints_by_time ON checkpoints (created_at, sequence, id)")
    db.execute("CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    stepped = db.execute(
        "SELECT 1 FROM checkpoints a JOIN checkpoints b ON a.lineage = b.lineage AND a.branch = b.branch"
        " AND a.sequence < b.sequence AND a.created_at >= b.created_at LIMIT 1"
    ).fetchone()
    order = "stepped" if stepped is not None else "by-time"
    db.execute("INSERT OR IGNORE INTO schema_meta (key, value) VALUES ('order', ?)", [order])
    db.execute(
        "CREATE TABLE IF NOT EXISTS runs (run_id TEXT PRIMARY KEY, pid INTEGER, host TEXT, started_at REAL, "
        "last_beat REAL, status TEXT, branch TEXT, lineage TEXT, entity_kind TEXT, entity_name TEXT, "
        "checkpoint_id TEXT)"
    )


def _schema_v3(db: Database) -> None:
    """Each checkpoint records its body's length and digest: the length and sha256 of its manifest (whose
    chunks are each named by their own sha256), so a read tells a whole body from an altered one. Rows
    written before have 0 and '' (not recorded) and still read."""
    db.execute("ALTER TABLE checkpoints ADD COLUMN body_length INTEGER NOT NULL DEFAULT 0")
    db.execute("ALTER TABLE checkpoints ADD COLUMN digest TEXT NOT NULL DEFAULT ''")


def _schema_v4(db: Database) -> None:
    """Claims: one answer wins per request. A claim is a small JSON value under its key (a request id), made by
    ``INSERT ... ON CONFLICT DO NOTHING`` so that the first claimer's row stays."""
    db.execute(
        "CREATE TABLE IF NOT EXISTS claims (key TEXT PRIMARY KEY, value TEXT NOT NULL, created_at REAL NOT NULL)"
        " WITHOUT ROWID"
    )


def _schema_v5(db: Database) -> None:
    """Each checkpoint records the run that wrote it and a summary of what its chain and its run spent (the
    providers' ``usage_meta``), so a listing prices it without its body; an index by run and time serves
    ``cost --by run``. Rows written before have '' for both (nothing recorded) and still read."""
    db.execute("ALTER TABLE checkpoints ADD COLUMN run_id TEXT NOT NULL DEFAULT ''")
    db.execute("ALTER TABLE checkpoints ADD COLUMN usage TEXT NOT NULL DEFAULT ''")
    db.execute("CREATE INDEX IF NOT EXISTS checkpoints_by_run ON checkpoints (run_id, created_at)")


NEW_IN_V5 = ("run_id", "usage")


def old_columns(db: Db, version: int) -> int:
    """Let a store older than version 5 be read as it is (reading never migrates): a view of this connection
    only (in its temporary schema, so a read-only store stays untouched) shows its checkpoints with '' for the
    columns it lacks. :func:`migrate` drops it before it changes the table. Returns ``version``."""
    if 0 < version < 5:
        db.execute(
            "CREATE TEMP VIEW IF NOT EXISTS checkpoints AS SELECT *, "
            + ", ".join(f"'' AS {name}" for name in NEW_IN_V5)
            + " FROM main.checkpoints"
        )
    return version


Migration = Callable[["Database"], None]
# MIGRATIONS[n] takes a store from schema version n to n + 1 (version 0: an empty database).
MIGRATIONS: tuple[Migration, ...] = (_schema_v1, _schema_v2, _schema_v3, _schema_v4, _schema_v5)


def read_schema_version(db: Db) -> int | None:
    """The store's schema version; 0 for an empty database; ``None`` if it is some other database.

    Only reads: nothing is written to a database before it is known to be a crewpoint store.
    """
    names = [n for n in db.table_names() if not n.startswith("sqlite_")]
    if "schema_meta" not in names:
        return 0 if not names else None
    row = db.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
    if row is None:
        return None
    try:
        return int(row[0])
    except ValueError:
        return None


def migrate(db: Db, path: str, migrations: Sequence[Migration] = MIGRATIONS) -> int:
    """Bring the store up to ``len(migrations)`` in one transaction; return the version reached."""
    target = len(migrations)
    with immediate(db):
        version = read_schema_version(db)
        if version is None:
            raise CheckpointError(f"{path} is not a crewpoint SQLite store: it is left untouched")
        refuse_newer(path, version, target)
        full = database(db) if version < target else db
        if version < target:
            db.execute("DROP VIEW IF EXISTS temp.checkpoints")  # how this connection read the older store
        for step in migrations[version:]:
            step(full)  # type: ignore[arg-type]
        if version < target:
            db.execute("CREATE TABLE IF NOT EXISTS schema_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            db.execute(
                "INSERT INTO schema_meta (key, value) VALUES ('schema_version', ?), ('store', 'crewpoint')"
                " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [str(target)],
            )
    return max(version, target)


def settle_version(db: Db, path: str) -> int:
    """The store's schema version; refuses other and newer databases. Reading never migrates (an older store
    is read as it is, so a store in a read-only folder still opens); the first write migrates it."""
    version = read_schema_version(db)
    if version is None:
        raise CheckpointError(f"{path} is not a crewpoint SQLite store: it is left untouched")
    refuse_newer(path, version, SCHEMA_VERSION)
    return version


def refuse_newer(path: str, version: int, known: int) -> None:
    if version > known:
        raise UnsupportedSchema(
            f"{path} uses crewpoint SQLite schema v{version}, this crewpoint knows up to v{known}:"
            " upgrade crewpoint to open it"
        )


def create_store(path: str) -> int:
    """Make a new store at ``path`` all at once: built under a temporary name, then linked into place.

    Nobody ever sees a half-made store, and of several processes creating it at once exactly one wins.
    """
    from sqlite_utils import Database

    folder, name = os.path.split(os.path.abspath(path))
    make_private_dirs(folder)
    temp = os.path.join(folder, temp_name(name, "new"))
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o600)
    except OSError as exc:
        raise CheckpointError(f"cannot create {path}: {exc.strerror}") from exc
    try:
        os.fchmod(fd, 0o600)
        os.close(fd)
        conn = sqlite3.connect(temp)
        try:
            db = Database(conn, execute_plugins=False)
            migrate(db, path)
            db.enable_wal()
        finally:
            conn.close()
        try:
            os.link(temp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
        except OSError:
            if not os.path.exists(path):
                os.replace(temp, path)
    finally:
        for leftover in (temp, temp + "-wal", temp + "-shm"):
            try:
                os.unlink(leftover)
            except FileNotFoundError:
                pass
    return SCHEMA_VERSION


@contextmanager
def immediate(db: Db) -> Iterator[None]:
    """A write transaction that takes the write lock up front (waiting up to the busy timeout)."""
    db.conn.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.conn.rollback()
        raise
    db.conn.execute("COMMIT")


@contextmanager
def snapshot(db: Db) -> Iterator[None]:
    """A read transaction: every query inside sees the same state of the database."""
    db.conn.execute("BEGIN")
    try:
        yield
    finally:
        db.conn.rollback()


class SqliteDialect(Dialect):
    """SQLite's ways for the one SQL store: ``?`` placeholders, one writer at a time (``BEGIN IMMEDIATE``),
    chunk references in their own table (``chunk_refs``), watchers that watch the file (nothing to notify).
    A table an older store may lack is looked for by name: earlier versions added some beside the schema."""

    DIGESTS_SINCE = 3
    RUNS_SINCE = 2
    CLAIMS_SINCE = 4
    conn: Db

    def has_table(self, name: str, since: int) -> bool:
        return self.version >= since or name in self.conn.table_names()

    def reading(self) -> AbstractContextManager[None]:
        return snapshot(self.conn)

    def writing(self, alone: bool) -> AbstractContextManager[None]:
        return immediate(self.conn)

    def insert_chunks(self, rows: builtins.list[tuple[bytes, bytes]]) -> Iterable[bytes]:
        self.conn.conn.executemany("INSERT INTO chunks (hash, data) VALUES (?, ?)", rows)
        self.conn.conn.executemany("INSERT INTO chunk_refs (hash, refs) VALUES (?, 0)", [(h,) for h, _ in rows])
        return [h for h, _ in rows]

    def count_refs(self, counts: Mapping[bytes, int]) -> builtins.list[bytes]:
        changes = [(n, h) for h, n in counts.items()]
        self.conn.conn.executemany("UPDATE chunk_refs SET refs = refs + ? WHERE hash = ?", changes)
        dead: builtins.list[bytes] = []
        for where, args in self.where_in("hash", sorted(h for h, n in counts.items() if n < 0)):
            dead.extend(bytes(h) for (h,) in self.q(f"SELECT hash FROM chunk_refs WHERE refs <= 0 AND {where}", args))
        return dead

    def drop_chunks(self, dead: builtins.list[bytes]) -> builtins.list[bytes]:
        data: builtins.list[bytes] = []
        for where, args in self.where_in("hash", dead):
            data.extend(d for (d,) in self.q(f"SELECT data FROM chunks WHERE {where}", args))
        self.conn.conn.executemany("DELETE FROM chunks WHERE hash = ?", [(h,) for h in dead])
        self.conn.conn.executemany("DELETE FROM chunk_refs WHERE hash = ?", [(h,) for h in dead])
        return data
