"""PostgreSQL store: one schema in a team's database, shared by runs on many machines and watched live.

Tables in the store's schema (``crewpoint`` unless the location says ``?schema=NAME``), schema v1:

* ``checkpoints``: one row of metadata per checkpoint in indexed columns; list views read only this table;
* ``bodies``: per checkpoint, a zlib-compressed manifest of its body;
* ``chunks``: content-addressed, zlib-compressed pieces of bodies with a reference count, shared by every
  checkpoint that contains them (the same split as the SQLite store, :mod:`crewpoint.providers.chunks`);
* ``runs``: run records (heartbeats) of runs on any host;
* ``claims`` (v3): one row per answered request, the first claimer's (:meth:`PostgresProvider.claim`);
* ``schema_meta``: the store's own schema version; older stores are migrated in order, newer ones refused, and
  a schema that is not a crewpoint store is never written to.

Every write is one short transaction. Writers hold the store's advisory lock in shared mode, so they run side
by side; deletes and prunes hold it alone, so a chunk a writer counts on is never removed under it. Each
checkpoint, run record and delete sends a ``NOTIFY`` on the store's channel when it commits: :meth:`watch`
listens instead of polling, for writers on any host.

The SQL lives in :mod:`crewpoint.providers.pg_sql`, locations (and keeping passwords out of them) in
:mod:`crewpoint.providers.pg_location`. psycopg (3) and psycopg-pool are imported when a store is first used;
``import crewpoint`` never loads them.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import os
import threading
import zlib
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from crewpoint.providers import chunks
from crewpoint.providers.base import (
    WRITTEN_COLUMNS,
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    StoreChange,
    meta_row,
    walk_parents,
)
from crewpoint.providers.claims import MAX_CLAIM_BYTES, check_claim_key, decode_claim, encode_claim, too_big
from crewpoint.providers.pg_location import BadLocation, PgLocation, parse
from crewpoint.providers.pg_sql import (
    CHECKPOINT,
    CLAIM,
    CLAIMS_SINCE,
    DELETE,
    RUN,
    RUN_COLUMNS,
    SCHEMA_VERSION,
    PgStore,
    RunHead,
    body_check,
    connect_error,
    delete_checkpoints,
    find_prefix,
    latest,
    list_metas,
    load_chunks,
    mark_stepped,
    meta_of,
    migrate,
    newest_rows,
    notify,
    put_chunks,
    read_version,
    report_crashed,
    resolve,
    run_heads,
    runs_of,
    sound_bodies,
    steps_back_sql,
)
from crewpoint.providers.prune import PrunePlan, PruneStrategy, unanswered
from crewpoint.providers.refs import ID_RE, check_record, split_ref
from crewpoint.providers.runs import RunInfo, classify, this_host

_INSERT = (
    "INSERT INTO {s}.checkpoints ("
    + ", ".join(f'"{c}"' for c in WRITTEN_COLUMNS)
    + ") VALUES ("
    + (", ".join(["%s"] * len(WRITTEN_COLUMNS)) + ")")
)

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

# Pools inherited through fork(): the child must neither use nor close them (closing would end the parent's
# sessions on the shared sockets).
_inherited: list[Any] = []


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError as exc:  # pragma: no cover - the extra is part of dev installs
        raise CheckpointError("PostgreSQL stores need psycopg: pip install 'crewpoint[postgres]'") from exc
    return psycopg


class PostgresProvider(BaseProvider):
    """Checkpoints in a PostgreSQL database; ``location`` is ``postgresql://user@host:port/db[?schema=NAME]``,
    and ``location#id`` names one checkpoint.

    ``pool_size`` is the most connections one process opens per server; ``connect_timeout`` is how long a
    connection attempt may take (seconds).
    """

    kind = "postgres"
    newest_is_cheap = True

    def __init__(self, pool_size: int = 4, connect_timeout: float = 10.0) -> None:
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.RLock()
        self._pools: dict[str, ConnectionPool[Any]] = {}
        self._stores: dict[str, PgStore] = {}
        self._secrets: dict[str, PgLocation] = {}
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        return {"pool_size": self.pool_size, "connect_timeout": self.connect_timeout}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.pool_size = int(state.get("pool_size", 4))
        self.connect_timeout = float(state.get("connect_timeout", 10.0))
        self._reset()

    def __repr__(self) -> str:
        return f"PostgresProvider(pool_size={self.pool_size}, connect_timeout={self.connect_timeout})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PostgresProvider) and (other.pool_size, other.connect_timeout) == (
            self.pool_size,
            self.connect_timeout,
        )

    def __hash__(self) -> int:
        return hash((PostgresProvider, self.pool_size, self.connect_timeout))

    def close(self) -> None:
        """Close this provider's connections (it opens them again when used)."""
        with self._lock:
            pools, self._pools = self._pools, {}
            self._stores = {}
            if os.getpid() == self._pid:
                for pool in pools.values():
                    pool.close()

    # locations and connections

    def _where(self, location: str) -> tuple[PgLocation, str | None]:
        path, ref_id = split_ref(location)
        try:
            where = parse(path)
        except BadLocation as exc:
            raise CheckpointError(str(exc)) from None
        if where.password is not None:
            with self._lock:
                self._secrets[where.server] = where
        else:
            # A location seen with a password in this process connects with it later too (refs never hold it).
            known = self._secrets.get(where.server)
            if known is not None:
                where = PgLocation(where.name, where.server, known.conninfo, where.schema, known.password)
        return where, ref_id

    def _pool(self, where: PgLocation) -> ConnectionPool[Any]:
        if os.getpid() != self._pid:
            _inherited.extend(self._pools.values())
            self._reset()
        pool = self._pools.get(where.server)
        if pool is not None:
            return pool
        with self._lock:
            pool = self._pools.get(where.server)
            if pool is None:
                pool = self._open_pool(where)
                self._pools[where.server] = pool
        return pool

    def _open_pool(self, where: PgLocation) -> ConnectionPool[Any]:
        psycopg = _psycopg()
        from psycopg_pool import ConnectionPool

        kwargs = {"autocommit": True, "connect_timeout": max(1, int(self.connect_timeout))}
        try:  # one connection first: a server that cannot be reached is reported at once, with libpq's reason
            psycopg.connect(where.conninfo, **kwargs).close()
        except psycopg.Error as exc:
            raise connect_error(where, exc) from None
        pool: ConnectionPool[Any] = ConnectionPool(
            where.conninfo,
            min_size=1,
            max_size=max(1, self.pool_size),
            kwargs=kwargs,
            timeout=self.connect_timeout,
            name=f"crewpoint-{os.getpid()}",
            check=ConnectionPool.check_connection,  # a session the server ended (a restart) is replaced, not used
            open=False,
        )
        pool.open(wait=False)
        return pool

    @contextmanager
    def _conn(self, where: PgLocation) -> Iterator[psycopg.Connection[Any]]:
        psycopg = _psycopg()
        from psycopg_pool import PoolTimeout

        try:
            with self._pool(where).connection() as conn:
                yield conn
        except CheckpointError:
            raise
        except PoolTimeout as exc:
            raise CheckpointError(
                f"{where.name}: no connection to the server within {self.connect_timeout:g} s"
            ) from exc
        except psycopg.errors.UndefinedTable as exc:
            with self._lock:
                self._stores.pop(where.name, None)  # the store was dropped under us
            raise CheckpointNotFound(f"no checkpoint store at {where.name}") from exc
        except psycopg.Error as exc:
            first = where.scrub(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)
            raise CheckpointError(f"{where.name}: PostgreSQL error: {first}") from None

    def _store(self, where: PgLocation, conn: psycopg.Connection[Any], create: bool) -> PgStore:
        """The store at ``where`` with its schema version known; made or migrated first when ``create``."""
        store = self._stores.get(where.name)
        if store is None:
            store = PgStore(where)
        if store.version < SCHEMA_VERSION:
            store.version = read_version(conn, where)
            if create and store.version < SCHEMA_VERSION:
                store.version = migrate(conn, where)
            if store.version:
                with self._lock:
                    self._stores.setdefault(where.name, store)
                store = self._stores.get(where.name, store)
        if not create and store.version == 0:
            raise CheckpointNotFound(f"no checkpoint store at {where.name}")
        return store

    # the provider interface

    def write(self, location: str, record: CheckpointRecord) -> str:
        where, _ = self._where(location)
        meta = check_record(record)
        known = self._stores.get(where.name)
        try:
            parts = chunks.split(record.body, known.memo if known is not None else None)
        except (TypeError, ValueError, RecursionError) as exc:
            raise CheckpointError(f"checkpoint {meta.id} has a body that is not JSON-ready: {exc}") from exc
        digest = hashlib.sha256(parts.manifest).hexdigest()
        row = meta_row(meta.with_(size=parts.size, body_length=len(parts.manifest), digest=digest))
        manifest = zlib.compress(parts.manifest)
        deadlocked = _psycopg().errors.DeadlockDetected
        with self._conn(where) as conn:
            store = self._store(where, conn, create=True)
            for attempt in range(1, 4):
                try:
                    self._write_once(conn, where, store.s, meta.id, parts, row, manifest)
                    break
                except deadlocked:  # two writers counted shared chunks in another order: one of them goes again
                    if attempt == 3:
                        raise
        store.memo = parts.memo
        return f"{where.name}#{meta.id}"

    @staticmethod
    def _write_once(
        conn: psycopg.Connection[Any],
        where: PgLocation,
        s: str,
        checkpoint_id: str,
        parts: chunks.Split,
        row: builtins.list[Any],
        manifest: bytes,
    ) -> None:
        """One write transaction, holding the store lock shared (alone when it replaces a checkpoint). The
        first statement also tells whether the checkpoint breaks time order in its run's branch."""
        order_key = [row[WRITTEN_COLUMNS.index(c)] for c in ("lineage", "branch", "sequence", "created_at")]
        for exclusive in (False, True):
            with conn.transaction():
                lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
                cur = conn.execute(
                    f"SELECT {lock}(%s), EXISTS (SELECT 1 FROM {s}.checkpoints WHERE id = %s), {steps_back_sql(s)}",
                    [where.lock_key, checkpoint_id, *order_key, *order_key],
                )
                _, exists, steps_back = cur.fetchone()  # type: ignore[misc]
                if exists and not exclusive:
                    continue  # replacing a checkpoint deletes one: done holding the lock alone
                if exists:
                    delete_checkpoints(conn, s, [checkpoint_id])
                if steps_back:
                    mark_stepped(conn, s)
                put_chunks(conn, s, parts)
                conn.execute(_INSERT.format(s=s), row)
                conn.execute(
                    f"WITH b AS (INSERT INTO {s}.bodies (id, manifest) VALUES (%s, %s) RETURNING id)"
                    " SELECT pg_notify(%s, %s) FROM b",
                    [checkpoint_id, manifest, where.channel, f"{CHECKPOINT} {this_host()} {checkpoint_id}"],
                )
                return

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        where, ref_id = self._where(location)
        wanted = checkpoint_id or ref_id
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                if wanted is None:
                    meta = latest(conn, store, None)
                    if meta is None:
                        raise CheckpointNotFound(f"no checkpoints in {where.name}")
                else:
                    meta = meta_of(conn, store, resolve(conn, store, wanted))
                    if meta is None:
                        raise CheckpointNotFound(f"no checkpoint {wanted!r} in {where.name}")
                return _record(conn, store, where, meta)

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            return list_metas(conn, store, branch)

    def run_heads(
        self, location: str, cutoff: float | None = None
    ) -> tuple[builtins.list[RunHead], builtins.list[CheckpointMeta]]:
        """Each run's newest checkpoint (since ``cutoff``) with what it needs to sum the run's spending from
        metadata alone, in one indexed query (:func:`crewpoint.providers.pg_sql.run_heads`); and the checkpoints
        that record no run."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return run_heads(conn, store, cutoff)

    def list_newest(self, location: str, limit: int, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        """The first ``limit`` of :meth:`list`, from the index by time while no clock ever stepped back in the
        store (else from a full listing)."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                newest = newest_rows(conn, store, limit, branch)
                if newest is None:
                    newest = list_metas(conn, store, branch)[: max(0, limit)]
        return newest

    def latest(self, location: str, branch: str | None = None) -> CheckpointMeta | None:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            return latest(conn, store, branch)

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            return meta_of(conn, store, checkpoint_id)

    def find(self, location: str, prefix: str) -> CheckpointMeta:
        """Indexed look-ups instead of a listing of the whole store (an empty or odd prefix: every id)."""
        if not ID_RE.fullmatch(prefix):
            return super().find(location, prefix)
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return find_prefix(conn, store, prefix, location)

    def ancestors(self, location: str, checkpoint_id: str) -> builtins.list[CheckpointMeta]:
        """One indexed row per parent instead of a listing of the whole store."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            with conn.transaction():
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                return walk_parents(lambda wanted: meta_of(conn, store, wanted), checkpoint_id)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        where, _ = self._where(location)
        wanted = sorted(set(ids))
        if not wanted:
            return 0
        with self._conn(where) as conn:
            try:
                store = self._store(where, conn, create=False)
            except CheckpointNotFound:
                return 0
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [where.lock_key])
                removed = delete_checkpoints(conn, store.s, wanted)
                if removed:
                    notify(conn, where, DELETE)
        return removed

    def prune(self, location: str, strategy: PruneStrategy, dry_run: bool = False) -> PrunePlan:
        """As :meth:`BaseProvider.prune`, planned and applied in one transaction holding the store's lock
        alone: a writer on another process or host waits for it, and is never half pruned."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", [where.lock_key])
                s = store.s

                def waiting(asking: builtins.list[CheckpointMeta]) -> set[str]:
                    return unanswered(
                        asking,
                        lambda meta: _record(conn, store, where, meta).body,
                        lambda key: (
                            store.version >= CLAIMS_SINCE
                            and conn.execute(f"SELECT 1 FROM {s}.claims WHERE key = %s", [key]).fetchone() is not None
                        ),
                    )

                metas = sound_bodies(conn, store, list_metas(conn, store, None))
                plan = strategy.plan(metas, runs_of(conn, store), waiting)
                if plan.doomed and not dry_run:
                    delete_checkpoints(conn, store.s, plan.ids)
                    notify(conn, where, DELETE)
        return plan

    def stats(self, location: str) -> dict[str, int]:
        """Counts and stored bytes: ``checkpoints``, ``chunks``, ``chunk_bytes``, ``manifest_bytes``."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            s = self._store(where, conn, create=False).s
            row = conn.execute(
                f"SELECT (SELECT count(*) FROM {s}.checkpoints), (SELECT count(*) FROM {s}.chunks),"
                f" (SELECT coalesce(sum(length(data)), 0) FROM {s}.chunks),"
                f" (SELECT coalesce(sum(length(manifest)), 0) FROM {s}.bodies)"
            ).fetchone()
        assert row is not None
        return dict(zip(("checkpoints", "chunks", "chunk_bytes", "manifest_bytes"), map(int, row), strict=True))

    def store_at(self, location: str) -> str:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            self._store(where, conn, create=False)
        return where.name

    def check_writable(self, location: str) -> None:
        """Refuse, before a run starts, a store on a server this process cannot reach or write: a standby, a
        read-only session, or a role without the right to write the store (or to make it). One query."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            row = conn.execute(
                "SELECT pg_is_in_recovery(), current_setting('transaction_read_only'),"
                " CASE WHEN to_regclass(%s) IS NOT NULL THEN has_table_privilege(to_regclass(%s), 'INSERT')"
                " ELSE has_database_privilege(current_database(), 'CREATE') OR EXISTS (SELECT 1 FROM pg_namespace"
                " WHERE nspname = %s AND has_schema_privilege(oid, 'CREATE')) END",
                [f'"{where.schema}".checkpoints', f'"{where.schema}".checkpoints', where.schema],
            ).fetchone()
            conn.rollback()
        if row is None:
            return
        standby, read_only, allowed = row
        if standby or read_only == "on":
            raise CheckpointError(f"cannot write checkpoints to {where.name}: the server is read-only")
        if not allowed:
            raise CheckpointError(f"cannot write checkpoints to {where.name}: this role may not write the store")

    def store_of(self, meta: CheckpointMeta) -> str:
        return split_ref(meta.location)[0]

    # run records

    def write_run(self, location: str, run: RunInfo) -> bool:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            try:
                store = self._store(where, conn, create=False)
            except CheckpointNotFound:
                return False  # the store is made by the first checkpoint, not by a run record
            values = [getattr(run, c) for c in RUN_COLUMNS]
            updates = ", ".join(f"{c} = EXCLUDED.{c}" for c in RUN_COLUMNS[1:])
            with conn.transaction():
                conn.execute(
                    f"INSERT INTO {store.s}.runs ({', '.join(RUN_COLUMNS)})"
                    f" VALUES ({', '.join(['%s'] * len(values))}) ON CONFLICT (run_id) DO UPDATE SET {updates}",
                    values,
                )
                notify(conn, where, RUN, run.run_id)
        return True

    def read_runs(self, location: str) -> builtins.list[RunInfo]:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            try:
                store = self._store(where, conn, create=False)
            except CheckpointNotFound:
                return []
            runs = runs_of(conn, store)
            dead = [r for r in runs if r.status == "running" and r.host == this_host() and classify(r) == "crashed"]
            if dead:
                runs = report_crashed(conn, where, store, runs, dead)
            return runs

    # claims: one answer wins, on any host (a row per claim; the first INSERT stays), told live by a NOTIFY

    def claim(self, location: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        text = encode_claim(key, value)
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=False)  # a claim never makes a store
            if store.version < SCHEMA_VERSION:
                store = self._store(where, conn, create=True)
            with conn.transaction():
                row = conn.execute(
                    f"INSERT INTO {store.s}.claims (key, value) VALUES (%s, %s::json)"
                    " ON CONFLICT (key) DO NOTHING RETURNING value::text",
                    [key, text],
                ).fetchone()
                if row is not None:
                    notify(conn, where, CLAIM, key)
                else:  # another claimer's row, committed before our INSERT returned
                    row = conn.execute(f"SELECT value::text FROM {store.s}.claims WHERE key = %s", [key]).fetchone()
        if row is None:
            raise CheckpointError(f"{where.name}: the claim of {key} vanished while it was read")
        return decode_claim(row[0], f"{where.name} claim {key}")

    def read_claim(self, location: str, key: str) -> dict[str, Any] | None:
        check_claim_key(key)
        where, _ = self._where(location)
        text = self._claim_rows(location, key).get(key)
        return None if text is None else _decoded(text, f"{where.name} claim {key}")

    def claims(self, location: str) -> dict[str, dict[str, Any]]:
        where, _ = self._where(location)
        found: dict[str, dict[str, Any]] = {}
        for key, text in self._claim_rows(location, None).items():
            try:
                found[key] = _decoded(text, f"{where.name} claim {key}")
            except CheckpointError:
                continue  # damaged: reading its key says what is wrong
        return found

    def _claim_rows(self, location: str, key: str | None) -> dict[str, str | int]:
        """Each claim's text by key; a value over :data:`MAX_CLAIM_BYTES` as its size alone (never read)."""
        where, _ = self._where(location)
        with self._conn(where) as conn:
            try:
                store = self._store(where, conn, create=False)
            except CheckpointNotFound:
                return {}  # no store: nothing is claimed
            if store.version < CLAIMS_SINCE:
                return {}  # an older store: nothing claimed yet
            size = "octet_length(value::text)"
            sql = f"SELECT key, {size}, CASE WHEN {size} <= %s THEN value::text END FROM {store.s}.claims"
            sql += "" if key is None else " WHERE key = %s"
            given: list[Any] = [MAX_CLAIM_BYTES] + ([] if key is None else [key])
            rows = conn.execute(sql + " ORDER BY key", given).fetchall()
        return {str(k): str(v) if v is not None else int(n) for k, n, v in rows}

    # change notification

    def watch(
        self, location: str, stop: Any, debounce_ms: int = 200, ready: Callable[[], None] | None = None
    ) -> AsyncIterator[StoreChange]:
        where, _ = self._where(location)
        return self._watch(where, stop, debounce_ms, ready)

    async def _watch(
        self, where: PgLocation, stop: Any, debounce_ms: int, ready: Callable[[], None] | None
    ) -> AsyncIterator[StoreChange]:
        """LISTEN on the store's channel. A notification after a quiet spell is told at once; during a burst,
        what arrives is told at most once per ``debounce_ms``. A lost connection is made again, and reported as
        a change (notifications may have been missed meanwhile)."""
        psycopg = _psycopg()
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        stopped = asyncio.ensure_future(stop.wait())
        loop = asyncio.get_running_loop()
        reconnected, quiet_until = False, 0.0
        try:
            while not stop.is_set():
                try:
                    conn = await psycopg.AsyncConnection.connect(
                        where.conninfo, autocommit=True, connect_timeout=max(1, int(self.connect_timeout))
                    )
                except psycopg.Error:
                    await asyncio.wait({stopped}, timeout=1.0)
                    reconnected = True
                    continue
                reader: asyncio.Future[None] | None = None
                try:
                    await conn.execute(f'LISTEN "{where.channel}"')
                    reader = asyncio.ensure_future(_read_notifies(conn, queue))
                    if ready is not None:  # listening: from now on no notification is missed
                        ready()
                        ready = None
                    if reconnected:
                        yield StoreChange(where.name, runs_only=False)
                    while not stop.is_set():
                        got = asyncio.ensure_future(queue.get())
                        done, _ = await asyncio.wait({got, stopped}, return_when=asyncio.FIRST_COMPLETED)
                        if got not in done:
                            got.cancel()
                            return
                        payloads = [got.result()]
                        if quiet_until > loop.time():  # in a burst: gather until the window closes
                            await asyncio.sleep(quiet_until - loop.time())
                        while not queue.empty():
                            payloads.append(queue.get_nowait())
                        if None in payloads:  # the connection was lost
                            reconnected = True
                            break
                        yield StoreChange(where.name, runs_only=all(p.startswith(RUN) for p in payloads if p))
                        quiet_until = loop.time() + debounce_ms / 1000
                finally:
                    if reader is not None:
                        reader.cancel()
                    await conn.close()
        finally:
            stopped.cancel()


async def _read_notifies(conn: Any, queue: asyncio.Queue[str | None]) -> None:
    try:
        async for note in conn.notifies():
            queue.put_nowait(note.payload)
    except asyncio.CancelledError:
        raise
    except Exception:
        pass
    queue.put_nowait(None)


def _record(conn: psycopg.Connection[Any], store: PgStore, where: PgLocation, meta: CheckpointMeta) -> CheckpointRecord:
    """The record of ``meta`` with its body, read and checked inside the caller's transaction on ``conn``."""
    s = store.s
    found = conn.execute(f"SELECT manifest FROM {s}.bodies WHERE id = %s", [meta.id]).fetchone()
    if found is None:
        raise DamagedCheckpoint(f"{where.name}#{meta.id}: the checkpoint body is missing")
    meta = body_check(conn, store, meta)
    try:
        manifest = zlib.decompress(found[0])
        if meta.digest and (len(manifest) != meta.body_length or hashlib.sha256(manifest).hexdigest() != meta.digest):
            raise chunks.BadChunk("its manifest does not match the digest its row records")
        body = chunks.join(manifest, lambda hashes: load_chunks(conn, s, hashes), meta.size)
    except chunks.MissingChunk as exc:
        raise DamagedCheckpoint(f"{where.name}#{meta.id}: body data chunk {exc} is missing") from exc
    except (zlib.error, ValueError, KeyError, TypeError, IndexError) as exc:
        raise DamagedCheckpoint(f"{where.name}#{meta.id}: body data is corrupt ({exc})") from exc
    return CheckpointRecord(meta, body)


def _decoded(stored: str | int, where: str) -> dict[str, Any]:
    """A claim row's value (:meth:`PostgresProvider._claim_rows`): its size alone is a value too big to read."""
    if isinstance(stored, int):
        raise too_big(where, stored)
    return decode_claim(stored, where)
