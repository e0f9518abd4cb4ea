"""The record model every provider stores, and the provider interface.

A checkpoint record is small metadata (read by list views without touching bodies) plus a body: a
JSON-ready dict with the entity's full state. Providers know nothing of crews; they store and list records.
"""

from __future__ import annotations

import abc
import builtins
import threading
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple, Self

if TYPE_CHECKING:
    from crewpoint.providers.prune import PrunePlan, PruneStrategy
    from crewpoint.providers.runs import RunInfo
    from crewpoint.providers.watch import WatchSpec


class CheckpointError(Exception):
    """A checkpoint could not be read or written; the message is one line a user can act on."""


class CheckpointNotFound(CheckpointError):
    pass


class AmbiguousCheckpoint(CheckpointError):
    def __init__(self, prefix: str, matches: list[str]) -> None:
        super().__init__(f"checkpoint id prefix {prefix!r} is ambiguous: {', '.join(matches[:10])}")
        self.matches = matches


class DamagedCheckpoint(CheckpointError):
    pass


class UnsupportedSchema(CheckpointError):
    """The checkpoint was written by a newer crewpoint; it is refused, never half-read."""


class CheckpointMeta(NamedTuple):
    """What list views show. Everything here is readable without loading the body.

    A tuple with named fields: a listing makes one per row from what a store read (an index line, a table row)
    with one tuple call, and code that keeps or changes metadata reads the same type.
    """

    id: str
    parent_id: str | None
    branch: str
    lineage: str
    sequence: int
    created_at: float
    trigger: str
    entity_kind: str = ""
    entity_name: str = ""
    tasks_done: int = 0
    tasks_total: int = 0
    schema_version: int = 1
    version: str = ""
    run_id: str = ""
    """The run that wrote it (``RuntimeState.run_id``; "" in records older than this)."""
    usage: str = ""
    """What its chain and its run spent, by model (:mod:`crewpoint.providers.usage_meta`; "": none recorded)."""
    size: int = 0
    location: str = ""
    damaged: str | None = None
    body_length: int = 0
    """The length in bytes of the body as the store keeps it (0: not recorded, a record older than this)."""
    digest: str = ""
    """The sha256 (hex) of those bytes, so a read can tell a whole body from a cut or altered one ("": not
    recorded). What the bytes are is the store's choice: the JSON file's text after its metadata line, the
    SQLite or PostgreSQL body's manifest (whose chunks are each checked by their own hash)."""

    def to_dict(self) -> dict[str, Any]:
        return self._asdict()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckpointMeta:
        known = {k: data[k] for k in cls._fields if k in data}
        return cls(**known)

    def with_(self, **changes: Any) -> CheckpointMeta:
        return self._replace(**changes)


NOT_STORED = ("location", "damaged")
"""Fields of :class:`CheckpointMeta` a store does not keep: where a record was read from, and why it is damaged."""
BODY_CHECK = ("body_length", "digest")
"""Fields a table-backed store keeps beside the listed ones, read only when a body is checked."""
LISTED_COLUMNS: tuple[str, ...] = tuple(
    name for name in CheckpointMeta._fields if name not in (*NOT_STORED, *BODY_CHECK)
)
"""The columns a list view reads, in one order, derived from :class:`CheckpointMeta` (SQLite, PostgreSQL)."""
WRITTEN_COLUMNS: tuple[str, ...] = (*LISTED_COLUMNS, *BODY_CHECK)
"""The columns a write fills."""


def meta_row(meta: CheckpointMeta) -> builtins.list[Any]:
    """The values of :data:`WRITTEN_COLUMNS` for ``meta``, in that order."""
    return [getattr(meta, name) for name in WRITTEN_COLUMNS]


_LISTED_LEAD = tuple(CheckpointMeta._fields)[: len(LISTED_COLUMNS) + 1] == (*LISTED_COLUMNS, "location")
"""The listed columns are the first fields of :class:`CheckpointMeta`, in its order, and ``location`` the next: a
row and its location fill them by position."""


def meta_from_row(row: Sequence[Any], location: str) -> CheckpointMeta:
    """The metadata a row of :data:`LISTED_COLUMNS` holds, read from ``location`` (types are not checked here)."""
    if len(row) != len(LISTED_COLUMNS):
        raise ValueError(f"a row of {len(row)} values for {len(LISTED_COLUMNS)} listed columns")
    if _LISTED_LEAD:  # a listing makes one per row: no dict, no keywords
        return new_meta(*row, location)  # location is the field after the listed ones
    return CheckpointMeta(**dict(zip(LISTED_COLUMNS, row, strict=True)), location=location)


new_meta: Callable[..., CheckpointMeta] = CheckpointMeta
"""``CheckpointMeta(*values)`` by position (a name kept for the stores' listings)."""


@dataclass(slots=True)
class CheckpointRecord:
    meta: CheckpointMeta
    body: dict[str, Any] = field(default_factory=dict)
    usage_from_ledger: bool = field(default=False, compare=False, repr=False)
    """The metadata's usage summary and the body's usage rows were made together from a run's own ledger
    (``new_record``), so a store need not check one against the other; any other record (read from a store,
    copied, crafted) is checked."""


@dataclass(frozen=True, slots=True)
class StoreChange:
    """Something changed in a store. ``runs_only``: only run records (heartbeats) changed, no checkpoint."""

    location: str
    runs_only: bool = False


class BaseProvider(abc.ABC):
    """A checkpoint store. The provider owns the store: its layout, what counts as one of its locations, run
    records (heartbeats) and change notification. Nothing outside ``crewpoint.providers`` reads its files.

    Every record is isolated: a damaged one is listed with ``damaged`` set to its reason, never hides, stops or
    gets the others deleted. Order is by sequence within a run's branch (``lineage``, ``branch``), by time
    across them. Capabilities a provider lacks are declared (``read_only``), not skipped silently.
    """

    kind: str = "base"
    read_only: bool = False
    newest_is_cheap: bool = False
    """:meth:`list_newest` answers from an index, without reading the whole store (views may show it first)."""
    """A read-only provider lists, reads and watches; writes, deletes and run records are refused."""

    # -- records ---------------------------------------------------------------------------------------------

    @abc.abstractmethod
    def write(self, location: str, record: CheckpointRecord) -> str:
        """Store ``record`` atomically; return its reference (a file path, or ``db#id``). A failed write raises
        :class:`CheckpointError` and leaves nothing behind."""

    async def awrite(self, location: str, record: CheckpointRecord) -> str:
        import asyncio

        return await asyncio.to_thread(self.write, location, record)

    @abc.abstractmethod
    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        """Read one record: ``location`` may itself name it (a file, ``db#id``); else ``checkpoint_id``
        (a unique prefix is enough); with neither, the latest. Raises :class:`CheckpointError`."""

    async def aread(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        import asyncio

        return await asyncio.to_thread(self.read, location, checkpoint_id)

    @abc.abstractmethod
    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        """Metadata of every checkpoint, newest first, without reading bodies; damaged ones included."""

    def list_newest(self, location: str, limit: int, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        """The first ``limit`` checkpoints :meth:`list` gives; a store that can should not read the rest."""
        return self.list(location, branch)[: max(0, limit)]

    def iter_list(self, location: str, branch: str | None = None) -> Iterator[CheckpointMeta]:
        """What :meth:`list` gives, in the same order, as it is read: a big store can show its first rows before
        the last are read. Default: the whole listing, then its items."""
        yield from self.list(location, branch)

    def latest(self, location: str, branch: str | None = None) -> CheckpointMeta | None:
        """The newest checkpoint that is not damaged."""
        return next((m for m in self.list(location, branch) if m.damaged is None), None)

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        """The metadata of one checkpoint by its full id, or ``None`` (no body is read)."""
        return next((m for m in self.list(location) if m.id == checkpoint_id), None)

    def find(self, location: str, prefix: str) -> CheckpointMeta:
        """The checkpoint whose id is ``prefix`` or the only one that starts with it. Raises
        :class:`AmbiguousCheckpoint` or :class:`CheckpointNotFound`."""
        # lazy: crewpoint.providers.refs imports this module back (cycle)
        from crewpoint.providers.refs import match_prefix

        metas = self.list(location)
        full = match_prefix([m.id for m in metas], prefix, location)
        return next(m for m in metas if m.id == full)

    def ancestors(self, location: str, checkpoint_id: str) -> builtins.list[CheckpointMeta]:
        """The checkpoint and its parents, nearest first, as far as they are in the store."""
        by_id = {m.id: m for m in self.list(location)}
        return walk_parents(by_id.get, checkpoint_id)

    def close(self) -> None:  # noqa: B027 - most providers hold nothing open
        """Release what this provider holds open (database connections); used again, it opens them anew.
        Default: nothing to release. A provider is also a context manager that closes on leaving."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    def flush(self) -> None:  # noqa: B027 - most providers have nothing to do
        """Make every write so far durable (called at the end of a run and on signals). Default: nothing to do."""

    @abc.abstractmethod
    def delete(self, location: str, ids: Iterable[str]) -> int:
        """Delete checkpoints by id, oldest first (an interrupted delete leaves no gap); return how many."""

    def prune(self, location: str, strategy: PruneStrategy, dry_run: bool = False) -> PrunePlan:
        """Delete what ``strategy`` plans over this store (see :class:`~crewpoint.providers.prune.PruneStrategy`
        for what is never deleted), planned and applied under the store's lock; a dry run plans the same way and
        deletes nothing. A read-only store refuses both."""
        self._refuse_if_read_only(location)
        with self._pruning(location):
            plan = strategy.plan(
                self.list(location), self.read_runs(location), lambda asking: self._waiting(location, asking)
            )
            if plan.doomed and not dry_run:
                self.delete(location, plan.ids)
        return plan

    def _waiting(self, location: str, asking: builtins.list[CheckpointMeta]) -> set[str]:
        """Ids of the checkpoints among ``asking`` an unanswered request waits at (the prune's
        :data:`~crewpoint.providers.prune.Waiting`): their bodies hold a request, and the store no claim for it."""
        # lazy: crewpoint.providers.prune imports this module back (cycle)
        from crewpoint.providers.prune import unanswered

        return unanswered(
            asking,
            lambda meta: self.read(location, meta.id).body,
            lambda key: self.read_claim(location, key) is not None,
        )

    def _pruning(self, location: str) -> AbstractContextManager[Any]:
        """The lock a prune holds while it plans and deletes. Default: one per provider in this process."""
        return self._prune_lock

    _prune_lock = threading.RLock()

    def clean(self, location: str) -> int:
        """Remove what interrupted writes left behind (temporary files of writers that died); return how
        many. Never touches a checkpoint. Default: nothing to clean."""
        return 0

    # -- the store -------------------------------------------------------------------------------------------

    def store_at(self, location: str) -> str:
        """The store ``location`` names (itself, or the store holding the checkpoint it names); raises
        :class:`CheckpointNotFound` with a one-line reason when there is none."""
        return location

    def store_of(self, meta: CheckpointMeta) -> str:
        """The store that holds the checkpoint ``meta`` describes (from ``meta.location``)."""
        # lazy: crewpoint.providers.refs imports this module back (cycle)
        from crewpoint.providers.refs import split_ref

        return split_ref(meta.location)[0]

    def check_writable(self, location: str) -> None:
        """Raise :class:`CheckpointError` (one line) if checkpoints cannot be written to ``location`` now: a
        read-only store, folder or database, a full disk. Cheap; called before a run starts, so that no work
        (no LLM call) is done for checkpoints that could not be kept. Writes nothing that stays. Default: only
        a read-only provider is refused."""
        self._refuse_if_read_only(location)

    def _refuse_if_read_only(self, location: str) -> None:
        if self.read_only:
            raise CheckpointError(f"{location} is opened read-only ({self.kind} store): nothing is written to it")

    # -- claims: one answer wins ------------------------------------------------------------------------------

    def claim(self, location: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        """Store ``value`` (a small JSON-ready dict) under ``key`` unless a value is already stored there,
        atomically (across processes, and across hosts for a server); return the stored value: ours when we won,
        the earlier one otherwise. The caller tells it won by a unique token it put in ``value``.

        ``key`` is a request id (``[A-Za-z0-9_.:-]{1,128}``); anything else, a value that is not JSON-ready or
        over 64 KiB, a read-only store or a store that does not exist is a one-line :class:`CheckpointError`.
        Every provider implements it; this default refuses (a read-only store with its read-only error)."""
        self._refuse_if_read_only(location)
        raise CheckpointError(f"{location}: a {self.kind} store keeps no claims, so it cannot record an answer")

    def read_claim(self, location: str, key: str) -> dict[str, Any] | None:
        """The value stored under ``key`` by :meth:`claim`, or ``None``. Default: a store without claims."""
        return None

    def claims(self, location: str) -> dict[str, dict[str, Any]]:
        """Every claim of the store by key (small: one per answered request); a damaged one is left out (reading
        its key says what is wrong). Default: a store without claims."""
        return {}

    # -- run records (heartbeats) ----------------------------------------------------------------------------

    def write_run(self, location: str, run: RunInfo) -> bool:
        """Record ``run`` in the store, replacing its previous beat; return whether it was recorded. A store
        that does not exist yet is not made by a run record (False). Default: run records are not kept."""
        return False

    def read_runs(self, location: str) -> builtins.list[RunInfo]:
        """Every run recorded in the store, newest start first; damaged records are skipped."""
        return []

    # -- change notification ---------------------------------------------------------------------------------

    def watch(
        self, location: str, stop: Any, debounce_ms: int = 200, ready: Callable[[], None] | None = None
    ) -> AsyncIterator[StoreChange]:
        """Yield a :class:`StoreChange` whenever the store changes (bursts coalesced), until ``stop`` (an
        ``asyncio.Event``) is set. A store that does not exist yet is waited for.

        ``ready`` is called once, as soon as the watch is in place (once the first item has been asked for):
        a change made after it is reported, so a caller never waits on the clock before writing."""
        # lazy: crewpoint.providers.watch imports this module back (cycle)
        from crewpoint.providers.watch import watch_files

        return watch_files(lambda: self.watch_spec(location), stop, debounce_ms, ready)

    def watch_spec(self, location: str) -> WatchSpec:
        """What to watch on disk for :meth:`watch` (file-based providers)."""
        raise NotImplementedError(f"{type(self).__name__} cannot watch {location}")


def walk_parents(lookup: Callable[[str], CheckpointMeta | None], checkpoint_id: str) -> builtins.list[CheckpointMeta]:
    """Follow parent ids from ``checkpoint_id`` through ``lookup``, nearest first, stopping at a cycle."""
    chain: builtins.list[CheckpointMeta] = []
    seen: set[str] = set()
    current = lookup(checkpoint_id)
    while current is not None and current.id not in seen:
        seen.add(current.id)
        chain.append(current)
        current = lookup(current.parent_id) if current.parent_id else None
    return chain
