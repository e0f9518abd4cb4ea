"""What the command line and the terminal app do with checkpoints: find, list, describe, plan, run, diff.

Headless: nothing here imports textual. Task indexes are 0-based throughout this module; the command line
numbers tasks from 1.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import (
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
)

if TYPE_CHECKING:
    from crewpoint.runtime import RuntimeState

DEFAULT_STORES = ("./.checkpoints", "./.checkpoints.db")
SQLITE_MAGIC = b"SQLite format 3\x00"
_MAX_DEPTH = 4
_MAX_FOLDERS = 500


# -- finding stores and checkpoints --------------------------------------------------------------------------


def find_store(location: str | None) -> str:
    """The checkpoint store at ``location``; with None, ``./.checkpoints`` or ``./.checkpoints.db``.

    A path to one checkpoint file stands for the store that holds it. Raises :class:`CheckpointNotFound`
    when there is no store there.
    """
    if location is None:
        for candidate in DEFAULT_STORES:
            if os.path.exists(candidate):
                return find_store(candidate)
        raise CheckpointNotFound(
            "no checkpoint store here (looked for ./.checkpoints and ./.checkpoints.db): pass --location PATH"
        )
    from crewpoint.providers import split_ref

    path, _ = split_ref(os.fspath(location))
    if not os.path.exists(path):
        raise CheckpointNotFound(f"{path}: no such file or folder")
    if os.path.isdir(path):
        if _looks_like_json_store(path):
            return path
        raise CheckpointNotFound(f"{path}: this folder holds no checkpoints")
    if _is_sqlite(path):
        return path
    if path.endswith(".json"):
        metas = _provider(path).list(path)
        if metas and not metas[0].damaged:
            return _root_of(path, metas[0].branch)
        return os.path.dirname(os.path.dirname(os.path.abspath(path)))
    raise CheckpointNotFound(f"{path}: not a checkpoint store (a checkpoint folder or a SQLite database)")


def _is_sqlite(path: str) -> bool:
    from crewpoint.providers import has_sqlite_header

    if not os.path.isfile(path):
        return False
    if os.path.getsize(path) == 0:
        return path.endswith((".db", ".sqlite", ".sqlite3"))
    return has_sqlite_header(path)


def _looks_like_json_store(path: str) -> bool:
    """An empty folder (a store nothing has written to yet) or one with checkpoint files under it."""
    try:
        entries = [e for e in os.listdir(path) if not e.startswith(".")]
    except OSError:
        return False
    if not entries or os.path.exists(os.path.join(path, ".index.jsonl")):
        return True
    seen = 0
    for top, dirs, files in os.walk(path):
        depth = top[len(path) :].count(os.sep)
        dirs[:] = [d for d in dirs if not d.startswith(".")] if depth < _MAX_DEPTH else []
        if top != path and any(f.endswith(".json") for f in files):
            return True
        seen += 1
        if seen >= _MAX_FOLDERS:  # a big folder that is no store: stop looking
            break
    return False


def _provider(location: str) -> Any:
    from crewpoint.providers import provider_for

    return provider_for(location)


def list_checkpoints(location: str, branch: str | None = None, limit: int | None = None) -> list[CheckpointMeta]:
    """Metadata of the checkpoints in ``location``, newest first; reads no checkpoint bodies."""
    store = find_store(location)
    metas: list[CheckpointMeta] = _provider(store).list(store, branch)
    return metas if limit is None else metas[: max(0, limit)]


_PATH_SUFFIXES = (".json", ".db", ".sqlite", ".sqlite3")


def _is_path_ref(ref: str) -> bool:
    """Does ``ref`` name a file or folder (rather than an id)? Ids never hold a slash."""
    from crewpoint.providers import split_ref

    path, _ = split_ref(ref)
    if os.path.exists(path):
        return True
    if "/" in path or os.sep in path or path.lower().endswith(_PATH_SUFFIXES):
        raise CheckpointNotFound(f"{path}: no such file or folder")
    return False


def resolve_id(location: str | None, ref: str) -> str:
    """A reference :func:`load` accepts, from a file or ``db#id`` (kept as given, ``db#prefix`` completed) or
    an id or unique id prefix in ``location`` (None: the store found in the current folder).

    Raises :class:`AmbiguousCheckpoint` or :class:`CheckpointNotFound`.
    """
    from crewpoint.providers import split_ref
    from crewpoint.providers.refs import match_prefix

    ref = os.fspath(ref).strip()
    if not ref:
        raise CheckpointNotFound("empty checkpoint reference")
    if _is_path_ref(ref):
        path, fragment = split_ref(ref)
        store = find_store(path)
        if fragment is None:
            return ref
        metas = _provider(store).list(store)
        full = match_prefix([m.id for m in metas], fragment, store)
        return _ref_of(store, next(m for m in metas if m.id == full))
    store = find_store(location)
    metas = _provider(store).list(store)
    full = match_prefix([m.id for m in metas], ref, store)
    return _ref_of(store, next(m for m in metas if m.id == full))


def _ref_of(store: str, meta: CheckpointMeta) -> str:
    if meta.damaged:
        raise DamagedCheckpoint(f"{meta.location or meta.id}: damaged checkpoint ({meta.damaged})")
    if meta.location:
        return meta.location
    return f"{store}#{meta.id}"


def load(ref: str, location: str | None = None) -> CheckpointRecord:
    """Read and migrate one checkpoint: ``ref`` is a file, a folder or database (its latest), ``db#id``, or
    an id or id prefix looked up in ``location``."""
    from crewpoint.checkpoint.restore import load_record

    ref = os.fspath(ref)
    if os.path.isdir(ref) or (os.path.isfile(ref) and _is_sqlite(ref)):
        find_store(ref)
        return load_record(ref)
    return load_record(resolve_id(location, ref))


def _root_of(path: str, branch: str) -> str:
    """The store folder of the JSON checkpoint file ``path`` on ``branch`` (``<store>/<branch>/<file>``)."""
    root = os.path.dirname(path)
    for _ in branch.split("/"):
        root = os.path.dirname(root)
    return root or "."


def store_of(record: CheckpointRecord) -> str:
    """The store (folder or database) a loaded checkpoint belongs to."""
    from crewpoint.providers import split_ref

    path, _ = split_ref(record.meta.location)
    if os.path.isfile(path) and not _is_sqlite(path):
        return _root_of(path, record.meta.branch)
    return path


def ancestors(store: str, checkpoint_id: str) -> list[CheckpointMeta]:
    """The checkpoint and its parents, nearest first, as far as they are in ``store`` (no bodies read)."""
    provider = _provider(store)
    # JSON: one listing (an index read) beats a file lookup per parent; SQLite: one indexed row per parent.
    by_id = {m.id: m for m in provider.list(store)} if provider.kind != "sqlite" else None

    def lookup(wanted: str) -> CheckpointMeta | None:
        return by_id.get(wanted) if by_id is not None else provider.meta(store, wanted)

    chain: list[CheckpointMeta] = []
    seen: set[str] = set()
    current = lookup(checkpoint_id)
    while current is not None and current.id not in seen:
        seen.add(current.id)
        chain.append(current)
        current = lookup(current.parent_id) if current.parent_id else None
    return chain


def children(store: str, checkpoint_id: str) -> list[CheckpointMeta]:
    """Checkpoints whose parent is ``checkpoint_id``, newest first (no bodies read)."""
    return [m for m in _provider(store).list(store) if m.parent_id == checkpoint_id]


# -- describing a checkpoint -------------------------------------------------------------------------------


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


# -- planning and running a resume or fork -------------------------------------------------------------------


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
    """The flow class a flow checkpoint names.

    crewpoint's own flows always load; any other class is imported only with
    ``CREWPOINT_DESERIALIZE_CALLBACKS=1``, because importing it runs its module's code.
    """
    from crewpoint.flow import Flow
    from crewpoint.serialize import TRUST_ENV, callbacks_trusted, import_path

    path = record.body["entity"].get("class")
    if not isinstance(path, str) or not path:
        raise DamagedCheckpoint(f"{record.meta.location or record.meta.id}: the flow checkpoint names no class")
    if not path.startswith("crewpoint.") and not callbacks_trusted():
        raise CheckpointError(
            f"this checkpoint holds a flow of class {path}; set {TRUST_ENV}=1 to import it if you trust the checkpoint"
        )
    cls = import_path(path)
    if not (isinstance(cls, type) and issubclass(cls, Flow)):
        raise CheckpointError(f"the checkpoint names flow class {path}, which is not a crewpoint Flow")
    return cls


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
) -> PreparedRun:
    """Restore the checkpoint ``ref`` names (onto a new branch with ``fork``) and apply the edits; no run yet.

    ``record`` is the checkpoint already loaded from ``ref``, if the caller has it.
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
    flow_cls = flow_class(record) if kind == "flow" else None
    source = record.meta.location or ref
    entity = restore(source, kind, fork_branch=(branch or "") if fork else None, flow_cls=flow_cls)
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
) -> Any:
    """Restore the checkpoint (forking onto ``branch`` when ``fork``), apply edits, run it here, return the
    result (a ``CrewOutput``, a flow's last output, or an ``AgentOutput``)."""
    prepared = prepare_run(ref, fork=fork, branch=branch, inputs=inputs, outputs=outputs, location=location)
    return prepared.kickoff()


# -- comparing two checkpoints ------------------------------------------------------------------------------


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
    tb = {t.id: t for t in ib.tasks}
    paired: list[tuple[TaskInfo | None, TaskInfo | None]] = [(t, tb.pop(t.id, None)) for t in ia.tasks]
    paired += [(None, t) for t in ib.tasks if t.id in tb]
    for before, after in paired:
        label = f"{(after or before).index + 1}. {(after or before).name}"  # type: ignore[union-attr]
        add("tasks", label, _status(before), _status(after))
        add("outputs", label, before.output if before else None, after.output if after else None)
    if ia.kind == "flow" or ib.kind == "flow":
        sa = ia.flow_state if isinstance(ia.flow_state, dict) else {"state": ia.flow_state}
        sb = ib.flow_state if isinstance(ib.flow_state, dict) else {"state": ib.flow_state}
        for key in _keys(sa, sb):
            add("flow_state", key, sa.get(key, None), sb.get(key, None))
        ma, mb = _numbered(ia.method_outputs), _numbered(ib.method_outputs)
        for key in _keys(ma, mb):
            add("method_outputs", key, ma.get(key, None), mb.get(key, None))
    return out


def _status(task: TaskInfo | None) -> str | None:
    return None if task is None else ("done" if task.done else "pending")


def _keys(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    return list(dict.fromkeys([*a, *b]))


def _numbered(outputs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {f"{i + 1}. {name}": value for i, (name, value) in enumerate(outputs)}


# -- pruning ---------------------------------------------------------------------------------------------------


@dataclass
class PrunePlan:
    doomed: list[CheckpointMeta]
    kept_fork_points: set[str]


def _beyond_newest(metas: list[CheckpointMeta], keep: int, branch: str | None) -> set[str]:
    from crewpoint.providers.prune import newest_first

    seen: dict[str, int] = {}
    out: set[str] = set()
    for meta in newest_first(metas):
        if branch is not None and meta.branch != branch:
            continue
        seen[meta.branch] = seen.get(meta.branch, 0) + 1
        if seen[meta.branch] > keep:
            out.add(meta.id)
    return out


def _doomed(
    metas: list[CheckpointMeta], keep: int | None, older_than: float | None, branch: str | None, force: bool, now: float
) -> set[str]:
    from crewpoint.providers.prune import plan_prune as plan_keep
    from crewpoint.providers.prune import plan_prune_older_than

    chosen: set[str] | None = None
    if keep is not None:
        chosen = _beyond_newest(metas, keep, branch) if force else set(plan_keep(metas, keep=keep, branch=branch))
    if older_than is not None:
        old = set(plan_prune_older_than(metas, older_than, now, branch=branch, force=force))
        chosen = old if chosen is None else chosen & old
    return chosen or set()


def plan_prune(
    location: str,
    keep: int | None = None,
    older_than: float | None = None,
    branch: str | None = None,
    force: bool = False,
    now: float | None = None,
) -> PrunePlan:
    """Which checkpoints a prune deletes, newest first: beyond the newest ``keep`` per branch, and/or older
    than ``older_than`` seconds (with both, only those matching both). Fork points are kept unless ``force``;
    ``kept_fork_points`` names the ones kept that would otherwise go."""
    import time

    if keep is None and older_than is None:
        raise ValueError("prune needs a number of checkpoints to keep or an age")
    store = find_store(location)
    metas: list[CheckpointMeta] = _provider(store).list(store)
    now = time.time() if now is None else now
    doomed = _doomed(metas, keep, older_than, branch, force, now)
    kept = set() if force else _doomed(metas, keep, older_than, branch, True, now) - doomed
    return PrunePlan(doomed=[m for m in metas if m.id in doomed], kept_fork_points=kept)


def delete_checkpoints(location: str, ids: list[str]) -> int:
    """Delete checkpoints by id from the store; returns how many were removed."""
    if not ids:
        return 0
    store = find_store(location)
    return int(_provider(store).delete(store, ids))


# -- small parsers ---------------------------------------------------------------------------------------------

_AGE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$", re.IGNORECASE)
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}


def parse_age(text: str) -> float:
    """``"7d"``, ``"24h"``, ``"30m"``, ``"45s"`` (and ``"2w"``) as seconds."""
    match = _AGE_RE.match(text or "")
    if not match:
        raise ValueError(f"invalid age {text!r}: use a number and a unit, like 7d, 24h, 30m or 45s")
    return float(match.group(1)) * _UNITS[match.group(2).lower()]


def parse_assignments(pairs: list[str] | tuple[str, ...], what: str) -> dict[str, str]:
    """``["key=value", ...]`` as a dict; ValueError naming the bad item."""
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"invalid {what} {pair!r}: write it as NAME=VALUE")
        out[key.strip()] = value
    return out


def short(text: Any, width: int = 200) -> str:
    """One line of at most ``width`` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= width else line[: width - 1] + "…"
