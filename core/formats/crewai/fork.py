"""Forking a CrewAI checkpoint with edits, in CrewAI's own format, for CrewAI to resume.

The source is read as CrewAI wrote it and never changed. The copy is rebuilt by the allow-list CrewAI's runs are
handed (:mod:`crewpoint.formats.crewai.allowlist`: no endpoint, key, tool, callback or file the checkpoint names,
unless ``CREWPOINT_DESERIALIZE_CALLBACKS=1`` trusts it), gets the edits, a new id, ``parent_id`` = the source and
the new branch, and is written atomically beside it: a new file under ``<store>/<branch>/`` or a new row. Edited
task outputs are kept; every task that depends on an edited one, or whose text uses a changed input, is reset (no
output, no agent executor state), so CrewAI's resume runs it again and skips the rest.

Dependencies follow CrewAI: a task's ``context`` list names the tasks it reads; without one (CrewAI's
``NOT_SPECIFIED``, which is also how 1.15 saves every context) a task reads every task before it. CrewAI's resume
starts at the first task without an output, so every task from there on runs.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from crewpoint.formats.crewai.adapter import CREWAI, FORK_TRIGGER
from crewpoint.formats.crewai.runner import rebuilt_copy, trusted
from crewpoint.providers.base import CheckpointError, CheckpointMeta
from crewpoint.providers.crewai.common import context_ids, main_entity
from crewpoint.providers.crewai.detect import crewai_kind
from crewpoint.providers.crewai.json_store import read_dump as read_file
from crewpoint.providers.crewai.sqlite_store import _errors, connect
from crewpoint.providers.crewai.sqlite_store import read_dump as read_row
from crewpoint.providers.dependencies import readers, reads_of
from crewpoint.providers.files import fsync_dir
from crewpoint.providers.json_provider import JsonProvider
from crewpoint.providers.refs import check_branch, match_prefix, split_ref

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_\-]*)\}")
_TIME = "%Y%m%dT%H%M%S"
"""The time part of a CrewAI id (UTC)."""


@dataclass
class CrewAIFork:
    """What a fork did: the new checkpoint and what CrewAI will run when it resumes it."""

    source: CheckpointMeta
    checkpoint_id: str
    ref: str
    store: str
    branch: str
    kind: str
    edited: list[int] = field(default_factory=list)
    reset: list[int] = field(default_factory=list)
    will_run: list[int] = field(default_factory=list)
    task_names: list[str] = field(default_factory=list)
    changed_inputs: dict[str, Any] = field(default_factory=dict)
    left_out: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source.id,
            "checkpoint": self.checkpoint_id,
            "ref": self.ref,
            "store": self.store,
            "branch": self.branch,
            "kind": self.kind,
            "edited_tasks": [i + 1 for i in self.edited],
            "reset_tasks": [i + 1 for i in self.reset],
            "will_run": [i + 1 for i in self.will_run],
            "inputs": self.changed_inputs,
        }


def task_index(tasks: list[dict[str, Any]], ref: str) -> int:
    """The 0-based index ``ref`` names: a number from 1, a task name, or a task id (or a prefix of 4+)."""
    text = ref.strip()
    if text.isdigit():
        number = int(text)
        if not 1 <= number <= len(tasks):
            raise CheckpointError(f"task {number} does not exist: the crew has tasks 1 to {len(tasks)}")
        return number - 1
    for i, task in enumerate(tasks):
        if text in (task.get("name"), str(task.get("id"))):
            return i
    matches = [i for i, t in enumerate(tasks) if len(text) >= 4 and str(t.get("id", "")).startswith(text)]
    if len(matches) == 1:
        return matches[0]
    names = ", ".join(f"{i + 1}={t.get('name') or 'task'}" for i, t in enumerate(tasks))
    raise CheckpointError(f"no task {ref!r} in this crew: use a number or a name ({names})")


def _uses(task: dict[str, Any], keys: set[str]) -> bool:
    texts = [
        task.get("checkpoint_original_description") or task.get("description") or "",
        task.get("checkpoint_original_expected_output") or task.get("expected_output") or "",
    ]
    return any(name in keys for text in texts for name in _PLACEHOLDER.findall(str(text)))


def dependents(tasks: list[dict[str, Any]], changed: set[int]) -> set[int]:
    """Every task that reads a changed task, directly or through others (not the changed ones themselves): the
    rule crewpoint's own crews follow (:mod:`crewpoint.providers.dependencies`), on CrewAI's task dumps."""
    index = {str(t.get("id")): i for i, t in enumerate(tasks)}
    contexts = []
    for task in tasks:
        ids = context_ids(task)
        contexts.append(None if ids is None else [index[c] for c in ids if c in index])
    return readers(reads_of(contexts), changed)


def plan_edits(
    dump: dict[str, Any], inputs: dict[str, str], outputs: dict[str, str]
) -> tuple[dict[int, str], set[int], dict[str, Any]]:
    """Check the edits against the dump: (edited outputs by index, tasks to reset, changed inputs)."""
    entity = main_entity(dump)
    kind = entity.get("entity_type")
    if (inputs or outputs) and kind != "crew":
        raise CheckpointError(
            f"this CrewAI checkpoint holds a {kind}: only a crew's inputs and task outputs can be edited"
        )
    tasks = [t for t in entity.get("tasks") or [] if isinstance(t, dict)]
    edits: dict[int, str] = {}
    for ref, text in outputs.items():
        i = task_index(tasks, ref)
        if tasks[i].get("output") is None:
            raise CheckpointError(f"task {i + 1} ({tasks[i].get('name') or 'task'}) has no output yet to replace")
        edits[i] = text
    old = dict(entity.get("checkpoint_inputs") or {})
    changed = {k: v for k, v in inputs.items() if old.get(k) != v}
    by_input = {i for i, t in enumerate(tasks) if _uses(t, set(changed)) and i not in edits}
    reset = (by_input | dependents(tasks, set(edits) | by_input)) - set(edits)
    return edits, reset, changed


def plan_body(
    body: dict[str, Any], inputs: dict[str, Any], outputs: dict[int, str]
) -> tuple[dict[str, Any], dict[int, str], list[int]]:
    """For a CrewAI checkpoint read by crewpoint (its dump under ``crewai``): the changed inputs, the edited
    outputs (0-based) and the tasks CrewAI will run on resuming the fork (0-based), nothing written."""
    dump = body.get("crewai")
    if not isinstance(dump, dict):
        raise CheckpointError("this checkpoint does not hold CrewAI's state")
    tasks = [t for t in main_entity(dump).get("tasks") or [] if isinstance(t, dict)]
    current = {i: (t.get("output") or {}).get("raw") for i, t in enumerate(tasks) if isinstance(t.get("output"), dict)}
    edited = {i: text for i, text in outputs.items() if current.get(i) != text}
    edits, reset, changed = plan_edits(
        dump, {k: str(v) for k, v in inputs.items()}, {str(i + 1): t for i, t in edited.items()}
    )
    pending = {i for i, t in enumerate(tasks) if t.get("output") is None} | reset
    first = min(pending) if pending else len(tasks)
    return changed, edits, list(range(first, len(tasks)))


def apply_edits(dump: dict[str, Any], edits: dict[int, str], reset: set[int], inputs: dict[str, Any]) -> None:
    entity = main_entity(dump)
    tasks = [t for t in entity.get("tasks") or [] if isinstance(t, dict)]
    if inputs:
        entity["checkpoint_inputs"] = dict(entity.get("checkpoint_inputs") or {}) | inputs
    for i, text in edits.items():
        output = tasks[i]["output"]
        if isinstance(output, dict):
            output["raw"] = text
            output["summary"] = " ".join(text.split()[:10]) + ("..." if len(text.split()) > 10 else "")
            output["json_dict"] = None
            output["pydantic"] = None
        else:
            tasks[i]["output"] = text
    roles: set[str] = set()
    for i in reset:
        task = tasks[i]
        task["output"] = None
        for key, empty in (
            ("start_time", None),
            ("end_time", None),
            ("processed_by_agents", []),
            ("retry_count", 0),
            ("delegations", 0),
            ("used_tools", 0),
            ("tools_errors", 0),
        ):
            if key in task:
                task[key] = empty
        agent = task.get("agent")
        if isinstance(agent, dict) and agent.get("role"):
            roles.add(str(agent["role"]))
    # An agent that had started a reset task would pick its old conversation up again: start it afresh.
    agents = [a for a in entity.get("agents") or [] if isinstance(a, dict)]
    agents += [t["agent"] for t in tasks if isinstance(t.get("agent"), dict)]
    for agent in agents:
        if agent.get("role") in roles and "agent_executor" in agent:
            agent["agent_executor"] = None


def fork_checkpoint(
    store: str,
    ref: str | None,
    *,
    branch: str | None = None,
    inputs: dict[str, str] | None = None,
    outputs: dict[str, str] | None = None,
) -> CrewAIFork:
    """Write a fork of the CrewAI checkpoint ``ref`` (an id or prefix; None: the latest) in ``store``."""
    provider = CREWAI.provider_for(store)
    if provider is None:
        raise CheckpointError(f"{store}: not a CrewAI checkpoint store")
    path, ref_id = split_ref(store)
    metas = provider.list(path)
    wanted = ref or ref_id
    if wanted is None:
        if not metas:
            raise CheckpointError(f"no checkpoints in {path}")
        source = metas[0]
    else:
        full = match_prefix([m.id for m in metas], wanted, path)
        source = next(m for m in metas if m.id == full)
    if source.damaged:
        raise CheckpointError(f"{source.location}: damaged checkpoint ({source.damaged})")
    name = check_branch(branch) if branch else f"fork/{source.id}_{uuid.uuid4().hex[:6]}"
    if any(m.branch == name for m in metas):
        raise CheckpointError(f"branch {name!r} already exists in {path}: choose another name with --branch")
    sqlite = provider.kind == "crewai-sqlite"
    if sqlite:
        dump = read_row(os.path.abspath(path), source.id, masked=False)
    else:
        dump = read_file(source.location, masked=False)
        recorded = dump.get("branch")
        recorded = recorded if isinstance(recorded, str) and recorded else "main"
        root = _json_store_root(path, source.location, recorded)
    edits, reset, changed = plan_edits(dump, dict(inputs or {}), dict(outputs or {}))
    target = os.path.abspath(path if sqlite else root)
    dump, left_out = rebuilt_copy(dump, target, "sqlite" if sqlite else "json", trust=trusted())
    apply_edits(dump, edits, reset, changed)
    checkpoint_id = new_id()
    dump["parent_id"] = source.id
    dump["branch"] = name
    dump["trigger"] = FORK_TRIGGER
    text = json.dumps(dump, ensure_ascii=False)
    if sqlite:
        written = _insert_row(os.path.abspath(path), checkpoint_id, source.id, name, text)
        root = path
    else:
        written = _write_file(root, name, f"{checkpoint_id}_p-{source.id}.json", text)
    entity = main_entity(dump)
    tasks = [t for t in entity.get("tasks") or [] if isinstance(t, dict)]
    first = min(reset) if reset else None
    return CrewAIFork(
        source=source,
        checkpoint_id=checkpoint_id,
        ref=written,
        store=root,
        branch=name,
        kind=str(entity.get("entity_type") or ""),
        edited=sorted(edits),
        reset=sorted(reset),
        will_run=[] if first is None else list(range(first, len(tasks))),
        task_names=[str(t.get("name") or t.get("description") or "task") for t in tasks],
        changed_inputs=changed,
        left_out=left_out,
    )


def new_id(now: float | None = None) -> str:
    """A fresh checkpoint id in CrewAI's form."""
    import time

    stamp = datetime.fromtimestamp(time.time() if now is None else now, UTC).strftime(_TIME)
    return f"{stamp}_{uuid.uuid4().hex[:8]}"


def _json_store_root(named: str, source: str, branch: str) -> str:
    """The CrewAI JSON store a fork of the file ``source`` (whose recorded branch is ``branch``) is written
    under: the folder the user named, or the store holding the file the user named, found from the file's real
    folders (they must be its recorded branch, under a CrewAI store). Never a folder the branch points at."""
    if os.path.isdir(named):
        return named

    root = os.path.dirname(os.path.realpath(source))
    for part in reversed(branch.split("/")):
        if os.path.basename(root) != part or part in ("", ".", ".."):
            raise CheckpointError(
                f"{source}: its recorded branch {branch!r} is not the folder it lies in, so no CrewAI store is"
                " found from it: name the store folder instead"
            )
        root = os.path.dirname(root)
    if crewai_kind(root) != "crewai-json":
        raise CheckpointError(f"{source}: {root}, above its branch folder, is not a CrewAI JSON store")
    return root


def _write_file(root: str, branch: str, name: str, text: str) -> str:
    """Write ``text`` to ``<root>/<branch>/<name>`` atomically (temp file, fsync, rename), 0600."""
    folder = JsonProvider._branch_folder(root, branch, create=True)
    assert folder is not None
    target = os.path.join(folder, name)
    temp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
    data = text.encode("utf-8")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
        fsync_dir(folder)
    except OSError as exc:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise CheckpointError(f"cannot write the fork to {folder}: {exc.strerror or exc}") from exc
    return target


def _insert_row(path: str, checkpoint_id: str, parent_id: str, branch: str, text: str) -> str:

    created = checkpoint_id.split("_", 1)[0]
    try:
        with connect(path, write=True) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                con.execute(
                    "INSERT INTO checkpoints (id, created_at, parent_id, branch, data) VALUES (?, ?, ?, ?, jsonb(?))",
                    (checkpoint_id, created, parent_id, branch, text),
                )
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
    except _errors() as exc:
        raise CheckpointError(f"cannot write the fork to {path}: {exc}") from exc
    return f"{path}#{checkpoint_id}"


RUNNER = """
import sys
ref, kind = sys.argv[1], sys.argv[2]
import sqlite3
if sqlite3.sqlite_version_info < (3, 45, 0):
    try:
        import pysqlite3.dbapi2 as newer
    except ImportError:
        newer = None
        # a SQLite store is read from (db#id), or written to (a copy whose checkpoint setting names one)
        if "#" in ref or '"provider_type": "sqlite"' in open(ref, encoding="utf-8").read():
            sys.exit("crewpoint: CrewAI cannot use this SQLite store: its Python has SQLite "
                     + sqlite3.sqlite_version + " and JSONB needs 3.45 (pip install pysqlite3-binary there)")
    if newer is not None:
        sys.modules["sqlite3"] = newer
from crewai.state.checkpoint_config import CheckpointConfig
config = CheckpointConfig(restore_from=ref)
if kind == "flow":
    from crewai.flow.flow import Flow
    flow = Flow.from_checkpoint(config)
    result = flow.kickoff()
elif kind == "agent":
    from crewai import Agent
    result = Agent.from_checkpoint(config).kickoff(messages="Resume execution.")
else:
    from crewai import Crew
    crew = Crew.from_checkpoint(config)
    result = crew.kickoff(inputs=crew.checkpoint_inputs or None)
print(getattr(result, "raw", result))
"""
"""Resumes a CrewAI checkpoint in the user's CrewAI, as ``crewai checkpoint resume`` does, with two differences:
the entity is chosen by the checkpoint's main entity (CrewAI 1.15's command takes a crew whose agent executors
were saved as flows for a flow, and resumes nothing), and a SQLite store is read and written through ``pysqlite3``
when that Python's SQLite cannot read JSONB (the copy CrewAI is handed is a JSON file whose run writes into the
SQLite store)."""


def crewai_python() -> str | None:
    """The Python that has the user's CrewAI: ``$CREWPOINT_CREWAI_PYTHON``, else the interpreter of the
    ``crewai`` command on PATH; None when there is neither."""
    import shutil

    given = os.environ.get("CREWPOINT_CREWAI_PYTHON")
    if given is not None:
        return shutil.which(given)
    command = shutil.which("crewai")
    if command is None:
        return None
    try:
        with open(command, "rb") as handle:
            first = handle.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    interpreter = first[2:].decode("utf-8", "replace").strip().split(" ")[0]
    return interpreter if os.path.isfile(interpreter) else None


def resume_command(ref: str, kind: str) -> list[str] | None:
    """The command that has the user's CrewAI resume the checkpoint ``ref`` (a file or ``db#id``) of an entity
    of ``kind``; None without CrewAI."""
    python = crewai_python()
    if python is None:
        return None
    return [python, "-c", RUNNER, ref, kind]


def crewai_environment() -> dict[str, str]:
    """The environment for a CrewAI run: the caller's, with CrewAI's telemetry and tracing off unless set."""
    env = dict(os.environ)
    for name, value in (
        ("OTEL_SDK_DISABLED", "true"),
        ("CREWAI_DISABLE_TELEMETRY", "true"),
        ("CREWAI_TRACING_ENABLED", "false"),
    ):
        env.setdefault(name, value)
    return env
