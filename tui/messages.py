"""Messages that travel across the app (a widget's own messages live in the widget)."""

from __future__ import annotations

from dataclasses import dataclass, field

from textual.message import Message

from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.providers.runs import RunInfo
from crewpoint.tui.fleet_view import FleetView
from crewpoint.tui.store_index import StoreIndex


@dataclass
class StoreChanged(Message):
    """Something under the store changed on disk. A burst coalesces into one message."""

    location: str
    runs_only: bool = False
    """Only run records changed (a heartbeat): the checkpoints need not be read again."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, StoreChanged) and (message.runs_only or not self.runs_only)


@dataclass
class RunsRead(Message):
    """The store's run records were read again (without its checkpoints)."""

    runs: list[RunInfo]
    read_at: float


@dataclass
class FleetRead(Message):
    """The store's fleet was read: its runs' states and its workers' counts (None: the store has no fleet);
    ``error`` says why it could not be read."""

    view: FleetView | None
    error: str | None = None


@dataclass
class StoreListed(Message):
    """The store's metadata was (re)read or filtered anew, with its run records when ``runs`` is set; ``error``
    says why the store could not be read."""

    location: str
    metas: list[CheckpointMeta] = field(default_factory=list)
    index: StoreIndex = field(default_factory=StoreIndex)
    runs: list[RunInfo] | None = None
    """The run records, when read with the metadata (None: they come apart, in :class:`RunsRead`)."""
    read_at: float = 0.0
    """When the read began (``time.monotonic``): a read that began earlier than the one shown is dropped."""
    error: str | None = None
    partial: bool = False
    """Only the newest checkpoints of a big store, shown while the rest is read; the whole listing follows."""


@dataclass
class DetailLoaded(Message):
    """A checkpoint's body was read and described, with the diff against its parent or the marked one."""

    meta: CheckpointMeta
    record: CheckpointRecord
    info: CheckpointInfo
    diff_title: str = ""
    diff: list[DiffEntry] | None = None
    diff_note: str = ""
    request: int = 0
    """The request this answers: the screen shows only the answer to its newest."""


@dataclass
class DetailFailed(Message):
    """A checkpoint could not be opened; ``reason`` is one line for the user."""

    meta: CheckpointMeta
    reason: str
    request: int = 0


@dataclass
class PlanReady(Message):
    """Which tasks a fork with the current edits would run."""

    checkpoint_id: str
    rerun: list[int]
    error: str | None = None
