"""One SQL store: the logic of the SQLite and PostgreSQL stores, written once against a dialect per engine.

Both engines keep the same tables (``checkpoints``, ``bodies``, ``chunks`` and their reference counts, ``runs``,
``claims``, ``schema_meta``): a checkpoint's metadata in indexed columns, its body as a compressed manifest of
content-addressed chunks shared by every checkpoint that holds them (:mod:`crewpoint.providers.chunks`).
:class:`SqlProvider` reads, writes, deletes and prunes records, counts chunk references, keeps claims and run
records, all through a :class:`Dialect`: one store's connection in use, with what differs between the engines
(placeholders, table names, transactions and locks, how chunk references are counted, notification). The
dialects are :class:`crewpoint.providers.sqlite_schema.SqliteDialect` and :class:`crewpoint.providers.pg_sql.PgDialect`;
each engine's provider opens its connections, makes and migrates its schema (a migration list each) and answers
what only it can (SQLite's streamed listing and garbage collection, PostgreSQL's pools and ``LISTEN``).
"""

from __future__ import annotations

import builtins
import functools
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Literal

from crewpoint.providers.base import (
    LISTED_COLUMNS,
    WRITTEN_COLUMNS,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    meta_from_row,
)
from crewpoint.providers.claims import MAX_CLAIM_BYTES, decode_claim, too_big
from crewpoint.providers.prune import newest_first
from crewpoint.providers.refs import ID_RE, checked, damaged_meta, match_prefix
from crewpoint.providers.runs import RunInfo, run_from_dict

if TYPE_CHECKING:
    from crewpoint.providers import chunks

Mode = Literal["read", "upgrade", "make"]
"""How a store is opened: ``read`` as it is (never migrated); ``upgrade`` an existing one brought to the newest
schema; ``make`` made when missing, or migrated."""

# Payloads of the store's notifications: what changed (a claim: a request was answered).
CHECKPOINT, RUN, DELETE, CLAIM = "c", "r", "d", "a"

RUN_COLUMNS = tuple(RunInfo.__dataclass_fields__)
BODY_ROW = {1: "its body is missing", 2: "its body is empty"}
"""What a listing's row tells of its body row without reading the body: 1 missing, 2 empty (0: present)."""
_BODY_STATE = (
    ", CASE WHEN b.id IS NULL THEN 1 WHEN length(b.manifest) = 0 THEN 2 ELSE 0 END"
    " FROM {s}checkpoints c LEFT JOIN {s}bodies b ON b.id = c.id"
)
_INSERT = (
    "INSERT INTO {s}checkpoints ("
    + ", ".join(f'"{c}"' for c in WRITTEN_COLUMNS)
    + f") VALUES ({', '.join('?' * len(WRITTEN_COLUMNS))})"
)
_ORDER_KEY = [WRITTEN_COLUMNS.index(c) for c in ("lineage", "branch", "sequence", "created_at")]
_STEPS_BACK = (
    "EXISTS (SELECT 1 FROM (SELECT created_at FROM {s}checkpoints WHERE lineage = ? AND branch = ?"
    " AND sequence < ? ORDER BY sequence DESC LIMIT 1) AS p WHERE p.created_at > ?)"
    " OR EXISTS (SELECT 1 FROM (SELECT created_at FROM {s}checkpoints WHERE lineage = ? AND branch = ?"
    " AND sequence > ? ORDER BY sequence LIMIT 1) AS n WHERE n.created_at < ?)"
)
"""Whether a checkpoint breaks time order within its run's branch (parameters: lineage, branch, sequence,
created_at, twice): its neighbour by sequence on either side is on the wrong side of it in time, after a clock
stepped back. While none ever did, list order is the order of the index by time (see :func:`by_time`)."""


@functools.lru_cache(maxsize=1024)
def _translated(text: str, prefix: str, mark: str) -> str:
    return text.replace("{s}", prefix).replace("?", mark) if mark != "?" else text.replace("{s}", prefix)


class Dialect:
    """One store's connection in use, and what its engine does its own way.

    Statements are written once with ``?`` for parameters and ``{s}`` before each table name; :meth:`q` puts in
    the engine's placeholder and the store's schema. An engine's dialect overrides the rest: transactions and
    their locks, chunk reference counts, notification, and from which schema version each table is there.
    """

    MARK = "?"
    STARTS_WITH = ("GLOB", "*")
    """The operator and wildcard that match ids by prefix (ids hold no wildcard of either)."""
    DIGESTS_SINCE = 1
    """The schema version whose rows record their body's length and digest."""
    USAGE_SINCE = 0
    """The schema version whose rows record their run id and usage; an older store reads '' for both."""
    RUNS_SINCE = 1
    CLAIMS_SINCE = 1
    SHARED_WRITES = False
    """Whether writers take the store's lock shared (side by side); a replacing write then goes again alone."""
    CLAIM_VALUES = "?, ?, ?"
    """A claim's key, its JSON text and the time it was made, as the claims table takes them."""
    CLAIM_TEXT = "value"
    CLAIM_SIZE = "length(CAST(value AS BLOB))"

    def __init__(self, conn: Any, name: str, version: int, prefix: str = "", read_only: str | None = None) -> None:
        self.conn = conn
        self.name = name
        self.version = version
        self.prefix = prefix
        self.read_only = read_only

    def q(self, text: str, params: Sequence[Any] | Mapping[str, Any] = ()) -> Any:
        """Run one statement; the engine's cursor."""
        return self.conn.execute(_translated(text, self.prefix, self.MARK), params)

    def columns(self, alias: str = "") -> str:
        """The listed columns as a select list; '' for those a store older than :attr:`USAGE_SINCE` lacks."""
        old = self.version < self.USAGE_SINCE
        return ", ".join("''" if old and c in ("run_id", "usage") else f'{alias}"{c}"' for c in LISTED_COLUMNS)

    def has_table(self, name: str, since: int) -> bool:
        return self.version >= since

    def refuse(self, action: str) -> None:
        """Refuse a change to a store this process can only read."""
        if self.read_only is not None:
            raise CheckpointError(f"cannot {action} {self.name}: {self.read_only}")

    def where_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, builtins.list[Any]]]:
        """``column`` among ``values``, as conditions and their parameters (in batches an engine can take)."""
        for start in range(0, len(values), 500):
            part = builtins.list(values[start : start + 500])
            yield f"{column} IN ({','.join('?' * len(part))})", part

    # what each engine does its own way

    def reading(self) -> AbstractContextManager[Any]:
        """A read transaction: every query inside sees one state of the store."""
        raise NotImplementedError

    def writing(self, alone: bool) -> AbstractContextManager[Any]:
        """A write transaction holding the store's lock (``alone``: no other writer beside it)."""
        raise NotImplementedError

    def retry(self, write: Callable[[], None]) -> None:
        """Run a write transaction, again when the engine asks for it (a deadlock between writers)."""
        write()

    def notify(self, what: str, subject: str = "") -> None:
        """Tell the store's watchers, when the transaction commits, what changed. Default: they watch the file."""

    def insert_chunks(self, rows: builtins.list[tuple[bytes, bytes]]) -> Iterable[bytes]:
        """Add chunks (hash, compressed data) with no reference yet; the hashes this insert added."""
        raise NotImplementedError

    def count_refs(self, counts: Mapping[bytes, int]) -> builtins.list[bytes]:
        """Add ``counts`` (negative: release) to the chunks' references; the chunks left with none."""
        raise NotImplementedError

    def drop_chunks(self, dead: builtins.list[bytes]) -> builtins.list[bytes]:
        """Remove chunks nobody refers to; their compressed data."""
        raise NotImplementedError


# -- inside a connection -----------------------------------------------------------------------------------------


def listing(sql: Dialect) -> str:
    """The listing's query: each row's listed columns and its body row's state (:data:`BODY_ROW`)."""
    return "SELECT " + sql.columns("c.") + _BODY_STATE


def row_meta(row: Sequence[Any], name: str) -> CheckpointMeta:
    """One row's metadata; a row with a wrong-typed or missing value comes back damaged, with the reason."""
    return checked(meta_from_row(row, f"{name}#{row[0]}"))


def listed_meta(row: Sequence[Any], name: str) -> CheckpointMeta:
    """A row of :func:`listing`: its metadata, damaged when its body row is missing or empty."""
    meta = row_meta(row[:-1], name)
    problem = BODY_ROW.get(row[-1])
    return damaged_meta(meta, problem) if problem is not None and meta.damaged is None else meta


def list_metas(sql: Dialect, branch: str | None) -> builtins.list[CheckpointMeta]:
    where, args = (" WHERE c.branch = ?", [branch]) if branch is not None else ("", [])
    return newest_first(listed_meta(row, sql.name) for row in sql.q(listing(sql) + where, args).fetchall())


def meta_of(sql: Dialect, checkpoint_id: str) -> CheckpointMeta | None:
    row = sql.q(f"SELECT {sql.columns()} FROM {{s}}checkpoints WHERE id = ?", [checkpoint_id]).fetchone()
    return None if row is None else row_meta(row, sql.name)


def ids_from(sql: Dialect, prefix: str) -> builtins.list[str]:
    """The id equal to ``prefix`` if there is one, else the first eleven (by id) that start with it, from the
    index on ids (``prefix`` matches :data:`ID_RE`: no wildcard)."""
    if sql.q("SELECT 1 FROM {s}checkpoints WHERE id = ?", [prefix]).fetchone() is not None:
        return [prefix]
    operator, wildcard = sql.STARTS_WITH
    query = f"SELECT id FROM {{s}}checkpoints WHERE id {operator} ? ORDER BY id LIMIT 11"
    return [r[0] for r in sql.q(query, [prefix + wildcard]).fetchall()]


def resolve(sql: Dialect, prefix: str) -> CheckpointMeta:
    """The checkpoint whose id is ``prefix`` or the only one that starts with it."""
    if ID_RE.fullmatch(prefix):
        found = meta_of(sql, match_prefix(ids_from(sql, prefix), prefix, sql.name))
        if found is not None:
            return found
    raise CheckpointNotFound(f"no checkpoint {prefix!r} in {sql.name}")


def by_time(sql: Dialect) -> bool:
    """Whether list order is the order of the index by time: no clock ever stepped back within a run's branch."""
    order = sql.q("SELECT value FROM {s}schema_meta WHERE key = 'order'").fetchone()
    return order is not None and order[0] == "by-time"


def body_of(sql: Dialect, meta: CheckpointMeta) -> CheckpointRecord:
    """The record of ``meta`` with its body, read and checked inside the caller's transaction."""
    # lazy: hashlib starts OpenSSL, which `checkpoint list` never needs
    import hashlib

    from crewpoint.providers import chunks

    found = sql.q("SELECT manifest FROM {s}bodies WHERE id = ?", [meta.id]).fetchone()
    if found is None:
        raise DamagedCheckpoint(f"{sql.name}#{meta.id}: the checkpoint body is missing")
    if sql.version >= sql.DIGESTS_SINCE:
        row = sql.q("SELECT body_length, digest FROM {s}checkpoints WHERE id = ?", [meta.id]).fetchone()
        if row is not None and type(row[0]) is int and isinstance(row[1], str):
            meta = checked(meta.with_(body_length=row[0], digest=row[1]))
    try:
        manifest = zlib.decompress(found[0])
        if meta.digest and (len(manifest) != meta.body_length or hashlib.sha256(manifest).hexdigest() != meta.digest):
            raise chunks.BadChunk("its manifest does not match the digest its row records")
        body = chunks.join(manifest, lambda hashes: load_chunks(sql, hashes), meta.size)
    except chunks.MissingChunk as exc:
        raise DamagedCheckpoint(f"{sql.name}#{meta.id}: body data chunk {exc} is missing") from exc
    except (zlib.error, ValueError, KeyError, TypeError, IndexError) as exc:
        raise DamagedCheckpoint(f"{sql.name}#{meta.id}: body data is corrupt ({exc})") from exc
    return CheckpointRecord(meta, body)


def load_chunks(sql: Dialect, hashes: Sequence[bytes]) -> dict[bytes, bytes]:
    out: dict[bytes, bytes] = {}
    for where, args in sql.where_in("hash", hashes):
        for digest, data in sql.q(f"SELECT hash, data FROM {{s}}chunks WHERE {where}", args).fetchall():
            out[bytes(digest)] = zlib.decompress(data)
    return out


def sound_bodies(sql: Dialect, metas: builtins.list[CheckpointMeta]) -> builtins.list[CheckpointMeta]:
    """``metas`` with those whose body is missing, or whose manifest does not match its recorded digest, marked
    damaged: a prune never counts them (nor deletes them by a count). Chunks are checked when a body is read."""
    from crewpoint.providers import chunks

    digests = ", c.body_length, c.digest" if sql.version >= sql.DIGESTS_SINCE else ", 0, ''"
    query = f"SELECT c.id, b.manifest{digests} FROM {{s}}checkpoints c LEFT JOIN {{s}}bodies b ON b.id = c.id"
    bad: dict[str, str] = {}
    for checkpoint_id, manifest, length, digest in sql.q(query).fetchall():
        if manifest is None:
            bad[checkpoint_id] = "its body is missing"
        elif digest:
            problem = chunks.manifest_problem(bytes(manifest), length, digest)
            if problem is not None:
                bad[checkpoint_id] = problem
    if not bad:
        return metas
    return [damaged_meta(m, bad[m.id]) if m.id in bad and m.damaged is None else m for m in metas]


def runs_of(sql: Dialect) -> builtins.list[RunInfo]:
    """The run records in the store, newest start first; damaged rows skipped."""
    if not sql.has_table("runs", sql.RUNS_SINCE):
        return []
    rows = sql.q(f"SELECT {', '.join(RUN_COLUMNS)} FROM {{s}}runs").fetchall()
    runs = [run_from_dict(dict(zip(RUN_COLUMNS, row, strict=True))) for row in rows]
    return sorted((r for r in runs if r is not None), key=lambda r: r.started_at, reverse=True)


def put_chunks(sql: Dialect, parts: chunks.Split) -> None:
    """Store the chunks of a body that are not in the store yet and count the references to them.

    Runs under the store's lock: no chunk seen here is deleted before the transaction ends. Of several writers
    adding the same chunk, the one whose insert lands counts its children; rows go in hash order, so writers
    never wait on each other in a circle.
    """
    hashes = sorted(parts.chunks)
    present: set[bytes] = set()
    for where, args in sql.where_in("hash", hashes):
        present.update(bytes(h) for (h,) in sql.q(f"SELECT hash FROM {{s}}chunks WHERE {where}", args).fetchall())
    new = [h for h in hashes if h not in present]
    counts: Counter[bytes] = Counter(parts.roots)
    for digest in sql.insert_chunks([(h, zlib.compress(parts.chunks[h].payload)) for h in new]) if new else ():
        counts.update(parts.chunks[bytes(digest)].children)
    if counts:
        sql.count_refs(counts)


def delete_checkpoints(sql: Dialect, ids: Sequence[str]) -> int:
    """Delete checkpoints and release their chunks; a chunk nobody refers to any more goes, and releases its
    own. Called holding the store's lock alone."""
    from crewpoint.providers import chunks

    released: Counter[bytes] = Counter()
    removed = 0
    for where, args in sql.where_in("id", ids):
        for (manifest,) in sql.q(f"SELECT manifest FROM {{s}}bodies WHERE {where}", args).fetchall():
            released.update(chunks.children_of(zlib.decompress(manifest)))
        removed += sql.q(f"DELETE FROM {{s}}checkpoints WHERE {where}", args).rowcount
        sql.q(f"DELETE FROM {{s}}bodies WHERE {where}", args)
    while released:
        dead = sql.count_refs({h: -n for h, n in released.items()})
        released = Counter()
        for data in sql.drop_chunks(dead) if dead else ():
            released.update(chunks.children_of(zlib.decompress(data)))
    return removed


def write_once(sql: Dialect, checkpoint_id: str, parts: chunks.Split, row: Sequence[Any], manifest: bytes) -> None:
    """One write transaction. Writers that may go side by side go first holding the lock shared, and again
    alone when the checkpoint replaces one (that deletes). The first statement also tells whether the
    checkpoint breaks time order in its run's branch."""
    order_key = [row[i] for i in _ORDER_KEY]
    for alone in (False, True) if sql.SHARED_WRITES else (True,):
        with sql.writing(alone):
            first = "SELECT EXISTS (SELECT 1 FROM {s}checkpoints WHERE id = ?), " + _STEPS_BACK
            exists, steps_back = sql.q(first, [checkpoint_id, *order_key, *order_key]).fetchone()
            if exists and not alone:
                continue
            if exists:
                delete_checkpoints(sql, [checkpoint_id])
            if steps_back:
                sql.q("UPDATE {s}schema_meta SET value = 'stepped' WHERE key = 'order' AND value <> 'stepped'")
            put_chunks(sql, parts)
            sql.q(_INSERT, row)
            sql.q("INSERT INTO {s}bodies (id, manifest) VALUES (?, ?)", [checkpoint_id, manifest])
            sql.notify(CHECKPOINT, checkpoint_id)
            return


def claim_rows(sql: Dialect, key: str | None) -> dict[str, str | int]:
    """Each claim's text by key; a value over :data:`MAX_CLAIM_BYTES` as its size alone (never read)."""
    if not sql.has_table("claims", sql.CLAIMS_SINCE):
        return {}  # an older store: nothing claimed yet (its first claim migrates it)
    size, text = sql.CLAIM_SIZE, sql.CLAIM_TEXT
    query = f"SELECT key, {size}, CASE WHEN {size} <= ? THEN {text} END FROM {{s}}claims"
    query += "" if key is None else " WHERE key = ?"
    rows = sql.q(query + " ORDER BY key", [MAX_CLAIM_BYTES] + ([] if key is None else [key])).fetchall()
    return {str(k): str(v) if v is not None else int(n) for k, n, v in rows}


def decoded(stored: str | int, where: str) -> dict[str, Any]:
    """A claim row's value (:func:`claim_rows`): its size alone is a value too big to read."""
    if isinstance(stored, int):
        raise too_big(where, stored)
    return decode_claim(stored, where)
