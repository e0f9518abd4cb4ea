"""Planning and preparing a resume or fork: edits, what re-runs, the restored entity ready to run."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crewpoint.checkpoint.describe import _label
from crewpoint.checkpoint.stores import _provider, load, store_of
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord, DamagedCheckpoint

if TYPE_CHECKING:
    from crewpoint.runtime import RuntimeState


@dataclass
class ForkPlan:
    changed_inputs: dict[str, Any]
    edited_outputs: dict[int, str]
    rerun: list[int]


def _planning_state(entity: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a crew's saved state without anything that imports code: enough to plan, never to run."""
    data: dict[str, Any] = copy.deepcopy(dict(entity))
    data["task_callback"] = None
    data["knowledge_sources"] = []
    for agent in data.get("agents", []):
        agent.update(llm=None, tools=[], knowledge_sources=[], checkpoint=None)
    for task in data.get("tasks", []):
        task.update(callback=None, guardrail=None)
    data["checkpoint"] = None
    return data


def _check_edits(
    record: CheckpointRecord, kind: str, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
) -> None:
    if outputs and kind != "crew":
        raise ValueError(f"task outputs can be edited in crew checkpoints only; this one holds a {kind}")
    if inputs and kind == "agent":
        raise ValueError("an agent checkpoint takes no inputs; resume or fork it as it is")
    if outputs:
        saved = record.body["entity"].get("tasks", [])
        for index in outputs:
            if not 0 <= index < len(saved):
                raise ValueError(f"task {index + 1} does not exist: the crew has tasks 1 to {len(saved)}")
            if saved[index].get("output") is None:
                raise ValueError(
                    f"task {index + 1} ({_label(saved[index])}) has not run at this checkpoint: "
                    "only finished tasks' outputs can be edited"
                )


def _apply_edits(crew: Any, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None) -> None:
    if inputs:
        crew.set_inputs(dict(inputs))
    for index, text in sorted((outputs or {}).items()):
        crew.override_output(index, text)


def _plan(
    record: CheckpointRecord, crew: Any | None, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
) -> ForkPlan:
    old_inputs = dict(record.body.get("inputs") or {})
    changed = {k: v for k, v in (inputs or {}).items() if k not in old_inputs or old_inputs[k] != v}
    saved = record.body["entity"].get("tasks", []) if crew is not None else []
    edited = {
        i: text for i, text in sorted((outputs or {}).items()) if (saved[i].get("output") or {}).get("raw") != text
    }
    rerun = [i for i, task in enumerate(crew.tasks) if task.output is None] if crew is not None else []
    return ForkPlan(changed_inputs=changed, edited_outputs=edited, rerun=rerun)


def plan_fork(
    record: CheckpointRecord, inputs: dict[str, Any] | None = None, outputs: dict[int, str] | None = None
) -> ForkPlan:
    """What a fork with these edits changes and which tasks it runs; nothing is run or written.

    ``rerun`` lists the crew tasks that will run: those not done at the checkpoint and those the edits reset.
    """
    kind = str(record.body["entity"].get("kind", record.meta.entity_kind))
    _check_edits(record, kind, inputs, outputs)
    if kind != "crew":
        return _plan(record, None, inputs, outputs)
    from crewpoint.crew import Crew

    crew = Crew.from_state(_planning_state(record.body["entity"]))
    crew._inputs = dict(record.body.get("inputs") or {})
    _apply_edits(crew, inputs, outputs)
    return _plan(record, crew, inputs, outputs)


def flow_class(record: CheckpointRecord) -> type[Any]:
    """The flow class a flow checkpoint names, under the trust rule: the running program must define it, or the
    checkpoint be trusted (``CREWPOINT_DESERIALIZE_CALLBACKS=1``) for it to be imported."""
    from crewpoint.flow import Flow
    from crewpoint.serialize import load_class

    path = record.body["entity"].get("class")
    if not isinstance(path, str) or not path:
        raise DamagedCheckpoint(f"{record.meta.location or record.meta.id}: the flow checkpoint names no class")
    try:
        return load_class(path, Flow, "flow class")
    except ValueError as exc:
        raise CheckpointError(str(exc)) from None


@dataclass
class PreparedRun:
    """A restored entity ready to run, with the edits applied."""

    entity: Any
    kind: str
    source: CheckpointMeta
    plan: ForkPlan
    store: str
    fork: bool = False
    inputs: dict[str, Any] | None = None
    task_ids: list[str] = field(default_factory=list)
    task_names: list[str] = field(default_factory=list)

    @property
    def state(self) -> RuntimeState | None:
        attr = {"crew": "_state", "agent": "_state", "flow": "_runtime"}[self.kind]
        return getattr(self.entity, attr, None)

    @property
    def branch(self) -> str:
        state = self.state
        return state.branch if state is not None else self.source.branch

    @property
    def latest_id(self) -> str:
        """The newest checkpoint of this run (the source until the run writes one)."""
        state = self.state
        return (state.checkpoint_id if state is not None else None) or self.source.id

    def kickoff(self) -> Any:
        if self.kind == "flow":
            return self.entity.kickoff(self.inputs or None)
        return self.entity.kickoff()


def _check_new_branch(store: str, branch: str) -> None:
    from crewpoint.providers.refs import check_branch

    check_branch(branch)
    if any(m.branch == branch for m in _provider(store).list(store, branch)):
        raise CheckpointError(f"branch {branch!r} already exists in {store}: choose another name for the fork")


def prepare_run(
    ref: str,
    *,
    fork: bool = False,
    branch: str | None = None,
    inputs: dict[str, Any] | None = None,
    outputs: dict[int, str] | None = None,
    location: str | None = None,
    record: CheckpointRecord | None = None,
    app: str | None = None,
) -> PreparedRun:
    """Restore the checkpoint ``ref`` names (onto a new branch with ``fork``) and apply the edits; no run yet.

    ``app`` names the user's program (``FILE.py:attr`` or ``module:attr``): its entity is built and the
    checkpoint's state bound to it, so its LLMs, tools and callbacks run. Without it the entity is rebuilt from
    the checkpoint under the trust rule. ``record`` is the checkpoint already loaded from ``ref``, if the caller
    has it.
    """
    from crewpoint.checkpoint.restore_entities import restore

    if record is None:
        record = load(ref, location)
    kind = str(record.body["entity"].get("kind", record.meta.entity_kind))
    _check_edits(record, kind, inputs, outputs)
    store = store_of(record)
    if branch is not None and not fork:
        raise ValueError("a branch name is for forks: use fork to start a new branch")
    if fork and branch:
        _check_new_branch(store, branch)
    source = record.meta.location or ref
    fork_branch = (branch or "") if fork else None
    if app:
        from crewpoint.checkpoint.program import load_app

        target = load_app(app, kind)
        entity = restore(source, kind, fork_branch=fork_branch, target=target)
    else:
        flow_cls = flow_class(record) if kind == "flow" else None
        entity = restore(source, kind, fork_branch=fork_branch, flow_cls=flow_cls)
    crew = entity if kind == "crew" else None
    if crew is not None:
        _apply_edits(crew, inputs, outputs)
    plan = _plan(record, crew, inputs, outputs)
    return PreparedRun(
        entity=entity,
        kind=kind,
        source=record.meta,
        plan=plan,
        store=store,
        fork=fork,
        inputs=dict(inputs) if inputs and kind == "flow" else None,
        task_ids=[t.id for t in crew.tasks] if crew is not None else [],
        task_names=[t.label for t in crew.tasks] if crew is not None else [],
    )


def run_from(
    ref: str,
    *,
    fork: bool = False,
    branch: str | None = None,
    inputs: dict[str, Any] | None = None,
    outputs: dict[int, str] | None = None,
    location: str | None = None,
    app: str | None = None,
) -> Any:
    """Restore the checkpoint (forking onto ``branch`` when ``fork``), apply edits, run it here, return the
    result (a ``CrewOutput``, a flow's last output, or an ``AgentOutput``)."""
    prepared = prepare_run(ref, fork=fork, branch=branch, inputs=inputs, outputs=outputs, location=location, app=app)
    return prepared.kickoff()
