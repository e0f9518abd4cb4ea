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
"""

from __future__ import annotations

import builtins
import itertools
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crewpoint.providers import OPEN_DATABASES, has_sqlite_header
from crewpoint.providers.base import (
    LISTED_COLUMNS,
    WRITTEN_COLUMNS,
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    meta_from_row,
    meta_row,
    new_meta,
    walk_parents,
)
from crewpoint.providers.claims import MAX_CLAIM_BYTES, check_claim_key, decode_claim, encode_claim, too_big
from crewpoint.providers.files import (
    make_private_dirs,
    nearest_existing,
    probe_file,
    remove_stale_temp_files,
    temp_name,
)
from crewpoint.providers.listed import ListedRow, all_sound, as_meta, listed_row, newest_rows, row_of
from crewpoint.providers.prune import PrunePlan, PruneStrategy, newest_first, unanswered
from crewpoint.providers.refs import ID_RE, check_record, checked, damaged_meta, match_prefix, meta_problem, split_ref
from crewpoint.providers.runs import RunInfo, run_from_dict
from crewpoint.providers.sqlite_schema import MIGRATIONS as MIGRATIONS  # the schema's names, importable here too
from crewpoint.providers.sqlite_schema import (
    SCHEMA_VERSION,
    Conn,
    Db,
    immediate,
    migrate,
    old_columns,
    settle_version,
    snapshot,
)
from crewpoint.providers.sqlite_schema import Migration as Migration
from crewpoint.providers.sqlite_schema import read_schema_version as read_schema_version

if TYPE_CHECKING:
    from crewpoint.providers import chunks
    from crewpoint.providers.watch import WatchSpec


SQLITE_MAGIC = b"SQLite format 3\x00"
_BATCH = 500
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
_ONE_META = (
    "SELECT "
    + ", ".join(f'c."{c}"' for c in LISTED_COLUMNS)
    + ", CASE WHEN b.id IS NULL THEN 1 WHEN length(b.manifest) = 0 THEN 2 ELSE 0 END"
    + " FROM checkpoints c LEFT JOIN bodies b ON b.id = c.id WHERE c.id = ?"
)
"""One row by id, with what its body row tells without reading the body: 1 missing, 2 empty, 0 present."""
_BODY_ROW = {1: "its body is missing", 2: "its body is empty"}
_INSERT = (
    "INSERT INTO checkpoints ("
    + ", ".join(f'"{c}"' for c in WRITTEN_COLUMNS)
    + f") VALUES ({','.join('?' * len(WRITTEN_COLUMNS))})"
)

# Connections inherited through fork(): the child must neither use nor close them.
_inherited: list[sqlite3.Connection] = []


_RUN_COLUMNS = tuple(RunInfo.__dataclass_fields__)


def _batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    for start in range(0, len(items), _BATCH):
        yield items[start : start + _BATCH]


def _marks(n: int) -> str:
    return ",".join("?" * n)


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


class SqliteProvider(BaseProvider):
    """Checkpoints in one SQLite database file; ``location`` is its path, ``path#id`` names one checkpoint.

    ``meta.size`` of a listed checkpoint is the length of its body as compact JSON (what a JSON file of it
    would hold); the bytes it adds to the database are usually far fewer.
    """

    kind = "sqlite"
    newest_is_cheap = True

    def __init__(self, busy_timeout: float = 10.0) -> None:
        self.busy_timeout = busy_timeout
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.RLock()
        self._stores: dict[str, _Store] = {}
        # Per database, the list items of the last body written: the next write encodes only what changed.
        self._memos: dict[str, chunks.Memo] = {}
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        return {"busy_timeout": self.busy_timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.busy_timeout = float(state.get("busy_timeout", 10.0))
        self._reset()

    def __repr__(self) -> str:
        return f"SqliteProvider(busy_timeout={self.busy_timeout})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SqliteProvider) and other.busy_timeout == self.busy_timeout

    def __hash__(self) -> int:
        return hash((SqliteProvider, self.busy_timeout))

    def close(self) -> None:
        """Close this provider's connections (it reopens them when used again)."""
        with self._lock:
            stores, self._stores = self._stores, {}
            self._memos = {}
            if os.getpid() == self._pid:
                for store in stores.values():
                    store.db.close()

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
                store = self._open(path, create)
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

    def _open(self, path: str, create: bool) -> _Store:
        if os.path.isdir(path):
            raise CheckpointError(f"{path} is a folder, not a crewpoint SQLite store")
        if not os.path.exists(path):
            if not create:
                raise CheckpointNotFound(f"no checkpoint store at {path}")
            self._guard(path, lambda: _create_store(path))
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

    # the provider interface

    def write(self, location: str, record: CheckpointRecord) -> str:
        import hashlib

        # lazy: `checkpoint list` never loads providers.chunks
        from crewpoint.providers import chunks  # bodies only: a listing never loads the chunk code

        path, _ = split_ref(location)
        meta = check_record(record)
        key = os.path.abspath(path)
        try:
            parts = chunks.split(record.body, self._memos.get(key))
        except (TypeError, ValueError, RecursionError) as exc:
            raise CheckpointError(f"checkpoint {meta.id} has a body that is not JSON-ready: {exc}") from exc
        digest = hashlib.sha256(parts.manifest).hexdigest()
        row = meta_row(meta.with_(size=parts.size, body_length=len(parts.manifest), digest=digest))
        with self._use(path, create=True) as store:
            db = store.db
            with immediate(db):
                self._delete(db, [meta.id])
                self._put_chunks(db, parts)
                db.execute(_INSERT, row)
                db.execute("INSERT INTO bodies (id, manifest) VALUES (?, ?)", [meta.id, zlib.compress(parts.manifest)])
                self._note_clock_step(db, meta)
        self._memos[key] = parts.memo
        return f"{path}#{meta.id}"

    @staticmethod
    def _note_clock_step(db: Db, meta: CheckpointMeta) -> None:
        """Record once that time and sequence disagree within a run's branch (a clock stepped back)."""
        stepped = db.execute(
            "SELECT 1 FROM checkpoints WHERE lineage = ? AND branch = ? AND id != ?"
            " AND ((sequence < ? AND created_at >= ?) OR (sequence > ? AND created_at <= ?)) LIMIT 1",
            [meta.lineage, meta.branch, meta.id, meta.sequence, meta.created_at, meta.sequence, meta.created_at],
        ).fetchone()
        if stepped is not None:
            db.execute("UPDATE schema_meta SET value = 'stepped' WHERE key = 'order'")

    def list_newest(self, location: str, limit: int, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        """The first ``limit`` of :meth:`list`, from the index by time while no clock ever stepped back in the
        store (else from a full listing)."""
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return []
            db = store.db
            with snapshot(db):
                order = None
                if store.version >= 2:
                    order = db.execute("SELECT value FROM schema_meta WHERE key = 'order'").fetchone()
                if order is None or order[0] != "by-time":
                    return self._list(db, path, branch)[: max(0, limit)]
        return builtins.list(itertools.islice(self.iter_list(location, branch), max(0, limit)))

    def iter_list(self, location: str, branch: str | None = None) -> Iterator[CheckpointMeta]:
        """Rows stream from the index by time while no clock ever stepped back in the store."""
        return (new_meta(*row) for row in self.iter_list_rows(location, branch))

    def iter_list_rows(self, location: str, branch: str | None = None) -> Iterator[ListedRow]:
        """What :meth:`iter_list` gives, as rows (:class:`~crewpoint.providers.listed.ListedRow`)."""
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return
            db = store.db
            with snapshot(db):
                order = None
                if store.version >= 2:
                    order = db.execute("SELECT value FROM schema_meta WHERE key = 'order'").fetchone()
                if order is None or order[0] != "by-time":
                    yield from self._list_rows(db, path, branch)
                    return
                where, args = (" WHERE c.branch = ?", [path, branch]) if branch is not None else ("", [path])
                by_time = " ORDER BY c.created_at DESC, c.sequence DESC, c.id DESC"
                sound = _sound_ids(db) if _few_rows(db) else None  # a big store: each chunk's body rows alone
                cursor = db.execute(_LIST_ROWS + where + by_time, args)
                damaged: builtins.list[ListedRow] = []
                while rows := cursor.fetchmany(2000):
                    known = sound if sound is not None else _sound_among(db, [row[0] for row in rows])
                    for row in _rows(db, rows, path, known):
                        if row.damaged is not None and row.created_at == 0.0:
                            damaged.append(row)  # a time that is no number: listed last, as list() does
                        else:
                            yield row
                yield from newest_rows(damaged)

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        path, ref_id = split_ref(location)
        wanted = checkpoint_id or ref_id
        with self._use(path, create=False) as store:
            if store.version == 0:
                raise CheckpointNotFound(f"no checkpoints in {path}")
            db = store.db
            with snapshot(db):
                if wanted is None:
                    latest = self._latest(db, path, None)
                    if latest is None:
                        raise CheckpointNotFound(f"no checkpoints in {path}")
                    meta = latest
                else:
                    meta = self._meta(db, path, self._resolve(db, path, wanted))
                return self._record(db, path, meta, store.version)

    @staticmethod
    def _record(db: Db, path: str, meta: CheckpointMeta, version: int) -> CheckpointRecord:
        """The record of ``meta`` with its body, read and checked inside the caller's transaction."""
        import hashlib

        # lazy: `checkpoint list` never loads providers.chunks
        from crewpoint.providers import chunks  # bodies only: a listing never loads the chunk code

        found = db.execute("SELECT manifest FROM bodies WHERE id = ?", [meta.id]).fetchone()
        if found is None:
            raise DamagedCheckpoint(f"{path}#{meta.id}: the checkpoint body is missing")
        if version >= 3:
            length, digest = db.execute(
                "SELECT body_length, digest FROM checkpoints WHERE id = ?", [meta.id]
            ).fetchone()
            if type(length) is int and isinstance(digest, str):
                meta = checked(meta.with_(body_length=length, digest=digest))
        try:
            manifest = zlib.decompress(found[0])
            if meta.digest and (
                len(manifest) != meta.body_length or hashlib.sha256(manifest).hexdigest() != meta.digest
            ):
                raise chunks.BadChunk("its manifest does not match the digest its row records")
            body = chunks.join(manifest, lambda hashes: _load(db, hashes), meta.size)
        except chunks.MissingChunk as exc:
            raise DamagedCheckpoint(f"{path}#{meta.id}: body data chunk {exc} is missing") from exc
        except (zlib.error, ValueError, KeyError, TypeError, IndexError) as exc:
            raise DamagedCheckpoint(f"{path}#{meta.id}: body data is corrupt ({exc})") from exc
        return CheckpointRecord(meta, body)

    def latest(self, location: str, branch: str | None = None) -> CheckpointMeta | None:
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return None
            return self._latest(store.db, path, branch)

    def ancestors(self, location: str, checkpoint_id: str) -> builtins.list[CheckpointMeta]:
        """One indexed row per parent instead of a listing of the whole store."""
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return []
            db = store.db
            with snapshot(db):

                def lookup(wanted: str) -> CheckpointMeta | None:
                    row = db.execute(_SELECT_META + " WHERE id = ?", [wanted]).fetchone()
                    return None if row is None else _row_meta(row, path)

                return walk_parents(lookup, checkpoint_id)

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return None
            try:
                return self._meta(store.db, path, checkpoint_id)
            except CheckpointNotFound:
                return None

    @classmethod
    def _latest(cls, db: Db, path: str, branch: str | None) -> CheckpointMeta | None:
        """The first good checkpoint ``list`` would give, from the head (highest sequence) of each run's
        branch instead of every row: order never depends on the clock within a branch."""
        where, args = (" WHERE branch = ?", [branch]) if branch is not None else ("", [])
        heads = db.execute(
            _SELECT_META
            + " AS c JOIN (SELECT lineage AS hl, branch AS hb, max(sequence) AS hs FROM checkpoints"
            + where
            + " GROUP BY lineage, branch) ON c.lineage = hl AND c.branch = hb AND c.sequence = hs"
            " ORDER BY c.created_at DESC, c.sequence DESC, c.id DESC LIMIT 8",
            args,
        ).fetchall()
        metas = newest_first(_row_meta(row, path) for row in heads)
        odd = db.execute("SELECT 1 FROM checkpoints WHERE typeof(sequence) != 'integer' LIMIT 1").fetchone()
        if odd is not None or (metas and metas[0].damaged):
            # a damaged row may stand in for its branch's head: look at every row
            metas = cls._list(db, path, branch)
        return next((m for m in metas if m.damaged is None), None)

    def find(self, location: str, prefix: str) -> CheckpointMeta:
        """Two indexed look-ups instead of a listing of the whole store: the ids that start with ``prefix``
        (the first eleven tell "ambiguous"), then that one row, marked damaged as :meth:`list` marks it."""
        if not ID_RE.fullmatch(prefix):  # an empty or odd prefix: matched against every id, as always
            return super().find(location, prefix)
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return super().find(location, prefix)
            db = store.db
            with snapshot(db):
                full = match_prefix(_ids_from(db, prefix), prefix, location)
                row = db.execute(_ONE_META, [full]).fetchone()
                if row is None:  # not possible inside one read transaction; said plainly all the same
                    raise CheckpointNotFound(f"no checkpoint {prefix!r} in {location}")
                return _listed_meta(row, path)

    def list(self, location: str, branch: str | None = None) -> list[CheckpointMeta]:
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return []
            return self._list(store.db, path, branch)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        path, _ = split_ref(location)
        wanted = sorted(set(ids))
        if not wanted:
            return 0
        with self._use(path, create=False) as store:
            if store.version == 0:
                return 0
            if store.read_only is not None:
                raise CheckpointError(f"cannot delete from {path}: {store.read_only}")
            with immediate(store.db):
                return self._delete(store.db, wanted)

    def prune(self, location: str, strategy: PruneStrategy, dry_run: bool = False) -> PrunePlan:
        """As :meth:`BaseProvider.prune`, planned and applied in one write transaction."""
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return strategy.plan([])
            if store.read_only is not None:
                raise CheckpointError(f"cannot prune {path}: {store.read_only}")
            with immediate(store.db):
                db, version = store.db, store.version
                metas = _sound_bodies(db, self._list(db, path, None), version)

                def waiting(asking: list[CheckpointMeta]) -> set[str]:
                    claims = version >= SCHEMA_VERSION or "claims" in db.table_names()
                    return unanswered(
                        asking,
                        lambda meta: self._record(db, path, meta, version).body,
                        lambda key: (
                            claims and db.execute("SELECT 1 FROM claims WHERE key = ?", [key]).fetchone() is not None
                        ),
                    )

                plan = strategy.plan(metas, _runs(db), waiting)
                if plan.doomed and not dry_run:
                    self._delete(store.db, plan.ids)
        return plan

    def collect_garbage(self, location: str) -> int:
        """Recount every chunk reference from the manifests, remove unreachable chunks; return how many.

        Normal use never leaves garbage (deletes release chunks at once); this repairs a store edited by hand.
        """
        # lazy: `checkpoint list` never loads providers.chunks
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

    def stats(self, location: str) -> dict[str, int]:
        """Counts and stored bytes: ``checkpoints``, ``chunks``, ``chunk_bytes``, ``manifest_bytes``."""
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            if store.version == 0:
                return {"checkpoints": 0, "chunks": 0, "chunk_bytes": 0, "manifest_bytes": 0}
            db = store.db
            with snapshot(db):
                n_checkpoints = db.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
                n_chunks, chunk_bytes = db.execute("SELECT count(*), total(length(data)) FROM chunks").fetchone()
                manifest_bytes = db.execute("SELECT total(length(manifest)) FROM bodies").fetchone()
            return {
                "checkpoints": int(n_checkpoints),
                "chunks": int(n_chunks),
                "chunk_bytes": int(chunk_bytes),
                "manifest_bytes": int(manifest_bytes[0]),
            }

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

    def write_run(self, location: str, run: RunInfo) -> bool:
        path, _ = split_ref(location)
        if not os.path.exists(path):
            return False  # the store is made by the first checkpoint, not by a run record
        values = [getattr(run, c) for c in _RUN_COLUMNS]
        with self._use(path, create=True) as store:
            with immediate(store.db):
                store.db.execute(
                    f"INSERT OR REPLACE INTO runs ({', '.join(_RUN_COLUMNS)}) VALUES ({_marks(len(values))})", values
                )
        return True

    def read_runs(self, location: str) -> builtins.list[RunInfo]:
        path, _ = split_ref(location)
        with self._use(path, create=False) as store:
            return _runs(store.db)

    # claims: one answer wins (a row per claim; the first INSERT stays)

    def claim(self, location: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        text = encode_claim(key, value)
        path, _ = split_ref(location)
        if not os.path.exists(path):
            raise CheckpointNotFound(f"no checkpoint store at {path}")
        with self._use(path, create=True) as store:
            with immediate(store.db):
                store.db.execute(
                    "INSERT INTO claims (key, value, created_at) VALUES (?, ?, ?) ON CONFLICT (key) DO NOTHING",
                    [key, text, time.time()],
                )
                row = store.db.execute("SELECT value FROM claims WHERE key = ?", [key]).fetchone()
        return decode_claim(row[0], f"{path} claim {key}")

    def read_claim(self, location: str, key: str) -> dict[str, Any] | None:
        check_claim_key(key)
        found = self._claim_rows(location, key)
        return _decoded(found[key], f"{split_ref(location)[0]} claim {key}") if key in found else None

    def claims(self, location: str) -> dict[str, dict[str, Any]]:
        path, _ = split_ref(location)
        found: dict[str, dict[str, Any]] = {}
        for key, text in self._claim_rows(location, None).items():
            try:
                found[key] = _decoded(text, f"{path} claim {key}")
            except CheckpointError:
                continue  # damaged: reading its key says what is wrong
        return found

    def _claim_rows(self, location: str, key: str | None) -> dict[str, str | int]:
        """Each claim's text by key; a value over :data:`MAX_CLAIM_BYTES` as its size alone (never read)."""
        path, _ = split_ref(location)
        if not os.path.exists(path):
            return {}  # no store: nothing is claimed
        with self._use(path, create=False) as store:
            if store.version < SCHEMA_VERSION and "claims" not in store.db.table_names():
                return {}  # an older store: nothing claimed yet (its first claim migrates it)
            sql = "SELECT key, length(CAST(value AS BLOB)), CASE WHEN length(CAST(value AS BLOB)) <= ? THEN value END"
            sql += " FROM claims" + ("" if key is None else " WHERE key = ?")
            given = [MAX_CLAIM_BYTES] + ([] if key is None else [key])
            rows = store.db.execute(sql + " ORDER BY key", given).fetchall()
        return {str(k): (v if isinstance(v, str) else repr(v)) if v is not None else int(n) for k, n, v in rows}

    def watch_spec(self, location: str) -> WatchSpec:
        # lazy: `checkpoint list` never loads providers.watch
        from crewpoint.providers.watch import database_spec

        return database_spec(location)

    # inside a transaction

    @staticmethod
    def _list(db: Db, path: str, branch: str | None) -> builtins.list[CheckpointMeta]:
        return [new_meta(*row) for row in SqliteProvider._list_rows(db, path, branch)]

    @staticmethod
    def _list_rows(db: Db, path: str, branch: str | None) -> builtins.list[ListedRow]:
        if not db.conn.in_transaction:  # the rows and their body rows, as one state of the store
            with snapshot(db):
                return SqliteProvider._list_rows(db, path, branch)
        sound = _sound_ids(db)
        if branch is None:
            rows = db.execute(_LIST_ROWS, [path]).fetchall()
        else:
            rows = db.execute(_LIST_ROWS + " WHERE c.branch = ?", [path, branch]).fetchall()
        return newest_rows(_rows(db, rows, path, sound))

    @staticmethod
    def _meta(db: Db, path: str, checkpoint_id: str) -> CheckpointMeta:
        row = db.execute(_SELECT_META + " WHERE id = ?", [checkpoint_id]).fetchone()
        if row is None:
            raise CheckpointNotFound(f"no checkpoint {checkpoint_id!r} in {path}")
        return _row_meta(row, path)

    @staticmethod
    def _resolve(db: Db, path: str, prefix: str) -> str:
        if not ID_RE.fullmatch(prefix):
            raise CheckpointNotFound(f"no checkpoint {prefix!r} in {path}")
        return match_prefix(_ids_from(db, prefix), prefix, path)

    @staticmethod
    def _put_chunks(db: Db, parts: chunks.Split) -> None:
        hashes = list(parts.chunks)
        present: set[bytes] = set()
        for batch in _batches(hashes):
            found = db.execute(f"SELECT hash FROM chunks WHERE hash IN ({_marks(len(batch))})", list(batch))
            present.update(bytes(h) for (h,) in found)
        new = [h for h in hashes if h not in present]
        conn = db.conn
        conn.executemany(
            "INSERT INTO chunks (hash, data) VALUES (?, ?)",
            [(h, zlib.compress(parts.chunks[h].payload)) for h in new],
        )
        conn.executemany("INSERT INTO chunk_refs (hash, refs) VALUES (?, 0)", [(h,) for h in new])
        held = [c for h in new for c in parts.chunks[h].children]
        held.extend(parts.roots)
        conn.executemany("UPDATE chunk_refs SET refs = refs + 1 WHERE hash = ?", [(h,) for h in held])

    @staticmethod
    def _delete(db: Db, ids: Sequence[str]) -> int:
        """Delete checkpoints and release their chunks; a chunk nobody refers to any more is removed."""
        # lazy: `checkpoint list` never loads providers.chunks
        from crewpoint.providers import chunks  # bodies only: a listing never loads the chunk code

        released: list[bytes] = []
        removed = 0
        for batch in _batches(ids):
            marks = _marks(len(batch))
            for (manifest,) in db.execute(f"SELECT manifest FROM bodies WHERE id IN ({marks})", list(batch)):
                released.extend(chunks.children_of(zlib.decompress(manifest)))
            removed += db.execute(f"DELETE FROM checkpoints WHERE id IN ({marks})", list(batch)).rowcount
            db.execute(f"DELETE FROM bodies WHERE id IN ({marks})", list(batch))
        conn = db.conn
        while released:
            conn.executemany("UPDATE chunk_refs SET refs = refs - 1 WHERE hash = ?", [(h,) for h in released])
            dead: list[bytes] = []
            for batch in _batches(sorted(set(released))):
                query = f"SELECT hash FROM chunk_refs WHERE refs <= 0 AND hash IN ({_marks(len(batch))})"
                dead.extend(bytes(h) for (h,) in db.execute(query, list(batch)))
            released = []
            for data in _load(db, dead).values():
                released.extend(chunks.children_of(data))
            conn.executemany("DELETE FROM chunks WHERE hash = ?", [(h,) for h in dead])
            conn.executemany("DELETE FROM chunk_refs WHERE hash = ?", [(h,) for h in dead])
        return removed


class _CannotWrite(Exception):
    """The database (or its folder) cannot be written by this process."""


def _runs(db: Db) -> builtins.list[RunInfo]:
    """The run records in the store (none before schema v2), newest start first; damaged rows skipped."""
    if "runs" not in db.table_names():
        return []
    rows = db.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs").fetchall()
    runs = [run_from_dict(dict(zip(_RUN_COLUMNS, row, strict=True))) for row in rows]
    return sorted((r for r in runs if r is not None), key=lambda r: r.started_at, reverse=True)


def _ids_from(db: Db, prefix: str) -> builtins.list[str]:
    """The id equal to ``prefix`` if there is one, else the first eleven (by id) that start with it, from the
    index on ids (``prefix`` matches :data:`ID_RE`, so it holds no GLOB wildcard)."""
    if db.execute("SELECT 1 FROM checkpoints WHERE id = ?", [prefix]).fetchone() is not None:
        return [prefix]
    query = "SELECT id FROM checkpoints WHERE id GLOB ? ORDER BY id LIMIT 11"
    return [r[0] for r in db.execute(query, [prefix + "*"])]


def _row_meta(row: Sequence[Any], path: str) -> CheckpointMeta:
    """One row's metadata; a row with a wrong-typed field comes back damaged, with the reason."""
    return checked(meta_from_row(row, f"{path}#{row[0]}"))


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
    meta = _row_meta(row, path)
    if meta.damaged is not None or row[0] in sound:
        return meta
    found = db.execute("SELECT length(manifest) FROM bodies WHERE id = ?", [row[0]]).fetchone()
    if found is None:
        return damaged_meta(meta, _BODY_ROW[1])
    return damaged_meta(meta, _BODY_ROW[2]) if found[0] == 0 else meta


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


def _listed_meta(row: Sequence[Any], path: str) -> CheckpointMeta:
    """A row of :data:`_ONE_META`: its metadata, damaged when its body row is missing or empty."""
    meta = _row_meta(row[:-1], path)
    problem = _BODY_ROW.get(row[-1])
    return damaged_meta(meta, problem) if problem is not None and meta.damaged is None else meta


def _sound_bodies(db: Db, metas: builtins.list[CheckpointMeta], version: int) -> builtins.list[CheckpointMeta]:
    """``metas`` with those whose body is missing, or whose manifest does not match its recorded digest, marked
    damaged: a prune never counts them (nor deletes them by a count). Chunks are checked when a body is read."""
    # lazy: `checkpoint list` never loads providers.chunks
    from crewpoint.providers import chunks  # bodies only: a listing never loads the chunk code

    digests = ", c.body_length, c.digest" if version >= 3 else ", 0, ''"
    bad: dict[str, str] = {}
    query = f"SELECT c.id, b.manifest{digests} FROM checkpoints c LEFT JOIN bodies b ON b.id = c.id"
    for checkpoint_id, manifest, length, digest in db.execute(query):
        if manifest is None:
            bad[checkpoint_id] = "its body is missing"
        elif digest:
            bad_reason = chunks.manifest_problem(manifest, length, digest)
            if bad_reason is not None:
                bad[checkpoint_id] = bad_reason
    if not bad:
        return metas
    return [damaged_meta(m, bad[m.id]) if m.id in bad and m.damaged is None else m for m in metas]


def _load(db: Db, hashes: list[bytes]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for batch in _batches(hashes):
        for digest, data in db.execute(
            f"SELECT hash, data FROM chunks WHERE hash IN ({_marks(len(batch))})", list(batch)
        ):
            out[bytes(digest)] = zlib.decompress(data)
    return out


def _create_store(path: str) -> int:
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


def _decoded(stored: str | int, where: str) -> dict[str, Any]:
    """A claim row's value (:meth:`SqliteProvider._claim_rows`): its size alone is a value too big to read."""
    if isinstance(stored, int):
        raise too_big(where, stored)
    return decode_claim(stored, where)
