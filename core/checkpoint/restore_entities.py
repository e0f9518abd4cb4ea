"""Rebuild a crew, flow or agent from a checkpoint and attach a runtime state that continues its lineage."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from crewpoint.checkpoint.config import CheckpointConfig, resolve
from crewpoint.checkpoint.restore import expect_kind, read_checked
from crewpoint.checkpoint.schema import CheckpointBody, check_events, owner_of, refused_by_class
from crewpoint.checkpoint.stores import resolve_id
from crewpoint.entities import Entity, kind_of
from crewpoint.events import CheckpointForkedEvent, CheckpointRestoredEvent, event_bus
from crewpoint.events.record import EventRecord
from crewpoint.llm import ModelNotNamed
from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord
from crewpoint.runtime import RuntimeState
from crewpoint.serialize import callbacks_trusted


def reference_of(config: CheckpointConfig | str | Path) -> str:
    """What ``restore_from`` names, as a reference :func:`read_checked` reads: a file, a folder, ``db#id``, or a
    bare checkpoint id or unique id prefix looked up in the configured location (``./.checkpoints`` by default)."""
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
    return provider_for(meta.location).store_of(meta)


def run_config(record: CheckpointRecord, saved: CheckpointConfig | bool | None) -> CheckpointConfig:
    """Where a restored run writes: beside the checkpoint it came from, with the run's own triggers."""
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
        otel=resolved.otel,
    )


def build_entity(record: CheckpointRecord, body: CheckpointBody, entity_cls: type[Entity] | None = None) -> Entity:
    """Rebuild the entity from the checkpoint alone (code under the trust rule of ``crewpoint.serialize``), as
    ``entity_cls`` (the class ``from_checkpoint`` was called on) when it is of the checkpoint's kind, else as the
    kind's class. A kind its program names by class (a flow) is rebuilt only through the program's class."""
    entity = body["entity"]
    kind = kind_of(entity["kind"])
    cls = kind.cls
    if entity_cls is not None and issubclass(entity_cls, cls):
        cls = entity_cls
    elif kind.named_by_class:
        raise CheckpointError(f"restore a {kind.kind} through its class: MyFlow.from_checkpoint(...)")
    saved_state = entity.get("state_class")
    state_class = saved_state.rpartition(".")[2] if isinstance(saved_state, str) and saved_state else None
    try:
        return _state_checked(record, state_class, lambda: cls.from_state(entity))  # type: ignore[no-any-return]
    except ModelNotNamed as exc:
        raise CheckpointError(_model_not_named(record, body, exc)) from None


def _model_not_named(record: CheckpointRecord, body: CheckpointBody, exc: ModelNotNamed) -> str:
    """The one line refusing to rebuild a checkpoint whose agent ran on a real model when no model is named: both
    ways out, the program (named as this checkpoint's kind takes it) and the model."""
    # lazy: finding the program's spec reads pyproject.toml and folders, only when a rebuild is refused
    from crewpoint.checkpoint.program import app_placeholder

    kind = body["entity"]["kind"]
    who = f"agent {exc.agent!r}" if exc.agent else "an agent"
    return (
        f"checkpoint {record.meta.id[:12]}: {who} ran on the model {exc.model!r}, and rebuilt from the checkpoint "
        f"alone it would run on the offline model: name your program (--app {app_placeholder(kind, record.body)}, "
        f"or app in [tool.crewpoint] of pyproject.toml; in Python, kickoff(from_checkpoint=...) on your own {kind}) "
        "or the model (CREWPOINT_LLM=NAME, with CREWPOINT_BASE_URL for its server)"
    )


def _state_checked(record: CheckpointRecord, state_class: str | None, apply: Callable[[], Any]) -> Any:
    """Run ``apply`` (a rebuild or a bind). Data the schema leaves to a class and the class refuses is a damaged
    checkpoint that names the field, in one line: a flow's state its state class (named ``state_class``) refuses
    (``entity.state.count``), an LLM's or tool's fields its class refuses (``entity.agents.0.llm.fields.model``).
    """
    try:
        return apply()
    except ValidationError as exc:
        if state_class is not None and exc.title == state_class:
            raise refused_by_class(exc, record.meta.id, ("entity", "state")) from None
        owner = owner_of(exc, record.body)
        if owner is not None:
            raise refused_by_class(exc, record.meta.id, owner) from None
        raise


def _live_state_class(target: Any) -> str | None:
    """The name of a live flow's state class, or None for a crew, an agent or a flow with a dict state."""
    find = getattr(target, "_state_class", None)
    found = find() if callable(find) else None
    return found.__name__ if isinstance(found, type) else None


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


def restore(
    config: CheckpointConfig | str | Path,
    kind: str,
    fork_branch: str | None,
    entity_cls: type[Entity] | None = None,
    target: Entity | None = None,
    checked: tuple[CheckpointRecord, CheckpointBody] | None = None,
) -> Entity:
    """Restore the entity of ``kind`` saved at ``config`` (``fork_branch``: "" = auto-named fork).

    With ``target`` (the caller's own crew, flow or agent) the checkpoint's state is bound to it and it keeps its
    code; without, the entity is rebuilt from the checkpoint under the trust rule, as ``entity_cls`` (see
    :func:`build_entity`). ``checked`` is the checkpoint ``config`` names, already read and checked
    (:func:`~crewpoint.checkpoint.restore.read_checked`): it is not read again.
    """
    record, body = checked if checked is not None else read_checked(reference_of(config))
    if body["format"] != "crewpoint":  # a translation of another tool's checkpoint is for reading: that tool runs it
        raise CheckpointError(
            f"checkpoint {record.meta.id} is in {body['format']}'s format: {body['format']} runs it, not "
            "crewpoint's "
            "runtime (crewpoint checkpoint resume or fork hands it to it)"
        )
    expect_kind(record, body, kind)
    check_events(body, record.meta.id)  # the history the run takes on, each event by its class
    if target is not None:
        bound = target
        _state_checked(record, _live_state_class(bound), lambda: bound.bind_state(body["entity"]))
        entity = bound
    else:
        entity = build_entity(record, body, entity_cls)
    run = run_config(record, entity.checkpoint)
    if isinstance(config, CheckpointConfig) and config.max_checkpoints is not None:
        # the program's own CheckpointConfig(restore_from=..., max_checkpoints=N): the running program prunes
        run = run.model_copy(update={"max_checkpoints": config.max_checkpoints})
    if isinstance(config, CheckpointConfig) and config.otel is not None:  # the program's own otel= (never saved)
        run = run.model_copy(update={"otel": config.otel})
    if target is None and not callbacks_trusted():
        pin_locations(entity, run)
    inputs = dict(body["inputs"])
    state = RuntimeState(
        entity,
        run,
        inputs,
        events=EventRecord.from_list(body["events"]),
        branch=record.meta.branch,  # the store's record, checked where it sits: never the body's own lineage
        lineage=record.meta.lineage,
        parent_id=record.meta.id,
        sequence=record.meta.sequence,
        resumed_from=record.meta.id,
    )
    state.source_run = record.meta.run_id
    state.prunes_own_only = target is None  # a rebuilt entity is what the checkpoint says: it trims only its own
    state.take_source_usage(body["usage"])  # what the chain spent before this run ("before", "reused")
    entity.attach_runtime(state, inputs)
    event_bus.emit(entity, CheckpointRestoredEvent(checkpoint_id=record.meta.id, location=record.meta.location))
    if fork_branch is not None:
        branch = state.fork(fork_branch or None)
        event_bus.emit(
            entity,
            CheckpointForkedEvent(checkpoint_id=record.meta.id, branch=branch, location=record.meta.location),
        )
    return entity
