"""Event classes: checkpoint lifecycle (crewpoint's own). Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Literal

from crewpoint.events.base import BaseEvent


class CheckpointEvent(BaseEvent):
    """Events about checkpoints themselves: written, failed, restored, forked, pruned."""

    checkpoint_id: str | None = None
    location: str | None = None
    trigger: str | None = None
    branch: str | None = None


class CheckpointStartedEvent(CheckpointEvent):
    type: Literal["checkpoint_started"] = "checkpoint_started"


class CheckpointCompletedEvent(CheckpointEvent):
    type: Literal["checkpoint_completed"] = "checkpoint_completed"


class CheckpointFailedEvent(CheckpointEvent):
    type: Literal["checkpoint_failed"] = "checkpoint_failed"
    error: str | None = None


class CheckpointRestoredEvent(CheckpointEvent):
    type: Literal["checkpoint_restored"] = "checkpoint_restored"


class CheckpointForkedEvent(CheckpointEvent):
    type: Literal["checkpoint_forked"] = "checkpoint_forked"
    source_checkpoint_id: str | None = None


class CheckpointPrunedEvent(CheckpointEvent):
    type: Literal["checkpoint_pruned"] = "checkpoint_pruned"
    removed_ids: list[str] | None = None
