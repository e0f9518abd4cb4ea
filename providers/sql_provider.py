"""The provider interface of the one SQL store (:mod:`crewpoint.providers.sql_store`), shared by the SQLite and
PostgreSQL providers: each says how it opens a store (:meth:`SqlProvider._open`, a :class:`Dialect` over one
connection) and keeps what only it does; every other read and write of records, claims and run records is here.
"""

from __future__ import annotations

import builtins
import os
import threading
import time
import zlib
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    meta_row,
    walk_parents,
)
from crewpoint.providers.claims import check_claim_key, decode_claim, encode_claim
from crewpoint.providers.prune import PrunePlan, PruneStrategy, unanswered
from crewpoint.providers.refs import ID_RE, check_record, match_prefix, split_ref
from crewpoint.providers.runs import RunInfo
from crewpoint.providers.sql_store import (
    CLAIM,
    DELETE,
    RUN,
    RUN_COLUMNS,
    Dialect,
    Mode,
    body_of,
    claim_rows,
    decoded,
    delete_checkpoints,
    ids_from,
    list_metas,
    listed_meta,
    listing,
    meta_of,
    resolve,
    runs_of,
    sound_bodies,
    write_once,
)

if TYPE_CHECKING:
    from crewpoint.providers import chunks

_UPSERT_RUN = (
    f"INSERT INTO {{s}}runs ({', '.join(RUN_COLUMNS)}) VALUES ({', '.join('?' * len(RUN_COLUMNS))})"
    f" ON CONFLICT (run_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in RUN_COLUMNS[1:])}"
)


D = TypeVar("D", bound=Dialect)


class SqlProvider(BaseProvider, Generic[D]):
    """Checkpoints in a SQL database, through the dialect ``D`` of its engine."""

    newest_is_cheap = True
    SETTINGS: ClassVar[dict[str, float]] = {}
    """The provider's settings with their defaults (its constructor's arguments): what a copy or a pickle of it
    keeps, what it is equal by. Its connections are never kept: a copy opens its own."""
    _memos: dict[str, chunks.Memo]
    """Per store, the list items of the last body written: the next write encodes only what changed."""

    def _reset(self) -> None:
        """Forget every connection and memo (a new process, or a copy); an engine adds what it holds."""
        self._lock = threading.RLock()
        self._memos = {}
        self._pid = os.getpid()

    def _let_go(self) -> builtins.list[Any]:
        """Forget this process's connections (or pools); those to close."""
        raise NotImplementedError

    def close(self) -> None:
        """Close this provider's connections (it opens them again when used). A process forked from the one
        that opened them only forgets them: closing would end the parent's sessions on the shared sockets."""
        with self._lock:
            held = self._let_go()
            self._memos = {}
            if os.getpid() == self._pid:
                for each in held:
                    each.close()

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.SETTINGS}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, default in self.SETTINGS.items():
            setattr(self, name, type(default)(state.get(name, default)))
        self._reset()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.__getstate__().items())})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.__getstate__() == other.__getstate__()

    def __hash__(self) -> int:
        return hash((type(self), *self.__getstate__().values()))

    def _open(self, location: str, mode: Mode = "read") -> AbstractContextManager[D]:
        """The store ``location`` names over one connection, its schema version known. A store that does not
        exist is :class:`CheckpointNotFound` unless ``mode`` is ``make``; an empty one has version 0."""
        raise NotImplementedError

    def _memo_key(self, location: str) -> str:
        """The store ``location`` names, as the key of its memo (known before a connection is opened)."""
        raise NotImplementedError

    def _list(self, sql: D, branch: str | None) -> builtins.list[CheckpointMeta]:
        return list_metas(sql, branch)

    def _latest(self, sql: D, branch: str | None) -> CheckpointMeta | None:
        return next((m for m in self._list(sql, branch) if m.damaged is None), None)

    def _runs(self, sql: D) -> builtins.list[RunInfo]:
        return runs_of(sql)

    # records

    def write(self, location: str, record: CheckpointRecord) -> str:
        # lazy: hashlib starts OpenSSL, which `checkpoint list` never needs
        import hashlib

        from crewpoint.providers import chunks

        meta = check_record(record)
        key = self._memo_key(location)
        try:
            parts = chunks.split(record.body, self._memos.get(key))
        except (TypeError, ValueError, RecursionError) as exc:
            raise CheckpointError(f"checkpoint {meta.id} has a body that is not JSON-ready: {exc}") from exc
        digest = hashlib.sha256(parts.manifest).hexdigest()
        row = meta_row(meta.with_(size=parts.size, body_length=len(parts.manifest), digest=digest))
        manifest = zlib.compress(parts.manifest)
        with self._open(location, "make") as sql:
            sql.retry(lambda: write_once(sql, meta.id, parts, row, manifest))
            name = sql.name
        self._memos[key] = parts.memo
        return f"{name}#{meta.id}"

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        with self._open(location) as sql:
            if sql.version == 0:
                raise CheckpointNotFound(f"no checkpoints in {sql.name}")
            wanted = checkpoint_id or split_ref(location)[1]
            with sql.reading():
                meta = self._latest(sql, None) if wanted is None else resolve(sql, wanted)
                if meta is None:
                    raise CheckpointNotFound(f"no checkpoints in {sql.name}")
                return body_of(sql, meta)

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        with self._open(location) as sql:
            return [] if sql.version == 0 else self._list(sql, branch)

    def latest(self, location: str, branch: str | None = None) -> CheckpointMeta | None:
        with self._open(location) as sql:
            return None if sql.version == 0 else self._latest(sql, branch)

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        with self._open(location) as sql:
            return None if sql.version == 0 else meta_of(sql, checkpoint_id)

    def ancestors(self, location: str, checkpoint_id: str) -> builtins.list[CheckpointMeta]:
        """One indexed row per parent instead of a listing of the whole store."""
        with self._open(location) as sql:
            if sql.version == 0:
                return []
            with sql.reading():
                return walk_parents(lambda wanted: meta_of(sql, wanted), checkpoint_id)

    def find(self, location: str, prefix: str) -> CheckpointMeta:
        """Two indexed look-ups instead of a listing of the whole store: the ids that start with ``prefix``
        (the first eleven tell "ambiguous"), then that one row, marked damaged as :meth:`list` marks it."""
        if not ID_RE.fullmatch(prefix):  # an empty or odd prefix: matched against every id, as always
            return super().find(location, prefix)
        with self._open(location) as sql:
            if sql.version == 0:
                return super().find(location, prefix)
            with sql.reading():
                full = match_prefix(ids_from(sql, prefix), prefix, location)
                row = sql.q(listing(sql) + " WHERE c.id = ?", [full]).fetchone()
                if row is None:  # deleted since its id was read
                    raise CheckpointNotFound(f"no checkpoint {prefix!r} in {location}")
                return listed_meta(row, sql.name)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        wanted = sorted(set(ids))
        if not wanted:
            return 0
        try:
            with self._open(location) as sql:
                if sql.version == 0:
                    return 0
                sql.refuse("delete from")
                with sql.writing(alone=True):
                    removed = delete_checkpoints(sql, wanted)
                    if removed:
                        sql.notify(DELETE)
        except CheckpointNotFound:
            return 0  # no store: nothing to delete
        return removed

    def prune(self, location: str, strategy: PruneStrategy, dry_run: bool = False) -> PrunePlan:
        """As :meth:`BaseProvider.prune`, planned and applied in one write transaction holding the store's lock
        alone: a writer in another process (or on another host) waits for it, and is never half pruned."""
        with self._open(location) as sql:
            if sql.version == 0:
                return strategy.plan([])
            sql.refuse("prune")
            with sql.writing(alone=True):
                claims = sql.has_table("claims", sql.CLAIMS_SINCE)

                def waiting(asking: builtins.list[CheckpointMeta]) -> set[str]:
                    return unanswered(
                        asking,
                        lambda meta: body_of(sql, meta).body,
                        lambda key: (
                            claims and sql.q("SELECT 1 FROM {s}claims WHERE key = ?", [key]).fetchone() is not None
                        ),
                    )

                plan = strategy.plan(sound_bodies(sql, self._list(sql, None)), runs_of(sql), waiting)
                if plan.doomed and not dry_run:
                    delete_checkpoints(sql, plan.ids)
                    sql.notify(DELETE)
        return plan

    def stats(self, location: str) -> dict[str, int]:
        """Counts and stored bytes: ``checkpoints``, ``chunks``, ``chunk_bytes``, ``manifest_bytes``."""
        names = ("checkpoints", "chunks", "chunk_bytes", "manifest_bytes")
        with self._open(location) as sql:
            if sql.version == 0:
                return dict.fromkeys(names, 0)
            row = sql.q(
                "SELECT (SELECT count(*) FROM {s}checkpoints), (SELECT count(*) FROM {s}chunks),"
                " (SELECT coalesce(sum(length(data)), 0) FROM {s}chunks),"
                " (SELECT coalesce(sum(length(manifest)), 0) FROM {s}bodies)"
            ).fetchone()
        return dict(zip(names, map(int, row), strict=True))

    # run records

    def write_run(self, location: str, run: RunInfo) -> bool:
        try:
            with self._open(location, "upgrade") as sql:
                if sql.version == 0:
                    return False  # the store is made by the first checkpoint, not by a run record
                with sql.writing(alone=False):
                    sql.q(_UPSERT_RUN, [getattr(run, c) for c in RUN_COLUMNS])
                    sql.notify(RUN, run.run_id)
        except CheckpointNotFound:
            return False
        return True

    def read_runs(self, location: str) -> builtins.list[RunInfo]:
        try:
            with self._open(location) as sql:
                return self._runs(sql)
        except CheckpointNotFound:
            return []

    # claims: one answer wins (a row per claim; the first INSERT stays)

    def claim(self, location: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        text = encode_claim(key, value)
        with self._open(location, "upgrade") as sql:  # a claim never makes a store
            with sql.writing(alone=False):
                query = f"INSERT INTO {{s}}claims (key, value, created_at) VALUES ({sql.CLAIM_VALUES})"
                query += " ON CONFLICT (key) DO NOTHING"
                if sql.q(query, [key, text, time.time()]).rowcount:
                    sql.notify(CLAIM, key)
                row = sql.q(f"SELECT {sql.CLAIM_TEXT} FROM {{s}}claims WHERE key = ?", [key]).fetchone()
        if row is None:
            raise CheckpointError(f"{sql.name}: the claim of {key} vanished while it was read")
        return decode_claim(row[0], f"{sql.name} claim {key}")

    def read_claim(self, location: str, key: str) -> dict[str, Any] | None:
        check_claim_key(key)
        name, found = self._claim_rows(location, key)
        return decoded(found[key], f"{name} claim {key}") if key in found else None

    def claims(self, location: str) -> dict[str, dict[str, Any]]:
        name, rows = self._claim_rows(location, None)
        found: dict[str, dict[str, Any]] = {}
        for key, text in rows.items():
            try:
                found[key] = decoded(text, f"{name} claim {key}")
            except CheckpointError:
                continue  # damaged: reading its key says what is wrong
        return found

    def _claim_rows(self, location: str, key: str | None) -> tuple[str, dict[str, str | int]]:
        try:
            with self._open(location) as sql:
                return sql.name, claim_rows(sql, key)
        except CheckpointNotFound:
            return location, {}  # no store: nothing is claimed
