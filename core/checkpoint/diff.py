"""Comparing two checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crewpoint.checkpoint.describe import TaskInfo, describe
from crewpoint.entities import kind_of
from crewpoint.providers.base import CheckpointRecord


@dataclass(frozen=True)
class DiffEntry:
    section: str
    key: str
    before: Any
    after: Any


def diff(a: CheckpointRecord, b: CheckpointRecord) -> list[DiffEntry]:
    """What differs from ``a`` to ``b``: checkpoint facts, inputs, task statuses and outputs, flow state and
    method outputs. Only differences are listed."""
    ia, ib = describe(a), describe(b)
    out: list[DiffEntry] = []

    def add(section: str, key: str, before: Any, after: Any) -> None:
        if before != after:
            out.append(DiffEntry(section, key, before, after))

    add("checkpoint", "entity", f"{ia.kind} {ia.name}", f"{ib.kind} {ib.name}")
    add("checkpoint", "branch", a.meta.branch, b.meta.branch)
    add("checkpoint", "progress", "{}/{}".format(*ia.progress), "{}/{}".format(*ib.progress))
    for key in _keys(ia.inputs, ib.inputs):
        add("inputs", key, ia.inputs.get(key, None), ib.inputs.get(key, None))
    for before, after in pair_tasks(ia.tasks, ib.tasks):
        label = f"{(after or before).index + 1}. {(after or before).name}"  # type: ignore[union-attr]
        add("tasks", label, _status(before), _status(after))
        add("outputs", label, before.output if before else None, after.output if after else None)
    if kind_of(ia.kind).has_state or kind_of(ib.kind).has_state:
        sa = ia.flow_state if isinstance(ia.flow_state, dict) else {"state": ia.flow_state}
        sb = ib.flow_state if isinstance(ib.flow_state, dict) else {"state": ib.flow_state}
        for key in _keys(sa, sb):
            add("flow_state", key, sa.get(key, None), sb.get(key, None))
        ma, mb = _numbered(ia.method_outputs), _numbered(ib.method_outputs)
        for key in _keys(ma, mb):
            add("method_outputs", key, ma.get(key, None), mb.get(key, None))
    return out


def pair_tasks(a: list[TaskInfo], b: list[TaskInfo]) -> list[tuple[TaskInfo | None, TaskInfo | None]]:
    """The tasks of two checkpoints side by side: matched by name (in order, when names repeat), then the rest by
    position; what is left on either side stands alone. Ids are not used: two runs of one crew give the same task
    different ids."""
    partner: dict[int, int] = {}
    free = list(range(len(b)))
    for i, task in enumerate(a):
        j = next((j for j in free if b[j].name == task.name), None)
        if j is not None:
            partner[i] = j
            free.remove(j)
    for i in range(len(a)):
        if i not in partner and i < len(b) and i in free:
            partner[i] = i
            free.remove(i)
    paired: list[tuple[TaskInfo | None, TaskInfo | None]] = [
        (task, b[partner[i]] if i in partner else None) for i, task in enumerate(a)
    ]
    paired += [(None, b[j]) for j in free]
    return paired


def _status(task: TaskInfo | None) -> str | None:
    return None if task is None else ("done" if task.done else "pending")


def _keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _numbered(outputs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {f"{i + 1}. {name}": value for i, (name, value) in enumerate(outputs)}
