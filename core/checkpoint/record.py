"""A checkpoint record built once, from its body: the metadata a store lists and orders by is derived from it.

The body is where a checkpoint's lineage (its id, parent, branch, the run's lineage and sequence), trigger, time
and versions are written; :func:`new_record` reads them from there, so the two can never be written apart. What
the body does not say in the metadata's words (the entity's shown name, its progress, the run that wrote it, the
usage summary) is handed in beside it. Reading goes the other way round: the store's metadata, which its provider
checked against where the record sits, is what a restored run continues (``restore_entities.restore``).
"""

from __future__ import annotations

from typing import Any

from crewpoint.providers.base import CheckpointMeta, CheckpointRecord


def new_record(
    body: dict[str, Any],
    *,
    entity_name: str,
    tasks_done: int = 0,
    tasks_total: int = 0,
    run_id: str = "",
    usage: str = "",
    from_ledger: bool = False,
) -> CheckpointRecord:
    """The record of ``body`` (a whole body at the current schema, as a run captures it), its metadata derived
    from the body's ``lineage``, ``trigger``, ``created_at``, versions and entity kind. ``from_ledger``: ``usage``
    and the body's ``usage`` rows were made together from the run's ledger (the stores do not check them again)."""
    lineage = body["lineage"]
    meta = CheckpointMeta(
        id=lineage["id"],
        parent_id=lineage["parent_id"],
        branch=lineage["branch"],
        lineage=lineage["lineage"],
        sequence=lineage["sequence"],
        created_at=body["created_at"],
        trigger=body["trigger"],
        entity_kind=body["entity"]["kind"],
        entity_name=entity_name,
        tasks_done=tasks_done,
        tasks_total=tasks_total,
        schema_version=body["schema_version"],
        version=body["version"],
        run_id=run_id,
        usage=usage,
    )
    return CheckpointRecord(meta=meta, body=body, usage_from_ledger=from_ledger)


def with_parent(record: CheckpointRecord, parent_id: str | None) -> CheckpointRecord:
    """``record`` naming ``parent_id`` as its parent: its body's lineage changed, its metadata derived again."""
    body = {**record.body, "lineage": {**record.body["lineage"], "parent_id": parent_id}}
    meta = record.meta
    return new_record(
        body,
        entity_name=meta.entity_name,
        tasks_done=meta.tasks_done,
        tasks_total=meta.tasks_total,
        run_id=meta.run_id,
        usage=meta.usage,
        from_ledger=record.usage_from_ledger,
    )
