"""The PostgreSQL store's SQL: its schema and migrations, its dialect of the one SQL store (:class:`PgDialect`:
placeholders, advisory locks, chunk reference counts by arrays, ``NOTIFY``), and what only it answers from its
indexes (the latest checkpoint, the newest rows, each run's head). :mod:`crewpoint.providers.postgres_provider`
holds the connections.

Statements name the store's schema quoted; schema names are checked by :mod:`crewpoint.providers.pg_location`
(lower-case letters, digits, ``_``), so quoting is all they need.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar

from crewpoint.providers.base import CheckpointError, CheckpointMeta, UnsupportedSchema
from crewpoint.providers.pg_location import PgLocation
from crewpoint.providers.runs import RunInfo, this_host
from crewpoint.providers.sql_store import RUN, Dialect, list_metas, listed_meta, listing, row_meta

if TYPE_CHECKING:
    import psycopg

# The order list views give, as SQL over the index by time: a time or sequence a list view cannot trust counts as
# 0 there (see refs.damaged_meta), so damaged rows sit where a full listing puts them.
BY_TIME = (
    "(CASE WHEN created_at >= 0 AND created_at < 253402300800 THEN created_at ELSE 0 END) DESC,"
    " (CASE WHEN sequence >= 0 THEN sequence ELSE 0 END) DESC, id DESC"
)
# The same order over the listing's join (the checkpoints table as ``c``).
BY_TIME_C = (
    BY_TIME.replace("created_at", "c.created_at").replace("sequence", "c.sequence").replace("id DESC", "c.id DESC")
)


def schema_v1(s: str) -> list[str]:
    """Statements that make schema v1 in the PostgreSQL schema ``s`` (already quoted)."""
    return [
        f"""CREATE TABLE {s}.checkpoints (
            id text COLLATE "C" PRIMARY KEY, parent_id text, branch text, lineage text, sequence bigint,
            created_at double precision, "trigger" text, entity_kind text, entity_name text, tasks_done bigint,
            tasks_total bigint, schema_version bigint, version text, size bigint,
            written_at timestamptz NOT NULL DEFAULT now())""",
        f"CREATE INDEX ON {s}.checkpoints (lineage, branch, sequence)",
        f"CREATE INDEX ON {s}.checkpoints (branch)",
        f"CREATE INDEX ON {s}.checkpoints (parent_id)",
        f"CREATE INDEX checkpoints_by_time ON {s}.checkpoints ({BY_TIME})",
        f'CREATE TABLE {s}.bodies (id text COLLATE "C" PRIMARY KEY, manifest bytea NOT NULL)',
        f"CREATE TABLE {s}.chunks (hash bytea PRIMARY KEY, data bytea NOT NULL, refs bigint NOT NULL)",
        # chunks are zlib-compressed already: PostgreSQL need not try again
        f"ALTER TABLE {s}.chunks ALTER COLUMN data SET STORAGE EXTERNAL",
        f"""CREATE TABLE {s}.runs (
            run_id text PRIMARY KEY, pid bigint, host text, started_at double precision,
            last_beat double precision, status text, branch text, lineage text, entity_kind text,
            entity_name text, checkpoint_id text)""",
    ]


def schema_v2(s: str) -> list[str]:
    """Each checkpoint records its body's length and digest: the length and sha256 of its manifest (whose chunks
    are each named by their own sha256). Rows written before have 0 and '' (not recorded) and still read."""
    return [
        f"ALTER TABLE {s}.checkpoints ADD COLUMN body_length bigint NOT NULL DEFAULT 0,"
        " ADD COLUMN digest text NOT NULL DEFAULT ''"
    ]


def schema_v3(s: str) -> list[str]:
    """Claims: one answer wins per request. A claim is a small JSON value under its key (a request id), made by
    ``INSERT ... ON CONFLICT (key) DO NOTHING`` so that the first claimer's row stays, whichever host it is on.
    ``json``, not ``jsonb``: the value reads back as written, any text in it (``\\u0000`` too) as in other stores."""
    return [
        f"""CREATE TABLE {s}.claims (
            key text COLLATE "C" PRIMARY KEY, value json NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"""
    ]


def schema_v4(s: str) -> list[str]:
    """Each checkpoint records the run that wrote it and what its chain and its run spent (the providers'
    ``usage_meta`` summary), so listing prices it without its body; ``cost --by run --since`` reads each run's
    newest row through the index by run and time, in one query. Rows written before have '' for both."""
    return [
        f"ALTER TABLE {s}.checkpoints ADD COLUMN run_id text NOT NULL DEFAULT '',"
        " ADD COLUMN usage text NOT NULL DEFAULT ''",
        f"CREATE INDEX checkpoints_by_run ON {s}.checkpoints (run_id, created_at)",
        f"CREATE INDEX checkpoints_by_created ON {s}.checkpoints (created_at, run_id)",
    ]


# MIGRATIONS[n] takes a store from schema version n to n + 1 (version 0: no store yet).
MIGRATIONS: tuple[Callable[[str], list[str]], ...] = (schema_v1, schema_v2, schema_v3, schema_v4)
CLAIMS_SINCE = 3
"""The schema version that has the claims table: an older store has no claim yet (its first claim migrates it)."""
SCHEMA_VERSION = len(MIGRATIONS)


class PgStore:
    """What the provider knows of one store: its location and its schema version (0: not made yet)."""

    def __init__(self, where: PgLocation) -> None:
        self.where = where
        self.version = 0


class PgDialect(Dialect):
    """PostgreSQL's ways for the one SQL store: ``%s`` placeholders, tables in the store's schema, writers
    side by side under the store's advisory lock held shared (deletes and prunes hold it alone, so a chunk a
    writer counts on is never removed under it), reference counts kept on the chunks and changed by arrays in
    hash order, a ``NOTIFY`` on the store's channel with each change, for watchers on any host."""

    MARK = "%s"
    STARTS_WITH = ("LIKE", "%")
    DIGESTS_SINCE = 2
    USAGE_SINCE = 4
    CLAIMS_SINCE = CLAIMS_SINCE
    SHARED_WRITES = True
    # json, not jsonb: the value reads back as written
    CLAIM_VALUES = "?, ?::json, to_timestamp(?)"
    CLAIM_TEXT = "value::text"
    CLAIM_SIZE = "octet_length(value::text)"
    conn: psycopg.Connection[Any]

    fence: ClassVar[Callable[[PgDialect], None] | None] = None
    """Run inside each write transaction of this process, after the store's lock and before anything is written:
    a process that may write only while it holds a run (a worker's child, :mod:`crewpoint.tui.cli.fleet_child`)
    raises there once another process took the run, and the transaction writes nothing. None: writes are not
    fenced (every process but a worker's child)."""

    def __init__(self, conn: psycopg.Connection[Any], where: PgLocation, version: int) -> None:
        super().__init__(conn, where.name, version, prefix=f'"{where.schema}".')
        self.where = where

    def where_in(self, column: str, values: Sequence[Any]) -> Iterator[tuple[str, builtins.list[Any]]]:
        yield f"{column} = ANY(?)", [builtins.list(values)]

    @contextmanager
    def reading(self) -> Iterator[None]:
        with self.conn.transaction():
            self.conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            yield

    @contextmanager
    def writing(self, alone: bool) -> Iterator[None]:
        with self.conn.transaction():
            lock = "pg_advisory_xact_lock" if alone else "pg_advisory_xact_lock_shared"
            self.conn.execute(f"SELECT {lock}(%s)", [self.where.lock_key])
            fence = PgDialect.fence
            if fence is not None:
                fence(self)
            yield

    def retry(self, write: Callable[[], None]) -> None:
        import psycopg

        for attempt in range(1, 4):
            try:
                write()
                return
            except psycopg.errors.DeadlockDetected:  # two writers counted shared chunks in another order
                if attempt == 3:
                    raise

    def notify(self, what: str, subject: str = "") -> None:
        self.conn.execute("SELECT pg_notify(%s, %s)", [self.where.channel, f"{what} {this_host()} {subject}".rstrip()])

    def insert_chunks(self, rows: builtins.list[tuple[bytes, bytes]]) -> Iterable[bytes]:
        """Of several writers adding the same chunk, only the one whose insert lands gets its hash back."""
        inserted = self.q(
            "INSERT INTO {s}chunks (hash, data, refs)"
            " SELECT h, d, 0 FROM unnest(?::bytea[], ?::bytea[]) AS v(h, d) ORDER BY h"
            " ON CONFLICT (hash) DO NOTHING RETURNING hash",
            [[h for h, _ in rows], [d for _, d in rows]],
        ).fetchall()
        return [bytes(h) for (h,) in inserted]

    def count_refs(self, counts: Mapping[bytes, int]) -> builtins.list[bytes]:
        order = sorted(counts)
        counted = self.q(
            "UPDATE {s}chunks AS c SET refs = c.refs + v.n"
            " FROM (SELECT h, n FROM unnest(?::bytea[], ?::bigint[]) AS u(h, n) ORDER BY h) AS v"
            " WHERE c.hash = v.h RETURNING c.hash, c.refs",
            [order, [counts[h] for h in order]],
        ).fetchall()
        return [bytes(h) for h, refs in counted if refs <= 0]

    def drop_chunks(self, dead: builtins.list[bytes]) -> builtins.list[bytes]:
        return [data for (data,) in self.q("DELETE FROM {s}chunks WHERE hash = ANY(?) RETURNING data", [dead])]


# -- schema and migrations -------------------------------------------------------------------------------------


def read_version(conn: psycopg.Connection[Any], where: PgLocation, known: int = SCHEMA_VERSION) -> int:
    """The store's schema version; 0 when there is none; refuses foreign and newer schemas. Only reads."""
    row = conn.execute(
        "SELECT to_regclass(%s), EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = %s)",
        [f'"{where.schema}".schema_meta', where.schema],
    ).fetchone()
    assert row is not None
    if row[0] is None:
        if row[1] and has_tables(conn, where.schema):
            raise CheckpointError(
                f"{where.name}: schema {where.schema!r} is not a crewpoint store: it is left untouched"
            )
        return 0
    found = dict(conn.execute(f'SELECT key, value FROM "{where.schema}".schema_meta').fetchall())
    if found.get("store") != "crewpoint":
        raise CheckpointError(f"{where.name}: schema {where.schema!r} is not a crewpoint store: it is left untouched")
    try:
        version = int(found.get("schema_version", ""))
    except ValueError:
        raise CheckpointError(f"{where.name}: the store's schema version is unreadable") from None
    if version > known:
        raise UnsupportedSchema(
            f"{where.name} uses crewpoint PostgreSQL schema v{version}, this crewpoint knows up to"
            f" v{known}: upgrade crewpoint to open it"
        )
    return version


def has_tables(conn: psycopg.Connection[Any], schema: str) -> bool:
    row = conn.execute(
        "SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = %s AND c.relkind IN ('r', 'v', 'm', 'p', 'f'))",
        [schema],
    ).fetchone()
    return bool(row and row[0])


def migrate(
    conn: psycopg.Connection[Any], where: PgLocation, migrations: Sequence[Callable[[str], list[str]]] = MIGRATIONS
) -> int:
    """Make or bring the store up to ``len(migrations)`` in one transaction (one process at a time); return the
    version reached. ``migrations[n]`` takes a store from version n to n + 1."""
    target = len(migrations)
    s = f'"{where.schema}"'
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", [where.lock_key ^ 1])
        version = read_version(conn, where, target)
        if version >= target:
            return version
        conn.execute(f"CREATE SCHEMA IF NOT EXISTS {s}")
        for step in migrations[version:]:
            for statement in step(s):
                conn.execute(statement)
        conn.execute(f"CREATE TABLE IF NOT EXISTS {s}.schema_meta (key text PRIMARY KEY, value text NOT NULL)")
        conn.execute(
            f"INSERT INTO {s}.schema_meta (key, value)"
            " VALUES ('schema_version', %s), ('store', 'crewpoint'), ('order', 'by-time')"
            " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
            [str(target)],
        )
    return target


# -- what only this engine answers from its indexes ------------------------------------------------------------


def latest(sql: PgDialect, branch: str | None) -> CheckpointMeta | None:
    """The first good checkpoint ``list`` would give: the head (highest sequence) of the run's branch that
    wrote last, found through two index lookups instead of a listing."""
    filter_, args = ("WHERE branch = %s ", [branch]) if branch is not None else ("", [])
    s = sql.prefix
    newest = sql.conn.execute(f"SELECT lineage, branch FROM {s}checkpoints {filter_}ORDER BY {BY_TIME} LIMIT 1", args)
    found = newest.fetchone()
    if found is None:
        return None
    head = sql.conn.execute(
        f"SELECT {sql.columns()} FROM {s}checkpoints WHERE lineage = %s AND branch = %s ORDER BY sequence DESC LIMIT 1",
        list(found),
    ).fetchone()
    meta = None if head is None else row_meta(head, sql.name)
    if meta is None or meta.damaged is not None:  # a damaged row in the way: look at them all
        return next((m for m in list_metas(sql, branch) if m.damaged is None), None)
    return meta


def report_crashed(
    sql: PgDialect, runs: builtins.list[RunInfo], dead: builtins.list[RunInfo]
) -> builtins.list[RunInfo]:
    """Record that runs of this host whose process is gone have crashed, so readers on other hosts (which
    cannot look at this host's processes and would call them lost) see it too. A run that beat since it was
    read is left alone."""
    reported: set[str] = set()
    with sql.conn.transaction():
        for run in dead:
            cur = sql.conn.execute(
                f"UPDATE {sql.prefix}runs SET status = 'crashed'"
                " WHERE run_id = %s AND status = 'running' AND last_beat = %s",
                [run.run_id, run.last_beat],
            )
            if cur.rowcount:
                reported.add(run.run_id)
        if reported:
            sql.notify(RUN, "crashed")
    return [replace(r, status="crashed") if r.run_id in reported else r for r in runs]


def newest_rows(sql: PgDialect, limit: int, branch: str | None) -> builtins.list[CheckpointMeta] | None:
    """The first ``limit`` of a listing from the index by time, or ``None`` when a clock stepped back in the
    store (then only a full listing has the order right)."""
    s = sql.prefix
    order = sql.conn.execute(f"SELECT value FROM {s}schema_meta WHERE key = 'order'").fetchone()
    if order is None or order[0] != "by-time":
        return None
    filter_, args = (" WHERE c.branch = ?", [branch]) if branch is not None else ("", [])
    rows = sql.q(f"{listing(sql)}{filter_} ORDER BY {BY_TIME_C} LIMIT ?", [*args, max(0, limit)]).fetchall()
    return [listed_meta(row, sql.name) for row in rows]


RunHead = tuple[CheckpointMeta, "str | None", "str | None"]
"""A run's newest checkpoint, the usage summary of its newest checkpoint before a cutoff (None: none before), and
the checkpoint the run resumed or forked from (the parent of its first checkpoint)."""


def run_heads(sql: PgDialect, cutoff: float | None) -> tuple[builtins.list[RunHead], builtins.list[CheckpointMeta]]:
    """Each run's newest checkpoint (written at or after ``cutoff``, when given) in one query over the indexes by
    run and by time, and the checkpoints that record no run (written before runs were recorded; their bodies
    say what they spent). A damaged newest row goes with the latter, where reading it tells why."""
    if sql.version < sql.USAGE_SINCE:
        return [], list_metas(sql, None)
    s, name = sql.prefix, sql.name
    since = " AND created_at >= %(cut)s" if cutoff is not None else ""
    before = (
        f"(SELECT b.usage FROM {s}checkpoints b WHERE b.run_id = r.run_id AND b.created_at < %(cut)s"
        " ORDER BY b.created_at DESC LIMIT 1)"
        if cutoff is not None
        else "NULL"
    )
    query = (  # the runs written since (an index-only scan by time), then each one's rows by the index by run
        f"SELECT {sql.columns('h.')}, {before},"
        f" (SELECT f.parent_id FROM {s}checkpoints f WHERE f.run_id = r.run_id ORDER BY f.created_at LIMIT 1)"
        f" FROM (SELECT DISTINCT run_id FROM {s}checkpoints WHERE run_id <> ''{since}) r"
        f" CROSS JOIN LATERAL (SELECT * FROM {s}checkpoints c WHERE c.run_id = r.run_id"
        " ORDER BY c.created_at DESC, c.sequence DESC LIMIT 1) h"
    )
    heads: builtins.list[RunHead] = []
    legacy: builtins.list[CheckpointMeta] = []
    for row in sql.conn.execute(query, {"cut": cutoff}).fetchall():
        meta = row_meta(row[:-2], name)
        if meta.damaged is None:
            heads.append((meta, row[-2] if isinstance(row[-2], str) else None, row[-1]))
        else:
            legacy.append(meta)
    legacy += [listed_meta(row, name) for row in sql.q(listing(sql) + " WHERE c.run_id = ''").fetchall()]
    return heads, legacy


def connect_error(where: PgLocation, exc: Exception) -> CheckpointError:
    text = where.scrub(" ".join(str(exc).split()))
    hint = ""
    if "password" in text:
        hint = " (crewpoint takes the password from PGPASSWORD, ~/.pgpass or a service file)"
    return CheckpointError(f"cannot connect to {where.name}: {text}{hint}")
