"""In-memory store: the reference implementation of the provider contract, for tests and benchmarks.

Locations are ``memory://<name>`` (``memory://<name>#<id>`` names one checkpoint). Every provider instance
in a process sees the same stores, so a run configured with ``MemoryProvider()`` and a reader that resolves
the location find the same checkpoints. Bodies are kept as JSON text, so what is read back is a copy and a
body that is not JSON-ready is refused as the file stores refuse it.
"""

from __future__ import annotations

import asyncio
import builtins
import hashlib
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    StoreChange,
)
from crewpoint.providers.chunks import encode_json
from crewpoint.providers.claims import check_claim_key, decode_claim, encode_claim
from crewpoint.providers.prune import newest_first
from crewpoint.providers.refs import check_record, check_stored_branch, checked, match_prefix, split_ref
from crewpoint.providers.runs import RunInfo
from crewpoint.providers.watch import next_burst

SCHEME = "memory://"


@dataclass
class _Store:
    records: dict[str, tuple[CheckpointMeta, str]] = field(default_factory=dict)
    runs: dict[str, RunInfo] = field(default_factory=dict)
    claims: dict[str, str] = field(default_factory=dict)
    read_only: str | None = None
    listeners: list[tuple[asyncio.AbstractEventLoop, asyncio.Queue[bool]]] = field(default_factory=list)


_stores: dict[str, _Store] = {}
_lock = threading.RLock()


def _name(location: str) -> str:
    path, _ = split_ref(location)
    if not path.startswith(SCHEME) or len(path) == len(SCHEME):
        raise CheckpointError(f"{location}: an in-memory store is named memory://NAME")
    return path


class MemoryProvider(BaseProvider):
    """Checkpoints held in this process's memory."""

    kind = "memory"
    newest_is_cheap = True

    def __repr__(self) -> str:
        return "MemoryProvider()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MemoryProvider)

    def __hash__(self) -> int:
        return hash(MemoryProvider)

    # test helpers

    @staticmethod
    def set_read_only(location: str, reason: str | None = "the store is read-only") -> None:
        """Make writes to ``location`` fail with ``reason`` (``None`` lets them through again)."""
        with _lock:
            _stores.setdefault(_name(location), _Store()).read_only = reason

    @staticmethod
    def drop(location: str | None = None) -> None:
        """Forget one store, or all of them."""
        with _lock:
            if location is None:
                _stores.clear()
            else:
                _stores.pop(_name(location), None)

    # the provider interface

    def _store(self, location: str) -> tuple[str, _Store]:
        name = _name(location)
        store = _stores.get(name)
        if store is None or (not store.records and not store.runs and store.read_only is None):
            raise CheckpointNotFound(f"no checkpoint store at {name}")
        return name, store

    def write(self, location: str, record: CheckpointRecord) -> str:
        meta = check_record(record)
        name = _name(location)
        try:
            text = encode_json(record.body)
        except (TypeError, ValueError, RecursionError) as exc:
            raise CheckpointError(f"checkpoint {meta.id} has a body that is not JSON-ready: {exc}") from exc
        ref = f"{name}#{meta.id}"
        data = text.encode("utf-8", "surrogatepass")
        digest = hashlib.sha256(data).hexdigest()
        stored = meta.with_(size=len(data), location=ref, damaged=None, body_length=len(data), digest=digest)
        with _lock:
            store = _stores.setdefault(name, _Store())
            if store.read_only is not None:
                raise CheckpointError(f"cannot write checkpoint {meta.id} to {name}: {store.read_only}")
            store.records[meta.id] = (stored, text)
        self._notify(name, runs_only=False)
        return ref

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        _, ref_id = split_ref(location)
        wanted = checkpoint_id or ref_id
        with _lock:
            name, store = self._store(location)
            if wanted is None:
                latest = self.latest(name)
                if latest is None:
                    raise CheckpointNotFound(f"no checkpoints in {name}")
                wanted = latest.id
            found = match_prefix(builtins.list(store.records), wanted, name)
            meta, text = store.records[found]
        if meta.digest:
            data = text.encode("utf-8", "surrogatepass")
            if len(data) != meta.body_length or hashlib.sha256(data).hexdigest() != meta.digest:
                raise DamagedCheckpoint(f"{meta.location}: its body does not match the digest its metadata records")
        return CheckpointRecord(meta, json.loads(text))

    def check_writable(self, location: str) -> None:
        """A store set read-only (:meth:`set_read_only`) is refused before a run starts."""
        with _lock:
            store = _stores.get(_name(location))
            reason = store.read_only if store is not None else None
        if reason is not None:
            raise CheckpointError(f"cannot write checkpoints to {_name(location)}: {reason}")

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        if branch is not None:
            check_stored_branch(branch)
        with _lock:
            _, store = self._store(location)
            metas = [m for m, _ in store.records.values() if branch is None or m.branch == branch]
        return newest_first(checked(m) for m in metas)

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        with _lock:
            _, store = self._store(location)
            found = store.records.get(checkpoint_id)
        return None if found is None else found[0]

    def _pruning(self, location: str) -> AbstractContextManager[Any]:
        return _lock  # the lock every write, read and delete of the memory stores holds

    def delete(self, location: str, ids: Iterable[str]) -> int:
        wanted = set(ids)
        with _lock:
            name = _name(location)
            store = _stores.get(name)
            if store is None or not wanted:
                return 0
            if store.read_only is not None:
                raise CheckpointError(f"cannot delete from {name}: {store.read_only}")
            removed = sum(1 for cid in wanted if store.records.pop(cid, None) is not None)
        if removed:
            self._notify(name, runs_only=False)
        return removed

    def store_at(self, location: str) -> str:
        return self._store(location)[0]

    # run records

    def write_run(self, location: str, run: RunInfo) -> bool:
        name = _name(location)
        with _lock:
            store = _stores.get(name)
            if store is None or not store.records or store.read_only is not None:
                return False  # the store is made by the first checkpoint, not by a run record
            store.runs[run.run_id] = run
        self._notify(name, runs_only=True)
        return True

    def read_runs(self, location: str) -> builtins.list[RunInfo]:
        with _lock:
            store = _stores.get(_name(location))
            runs = builtins.list(store.runs.values()) if store is not None else []
        return sorted(runs, key=lambda r: r.started_at, reverse=True)

    # claims: one answer wins

    def claim(self, location: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        text = encode_claim(key, value)
        with _lock:
            name, store = self._store(location)
            if store.read_only is not None:
                raise CheckpointError(f"cannot claim {key} in {name}: {store.read_only}")
            won = key not in store.claims
            stored = store.claims.setdefault(key, text)
        if won:
            self._notify(name, runs_only=False)
        return decode_claim(stored, f"{name} claim {key}")

    def read_claim(self, location: str, key: str) -> dict[str, Any] | None:
        check_claim_key(key)
        with _lock:
            store = _stores.get(_name(location))
            text = None if store is None else store.claims.get(key)
        return None if text is None else decode_claim(text, f"{_name(location)} claim {key}")

    def claims(self, location: str) -> dict[str, dict[str, Any]]:
        with _lock:
            store = _stores.get(_name(location))
            stored = dict(store.claims) if store is not None else {}
        found: dict[str, dict[str, Any]] = {}
        for key, text in sorted(stored.items()):
            try:
                found[key] = decode_claim(text, f"{_name(location)} claim {key}")
            except CheckpointError:
                continue  # damaged: reading its key says what is wrong
        return found

    # change notification

    @staticmethod
    def _notify(name: str, runs_only: bool) -> None:
        with _lock:
            listeners = builtins.list(_stores[name].listeners) if name in _stores else []
        for loop, queue in listeners:
            try:
                loop.call_soon_threadsafe(queue.put_nowait, runs_only)
            except RuntimeError:  # the loop has closed
                continue

    def watch(
        self, location: str, stop: Any, debounce_ms: int = 200, ready: Callable[[], None] | None = None
    ) -> AsyncIterator[StoreChange]:
        return self._watch(_name(location), stop, debounce_ms, ready)

    async def _watch(
        self, name: str, stop: Any, debounce_ms: int, ready: Callable[[], None] | None
    ) -> AsyncIterator[StoreChange]:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[bool] = asyncio.Queue()
        entry = (loop, queue)
        with _lock:
            _stores.setdefault(name, _Store()).listeners.append(entry)
        if ready is not None:
            ready()
        stopped = asyncio.ensure_future(stop.wait())
        try:
            while not stop.is_set():
                notes = await next_burst(queue, stopped, lambda: debounce_ms / 1000)
                if notes is None:
                    return
                yield StoreChange(name, runs_only=all(notes))
        finally:
            stopped.cancel()
            with _lock:
                if name in _stores and entry in _stores[name].listeners:
                    _stores[name].listeners.remove(entry)
