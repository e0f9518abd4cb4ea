"""Reading a checkpoint back: resolve a reference, read it, and pass its body through the schema's one door."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from crewpoint.checkpoint.schema import load_body, migrate
from crewpoint.providers import provider_for
from crewpoint.providers.base import BaseProvider, CheckpointError, CheckpointRecord
from crewpoint.text import a_or_an

if TYPE_CHECKING:
    from crewpoint.checkpoint.schema import CheckpointBody


def read_checked(
    ref: str | Path, checkpoint_id: str | None = None, provider: BaseProvider | None = None
) -> tuple[CheckpointRecord, CheckpointBody]:
    """Read the checkpoint ``ref`` names (file, folder, ``db#id``), migrated and validated in full, with its
    typed body. The record's body stays the data as stored (migrated to the current schema): readers that take
    a mapping see exactly the keys the checkpoint holds, and the typed body says they are of the right types.

    A body that does not validate raises :class:`~crewpoint.checkpoint.schema.DamagedBody` naming the field,
    before anything acts on it. ``provider``: the store's provider, when the caller reads many of its checkpoints.
    """
    ref = os.fspath(ref)
    provider = provider if provider is not None else provider_for(ref)
    record = provider.read(ref, checkpoint_id)
    source = record.meta.id or record.meta.location or ref
    record.body = migrate(record.body, source)
    return record, load_body(record.body, source)


def load_record(ref: str | Path, checkpoint_id: str | None = None) -> CheckpointRecord:
    """:func:`read_checked` without the typed body."""
    return read_checked(ref, checkpoint_id)[0]


def body_of(record: CheckpointRecord) -> CheckpointBody:
    """The typed body of a record (validated again: a caller may have edited or built ``record.body``)."""
    return load_body(record.body, record.meta.id or record.meta.location or "checkpoint")


def expect_kind(record: CheckpointRecord, body: CheckpointBody, kind: str) -> None:
    found = body["entity"]["kind"]
    if found != kind:
        raise CheckpointError(
            f"{record.meta.location or record.meta.id}: this checkpoint is of {a_or_an(found)}, not {a_or_an(kind)}"
        )
