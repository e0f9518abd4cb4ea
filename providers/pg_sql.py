"""The SQL of the PostgreSQL store: its schema and migrations, and what one connection does inside a
transaction (list, look up, count chunk references, delete). :mod:`crewpoint.providers.postgres_provider`
holds the connections and the transactions.

Statements name the store's schema quoted (``s``); schema names are checked by
:mod:`crewpoint.providers.pg_location` (lower-case letters, digits, ``_``), so quoting is all they need.
"""

from __future__ import annotations

import builtins
import zlib
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from crewpoint.providers import chunks
from crewpoint.providers.base import (
    LISTED_COLUMNS,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    UnsupportedSchema,
    meta_from_row,
)
from crewpoint.providers.pg_location import PgLocation
from crewpoint.providers.prune import newest_first
from crewpoint.providers.refs import ID_RE, checked, damaged_meta, match_prefix
from crewpoint.providers.runs import RunInfo, run_from_dict, this_host

if TYPE_CHECKING:
    import psycopg

RUN_COLUMNS = tuple(RunInfo.__dataclass_fields__)
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
# What a listing's row tells of its body row without reading the body: 1 missing, 2 empty, 0 present.
BODY_ROW = {1: "its body is missing", 2: "its body is empty"}


USAGE_SINCE = 4
"""The schema version whose rows record their run id and usage summary; an older store reads '' for both."""
_NEW_IN_4 = ("run_id", "usage")


def columns(store: PgStore, prefix: str = "") -> str:
    """The listed columns as a select list (``prefix``: the table's alias and a dot); '' for those a store older
    than :data:`USAGE_SINCE` lacks (reading never migrates)."""
    old = store.version < USAGE_SINCE
    return ", ".join("''" if old and c in _NEW_IN_4 else f'{prefix}"{c}"' for c in LISTED_COLUMNS)


def listing(store: PgStore) -> str:
    """The listing's query in the store: each row's listed columns and its body row's state."""
    s = store.s
    return (
        "SELECT "
        + columns(store, "c.")
        + ", CASE WHEN b.id IS NULL THEN 1 WHEN octet_length(b.manifest) = 0 THEN 2 ELSE 0 END"
        + f" FROM {s}.checkpoints c LEFT JOIN {s}.bodies b ON b.id = c.id"
    )


# Payloads of the store's notifications: what changed, and on which host (a claim: a request was answered).
CHECKPOINT, RUN, DELETE, CLAIM = "c", "r", "d", "a"


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
        self.s = f'"{where.schema}"'
        self.memo: chunks.Memo | None = None


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


# -- inside a connection ---------------------------------------------------------------------------------------


def body_check(conn: psycopg.Connection[Any], store: PgStore, meta: CheckpointMeta) -> CheckpointMeta:
    """``meta`` with the body length and digest its row records (schema v2 and later)."""
    if store.version < 2:
        return meta
    row = conn.execute(f"SELECT body_length, digest FROM {store.s}.checkpoints WHERE id = %s", [meta.id]).fetchone()
    if row is None or type(row[0]) is not int or not isinstance(row[1], str):
        return meta
    return checked(replace(meta, body_length=row[0], digest=row[1]))


def row_meta(row: Sequence[Any], name: str) -> CheckpointMeta:
    """One row's metadata; a row with a wrong or missing value comes back damaged, with the reason."""
    return checked(meta_from_row(row, f"{name}#{row[0]}"))


def listed_meta(row: Sequence[Any], name: str) -> CheckpointMeta:
    """A row of :func:`listing`: its metadata, damaged when its body row is missing or empty."""
    meta = row_meta(row[:-1], name)
    problem = BODY_ROW.get(row[-1])
    return damaged_meta(meta, problem) if problem is not None and meta.damaged is None else meta


def list_metas(conn: psycopg.Connection[Any], store: PgStore, branch: str | None) -> builtins.list[CheckpointMeta]:
    if branch is None:
        rows = conn.execute(listing(store)).fetchall()
    else:
        rows = conn.execute(listing(store) + " WHERE c.branch = %s", [branch]).fetchall()
    name = store.where.name
    return newest_first(listed_meta(row, name) for row in rows)


def sound_bodies(
    conn: psycopg.Connection[Any], store: PgStore, metas: builtins.list[CheckpointMeta]
) -> builtins.list[CheckpointMeta]:
    """``metas`` with those whose body is missing, or whose manifest does not match its recorded digest, marked
    damaged: a prune never counts them (nor deletes them by a count). Chunks are checked when a body is read."""
    digests = ", c.body_length, c.digest" if store.version >= 2 else ", 0, ''"
    rows = conn.execute(
        f"SELECT c.id, b.manifest{digests} FROM {store.s}.checkpoints c LEFT JOIN {store.s}.bodies b ON b.id = c.id"
    ).fetchall()
    bad: dict[str, str] = {}
    for checkpoint_id, manifest, length, digest in rows:
        if manifest is None:
            bad[checkpoint_id] = "its body is missing"
        elif digest:
            problem = chunks.manifest_problem(bytes(manifest), length, digest)
            if problem is not None:
                bad[checkpoint_id] = problem
    if not bad:
        return metas
    return [damaged_meta(m, bad[m.id]) if m.id in bad and m.damaged is None else m for m in metas]


def meta_of(conn: psycopg.Connection[Any], store: PgStore, checkpoint_id: str) -> CheckpointMeta | None:
    row = conn.execute(f"SELECT {columns(store)} FROM {store.s}.checkpoints WHERE id = %s", [checkpoint_id]).fetchone()
    return None if row is None else row_meta(row, store.where.name)


def latest(conn: psycopg.Connection[Any], store: PgStore, branch: str | None) -> CheckpointMeta | None:
    """The first good checkpoint ``list`` would give: the head (highest sequence) of the run's branch that
    wrote last, found through two index lookups instead of a listing."""
    s = store.s
    filter_, args = ("WHERE branch = %s ", [branch]) if branch is not None else ("", [])
    newest = conn.execute(
        f"SELECT lineage, branch FROM {s}.checkpoints {filter_}ORDER BY {BY_TIME} LIMIT 1",
        args,
    ).fetchone()
    if newest is None:
        return None
    head = conn.execute(
        f"SELECT {columns(store)} FROM {s}.checkpoints WHERE lineage = %s AND branch = %s"
        " ORDER BY sequence DESC LIMIT 1",
        list(newest),
    ).fetchone()
    meta = None if head is None else row_meta(head, store.where.name)
    if meta is None or meta.damaged is not None:  # a damaged row in the way: look at them all
        return next((m for m in list_metas(conn, store, branch) if m.damaged is None), None)
    return meta


def resolve(conn: psycopg.Connection[Any], store: PgStore, prefix: str) -> str:
    if not ID_RE.fullmatch(prefix):  # ids hold no LIKE wildcards ('%', '_')
        raise CheckpointNotFound(f"no checkpoint {prefix!r} in {store.where.name}")
    return match_prefix(ids_from(conn, store, prefix), prefix, store.where.name)


def ids_from(conn: psycopg.Connection[Any], store: PgStore, prefix: str) -> builtins.list[str]:
    """The id equal to ``prefix`` if there is one, else the first eleven (by id) that start with it
    (``prefix`` matches :data:`ID_RE`: no LIKE wildcards)."""
    s = store.s
    if conn.execute(f"SELECT 1 FROM {s}.checkpoints WHERE id = %s", [prefix]).fetchone() is not None:
        return [prefix]
    query = f"SELECT id FROM {s}.checkpoints WHERE id LIKE %s ORDER BY id LIMIT 11"
    return [r[0] for r in conn.execute(query, [prefix + "%"])]


def find_prefix(conn: psycopg.Connection[Any], store: PgStore, prefix: str, where: str) -> CheckpointMeta:
    """The checkpoint whose id is ``prefix`` or the only one starting with it, marked damaged as a listing
    marks it (its body row), from indexed look-ups instead of a listing (``prefix`` matches :data:`ID_RE`)."""
    full = match_prefix(ids_from(conn, store, prefix), prefix, where)
    row = conn.execute(listing(store) + " WHERE c.id = %s", [full]).fetchone()
    if row is None:  # deleted since its id was read
        raise CheckpointNotFound(f"no checkpoint {prefix!r} in {where}")
    return listed_meta(row, store.where.name)


def runs_of(conn: psycopg.Connection[Any], store: PgStore) -> builtins.list[RunInfo]:
    rows = conn.execute(f"SELECT {', '.join(RUN_COLUMNS)} FROM {store.s}.runs").fetchall()
    runs = [run_from_dict(dict(zip(RUN_COLUMNS, row, strict=True))) for row in rows]
    return sorted((r for r in runs if r is not None), key=lambda r: r.started_at, reverse=True)


def report_crashed(
    conn: psycopg.Connection[Any],
    where: PgLocation,
    store: PgStore,
    runs: builtins.list[RunInfo],
    dead: builtins.list[RunInfo],
) -> builtins.list[RunInfo]:
    """Record that runs of this host whose process is gone have crashed, so readers on other hosts (which
    cannot look at this host's processes and would call them lost) see it too. A run that beat since it was
    read is left alone."""
    reported: set[str] = set()
    with conn.transaction():
        for run in dead:
            cur = conn.execute(
                f"UPDATE {store.s}.runs SET status = 'crashed'"
                " WHERE run_id = %s AND status = 'running' AND last_beat = %s",
                [run.run_id, run.last_beat],
            )
            if cur.rowcount:
                reported.add(run.run_id)
        if reported:
            notify(conn, where, RUN, "crashed")
    return [replace(r, status="crashed") if r.run_id in reported else r for r in runs]


def notify(conn: psycopg.Connection[Any], where: PgLocation, what: str, subject: str = "") -> None:
    conn.execute("SELECT pg_notify(%s, %s)", [where.channel, f"{what} {this_host()} {subject}".rstrip()])


def load_chunks(conn: psycopg.Connection[Any], s: str, hashes: builtins.list[bytes]) -> dict[bytes, bytes]:
    rows = conn.execute(f"SELECT hash, data FROM {s}.chunks WHERE hash = ANY(%s)", [hashes]).fetchall()
    return {bytes(h): zlib.decompress(data) for h, data in rows}


def steps_back_sql(s: str) -> str:
    """SQL telling whether a checkpoint breaks time order within its run's branch (parameters: lineage, branch,
    sequence, created_at, then the same four again): its neighbour by sequence on either side is on the wrong
    side of it in time, after a clock stepped back. While no checkpoint ever did, list order is the order of the
    index by time, and :func:`newest_rows` reads the newest few from it."""
    return (
        f"EXISTS (SELECT 1 FROM (SELECT created_at FROM {s}.checkpoints WHERE lineage = %s AND branch = %s"
        " AND sequence < %s ORDER BY sequence DESC LIMIT 1) AS before WHERE before.created_at > %s)"
        f" OR EXISTS (SELECT 1 FROM (SELECT created_at FROM {s}.checkpoints WHERE lineage = %s AND branch = %s"
        " AND sequence > %s ORDER BY sequence LIMIT 1) AS after WHERE after.created_at < %s)"
    )


def mark_stepped(conn: psycopg.Connection[Any], s: str) -> None:
    """Record that a clock stepped back in this store: list views sort it in full from now on."""
    conn.execute(f"UPDATE {s}.schema_meta SET value = 'stepped' WHERE key = 'order' AND value <> 'stepped'")


def newest_rows(
    conn: psycopg.Connection[Any], store: PgStore, limit: int, branch: str | None
) -> builtins.list[CheckpointMeta] | None:
    """The first ``limit`` of a listing from the index by time, or ``None`` when a clock stepped back in the
    store (then only a full listing has the order right)."""
    s = store.s
    order = conn.execute(f"SELECT value FROM {s}.schema_meta WHERE key = 'order'").fetchone()
    if order is None or order[0] != "by-time":
        return None
    filter_, args = (" WHERE c.branch = %s", [branch]) if branch is not None else ("", [])
    rows = conn.execute(f"{listing(store)}{filter_} ORDER BY {BY_TIME_C} LIMIT %s", [*args, max(0, limit)]).fetchall()
    return [listed_meta(row, store.where.name) for row in rows]


RunHead = tuple[CheckpointMeta, "str | None", "str | None"]
"""A run's newest checkpoint, the usage summary of its newest checkpoint before a cutoff (None: none before), and
the checkpoint the run resumed or forked from (the parent of its first checkpoint)."""


def run_heads(
    conn: psycopg.Connection[Any], store: PgStore, cutoff: float | None
) -> tuple[builtins.list[RunHead], builtins.list[CheckpointMeta]]:
    """Each run's newest checkpoint (written at or after ``cutoff``, when given) in one query over the indexes by
    run and by time, and the checkpoints that record no run (written before runs were recorded; their bodies
    say what they spent). A damaged newest row goes with the latter, where reading it tells why."""
    if store.version < USAGE_SINCE:
        return [], list_metas(conn, store, None)
    s, name = store.s, store.where.name
    since = " AND created_at >= %(cut)s" if cutoff is not None else ""
    before = (
        f"(SELECT b.usage FROM {s}.checkpoints b WHERE b.run_id = r.run_id AND b.created_at < %(cut)s"
        " ORDER BY b.created_at DESC LIMIT 1)"
        if cutoff is not None
        else "NULL"
    )
    query = (  # the runs written since (an index-only scan by time), then each one's rows by the index by run
        f"SELECT {columns(store, 'h.')}, {before},"
        f" (SELECT f.parent_id FROM {s}.checkpoints f WHERE f.run_id = r.run_id ORDER BY f.created_at LIMIT 1)"
        f" FROM (SELECT DISTINCT run_id FROM {s}.checkpoints WHERE run_id <> ''{since}) r"
        f" CROSS JOIN LATERAL (SELECT * FROM {s}.checkpoints c WHERE c.run_id = r.run_id"
        " ORDER BY c.created_at DESC, c.sequence DESC LIMIT 1) h"
    )
    heads: builtins.list[RunHead] = []
    legacy: builtins.list[CheckpointMeta] = []
    for row in conn.execute(query, {"cut": cutoff}).fetchall():
        meta = row_meta(row[:-2], name)
        if meta.damaged is None:
            heads.append((meta, row[-2] if isinstance(row[-2], str) else None, row[-1]))
        else:
            legacy.append(meta)
    legacy += [listed_meta(row, name) for row in conn.execute(listing(store) + " WHERE c.run_id = ''").fetchall()]
    return heads, legacy


def put_chunks(conn: psycopg.Connection[Any], s: str, parts: chunks.Split) -> None:
    """Store the chunks of a body that are not in the store yet and count the references to them.

    Runs under the shared store lock: no chunk seen here can be deleted before the transaction ends. Of
    several writers adding the same chunk, the one whose insert lands counts its children; rows are inserted
    and updated in hash order, so writers never wait on each other in a circle.
    """
    hashes = sorted(parts.chunks)
    present = {bytes(h) for (h,) in conn.execute(f"SELECT hash FROM {s}.chunks WHERE hash = ANY(%s)", [hashes])}
    new = [h for h in hashes if h not in present]
    counts: Counter[bytes] = Counter(parts.roots)
    if new:
        inserted = conn.execute(
            f"INSERT INTO {s}.chunks (hash, data, refs)"
            " SELECT h, d, 0 FROM unnest(%s::bytea[], %s::bytea[]) AS v(h, d) ORDER BY h"
            " ON CONFLICT (hash) DO NOTHING RETURNING hash",
            [new, [zlib.compress(parts.chunks[h].payload) for h in new]],
        ).fetchall()
        for (digest,) in inserted:
            counts.update(parts.chunks[bytes(digest)].children)
    if counts:
        order = sorted(counts)
        conn.execute(
            f"UPDATE {s}.chunks AS c SET refs = c.refs + v.n"
            " FROM (SELECT h, n FROM unnest(%s::bytea[], %s::bigint[]) AS u(h, n) ORDER BY h) AS v"
            " WHERE c.hash = v.h",
            [order, [counts[h] for h in order]],
        )


def delete_checkpoints(conn: psycopg.Connection[Any], s: str, ids: Sequence[str]) -> int:
    """Delete checkpoints and release their chunks; a chunk nobody refers to any more goes, and releases its
    own. Called holding the store lock alone."""
    released: Counter[bytes] = Counter()
    for (manifest,) in conn.execute(f"SELECT manifest FROM {s}.bodies WHERE id = ANY(%s)", [list(ids)]):
        released.update(chunks.children_of(zlib.decompress(manifest)))
    cur = conn.execute(f"DELETE FROM {s}.checkpoints WHERE id = ANY(%s)", [list(ids)])
    removed = cur.rowcount
    conn.execute(f"DELETE FROM {s}.bodies WHERE id = ANY(%s)", [list(ids)])
    while released:
        order = sorted(released)
        counted = conn.execute(
            f"UPDATE {s}.chunks AS c SET refs = c.refs - u.n"
            " FROM unnest(%s::bytea[], %s::bigint[]) AS u(h, n) WHERE c.hash = u.h RETURNING c.hash, c.refs",
            [order, [released[h] for h in order]],
        ).fetchall()
        released = Counter()
        gone = [bytes(h) for h, refs in counted if refs <= 0]
        if not gone:
            break
        dead = conn.execute(f"DELETE FROM {s}.chunks WHERE hash = ANY(%s) RETURNING data", [gone]).fetchall()
        for (data,) in dead:
            released.update(chunks.children_of(zlib.decompress(data)))
    return removed


def connect_error(where: PgLocation, exc: Exception) -> CheckpointError:
    text = where.scrub(" ".join(str(exc).split()))
    hint = ""
    if "password" in text:
        hint = " (crewpoint takes the password from PGPASSWORD, ~/.pgpass or a service file)"
    return CheckpointError(f"cannot connect to {where.name}: {text}{hint}")
