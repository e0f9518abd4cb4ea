"""Reading a checkpoint back: resolve a reference, read, migrate, and check what it holds."""

from __future__ import annotations

import os
from pathlib import Path

from crewpoint.checkpoint.schema import migrate
from crewpoint.providers.base import CheckpointError, CheckpointRecord, DamagedCheckpoint


def load_record(ref: str | Path, checkpoint_id: str | None = None) -> CheckpointRecord:
    """Read the checkpoint ``ref`` names (file, folder, ``db#id``) and migrate its body to the current schema."""
    from crewpoint.providers import provider_for

    ref = os.fspath(ref)
    provider = provider_for(ref)
    record = provider.read(ref, checkpoint_id)
    source = record.meta.location or ref
    record.body = migrate(record.body, source)
    if not isinstance(record.body.get("entity"), dict):
        raise DamagedCheckpoint(f"{source}: the checkpoint holds no entity state")
    return record


def expect_kind(record: CheckpointRecord, kind: str) -> None:
    found = record.body["entity"].get("kind")
    if found != kind:
        raise CheckpointError(
            f"{record.meta.location or record.meta.id}: this checkpoint is of a {found}, not a {kind}"
        )
