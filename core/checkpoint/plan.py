"""Planning and preparing a resume or fork: edits, what re-runs, the restored entity ready to run."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from crewpoint.checkpoint.describe import describe
from crewpoint.checkpoint.restore import body_of
from crewpoint.checkpoint.stores import _provider, load_checked, store_of
from crewpoint.entities import entity_class, kind_of
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord, DamagedCheckpoint
from crewpoint.providers.formats import format_of
from crewpoint.providers.refs import check_branch
from crewpoint.text import unknown_inputs

if TYPE_CHECKING:
    from crewpoint.checkpoint.changes import ChangePlan
    from crewpoint.checkpoint.schema import CheckpointBody, CrewState, FlowState
    from crewpoint.runtime import RuntimeState


@dataclass
class ForkPlan:
    changed_inputs: dict[str, Any]
    edited_outputs: dict[int, str]
    rerun: list[int]


def _plan(
    body: CheckpointBody, entity: Any | None, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
) -> ForkPlan:
    old_inputs = body["inputs"]
    changed = {k: v for k, v in (inputs or {}).items() if k not in old_inputs or old_inputs[k] != v}
    saved_entity = body["entity"]
    saved = cast("CrewState", saved_entity)["tasks"] if kind_of(saved_entity["kind"]).has_tasks else []

    def saved_raw(i: int) -> str | None:
        output = saved[i]["output"] if 0 <= i < len(saved) else None
        return output["raw"] if output is not None else None

    edited = {i: text for i, text in sorted((outputs or {}).items()) if saved_raw(i) != text}
    rerun = entity.rerun() if entity is not None else []
    return ForkPlan(changed_inputs=changed, edited_outputs=edited, rerun=rerun)


def plan_fork(
    record: CheckpointRecord,
    inputs: dict[str, Any] | None = None,
    outputs: dict[int, str] | None = None,
    body: CheckpointBody | None = None,
) -> ForkPlan:
    """What a fork with these edits changes and which tasks it runs; nothing is run or written.

    ``rerun`` lists the crew tasks that will run: those not done at the checkpoint and those the edits reset.
    ``body``: the record's checked body, when the caller has it.
    """
    body = body if body is not None else body_of(record)
    adapter = format_of(record)
    if adapter.foreign:  # another tool's checkpoint: planned by its adapter, run by that tool
        planned = adapter.plan_fork(record.body, inputs or {}, outputs or {})
        return ForkPlan(planned.changed_inputs, planned.edited_outputs, planned.rerun)
    cls = entity_class(body["entity"]["kind"])
    data = body["entity"]
    cls.check_edits(data, inputs, outputs)
    planning = cls.planning_copy(data, dict(body["inputs"]))
    if planning is not None:
        planning.apply_edits(inputs, outputs)
    return _plan(body, planning, inputs, outputs)


def check_fork(
    record: CheckpointRecord,
    plan: ForkPlan,
    inputs: Mapping[str, Any] | None = None,
    body: CheckpointBody | None = None,
) -> None:
    """Refuse, with one line, a crew fork that names an input the crew does not know or that would run nothing
    (every task done and no edit changing that): such a fork would make no branch. ``body``: the record's checked
    body, when the caller has it."""
    info = describe(record, body)
    if not kind_of(info.kind).has_tasks:
        return
    problem = unknown_inputs(inputs or {}, info.placeholders)
    if problem is not None:
        raise ValueError(problem)
    if not plan.rerun:
        raise ValueError(
            f"nothing to run: every task is done at {record.meta.id[:12]} and no edit changes that; "
            "change an input or a task output to fork"
        )


def flow_class(record: CheckpointRecord, body: CheckpointBody | None = None) -> type[Any]:
    """The flow class a flow checkpoint names, under the trust rule: the running program must define it, or the
    checkpoint be trusted (``CREWPOINT_DESERIALIZE_CALLBACKS=1``) for it to be imported."""
    # lazy: finding the program's spec reads pyproject.toml and folders, only for a flow's class
    from crewpoint.checkpoint.program import app_placeholder
    from crewpoint.flow import Flow
    from crewpoint.serialize import TRUST_ENV, load_class

    entity = (body if body is not None else body_of(record))["entity"]
    path = cast("FlowState", entity)["class"] if kind_of(entity["kind"]).named_by_class else None
    if not path:
        raise DamagedCheckpoint(f"{record.meta.location or record.meta.id}: the flow checkpoint names no class")
    name = path.rpartition(".")[2]
    ways_out = (
        f"name your program: --app {app_placeholder(entity['kind'], record.body)} (in Python, "
        f"{name}().kickoff(from_checkpoint=...)), or set {TRUST_ENV}=1 if you trust this checkpoint"
    )
    try:
        return load_class(path, Flow, "flow class", ways_out=ways_out)
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
    models: dict[str, tuple[str, str]] = field(default_factory=dict)
    """Agent role → the model and provider the run calls (a crew's agents, an agent; a flow's are its code's)."""
    saved_models: dict[str, str] = field(default_factory=dict)
    """Agent role → the model the checkpoint names for it."""
    changes: ChangePlan | None = None
    """What the program keeps, re-runs, adds and drops of the checkpoint: one verdict per task."""

    def model_lines(self) -> list[str]:
        """One line per agent: the model the run calls, and the one the checkpoint names when it differs."""
        lines = []
        for role, (model, _) in self.models.items():
            saved = self.saved_models.get(role)
            said = f" (the checkpoint names {saved!r})" if saved is not None and saved != model else ""
            lines.append(f"model:   agent {role!r} calls {model!r}{said}")
        return lines

    @property
    def state(self) -> RuntimeState | None:
        state: RuntimeState | None = self.entity.runtime_state
        return state

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
        return self.entity.resume()


def _check_new_branch(store: str, branch: str) -> None:

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
    body: CheckpointBody | None = None,
    keep: tuple[str, ...] = (),
    rerun: tuple[str, ...] = (),
) -> PreparedRun:
    """Restore the checkpoint ``ref`` names (onto a new branch with ``fork``) and apply the edits; no run yet.

    ``app`` names the user's program (``FILE.py:attr`` or ``module:attr``): its entity is built and the
    checkpoint's state bound to it, so its LLMs, tools and callbacks run. Without it the entity is rebuilt from
    the checkpoint under the trust rule. ``record`` is the checkpoint already loaded from ``ref``, if the caller
    has it, and ``body`` its checked body: the checkpoint is then neither read nor checked again. ``keep`` and
    ``rerun`` name tasks whose saved output is used though they changed, or not used (:class:`ChangePlan`).
    """
    from crewpoint.checkpoint.restore_entities import restore

    if record is None:
        record, body = load_checked(ref, location)
    elif body is None:
        body = body_of(record)
    kind = body["entity"]["kind"]
    entity_class(kind).check_edits(record.body["entity"], inputs, outputs)
    store = store_of(record)
    if branch is not None and not fork:
        raise ValueError("a branch name is for forks: use fork to start a new branch")
    if fork and branch:
        _check_new_branch(store, branch)
    _provider(store).check_writable(store)  # a store that cannot be written: refused before anything runs
    source = record.meta.location or ref
    fork_branch = (branch or "") if fork else None
    checked = (record, body)  # read and checked once: restore takes the pair, not the store again
    if app:
        # lazy: only --app loads a program
        from crewpoint.checkpoint.program import load_app

        target = load_app(app, kind)
        entity = restore(source, kind, fork_branch=fork_branch, target=target, checked=checked)
    else:
        program_class = flow_class(record, body) if kind_of(kind).named_by_class else None
        entity = restore(source, kind, fork_branch=fork_branch, entity_cls=program_class, checked=checked)
    choose = getattr(entity, "choose", None)
    if callable(choose):
        choose(keep, rerun)
    elif keep or rerun:
        raise ValueError(f"--keep and --rerun name tasks of a crew; this checkpoint is of a {kind}")
    rebuilt = app is None and not kind_of(kind).named_by_class  # built from the checkpoint itself: nothing changed
    changes = None if rebuilt else change_plan_of(entity, body["entity"])
    entity.apply_edits(inputs, _program_places(outputs, changes))
    tasks = list(getattr(entity, "tasks", None) or [])
    models, saved_models = run_models(entity), saved_models_of(record.body["entity"])
    return PreparedRun(
        entity=entity,
        kind=kind,
        source=record.meta,
        plan=_plan(body, entity, inputs, outputs),
        store=store,
        fork=fork,
        inputs=dict(inputs) if inputs else None,
        task_ids=[t.id for t in tasks],
        task_names=[t.label for t in tasks],
        models=models,
        saved_models=saved_models,
        changes=changes,
    )


def _program_places(outputs: dict[int, str] | None, changes: ChangePlan | None) -> dict[int, str] | None:
    """Edited outputs by the program's task places (they are named by the checkpoint's): a task moved since is
    edited where it is now; a task the program dropped cannot be edited."""
    if not outputs or changes is None:
        return outputs
    place = {v.saved: v.index for v in changes.verdicts if v.saved is not None}
    moved: dict[int, str] = {}
    for j, text in outputs.items():
        i = place.get(j)
        if i is None:
            raise ValueError(f"task {j + 1} of the checkpoint is not in the program: its output cannot be set")
        moved[i] = text
    return moved


def change_plan_of(entity: Any, saved: Mapping[str, Any]) -> ChangePlan | None:
    """What the program keeps and runs of the saved entity: a crew's :attr:`change_plan`, a flow's plan when the
    saved methods' fingerprints allow; None when there is nothing to compare (an agent)."""
    plan: ChangePlan | None = getattr(entity, "change_plan", None)
    if plan is not None or not kind_of(saved["kind"]).named_by_class:
        return plan
    # lazy: a flow's methods are read (their source hashed) only when a flow is compared
    from crewpoint.checkpoint.flow_changes import flow_change_plan

    return flow_change_plan(saved, entity)


def _agents_of(entity: Any) -> list[Any]:
    agents = getattr(entity, "agents", None)
    if isinstance(agents, list):
        return agents
    return [entity] if callable(getattr(entity, "get_llm", None)) else []


def run_models(entity: Any) -> dict[str, tuple[str, str]]:
    """Agent role → ``(model, provider)`` the run of ``entity`` calls: each agent's LLM as the run has it (the
    program's when bound, the one the user names on a rebuild). A flow's models are its methods': none here."""
    found: dict[str, tuple[str, str]] = {}
    for agent in _agents_of(entity):
        llm = agent.get_llm()
        found[str(agent.role)] = (str(llm.model), llm.provider_name())
    return found


def rebuild_models(entity: Mapping[str, Any]) -> dict[str, tuple[str, str]]:
    """Agent role → ``(model, provider)`` a run rebuilt from the checkpoint alone (no program) calls in place of the
    model the checkpoint names: crewpoint's own models (and bare model names) come back as the one ``CREWPOINT_LLM``
    names (:func:`crewpoint.llm.llm_from_state`). Empty when none is named or the checkpoint is trusted (its models
    come back as saved). Nothing is imported or rebuilt: what a dialog's estimate prices before anything runs."""
    # lazy: the model the user names is read only when an estimate is priced
    from crewpoint.llm import default_llm
    from crewpoint.serialize import callbacks_trusted

    if callbacks_trusted() or not os.environ.get("CREWPOINT_LLM", "").strip():
        return {}
    llm = default_llm(say_offline=False)
    called = (str(llm.model), llm.provider_name())
    agents = entity.get("agents") if "agents" in entity else [entity] if "llm" in entity else []
    found: dict[str, tuple[str, str]] = {}
    for agent in agents if isinstance(agents, list) else []:
        saved = agent.get("llm") if isinstance(agent, Mapping) else None
        path = saved.get("class") if isinstance(saved, Mapping) else None
        ours = isinstance(saved, str) or (isinstance(path, str) and path.split(".", 1)[0] == "crewpoint")
        if ours and isinstance(agent.get("role"), str):  # a user's own LLM class keeps its saved model
            found[agent["role"]] = called
    return found


def saved_models_of(entity: Mapping[str, Any]) -> dict[str, str]:
    """Agent role → the model a checkpoint's entity names for it (a crew's agents, an agent)."""
    agents = entity.get("agents") if "agents" in entity else [entity] if "llm" in entity else []
    found: dict[str, str] = {}
    for agent in agents if isinstance(agents, list) else []:
        llm = agent.get("llm") if isinstance(agent, Mapping) else None
        fields = llm.get("fields") if isinstance(llm, Mapping) else None
        model = llm if isinstance(llm, str) else fields.get("model") if isinstance(fields, Mapping) else None
        if isinstance(model, str) and isinstance(agent.get("role"), str):
            found[agent["role"]] = model
    return found
