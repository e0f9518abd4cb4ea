"""Rebuild a crew, flow or agent from a checkpoint and attach a runtime state that continues its lineage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crewpoint.checkpoint.config import CheckpointConfig, resolve
from crewpoint.checkpoint.restore import expect_kind, load_record
from crewpoint.events.record import EventRecord
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord


def reference_of(config: CheckpointConfig | str | Path) -> str:
    if isinstance(config, CheckpointConfig):
        if config.restore_from is None:
            raise CheckpointError("CheckpointConfig(restore_from=...) must name the checkpoint to restore")
        return str(config.restore_from)
    return str(config)


def store_root(meta: CheckpointMeta) -> str:
    """The store (a JSON folder or a database file) that holds the checkpoint ``meta`` describes."""
    from crewpoint.providers import is_sqlite_location, split_ref

    location = meta.location
    if is_sqlite_location(location):
        return split_ref(location)[0]
    path = Path(location).parent
    for _ in meta.branch.split("/"):
        path = path.parent
    return str(path)


def run_config(record: CheckpointRecord, saved: CheckpointConfig | bool | None) -> CheckpointConfig:
    """Where a restored run writes: beside the checkpoint it came from, with the run's own triggers."""
    from crewpoint.providers import provider_for

    root = store_root(record.meta)
    provider = provider_for(root)
    resolved = resolve(saved)
    if resolved is None:
        return CheckpointConfig(location=root, provider=provider)
    return CheckpointConfig(
        location=root,
        provider=provider,
        on_events=list(resolved.on_events),
        max_checkpoints=resolved.max_checkpoints,
    )


def build_entity(record: CheckpointRecord, kind: str, flow_cls: type[Any] | None = None) -> Any:
    data = record.body["entity"]
    if kind == "crew":
        from crewpoint.crew import Crew

        return Crew.from_state(data)
    if kind == "agent":
        from crewpoint.agent import Agent

        return Agent.from_state(data)
    if kind == "flow":
        if flow_cls is None:
            raise CheckpointError("restore a flow through its class: MyFlow.from_checkpoint(...)")
        return flow_cls.from_state(data)
    raise CheckpointError(f"unknown entity kind {kind!r}")


def restore(
    config: CheckpointConfig | str | Path,
    kind: str,
    fork_branch: str | None,
    flow_cls: type[Any] | None = None,
) -> Any:
    """Restore the entity of ``kind`` saved at ``config.restore_from``; ``fork_branch`` ("" = auto) forks."""
    from crewpoint.events import CheckpointForkedEvent, CheckpointRestoredEvent, event_bus
    from crewpoint.runtime import RuntimeState

    record = load_record(reference_of(config))
    expect_kind(record, kind)
    entity = build_entity(record, kind, flow_cls)
    lineage = record.body["lineage"]
    inputs = dict(record.body.get("inputs") or {})
    state = RuntimeState(
        entity,
        run_config(record, entity.checkpoint),
        inputs,
        events=EventRecord.from_list(record.body.get("events") or []),
        branch=lineage.get("branch") or record.meta.branch,
        lineage=lineage.get("lineage") or record.meta.lineage,
        parent_id=record.meta.id,
        sequence=int(lineage.get("sequence") or record.meta.sequence),
        resumed_from=record.meta.id,
    )
    entity.attach_runtime(state, inputs)
    event_bus.emit(entity, CheckpointRestoredEvent(checkpoint_id=record.meta.id, location=record.meta.location))
    if fork_branch is not None:
        branch = state.fork(fork_branch or None)
        event_bus.emit(
            entity,
            CheckpointForkedEvent(checkpoint_id=record.meta.id, branch=branch, location=record.meta.location),
        )
    return entity
