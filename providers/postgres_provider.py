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

Reads and writes are the one SQL store's (:class:`~crewpoint.providers.sql_provider.SqlProvider`) in
PostgreSQL's dialect (:class:`~crewpoint.providers.pg_sql.PgDialect`, with the schema and migrations in
:mod:`crewpoint.providers.pg_sql`); locations (and keeping passwords out of them) are in
:mod:`crewpoint.providers.pg_location`. psycopg (3) and psycopg-pool are imported when a store is first used;
``import crewpoint`` never loads them.
"""

from __future__ import annotations

import asyncio
import builtins
import os
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointNotFound, StoreChange
from crewpoint.providers.pg_location import BadLocation, PgLocation, parse
from crewpoint.providers.pg_sql import (
    SCHEMA_VERSION,
    PgDialect,
    PgStore,
    RunHead,
    connect_error,
    latest,
    migrate,
    newest_rows,
    read_version,
    report_crashed,
    run_heads,
)
from crewpoint.providers.refs import split_ref
from crewpoint.providers.runs import RunInfo, classify, this_host
from crewpoint.providers.sql_provider import SqlProvider
from crewpoint.providers.sql_store import RUN, Mode, list_metas, runs_of
from crewpoint.providers.watch import next_burst

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


class PostgresProvider(SqlProvider[PgDialect]):
    """Checkpoints in a PostgreSQL database; ``location`` is ``postgresql://user@host:port/db[?schema=NAME]``,
    and ``location#id`` names one checkpoint.

    ``pool_size`` is the most connections one process opens per server; ``connect_timeout`` is how long a
    connection attempt may take (seconds).
    """

    kind = "postgres"
    SETTINGS = {"pool_size": 4, "connect_timeout": 10.0}

    def __init__(self, pool_size: int = 4, connect_timeout: float = 10.0) -> None:
        self.pool_size = pool_size
        self.connect_timeout = connect_timeout
        self._reset()

    def _reset(self) -> None:
        super()._reset()
        self._pools: dict[str, ConnectionPool[Any]] = {}
        self._stores: dict[str, PgStore] = {}
        self._secrets: dict[str, PgLocation] = {}

    def _let_go(self) -> builtins.list[ConnectionPool[Any]]:
        pools, self._pools, self._stores = self._pools, {}, {}
        return builtins.list(pools.values())

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

    @contextmanager
    def _open(self, location: str, mode: Mode = "read") -> Iterator[PgDialect]:
        where, _ = self._where(location)
        with self._conn(where) as conn:
            store = self._store(where, conn, create=mode == "make")
            if mode == "upgrade" and store.version < SCHEMA_VERSION:
                store = self._store(where, conn, create=True)
            yield PgDialect(conn, where, store.version)

    def _memo_key(self, location: str) -> str:
        return self._where(location)[0].name

    def _latest(self, sql: PgDialect, branch: str | None) -> CheckpointMeta | None:
        return latest(sql, branch)

    def _runs(self, sql: PgDialect) -> builtins.list[RunInfo]:
        """The store's run records; those of this host whose process is gone are recorded as crashed."""
        runs = runs_of(sql)
        dead = [r for r in runs if r.status == "running" and r.host == this_host() and classify(r) == "crashed"]
        return report_crashed(sql, runs, dead) if dead else runs

    # what only this store answers from its indexes

    def run_heads(
        self, location: str, cutoff: float | None = None
    ) -> tuple[builtins.list[RunHead], builtins.list[CheckpointMeta]]:
        """Each run's newest checkpoint (since ``cutoff``) with what it needs to sum the run's spending from
        metadata alone, in one indexed query (:func:`crewpoint.providers.pg_sql.run_heads`); and the checkpoints
        that record no run."""
        with self._open(location) as sql, sql.reading():
            return run_heads(sql, cutoff)

    def list_newest(self, location: str, limit: int, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        """The first ``limit`` of :meth:`list`, from the index by time while no clock ever stepped back in the
        store (else from a full listing)."""
        with self._open(location) as sql, sql.reading():
            newest = newest_rows(sql, limit, branch)
            return list_metas(sql, branch)[: max(0, limit)] if newest is None else newest

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

        def in_burst() -> float | None:  # in a burst: gather until the window closes
            return quiet_until - loop.time() if quiet_until > loop.time() else None

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
                        payloads = await next_burst(queue, stopped, in_burst)
                        if payloads is None:
                            return
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
