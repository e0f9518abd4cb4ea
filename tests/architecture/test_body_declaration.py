"""The checkpoint body is declared once, in ``crewpoint.checkpoint.schema``: its fields, their defaults and the types
readers see, which ``python -m crewpoint.checkpoint.schema`` writes into ``schema_types.py``.

These tests hold the generated types to the declaration, show that a schema change is the declaration plus that
command, that every field a real run writes is declared (no body field lives outside the declaration), and that
a body holding only its required fields comes back with every default filled, so a rebuild reads no default of
its own.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.budget import Budget
from crewpoint.checkpoint import schema
from crewpoint.checkpoint.schema import BODY, SCHEMA_VERSION, load_body
from crewpoint.checkpoint.schema_spec import ByKind, Converted, ListOf, MapOf, Obj, OneOf, Spec, named
from crewpoint.feedback import FeedbackPending, human_feedback
from crewpoint.flow import Flow, listen, start
from crewpoint.knowledge import StringKnowledgeSource
from crewpoint.project import CrewBase, after_kickoff, agent, before_kickoff, crew, task
from crewpoint.providers import JsonProvider
from crewpoint.tools import tool

ROOT = Path(__file__).resolve().parents[2]
TYPES = ROOT / "core" / "checkpoint" / "schema_types.py"


# -- the generated types are the declaration's ---------------------------------------------------------------


def test_the_written_types_are_the_ones_the_declaration_gives() -> None:
    assert TYPES.read_text(encoding="utf-8") == schema.render_types(), "run: python -m crewpoint.checkpoint.schema"


def test_the_check_command_passes_on_this_tree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "crewpoint.checkpoint.schema", "--check"], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_each_type_has_exactly_the_declared_fields_all_required_as_load_body_fills_them() -> None:
    for spec in schema_objects():
        typed = getattr(schema, spec.name)
        assert list(typed.__annotations__) == list(spec.fields), spec.name
        assert typed.__required_keys__ == frozenset(spec.fields), spec.name  # load_body fills every one


def schema_objects() -> list[Obj]:
    return [spec for spec in named(BODY) if isinstance(spec, Obj)]


# -- a schema change: the declaration, then the command -------------------------------------------------------


def _copy_of_the_package(tmp_path: Path) -> Path:
    """A private copy of crewpoint's engine and providers, importable with PYTHONPATH, to change the body in."""
    package = tmp_path / "site" / "crewpoint"
    shutil.copytree(ROOT / "core", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "providers", package / "providers", ignore=shutil.ignore_patterns("__pycache__"))
    return package


def _python(package: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(package.parent)},
    )


def test_a_new_field_is_one_line_of_the_declaration_and_one_command(tmp_path: Path) -> None:
    package = _copy_of_the_package(tmp_path)
    declared = package / "checkpoint" / "schema.py"
    text = declared.read_text(encoding="utf-8")
    line = '        "process": (OneValue("sequential"), "sequential"),\n'
    assert text.count(line) == 1
    declared.write_text(text.replace(line, line + '        "priority": (Count(), 3),\n'), encoding="utf-8")

    stale = _python(package, "-m", "crewpoint.checkpoint.schema", "--check")
    assert stale.returncode == 1
    assert "out of date" in stale.stderr and "python -m crewpoint.checkpoint.schema" in stale.stderr
    wrote = _python(package, "-m", "crewpoint.checkpoint.schema")
    assert wrote.returncode == 0, wrote.stderr
    assert _python(package, "-m", "crewpoint.checkpoint.schema", "--check").returncode == 0

    code = textwrap.dedent(
        """
        import sys
        import crewpoint
        assert crewpoint.__file__.startswith(sys.argv[1]), crewpoint.__file__
        from crewpoint.checkpoint.schema import CrewState, load_body
        entity = {"kind": "crew", "id": "c", "agents": [{"id": "a", "role": "R"}], "tasks": [{"id": "t", "agent": "a"}]}
        body = load_body({"schema_version": 2, "entity": entity, "lineage": {}})
        from typing import get_type_hints
        print(get_type_hints(CrewState)["priority"].__name__, body["entity"]["priority"])
        try:
            load_body({"schema_version": 2, "entity": {**entity, "priority": -1}, "lineage": {}}, "x")
        except Exception as exc:
            print(exc)
        """
    )
    done = _python(package, "-c", code, str(package))
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "int 3",
        "checkpoint x is damaged: entity.priority: expected a whole number from 0, not -1",
    ]


def test_the_command_rewrites_a_types_file_that_cannot_even_be_imported(tmp_path: Path) -> None:
    package = _copy_of_the_package(tmp_path)
    written = package / "checkpoint" / "schema_types.py"
    written.write_text("raise SystemExit('a broken file')\n", encoding="utf-8")
    wrote = _python(package, "-m", "crewpoint.checkpoint.schema")
    assert wrote.returncode == 0, wrote.stderr
    assert written.read_text(encoding="utf-8") == TYPES.read_text(encoding="utf-8")


# -- every field a run writes is declared ----------------------------------------------------------------------


def undeclared(spec: Spec, value: Any, path: str = "") -> list[str]:
    """Where ``value`` holds a key that ``spec`` (as the declaration says it) does not name."""
    if isinstance(spec, Converted):
        return undeclared(spec.spec, value, path) if isinstance(value, dict) else []
    if isinstance(spec, ByKind):
        return undeclared(spec.kinds[value["kind"]], value, path)
    if isinstance(spec, OneOf):
        fits = [found for member in spec.specs if _takes(member, value) for found in [undeclared(member, value, path)]]
        return min(fits, key=len) if fits else []
    if isinstance(spec, ListOf) and isinstance(value, list):
        return [found for i, item in enumerate(value) for found in undeclared(spec.item, item, f"{path}.{i}")]
    if isinstance(spec, MapOf) and isinstance(value, dict):
        return [found for key, item in value.items() for found in undeclared(spec.item, item, f"{path}.{key}")]
    if isinstance(spec, Obj) and isinstance(value, dict):
        extra = [f"{path}.{key}".lstrip(".") for key in value if key not in spec.fields]
        return extra + [
            found for key, (inner, *_) in spec.fields.items() if key in value
            for found in undeclared(inner, value[key], f"{path}.{key}")
        ]  # fmt: skip
    return []


def _takes(spec: Spec, value: Any) -> bool:
    try:
        spec.check(value, ())
    except Exception:
        return False
    return True


@tool
def look_up(term: str) -> str:
    """Look a term up."""
    return f"{term}: found"


def check_tone(output: Any) -> tuple[bool, Any]:
    return True, output


@CrewBase
class Newsroom:
    @agent
    def writer(self) -> Agent:
        return Agent(
            role="Writer",
            goal="write about {topic}",
            tools=[look_up],
            knowledge_sources=[StringKnowledgeSource(content="Tides follow the moon.")],
            checkpoint=CheckpointConfig(max_checkpoints=50),
        )

    @task
    def outline(self) -> Task:
        return Task(description="Outline {topic}", expected_output="an outline", guardrail=check_tone)

    @task
    def post(self) -> Task:
        return Task(description="Write the post", expected_output="a post", guardrail="kind words", human_input=True)

    @before_kickoff
    def prepare(self, inputs: dict[str, Any]) -> dict[str, Any]:
        return inputs

    @after_kickoff
    def seal(self, result: Any) -> Any:
        return result

    @crew
    def crew(self) -> Crew:
        return Crew(
            agents=self.agents,  # type: ignore[attr-defined]
            tasks=self.tasks,  # type: ignore[attr-defined]
            memory=True,
            budget=Budget(usd=5, tokens=100_000),
            checkpoint=CheckpointConfig(location="crew-store"),
        )


class Review(Flow):
    @start()
    def ask_topic(self) -> str | None:
        return self.ask("Which topic?")

    @listen(ask_topic)
    @human_feedback(message="Publish it?", emit=["approved", "rejected"], default_outcome="approved")
    def draft(self, topic: str) -> str:
        return f"A draft on {topic}"


def _bodies(store: str) -> list[dict[str, Any]]:
    provider = JsonProvider(fsync=False)
    return [provider.read(meta.location).body for meta in provider.list(store)]


def test_every_field_a_run_writes_is_declared(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    waiting = Newsroom().crew().kickoff(inputs={"topic": "tides"})  # type: ignore[attr-defined]
    assert isinstance(waiting, FeedbackPending)
    asked = Review(checkpoint=CheckpointConfig(location="flow-store")).kickoff()
    assert isinstance(asked, FeedbackPending)
    reviewed = Review().kickoff(from_checkpoint=asked.ref, feedback="tides")
    assert isinstance(reviewed, FeedbackPending)  # the topic answered, the draft's review waits
    Agent(role="Analyst", goal="sum up", checkpoint=CheckpointConfig(location="agent-store")).kickoff("Sum up tides")

    bodies = _bodies("crew-store") + _bodies("flow-store") + _bodies("agent-store")
    kinds = {body["entity"]["kind"] for body in bodies}
    assert kinds == {"crew", "flow", "agent"}
    crew_state = next(b["entity"] for b in bodies if b["entity"]["kind"] == "crew" and b["entity"]["pending_feedback"])
    assert crew_state["kickoff_hooks"] == {
        "class": "Newsroom",
        "before_kickoff": ["prepare"],
        "after_kickoff": ["seal"],
    }
    assert crew_state["budget"] == {"usd": 5, "tokens": 100_000}
    assert crew_state["pending_feedback"]["task_index"] == 1
    requests = [b["entity"]["pending_feedback"] for b in bodies if b["entity"]["kind"] == "flow"]
    assert {r["kind"] for r in requests if r} == {"input", "method"}
    for body in bodies:
        assert undeclared(BODY, body) == [], body["entity"]["kind"]


# -- loading fills every default ----------------------------------------------------------------------------


def test_a_body_of_required_fields_alone_rebuilds_with_the_declared_defaults() -> None:
    entity = {
        "kind": "crew",
        "id": "crew-1",
        "agents": [{"id": "agent-1", "role": "Writer"}],
        "tasks": [
            {"id": "task-1", "agent": "agent-1", "description": "Outline tides", "output": {"raw": "an outline"}},
            {"id": "task-2", "agent": "agent-1", "context": ["task-1"], "guardrail": {"text": "kind words"}},
        ],
    }
    body = load_body({"schema_version": SCHEMA_VERSION, "entity": entity, "lineage": {"id": "c1"}}, "c1")
    state = body["entity"]
    assert state["kind"] == "crew"
    assert state["process"] == "sequential" and state["kickoff_hooks"] is None and state["budget"] is None
    assert state["tasks"][1]["guardrail"] == {"text": "kind words", "path": None, "unsaved": False}
    rebuilt = Crew.from_state(state)
    assert (rebuilt.name, rebuilt.process, rebuilt.memory, rebuilt.budget) == ("crew", "sequential", False, None)
    writer = rebuilt.agents[0]
    assert (writer.goal, writer.memory, writer.max_iter, writer.tools) == ("", True, 5, [])
    first, second = rebuilt.tasks
    assert first.output is not None and first.output.raw == "an outline" and second.output is None
    assert second.context == [first] and second.guardrail == "kind words" and second.guardrail_max_retries == 2
    assert second.agent is writer and not second.human_input
