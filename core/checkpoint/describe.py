"""Describing a checkpoint for the views: tasks, inputs, flow state, events; read from its body only."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from crewpoint.checkpoint.restore import body_of
from crewpoint.cost import load_prices, price_rows, table_version, usage_rows
from crewpoint.entities import kind_of
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.text import clip
from crewpoint.text import placeholders as find_placeholders

if TYPE_CHECKING:
    from crewpoint.checkpoint.schema import AgentState, CheckpointBody, CrewState, FlowState, TaskState
    from crewpoint.cost import CostSummary, Prices
    from crewpoint.providers.usage_meta import UsageRow


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
    pending_feedback: dict[str, Any] | None = None
    """The request the run waits on (a person's review), or None."""
    human_feedback: list[dict[str, Any]] = field(default_factory=list)
    """Every answered review of the run so far, oldest first."""
    answered: str | None = None
    """Who answered the pending request, when and what (``answered by …``), once someone has: it waits no more."""
    usage: dict[str, list[UsageRow]] = field(default_factory=dict)
    """The body's well-formed usage rows by part: ``rows`` (this run), ``before`` (the chain before it) and
    ``reused`` (what a resume or fork took over instead of paying again)."""
    origin: Any = None
    """Where the run's entity came from, as recorded (the program a printed command names)."""

    def costs(self, prices: Prices | None = None) -> CostView:
        """What the chain spent up to this checkpoint, this run, what it saved, and per task, priced now."""

        prices = load_prices() if prices is None else prices
        this_run, before, reused = (self.usage.get(part, []) for part in ("rows", "before", "reused"))
        spent = [*before, *this_run]
        tasks: dict[str, list[UsageRow]] = {}
        for row in spent:
            tasks.setdefault(row.label or row.unit or "(outside any task)", []).append(row)
        return CostView(
            spent=price_rows(spent, prices),
            this_run=price_rows(this_run, prices),
            saved=price_rows(reused, prices),
            tasks=[(label, price_rows(rows, prices)) for label, rows in tasks.items()],
            prices=table_version(),
        )

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
            "pending_feedback": self.pending_feedback,
            "human_feedback": self.human_feedback,
            "answered": self.answered,
        }

    def feedback_lines(self) -> list[str]:
        """What ``info`` says of the run's reviews: the request it waits on, then each answer given so far."""
        lines: list[str] = []
        request = self.pending_feedback
        if request is not None and self.answered is not None:
            lines += ["", f"request {request.get('label')}: {self.answered}"]
        elif request is not None:
            what = {"method": "feedback on method", "input": "input to method"}.get(request["kind"], "feedback on task")
            lines += ["", f"waiting for {what} {request.get('label')}: {request.get('message')}"]
            outcomes = list(request.get("outcomes") or [])
            if outcomes:
                default = request.get("default_outcome")
                lines.append(f"  outcomes: {', '.join(outcomes)}" + (f" (default: {default})" if default else ""))
            deadline = request.get("deadline")
            if isinstance(deadline, int | float):
                lines.append(f"  deadline: {_clock(deadline)}, then the default outcome")
            lines.append("  output under review:")
            lines += ["    " + line for line in clip(request.get("output", ""), 400, one_line=False).splitlines()]
            lines.append(f"  answer with: {_answer_command(self.meta, self.origin)}")
        if self.human_feedback:
            lines += ["", "feedback given"]
        for i, given in enumerate(self.human_feedback):
            label = given.get("method") or given.get("task") or "?"
            outcome = f" -> {given['outcome']}" if given.get("outcome") else ""
            said = clip(given.get("feedback") or "(accepted)", 120)
            by = given.get("answered_by") or given.get("who") or "?"
            lines.append(f"  {i + 1}. {label}{outcome}: {said} (by {by} at {_clock(given.get('answered_at'))})")
        return lines


@dataclass
class CostView:
    """A checkpoint's costs (:meth:`CheckpointInfo.costs`): ``spent`` is the chain's (before + this run),
    ``saved`` what reused work would have cost again (its ``duration_s``: the time it took)."""

    spent: CostSummary
    this_run: CostSummary
    saved: CostSummary
    tasks: list[tuple[str, CostSummary]]
    prices: str
    """The price table's version."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "spent": self.spent.to_json(),
            "this_run": self.this_run.to_json(),
            "saved": self.saved.to_json(),
            "tasks": [{"task": label, **summary.to_json()} for label, summary in self.tasks],
            "prices": self.prices,
        }


def _answer_command(meta: CheckpointMeta, origin: Any = None) -> str:
    """The command that answers the checkpoint, as every view names it (:func:`crewpoint.feedback.command_for`)."""
    # lazy: naming a command reads the store's provider, only for a checkpoint that waits
    from crewpoint.feedback import command_at

    return command_at("answer", meta, origin)


def _clock(at: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if isinstance(at, int | float) else "?"


def _label(task: TaskState) -> str:
    if task["name"]:
        return task["name"]
    return clip(task["description"], 48)


def describe(record: CheckpointRecord, body: CheckpointBody | None = None) -> CheckpointInfo:
    """Everything the views show about one checkpoint, read from its typed body without rebuilding anything.

    A body that does not validate raises :class:`~crewpoint.checkpoint.schema.DamagedBody` naming the field;
    ``body`` is the record's body already checked (:func:`~crewpoint.checkpoint.restore.read_checked`), when the
    caller has it: it is not checked again."""
    return _describe(record, body if body is not None else body_of(record))


def _describe(record: CheckpointRecord, body: CheckpointBody) -> CheckpointInfo:

    entity = body["entity"]
    inputs = dict(body["inputs"])
    tasks: list[TaskInfo] = []
    placeholders: list[str] = []
    flow_state: Any = None
    method_outputs: list[tuple[str, Any]] = []
    kind = kind_of(entity["kind"])
    saved: dict[str, Any] = dict(entity)
    pending = saved.get("pending_feedback")
    answered = [dict(a) for a in saved.get("human_feedback") or [] if isinstance(a, dict)]
    if kind.has_tasks:
        crew = cast("CrewState", entity)
        roles = {a["id"]: a["role"] for a in crew["agents"]}
        position = {t["id"]: i for i, t in enumerate(crew["tasks"])}
        for i, task in enumerate(crew["tasks"]):
            output, context = task["output"], task["context"]
            tasks.append(
                TaskInfo(
                    index=i,
                    id=task["id"],
                    name=_label(task),
                    agent=roles.get(task["agent"] or "", ""),
                    description=task["description"],
                    expected_output=task["expected_output"],
                    done=output is not None,
                    output=output["raw"] if output is not None else None,
                    context=[position[c] for c in context if c in position] if context is not None else None,
                )
            )
        texts = [t.description for t in tasks] + [t.expected_output for t in tasks]
        for agent in crew["agents"]:
            texts += [agent["role"], agent["goal"], agent["backstory"]]
        placeholders = find_placeholders(*texts)
        name = crew["name"]
    elif kind.has_state:
        flow = cast("FlowState", entity)
        flow_state = flow["state"]
        method_outputs = [(n, o) for n, o in flow["method_outputs"]]
        name = flow["name"]
    else:  # an agent: its one kickoff
        agent_state = cast("AgentState", entity)
        name = agent_state["role"]
        asked = [m["content"] for m in agent_state["pending"] or [] if m["role"] == "user"]
        tasks.append(
            TaskInfo(
                index=0,
                id=agent_state["id"],
                name=kind.unit,
                agent=name,
                description=asked[-1] if asked else "",
                expected_output="",
                done=agent_state["result"] is not None,
                output=agent_state["result"],
                context=None,
            )
        )
        placeholders = find_placeholders(agent_state["role"], agent_state["goal"], agent_state["backstory"])
    for key in inputs:
        if key not in placeholders:
            placeholders.append(key)
    return CheckpointInfo(
        meta=record.meta,
        kind=entity["kind"],
        name=name,
        inputs=inputs,
        placeholders=placeholders,
        tasks=tasks,
        flow_state=flow_state,
        method_outputs=method_outputs,
        events=list(body["events"]),
        pending_feedback=dict(pending) if isinstance(pending, dict) else None,
        human_feedback=answered,
        usage={part: usage_rows(body, part) for part in ("rows", "before", "reused")},
        origin=record.body.get("origin"),
    )


def resolve_task(record: CheckpointRecord, ref: str, body: CheckpointBody | None = None) -> int:
    """The 0-based index of the task ``ref`` names: a number counted from 1, a task name, or an id prefix
    (``body``: the record's checked body, when the caller has it)."""
    info = describe(record, body)
    if not kind_of(info.kind).has_tasks:
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
