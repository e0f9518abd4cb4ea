"""Rebuild a crew, flow or agent from a checkpoint and attach a runtime state that continues its lineage."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from crewpoint.checkpoint.config import CheckpointConfig, resolve
from crewpoint.checkpoint.restore import expect_kind, load_record
from crewpoint.events.record import EventRecord
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord


def reference_of(config: CheckpointConfig | str | Path) -> str:
    """What ``restore_from`` names, as a reference :func:`load_record` reads: a file, a folder, ``db#id``, or a
    bare checkpoint id or unique id prefix looked up in the configured location (``./.checkpoints`` by default)."""
    from crewpoint.checkpoint.stores import resolve_id

    if isinstance(config, CheckpointConfig):
        if config.restore_from is None:
            raise CheckpointError("CheckpointConfig(restore_from=...) must name the checkpoint to restore")
        ref, location = str(config.restore_from), config.location
    else:
        ref, location = str(config), None
    if ref.strip() and not os.path.exists(ref.partition("#")[0] if "#" in ref else ref):
        return resolve_id(location, ref)
    return ref


def store_root(meta: CheckpointMeta) -> str:
    """The store that holds the checkpoint ``meta`` describes, as its provider tells."""
    from crewpoint.providers import provider_for

    return provider_for(meta.location).store_of(meta)


def run_config(record: CheckpointRecord, saved: CheckpointConfig | bool | None) -> CheckpointConfig:
    """Where a restored run writes: beside the checkpoint it came from, with the run's own triggers."""
    from crewpoint.providers import provider_for

    root = store_root(record.meta)
    provider = provider_for(record.meta.location)
    resolved = resolve(saved)
    if resolved is None:
        return CheckpointConfig(location=root, provider=provider)
    return CheckpointConfig(
        location=root,
        provider=provider,
        on_events=list(resolved.on_events),
        max_checkpoints=resolved.max_checkpoints,
    )


def entity_class(kind: str) -> type[Any]:
    """crewpoint's class for an entity kind (crew, flow, agent); each has the same resume and fork interface."""
    if kind == "crew":
        from crewpoint.crew import Crew

        return Crew
    if kind == "agent":
        from crewpoint.agent import Agent

        return Agent
    if kind == "flow":
        from crewpoint.flow import Flow

        return Flow
    raise CheckpointError(f"unknown entity kind {kind!r}")


def build_entity(record: CheckpointRecord, kind: str, flow_cls: type[Any] | None = None) -> Any:
    """Rebuild the entity from the checkpoint alone (code under the trust rule of ``crewpoint.serialize``)."""
    cls = entity_class(kind)
    if kind == "flow":
        if flow_cls is None:
            raise CheckpointError("restore a flow through its class: MyFlow.from_checkpoint(...)")
        cls = flow_cls
    return cls.from_state(record.body["entity"])


def _settings_of(entity: Any) -> list[Any]:
    """The crew, flow or agent and every agent and task below it: what has a ``checkpoint=`` setting."""
    out = [entity]
    out += list(getattr(entity, "agents", None) or [])
    out += list(getattr(entity, "tasks", None) or [])
    return out


def pin_locations(entity: Any, config: CheckpointConfig) -> None:
    """Point every saved checkpoint setting of a rebuilt entity at the run's store: a checkpoint that is not
    trusted never chooses where the resumed run writes."""
    for owner in _settings_of(entity):
        setting = getattr(owner, "checkpoint", None)
        if isinstance(setting, CheckpointConfig):
            owner.checkpoint = setting.model_copy(update={"location": config.location, "provider": config.provider})


def _lineage_block(record: CheckpointRecord) -> dict[str, Any]:
    """The body's lineage block, or the metadata's when the block is missing or of the wrong type."""
    block = record.body.get("lineage")
    block = block if isinstance(block, dict) else {}
    meta = record.meta

    def text(key: str, fallback: str) -> str:
        value = block.get(key)
        return value if isinstance(value, str) and value else fallback

    try:
        sequence = int(block.get("sequence") or meta.sequence)
    except (TypeError, ValueError):
        sequence = int(meta.sequence)
    return {
        "branch": text("branch", meta.branch),
        "lineage": text("lineage", meta.lineage),
        "sequence": sequence,
    }


def restore(
    config: CheckpointConfig | str | Path,
    kind: str,
    fork_branch: str | None,
    flow_cls: type[Any] | None = None,
    target: Any | None = None,
) -> Any:
    """Restore the entity of ``kind`` saved at ``config`` (``fork_branch``: "" = auto-named fork).

    With ``target`` (the caller's own crew, flow or agent) the checkpoint's state is bound to it and it keeps its
    code; without, the entity is rebuilt from the checkpoint under the trust rule.
    """
    from crewpoint.events import CheckpointForkedEvent, CheckpointRestoredEvent, event_bus
    from crewpoint.runtime import RuntimeState
    from crewpoint.serialize import callbacks_trusted

    record = load_record(reference_of(config))
    expect_kind(record, kind)
    if target is not None:
        target.bind_state(record.body["entity"])
        entity = target
    else:
        entity = build_entity(record, kind, flow_cls)
    run = run_config(record, entity.checkpoint)
    if target is None and not callbacks_trusted():
        pin_locations(entity, run)
    lineage = _lineage_block(record)
    saved_inputs = record.body.get("inputs")
    inputs = dict(saved_inputs) if isinstance(saved_inputs, dict) else {}
    state = RuntimeState(
        entity,
        run,
        inputs,
        events=EventRecord.from_list(record.body.get("events") or []),
        branch=lineage["branch"],
        lineage=lineage["lineage"],
        parent_id=record.meta.id,
        sequence=lineage["sequence"],
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
