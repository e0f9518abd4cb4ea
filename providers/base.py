"""The record model every provider stores, and the provider interface.

A checkpoint record is small metadata (read by list views without touching bodies) plus a body: a
JSON-ready dict with the entity's full state. Providers know nothing of crews; they store and list records.
"""

from __future__ import annotations

import abc
import builtins
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from typing import Any


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


@dataclass(frozen=True, slots=True)
class CheckpointMeta:
    """What list views show. Everything here is readable without loading the body."""

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
    size: int = 0
    location: str = ""
    damaged: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckpointMeta:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)

    def with_(self, **changes: Any) -> CheckpointMeta:
        return replace(self, **changes)


@dataclass(slots=True)
class CheckpointRecord:
    meta: CheckpointMeta
    body: dict[str, Any] = field(default_factory=dict)


class BaseProvider(abc.ABC):
    """Storage backend interface. ``location`` is a folder (JSON) or a database file (SQLite)."""

    kind: str = "base"

    @abc.abstractmethod
    def write(self, location: str, record: CheckpointRecord) -> str:
        """Store ``record`` atomically; return its reference (a file path, or ``db#id``)."""

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
    def list(self, location: str, branch: str | None = None) -> list[CheckpointMeta]:
        """Metadata of every checkpoint, newest first, without reading bodies."""

    def latest(self, location: str, branch: str | None = None) -> CheckpointMeta | None:
        metas = self.list(location, branch)
        return metas[0] if metas else None

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        """The metadata of one checkpoint by its full id, or ``None`` (no body is read)."""
        return next((m for m in self.list(location) if m.id == checkpoint_id), None)

    def flush(self) -> None:  # noqa: B027 - most providers have nothing to do
        """Make every write so far durable (called at the end of a run and on signals). Default: nothing to do."""

    @abc.abstractmethod
    def delete(self, location: str, ids: Iterable[str]) -> int:
        """Delete checkpoints by id; return how many were removed."""

    def prune(
        self,
        location: str,
        keep: int,
        branch: str | None = None,
        protect: Iterable[str] = (),
        dry_run: bool = False,
    ) -> builtins.list[str]:
        """Keep the newest ``keep`` per branch; never delete a fork point or an id in ``protect``."""
        from crewpoint.providers.prune import plan_prune

        doomed = plan_prune(self.list(location), keep=keep, branch=branch, protect=set(protect))
        if doomed and not dry_run:
            self.delete(location, doomed)
        return doomed
