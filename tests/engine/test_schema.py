"""The checkpoint body has one typed schema, and every reader goes through its one door.

A body is validated in full before anything acts on it: a wrong field is a damaged checkpoint, named by its path in
one line, and nothing runs or is written. Old bodies migrate, CrewAI's translated bodies validate, keys the schema
does not know are kept, and a newer schema is refused.
"""

from __future__ import annotations

import copy
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from crewai_fixtures import json_store, sqlite_store
from pydantic import BaseModel
from support.cli import cli

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.checkpoint.schema import SCHEMA_VERSION, DamagedBody, load_body
from crewpoint.checkpoint.schema_spec import REQUIRED, STR, Bad, Count, Nullable, Obj
from crewpoint.flow import Flow, listen, start
from crewpoint.providers import JsonProvider, provider_for
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord, UnsupportedSchema

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _crew() -> Crew:
    writer = Agent(role="Writer", goal="write about {topic}")
    one = Task(name="research", description="research {topic}", expected_output="facts", agent=writer)
    two = Task(name="draft", description="draft it", expected_output="text", agent=writer, context=[one])
    return Crew(agents=[writer], tasks=[one, two], checkpoint=CheckpointConfig(location="cp"))


def _first_checkpoint() -> CheckpointRecord:
    _crew().kickoff(inputs={"topic": "tides"})
    first = next(m for m in ops.list_checkpoints("cp") if m.tasks_done == 1)
    return ops.load(first.id, "cp")


def _crafted(record: CheckpointRecord, change: Any) -> tuple[str, CheckpointMeta]:
    """A copy of ``record`` on a branch of its own with ``change`` applied to its body; its file and metadata."""
    body = copy.deepcopy(record.body)
    change(body)
    meta = record.meta.with_(id="c0ffee" + record.meta.id[6:], branch="crafted", parent_id=None, location="")
    return JsonProvider(fsync=False).write("cp", CheckpointRecord(meta=meta, body=body)), meta


def _files() -> list[str]:
    return sorted(str(p) for p in Path("cp").rglob("*.json"))


def test_a_wrong_field_is_a_damaged_checkpoint_named_by_its_path_for_every_reader(llm_calls: list[str]) -> None:
    record = _first_checkpoint()
    path, meta = _crafted(record, lambda b: b["entity"]["tasks"][0].update(output="just text"))
    line = f"checkpoint {meta.id} is damaged: entity.tasks.0.output: expected an object or null, not a string"
    before, calls = _files(), len(llm_calls)

    with pytest.raises(DamagedBody) as refused:
        ops.load(meta.id, "cp")
    assert str(refused.value) == line and refused.value.field == "entity.tasks.0.output"
    for rebuild in (Crew.from_checkpoint, Crew.fork):
        with pytest.raises(DamagedBody, match=r"entity\.tasks\.0\.output"):
            rebuild(CheckpointConfig(restore_from=path))
    with pytest.raises(DamagedBody, match=r"entity\.tasks\.0\.output"):
        _crew().kickoff(from_checkpoint=path)
    for argv in (("info", meta.id), ("fork", meta.id), ("resume", meta.id), ("diff", meta.id, record.meta.id)):
        result = cli("checkpoint", *argv, "--location", "cp")
        assert result.exit_code == 2, (argv, result.output)
        assert result.stderr == f"crewpoint: {line}\n", argv

    assert _files() == before and len(llm_calls) == calls  # nothing ran, nothing was written


def test_a_crew_whose_name_is_null_is_refused_before_any_task_runs(llm_calls: list[str]) -> None:
    record = _first_checkpoint()
    path, meta = _crafted(record, lambda b: b["entity"].update(name=None))
    before, calls = _files(), len(llm_calls)

    with pytest.raises(DamagedBody, match=r"is damaged: entity\.name: expected a string, not null$"):
        Crew.from_checkpoint(CheckpointConfig(restore_from=path))
    result = cli("checkpoint", "fork", meta.id, "--location", "cp")
    assert result.exit_code == 2 and "entity.name: expected a string, not null" in result.stderr
    assert _files() == before and len(llm_calls) == calls


@pytest.mark.parametrize(
    ("budget", "said"),
    [
        ({"usd": -1}, "entity.budget.usd: expected a number of dollars above 0, up to 1,000,000,000, not -1"),
        ({"usd": 1e30}, "entity.budget.usd: expected a number of dollars above 0, up to 1,000,000,000, not 1e+30"),
        (
            {"usd": True},
            "entity.budget.usd: expected a number of dollars above 0, up to 1,000,000,000 or null, not true/false",
        ),
        ({"tokens": 0}, "entity.budget.tokens: expected a whole number from 1, not 0"),
        ({"tokens": 10**16}, f"entity.budget.tokens: expected a whole number of tokens up to {10**15:,}, not {10**16}"),
        ("lots", "entity.budget: expected an object or null, not a string"),
    ],
)
def test_a_crafted_budget_is_a_damaged_checkpoint(llm_calls: list[str], budget: object, said: str) -> None:
    record = _first_checkpoint()
    path, meta = _crafted(record, lambda b: b["entity"].update(budget=budget))
    before, calls = _files(), len(llm_calls)
    with pytest.raises(DamagedBody) as refused:
        Crew.from_checkpoint(CheckpointConfig(restore_from=path))
    assert str(refused.value) == f"checkpoint {meta.id} is damaged: {said}"
    assert _files() == before and len(llm_calls) == calls


def test_the_typed_body_is_what_the_views_read() -> None:
    record = _first_checkpoint()
    body = load_body(record.body, record.meta.id)
    entity = body["entity"]
    assert entity["kind"] == "crew" and body["schema_version"] == SCHEMA_VERSION
    assert [t["name"] for t in entity["tasks"]] == ["research", "draft"]
    output = entity["tasks"][0]["output"]
    assert output is not None and entity["tasks"][1]["output"] is None
    assert entity["tasks"][1]["context"] == [entity["tasks"][0]["id"]]
    assert body["lineage"]["id"] == record.meta.id and body["inputs"] == {"topic": "tides"}
    raw = copy.deepcopy(record.body)
    del raw["entity"]["tasks"][1]["guardrail_max_retries"]
    filled = load_body(raw)["entity"]
    assert filled["kind"] == "crew" and filled["tasks"][1]["guardrail_max_retries"] == 2  # the default, filled in
    assert "guardrail_max_retries" not in raw["entity"]["tasks"][1]  # what was read is left as it was
    info = ops.describe(record)
    assert info.tasks[0].output == output["raw"] and info.tasks[1].context == [0]


def test_a_task_naming_an_agent_or_task_the_crew_lacks_is_damaged() -> None:
    record = _first_checkpoint()
    _, meta = _crafted(record, lambda b: b["entity"]["tasks"][1].update(context=["nope"]))
    with pytest.raises(DamagedBody, match=r"entity\.tasks\.1\.context\.0: names task 'nope'"):
        ops.load(meta.id, "cp")
    _, meta = _crafted(record, lambda b: b["entity"]["tasks"][0].update(agent="ghost"))
    with pytest.raises(DamagedBody, match=r"entity\.tasks\.0\.agent: names agent 'ghost'"):
        ops.load(meta.id, "cp")


def test_keys_the_schema_does_not_know_are_kept_and_a_newer_schema_is_refused() -> None:
    record = _first_checkpoint()
    body = copy.deepcopy(record.body)
    body["annotations"] = {"by": "a later tool"}
    body["entity"]["tasks"][0]["review"] = "ok"
    typed = load_body(body, "x")
    assert typed["annotations"] == {"by": "a later tool"}  # type: ignore[typeddict-item]
    assert typed["entity"]["kind"] == "crew" and typed["entity"]["tasks"][0]["review"] == "ok"  # type: ignore[typeddict-item]
    with pytest.raises(UnsupportedSchema, match="newer crewpoint"):
        load_body({**body, "schema_version": SCHEMA_VERSION + 1}, "x")
    with pytest.raises(DamagedBody, match=r"schema_version: expected a version number, not '1'"):
        load_body({**body, "schema_version": "1"}, "x")
    with pytest.raises(DamagedBody, match=r"is damaged: schema_version: missing$"):
        load_body({k: v for k, v in body.items() if k != "schema_version"}, "x")
    with pytest.raises(DamagedBody, match=r"is damaged: entity\.tasks: missing$"):
        load_body({**body, "entity": {k: v for k, v in body["entity"].items() if k != "tasks"}}, "x")
    with pytest.raises(DamagedBody, match=r"entity\.kind: expected crew, flow or agent, not 'robot'"):
        load_body({**body, "entity": {**body["entity"], "kind": "robot"}}, "x")


def test_an_old_body_migrates_then_validates(tmp_path: Path) -> None:
    store = tmp_path / "v0-store"
    shutil.copytree(FIXTURES / "v0-store", store)  # a listing writes the store's index: never into the fixture
    for meta in JsonProvider().list(str(store)):
        raw = JsonProvider().read(meta.location).body  # as stored: the provider does not migrate
        assert raw.get("schema_version", 0) == 0 and "state" in raw
        body = load_body(raw, meta.id)
        assert body["schema_version"] == SCHEMA_VERSION and body["entity"]["kind"] == "crew"
        assert body["lineage"]["branch"] == "main"


@pytest.mark.parametrize("make", [json_store, sqlite_store], ids=["json", "sqlite"])
def test_crewais_checkpoints_translate_into_bodies_that_validate(tmp_path: Path, make: Any) -> None:
    store = str(make(tmp_path / "crewai-store"))
    provider = provider_for(store)
    kinds = set()
    for meta in provider.list(store):
        body = load_body(provider.read(meta.location or store, meta.id).body, meta.id)
        assert body["format"] == "crewai" and body["entity"]["kind"] == meta.entity_kind
        kinds.add(body["entity"]["kind"])
        translated = provider.read(meta.location or store, meta.id).body
        translated.pop("schema_version", None)  # a translation is made as it is read: it needs no version of its own
        assert load_body(translated, meta.id)["schema_version"] == SCHEMA_VERSION
    assert kinds == {"crew", "flow", "agent"}


class Tally(BaseModel):
    count: int = 0


class Counter(Flow[Tally]):
    @start()
    def first(self) -> str:
        self.state.count += 1
        return "one"

    @listen(first)
    def second(self, value: str) -> str:
        return value + " two"


def test_a_flow_state_its_class_refuses_is_damaged_naming_the_state_field(llm_calls: list[str]) -> None:
    Counter(checkpoint=CheckpointConfig(location="cp", on_events=["method_execution_finished"])).kickoff()
    first = next(m for m in ops.list_checkpoints("cp") if m.tasks_done == 1)
    record = ops.load(first.id, "cp")
    assert load_body(record.body)["entity"]["kind"] == "flow"
    path, _ = _crafted(record, lambda b: b["entity"]["state"].update(count="many"))
    before = _files()
    with pytest.raises(DamagedBody, match=r"is damaged: entity\.state\.count: expected a whole number"):
        Counter.from_checkpoint(CheckpointConfig(restore_from=path))
    with pytest.raises(DamagedBody, match=r"entity\.state\.count"):
        Counter().kickoff(from_checkpoint=path)
    assert _files() == before


def test_the_schema_version_has_one_owner() -> None:
    """The body's version is set in crewpoint.checkpoint.schema alone; what the runtime writes is that one."""
    record = _first_checkpoint()
    assert record.body["schema_version"] == SCHEMA_VERSION == record.meta.schema_version
    runtime = sys.modules["crewpoint.runtime"]
    assert runtime.SCHEMA_VERSION is SCHEMA_VERSION  # type: ignore[attr-defined]


def test_a_body_claiming_another_format_is_never_run_by_crewpoint(llm_calls: list[str]) -> None:
    """A translated body skips the checks only crewpoint's runtime needs; crewpoint never runs one, so a crafted
    crewpoint record that claims CrewAI's format gains nothing."""
    record = _first_checkpoint()
    path, meta = _crafted(record, lambda b: (b.update(format="crewai"), b["entity"]["tasks"][1].update(agent=None)))
    before, calls = _files(), len(llm_calls)
    assert ops.describe(ops.load(meta.id, "cp")).tasks[1].agent == ""  # still readable
    with pytest.raises(CheckpointError, match="in crewai's format"):
        Crew.from_checkpoint(CheckpointConfig(restore_from=path))
    result = cli("checkpoint", "fork", meta.id, "--location", "cp")
    assert result.exit_code == 2 and "in crewai's format" in result.stderr
    assert _files() == before and len(llm_calls) == calls


def test_fields_an_llm_class_refuses_are_named_by_their_path(llm_calls: list[str]) -> None:
    """An LLM's fields are checked by its own class when the program rebuilds it; what it refuses is named as a
    field of the body like any other."""
    record = _first_checkpoint()
    path, meta = _crafted(record, lambda b: b["entity"]["agents"][0]["llm"]["fields"].update(model=5))
    before, calls = _files(), len(llm_calls)
    with pytest.raises(DamagedBody, match=r"is damaged: entity\.agents\.0\.llm\.fields\.model: expected a string"):
        Crew.from_checkpoint(CheckpointConfig(restore_from=path))
    result = cli("checkpoint", "fork", meta.id, "--location", "cp")
    assert result.exit_code == 2 and "entity.agents.0.llm.fields.model" in result.stderr
    assert _files() == before and len(llm_calls) == calls


def test_a_resumed_run_continues_the_branch_its_record_is_in_whatever_the_body_says() -> None:
    """A body's lineage block is data: the run goes on from the store's record of the checkpoint (its branch, run
    and sequence), and what it writes next says so in its body and its metadata alike."""
    record = _first_checkpoint()
    crafted = {"branch": "elsewhere", "lineage": "someone-else", "sequence": 10**6, "parent_id": "f" * 32}
    _, meta = _crafted(record, lambda b: b["lineage"].update(crafted))
    result = cli("checkpoint", "resume", meta.id, "--location", "cp")
    assert result.exit_code == 0, result.stderr
    written = [m for m in ops.list_checkpoints("cp") if m.parent_id == meta.id]
    assert [(m.branch, m.lineage, m.sequence) for m in written] == [("crafted", meta.lineage, meta.sequence + 1)]
    lineage = ops.load(written[0].id, "cp").body["lineage"]
    assert lineage == {**lineage, "parent_id": meta.id, "branch": "crafted", "lineage": meta.lineage}
    assert lineage["sequence"] == meta.sequence + 1 and lineage["resumed_from"] == meta.id
    assert not Path("cp", "elsewhere").exists()


def test_a_body_in_a_format_nobody_registered_is_damaged_naming_the_field() -> None:
    """The formats a body may claim are the registry's (crewpoint's and each registered adapter's), nothing else."""
    record = _first_checkpoint()
    _path, meta = _crafted(record, lambda b: b.update(format="langgraph"))
    result = cli("checkpoint", "info", meta.id, "--location", "cp")
    assert result.exit_code == 2
    assert "format: expected 'crewpoint' or 'crewai', not " in result.stderr


def test_a_nullable_field_checks_every_value_the_same_after_it_took_a_null() -> None:
    """Once a null was taken (most fields are null) the next nulls are taken at once: a value of another kind, or
    an object with a wrong field inside, is still refused and named as before, a good one still filled in."""
    output = Nullable(Obj({"raw": (STR, REQUIRED), "count": (Count(), 0)}))
    for _ in range(2):
        assert output.check(None, ("output",)) is None
        assert output.check({"raw": "facts"}, ("output",)) == {"raw": "facts", "count": 0}
        with pytest.raises(Bad) as wrong:
            output.check("just text", ("output",))
        assert (wrong.value.path, wrong.value.problem) == (("output",), "expected an object or null, not a string")
        with pytest.raises(Bad) as inside:
            output.check({"raw": 3}, ("output",))
        assert (inside.value.path, inside.value.problem) == (("output", "raw"), "expected a string, not a number")
