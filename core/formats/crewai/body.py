"""A CrewAI checkpoint as a body in crewpoint's schema, so every view, plan and diff reads it as crewpoint's own.

A dump (keys already masked by the store that read it) becomes ``entity``, ``inputs``, ``events``, ``lineage`` and
``usage`` at :data:`crewpoint.checkpoint.schema.SCHEMA_VERSION`; the dump itself stays under ``crewai`` for the
raw view and for forks (:mod:`crewpoint.formats.crewai.fork` works on it). The entity carries the fields CrewAI
records; :func:`crewpoint.checkpoint.schema.load_body` fills the rest with the schema's defaults as it checks the
body, as it does for crewpoint's own.
"""

from __future__ import annotations

from typing import Any

from crewpoint.checkpoint.schema import SCHEMA_VERSION, Body, LineageState
from crewpoint.formats.crewai.adapter import CREWAI
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.crewai.common import context_ids, events_of, flow_name, main_entity, usage_of

_FINISHED = ("lite_agent_execution_completed", "agent_execution_completed")
"""The events that end an agent's run, with its result."""


def _output_text(output: Any) -> str | None:
    if output is None:
        return None
    if isinstance(output, dict):
        raw = output.get("raw")
        return "" if raw is None else str(raw)
    return str(output)


def _agent_id(agent: Any) -> str:
    if isinstance(agent, dict):
        return str(agent.get("id") or agent.get("role") or "")
    return "" if agent is None else str(agent)


def translate_crew(entity: dict[str, Any]) -> dict[str, Any]:
    """A crew's dump as the ``entity`` of a crew body: its agents and tasks, with their outputs and contexts."""
    agents = []
    for agent in entity.get("agents") or []:
        if isinstance(agent, dict):
            agents.append({k: agent.get(k, "") for k in ("role", "goal", "backstory")} | {"id": _agent_id(agent)})
    tasks = []
    for task in entity.get("tasks") or []:
        if not isinstance(task, dict):
            continue
        output = _output_text(task.get("output"))
        tasks.append(
            {
                "id": str(task.get("id", "")),
                "name": task.get("name"),
                "description": task.get("checkpoint_original_description") or task.get("description", ""),
                "expected_output": task.get("checkpoint_original_expected_output") or task.get("expected_output", ""),
                "agent": _agent_id(task.get("agent")),
                "output": None if output is None else {"raw": output},
                "context": context_ids(task),
            }
        )
    return {
        "kind": "crew",
        "name": entity.get("name") or "crew",
        "id": str(entity.get("id", "")),
        "process": entity.get("process"),
        "agents": agents,
        "tasks": tasks,
    }


def translate_flow(entity: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """A flow's dump as the ``entity`` of a flow body: its state, method outputs and finished methods."""
    outputs = []
    for item in entity.get("checkpoint_method_outputs") or []:
        if isinstance(item, dict) and "method" in item:
            outputs.append([str(item["method"]), item.get("output")])
        else:
            outputs.append(["", item])
    return {
        "kind": "flow",
        "name": flow_name(entity, events),
        "state": entity.get("checkpoint_state"),
        "method_outputs": outputs,
        "completed_methods": sorted(entity.get("checkpoint_completed_methods") or []),
    }


def translate_agent(entity: dict[str, Any], events: list[dict[str, Any]]) -> dict[str, Any]:
    """An agent's dump as the ``entity`` of an agent body: the messages it was asked and its result."""
    result = None
    for event in events:
        if event.get("type") in _FINISHED:
            result = event.get("output")
    asked: list[dict[str, Any]] = []
    for event in events:
        messages = event.get("messages") if event.get("type") == "lite_agent_execution_started" else None
        if isinstance(messages, str):
            asked = [{"role": "user", "content": messages}]
        elif isinstance(messages, list):
            asked = [m for m in messages if isinstance(m, dict)]
    return {
        "kind": "agent",
        "id": str(entity.get("id", "")),
        "role": entity.get("role") or "agent",
        "goal": entity.get("goal") or "",
        "backstory": entity.get("backstory") or "",
        "pending": asked,
        "result": result,
    }


def to_body(dump: dict[str, Any], meta: CheckpointMeta) -> Body:
    """A masked dump as a body in crewpoint's schema; the dump itself stays under ``crewai``."""
    entity = main_entity(dump)
    events = events_of(dump)
    kind = entity.get("entity_type")
    if kind == "crew":
        translated = translate_crew(entity)
        inputs = dict(entity.get("checkpoint_inputs") or {})
    elif kind == "flow":
        translated = translate_flow(entity, events)
        inputs = {}
    elif kind == "agent":
        translated = translate_agent(entity, events)
        inputs = {}
    else:
        raise ValueError(f"unknown CrewAI entity type {kind!r}")
    lineage: LineageState = {
        "id": meta.id,
        "parent_id": meta.parent_id,
        "branch": meta.branch,
        "lineage": meta.lineage,
        "sequence": meta.sequence,
        "resumed_from": None,
    }
    return {
        "schema_version": SCHEMA_VERSION,
        "format": CREWAI.name,
        "entity": translated,
        "inputs": inputs,
        "events": events,
        "lineage": lineage,
        CREWAI.name: {k: v for k, v in dump.items() if k != "event_record"},  # its events are under "events"
        "usage": {"rows": usage_of(entity), "before": [], "reused": []},
    }
