"""Describing a checkpoint for the views: tasks, inputs, flow state, events; read from its body only."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crewpoint.providers.base import CheckpointMeta, CheckpointRecord, DamagedCheckpoint


@dataclass
class TaskInfo:
    index: int
    id: str
    name: str
    agent: str
    description: str
    expected_output: str
    done: bool
    output: str | None
    context: list[int] | None


@dataclass
class CheckpointInfo:
    meta: CheckpointMeta
    kind: str
    name: str
    inputs: dict[str, Any]
    placeholders: list[str]
    tasks: list[TaskInfo]
    flow_state: Any
    method_outputs: list[tuple[str, Any]]
    events: list[dict[str, Any]]

    @property
    def progress(self) -> tuple[int, int]:
        if self.tasks:
            return sum(1 for t in self.tasks if t.done), len(self.tasks)
        return self.meta.tasks_done, self.meta.tasks_total

    def to_dict(self) -> dict[str, Any]:
        done, total = self.progress
        return {
            "meta": self.meta.to_dict(),
            "kind": self.kind,
            "name": self.name,
            "inputs": self.inputs,
            "placeholders": self.placeholders,
            "progress": {"done": done, "total": total},
            "tasks": [vars(t) for t in self.tasks],
            "flow_state": self.flow_state,
            "method_outputs": [[n, o] for n, o in self.method_outputs],
            "events": len(self.events),
        }


def _label(task: Mapping[str, Any]) -> str:
    name = task.get("name")
    if name:
        return str(name)
    text = " ".join(str(task.get("description", "")).split())
    return text if len(text) <= 48 else text[:47] + "…"


def describe(record: CheckpointRecord) -> CheckpointInfo:
    """Everything the views show about one checkpoint, read from its body without rebuilding anything."""
    try:
        return _describe(record)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        where = record.meta.location or record.meta.id
        raise DamagedCheckpoint(f"{where}: the checkpoint's entity state is damaged ({exc!r})") from exc


def _describe(record: CheckpointRecord) -> CheckpointInfo:
    from crewpoint.text import placeholders as find_placeholders

    body = record.body
    entity: dict[str, Any] = body["entity"]
    kind = str(entity.get("kind", record.meta.entity_kind))
    inputs = dict(body.get("inputs") or {})
    events = [e for e in body.get("events") or [] if isinstance(e, dict)]
    tasks: list[TaskInfo] = []
    placeholders: list[str] = []
    flow_state: Any = None
    method_outputs: list[tuple[str, Any]] = []
    if kind == "crew":
        roles = {a["id"]: a.get("role", "") for a in entity.get("agents", [])}
        saved = list(entity.get("tasks", []))
        position = {t["id"]: i for i, t in enumerate(saved)}
        for i, task in enumerate(saved):
            output = task.get("output")
            context = task.get("context")
            tasks.append(
                TaskInfo(
                    index=i,
                    id=str(task["id"]),
                    name=_label(task),
                    agent=str(roles.get(task.get("agent"), "")),
                    description=str(task.get("description", "")),
                    expected_output=str(task.get("expected_output", "")),
                    done=output is not None,
                    output=str(output["raw"]) if output is not None else None,
                    context=[position[c] for c in context if c in position] if context is not None else None,
                )
            )
        texts = [t.description for t in tasks] + [t.expected_output for t in tasks]
        for agent in entity.get("agents", []):
            texts += [str(agent.get(k, "")) for k in ("role", "goal", "backstory")]
        placeholders = find_placeholders(*texts)
        name = str(entity.get("name", "crew"))
    elif kind == "flow":
        flow_state = entity.get("state")
        method_outputs = [(str(n), o) for n, o in entity.get("method_outputs", [])]
        name = str(entity.get("name", ""))
    elif kind == "agent":
        name = str(entity.get("role", "agent"))
        pending = entity.get("pending") or []
        asked = [str(m.get("content", "")) for m in pending if m.get("role") == "user"]
        result = entity.get("result")
        tasks.append(
            TaskInfo(
                index=0,
                id=str(entity["id"]),
                name="kickoff",
                agent=name,
                description=asked[-1] if asked else "",
                expected_output="",
                done=result is not None,
                output=None if result is None else str(result),
                context=None,
            )
        )
        placeholders = find_placeholders(*(str(entity.get(k, "")) for k in ("role", "goal", "backstory")))
    else:
        raise ValueError(f"unknown entity kind {kind!r}")
    for key in inputs:
        if key not in placeholders:
            placeholders.append(key)
    return CheckpointInfo(
        meta=record.meta,
        kind=kind,
        name=name,
        inputs=inputs,
        placeholders=placeholders,
        tasks=tasks,
        flow_state=flow_state,
        method_outputs=method_outputs,
        events=events,
    )


def resolve_task(record: CheckpointRecord, ref: str) -> int:
    """The 0-based index of the task ``ref`` names: a number counted from 1, a task name, or an id prefix."""
    info = describe(record)
    if info.kind != "crew":
        raise ValueError(f"task outputs can be edited in crew checkpoints only; this one holds a {info.kind}")
    text = ref.strip()
    if text.isdigit():
        number = int(text)
        if not 1 <= number <= len(info.tasks):
            raise ValueError(f"task {number} does not exist: the crew has tasks 1 to {len(info.tasks)}")
        return number - 1
    for task in info.tasks:
        if text in (task.name, task.id):
            return task.index
    matches = [t for t in info.tasks if len(text) >= 4 and t.id.startswith(text)]
    if len(matches) == 1:
        return matches[0].index
    names = ", ".join(f"{t.index + 1}={t.name}" for t in info.tasks)
    raise ValueError(f"no task {ref!r} in this crew: use a number or a name ({names})")
