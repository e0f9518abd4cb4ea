"""Every field of a real checkpoint body, given a value of another type, is either taken or refused in one line
that names it: ``info``, ``fork`` and ``resume`` exit 0 or 2, never 1, never with a traceback.

The checkpoints come from a real crew run, flow run and agent run (a script run in its own process, on the offline
model; an agent whose model a crafted body names talks to a model server on 127.0.0.1). Each example copies one
of them, replaces one field anywhere in the body (entity, tasks, agents, flow state, events, lineage, origin, …)
with a value of another JSON type (or leaves it out), writes it into a store of its own, and runs the command line
on it in this process; a few fixed cases run as real ``crewpoint`` processes too.
"""

from __future__ import annotations

import copy
import os
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from llm_server import LLMServer
from support.cli import CREWPOINT

from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.tui.cli import load_commands, main

PROGRAM = """
from pydantic import BaseModel

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.flow import Flow, listen, start
from crewpoint.knowledge import StringKnowledgeSource


class Counts(BaseModel):
    count: int = 0
    note: str = ""
    tags: list[str] = []


class Pipeline(Flow[Counts]):
    @start()
    def load(self):
        self.state.count += 1
        self.state.tags.append("loaded")
        return "data"

    @listen(load)
    def clean(self, data):
        self.state.note = f"clean {data}"  # a method output is the program's data: this one takes any
        return str(data).upper()


def crew():
    writer = Agent(role="Writer", goal="write about {topic}", backstory="plain")
    editor = Agent(role="Editor", goal="edit", backstory="careful")
    one = Task(name="research", description="research {topic}", expected_output="facts", agent=writer)
    two = Task(name="draft", description="draft it", expected_output="text", agent=editor, context=[one])
    notes = StringKnowledgeSource(content="Tides follow the moon.")
    return Crew(agents=[writer, editor], tasks=[one, two], memory=True, knowledge_sources=[notes])


if __name__ == "__main__":
    import sys

    store, what = sys.argv[1:]
    if what == "crew":
        made = crew()
        made.checkpoint = CheckpointConfig(location=store)
        made.kickoff(inputs={"topic": "tides"})
    elif what == "flow":
        Pipeline(checkpoint=CheckpointConfig(location=store, on_events=["method_execution_finished"])).kickoff()
    else:
        solo = Agent(role="Solo", goal="answer", backstory="brief", checkpoint=CheckpointConfig(location=store))
        solo.kickoff(messages=[{"role": "user", "content": "what is a tide?"}])
"""


@dataclass
class Base:
    """A real checkpoint to craft copies of, and how to run the program it came from."""

    kind: str
    meta: CheckpointMeta
    body: dict[str, Any]
    app: str | None
    """The program a fork must name (a flow's class lives in the user's script)."""
    bind: str | None = None
    """A program a fork may also name, to bind the checkpoint to its live entity instead of rebuilding it."""


@dataclass
class World:
    root: Path
    crew: Base
    flow: Base
    agent: Base
    server: LLMServer


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("schema-fuzz")
    script = root / "program.py"
    script.write_text(PROGRAM, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_DESERIALIZE_CALLBACKS"}
    for what in ("crew", "flow", "agent"):  # a run each, as a user's program would make them
        subprocess.run([sys.executable, str(script), "origin", what], cwd=root, env=env, check=True, timeout=120)
    provider = JsonProvider()
    metas = provider.list(str(root / "origin"))
    crew_meta = next(m for m in metas if m.entity_kind == "crew" and m.tasks_done == 1)
    flow_meta = next(m for m in metas if m.entity_kind == "flow" and m.tasks_done == 1)
    agent_meta = next(m for m in metas if m.entity_kind == "agent")
    crew_body = provider.read(crew_meta.location).body
    flow_body = provider.read(flow_meta.location).body
    agent_body = provider.read(agent_meta.location).body
    assert crew_body["entity"]["agents"] and crew_body["events"] and flow_body["entity"]["state"]["count"] == 1
    assert agent_body["entity"]["conversation"]["messages"]
    with LLMServer() as server:
        yield World(
            root=root,
            crew=Base("crew", crew_meta, crew_body, None, bind=f"{script}:crew"),
            flow=Base("flow", flow_meta, flow_body, f"{script}:Pipeline"),
            agent=Base("agent", agent_meta, agent_body, None),
            server=server,
        )


# -- crafting ------------------------------------------------------------------------------------------------

Path_ = tuple[str | int, ...]


def paths(value: Any, here: Path_ = ()) -> list[Path_]:
    """Every field of ``value`` (keys of objects, items of lists), nested, as paths from the top."""
    out: list[Path_] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, inner in items:
        out.append((*here, key))
        out += paths(inner, (*here, key))
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return {str: "string", list: "list", dict: "object"}[type(value)]


OTHER_VALUES = {
    "null": st.none(),
    "bool": st.booleans(),
    "number": st.one_of(st.integers(-3, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=32)),
    "string": st.text(max_size=12),
    "list": st.lists(st.one_of(st.none(), st.integers(0, 9), st.text(max_size=4)), max_size=3),
    "object": st.dictionaries(st.text(max_size=6), st.one_of(st.none(), st.integers(0, 9)), max_size=2),
}


ABSENT = object()
"""The field left out altogether (a key removed from its object)."""


def other_value(original: Any) -> st.SearchStrategy[Any]:
    """A value of another JSON type than ``original``, or no value at all."""
    mine = _kind(original)
    kinds = sorted(k for k in OTHER_VALUES if k != mine)
    return st.one_of(st.sampled_from(kinds).flatmap(lambda kind: OTHER_VALUES[kind]), st.just(ABSENT))


def replaced(body: dict[str, Any], path: Path_, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(body)
    here: Any = out
    for part in path[:-1]:
        here = here[part]
    if value is ABSENT and isinstance(here, dict):
        del here[path[-1]]
    else:
        here[path[-1]] = None if value is ABSENT else value
    return out


def write(world: World, base: Base, body: dict[str, Any]) -> tuple[str, str]:
    """Write ``body`` as a new checkpoint into a store of its own; its store and id."""
    store = str(world.root / "stores" / uuid.uuid4().hex[:12])
    meta = base.meta.with_(id=uuid.uuid4().hex, parent_id=None, location="")
    JsonProvider(fsync=False).write(store, CheckpointRecord(meta=meta, body=body))
    return store, meta.id


def dotted(path: Path_) -> str:
    return ".".join(str(p) for p in path)


def names_the_field(message: str, path: Path_) -> bool:
    """The one-line error names the field replaced: its dotted path, or (for a field the program's own class
    refuses, such as an LLM's or a flow state's) its name."""
    if dotted(path) in message:
        return True
    words = [p for p in path if isinstance(p, str)]
    return bool(words) and re.search(rf"\b{re.escape(words[-1])}\b", message) is not None


# -- running -------------------------------------------------------------------------------------------------


def commands(base: Base, store: str, checkpoint_id: str) -> dict[str, list[str]]:
    app = ["--app", base.app] if base.app else []
    out = {
        "info": ["checkpoint", "info", checkpoint_id, "--location", store],
        "fork": ["checkpoint", "fork", checkpoint_id, "--location", store, *app],
    }
    if base.bind:
        out["fork --app"] = ["checkpoint", "fork", checkpoint_id, "--location", store, "--app", base.bind]
    if _resume_has_dry_run():
        out["resume --dry-run"] = ["checkpoint", "resume", checkpoint_id, "--location", store, "--dry-run", *app]
    return out


def _resume_has_dry_run() -> bool:
    load_commands()  # the commands are registered when first looked for
    resume = main.commands["checkpoint"].commands["resume"]  # type: ignore[attr-defined]
    return any("--dry-run" in p.opts for p in resume.params)


def check(code: int, stderr: str, path: Path_, what: str) -> None:
    assert "Traceback" not in stderr, (what, stderr)
    assert code in (0, 2), (what, code, stderr)
    if code == 2:
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert len(lines) == 1, (what, stderr)
        assert names_the_field(lines[0], path), (what, dotted(path), lines[0])


def run_in_process(world: World, base: Base, path: Path_, value: Any) -> None:
    store, checkpoint_id = write(world, base, replaced(base.body, path, value))
    env = {"CREWPOINT_BASE_URL": world.server.base_url, "NO_COLOR": "1"}
    for what, argv in commands(base, store, checkpoint_id).items():
        result = CliRunner().invoke(main, argv, env=env)
        code = result.exit_code
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            code = 1  # an exception click did not turn into an exit: an internal error
            raise AssertionError((what, dotted(path), value, repr(result.exception))) from result.exception
        check(code, result.stderr, path, f"{what} with {dotted(path)} = {value!r}")


def fields_of(base: Base) -> st.SearchStrategy[Path_]:
    """A field of the body, the top sections weighed alike so the long event list does not crowd the rest out."""
    groups: dict[str, list[Path_]] = {}
    for path in paths(base.body):
        section = str(path[0]) if path[0] != "entity" or len(path) < 2 else f"entity.{path[1]}"
        groups.setdefault(section, []).append(path)
    return st.sampled_from(sorted(groups)).flatmap(lambda section: st.sampled_from(groups[section]))


FUZZ = settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("kind", ["crew", "flow", "agent"])
@FUZZ
@given(data=st.data())
def test_a_checkpoint_of_each_kind_with_any_field_of_another_type_is_taken_or_refused_naming_it(
    world: World, kind: str, data: st.DataObject
) -> None:
    base: Base = getattr(world, kind)
    path = data.draw(fields_of(base), label="field")
    original: Any = base.body
    for part in path:
        original = original[part]
    value = data.draw(other_value(original), label="value")
    run_in_process(world, base, path, value)


SUBPROCESS_CASES = [
    ("crew", ("entity", "name"), None),
    ("crew", ("entity", "tasks", 0, "output", "raw"), 7),
    ("crew", ("entity", "agents", 1, "llm"), ["offline"]),
    ("crew", ("events", 3, "timestamp"), "late"),
    ("flow", ("entity", "state", "count"), "many"),
    ("flow", ("lineage", "sequence"), "2"),
    ("agent", ("entity", "pending"), "what is a tide?"),
]


@pytest.mark.parametrize(("kind", "path", "value"), SUBPROCESS_CASES, ids=[dotted(c[1]) for c in SUBPROCESS_CASES])
def test_a_crafted_field_stops_a_real_process_with_one_line_naming_it(
    world: World, kind: str, path: Path_, value: Any
) -> None:
    base = {"crew": world.crew, "flow": world.flow, "agent": world.agent}[kind]
    store, checkpoint_id = write(world, base, replaced(base.body, path, value))
    before = sorted(p.name for p in Path(store).rglob("*.json"))
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_DESERIALIZE_CALLBACKS"}
    env.update(NO_COLOR="1", CREWPOINT_BASE_URL=world.server.base_url)
    requests = len(world.server.requests)
    for what, argv in commands(base, store, checkpoint_id).items():
        proc = subprocess.run([CREWPOINT, *argv], capture_output=True, text=True, env=env, timeout=120)
        check(proc.returncode, proc.stderr, path, what)
        if what == "info" and path[:2] == ("entity", "state"):  # the flow's own state class judges its state
            assert proc.returncode == 0, proc.stderr
            continue
        assert proc.returncode == 2, (what, proc.stdout, proc.stderr)
        assert f"checkpoint {checkpoint_id} is damaged: {dotted(path)}: " in proc.stderr, proc.stderr
    assert sorted(p.name for p in Path(store).rglob("*.json")) == before  # nothing ran, nothing was written
    assert len(world.server.requests) == requests


def test_the_checkpoints_the_fuzz_starts_from_fork_untouched(world: World) -> None:
    """A fuzz that only ever saw refusals would prove nothing: the untouched checkpoints fork and exit 0."""
    for base in (world.crew, world.flow, world.agent):
        for program in {base.app, base.bind}:
            store, checkpoint_id = write(world, base, copy.deepcopy(base.body))
            app = ["--app", program] if program else []
            result = CliRunner().invoke(
                main,
                ["checkpoint", "fork", checkpoint_id, "--location", store, *app],
                env={"CREWPOINT_BASE_URL": world.server.base_url},
            )
            assert result.exit_code == 0, (base.kind, program, result.stderr)
            assert f"forking {base.kind}" in result.stderr
            if base.kind != "agent":  # a finished agent's fork answers from its saved result: nothing to run
                assert len(JsonProvider().list(store)) > 1
