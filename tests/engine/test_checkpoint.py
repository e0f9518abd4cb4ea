"""Checkpoint contents, lineage, restore, editing, callbacks, migration and bad input."""

from __future__ import annotations

import json
import logging
import os
import shutil
import stat
from pathlib import Path
from typing import Any

import pytest

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint.schema import SCHEMA_VERSION
from crewpoint.demo import DEMO_INPUTS, TriageFlow, demo_crew
from crewpoint.flow import Flow, listen, start
from crewpoint.llm import LLM, LLMError
from crewpoint.providers import JsonProvider, SqliteProvider
from crewpoint.providers.base import DamagedCheckpoint, UnsupportedSchema

FIXTURES = Path(__file__).parents[1] / "fixtures"


def run_demo_crew(location: str = "cp", **config: Any) -> Crew:
    crew = demo_crew(checkpoint=CheckpointConfig(location=location, **config))
    crew.kickoff(inputs=DEMO_INPUTS)
    return crew


def metas(location: str = "cp") -> list[Any]:
    return sorted(JsonProvider().list(location), key=lambda m: m.sequence)


def test_a_checkpoint_holds_the_state_at_its_event() -> None:
    run_demo_crew()
    ms = metas()
    assert [m.tasks_done for m in ms] == [1, 2, 3, 4]
    assert all(m.tasks_total == 4 and m.entity_kind == "crew" and m.entity_name == "research-crew" for m in ms)
    body = JsonProvider().read("cp", ms[1].id).body
    tasks = body["entity"]["tasks"]
    assert [t["output"] is not None for t in tasks] == [True, True, False, False]
    assert body["inputs"] == DEMO_INPUTS
    assert body["events"][-1]["type"] == "task_completed"
    assert body["lineage"]["parent_id"] == ms[0].id and body["lineage"]["sequence"] == 2
    assert body["schema_version"] == SCHEMA_VERSION == 2 and body["version"]
    agents = body["entity"]["agents"]
    assert {a["role"] for a in agents} == {"Researcher", "Writer", "Editor"}
    assert any(a["conversation"]["messages"] for a in agents)
    assert body["entity"]["crew_memory"]["items"]


def test_files_are_private_and_hold_no_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "-".join(["sk", "test", "never", "written", "0123456789abcdef"])  # key-shaped, assembled at run time
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    agent = Agent(role="R", llm=LLM(model="gpt-x", base_url="http://127.0.0.1:9"))
    crew = Crew(agents=[agent], tasks=[Task(description="t", agent=agent)], checkpoint=CheckpointConfig(location="k"))
    state = crew.to_state()
    assert secret not in json.dumps(state)
    with pytest.raises(LLMError, match=r"cannot be reached .*; is it running\?") as refused:  # nothing on port 9
        crew.kickoff()
    assert secret not in str(refused.value)
    run_demo_crew("k")
    for path in Path("k").rglob("*"):
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path
        if path.is_file():
            assert secret.encode() not in path.read_bytes()


def test_editing_an_output_reruns_exactly_its_dependents(llm_calls: list[str]) -> None:
    run_demo_crew()
    last = metas()[-1]
    crew = Crew.fork(CheckpointConfig(restore_from=last.location), branch="what-if")
    # research -> review (explicit context); outline -> draft (implicit) -> review
    assert crew.override_output("outline", "A NEW OUTLINE") == [2, 3]
    assert [t.output is not None for t in crew.tasks] == [True, True, False, False]
    llm_calls.clear()
    result = crew.kickoff()
    assert set(llm_calls) == {crew.tasks[2].id, crew.tasks[3].id}
    assert "A NEW OUTLINE" in crew.tasks[1].output.raw  # type: ignore[union-attr]
    assert result.raw
    fork_metas = [m for m in JsonProvider().list("cp") if m.branch == "what-if"]
    assert len(fork_metas) == 2 and {m.parent_id for m in fork_metas} & {last.id}


def test_editing_the_draft_keeps_research_and_outline() -> None:
    run_demo_crew()
    crew = Crew.from_checkpoint(CheckpointConfig(restore_from=metas()[-1].location))
    assert crew.override_output("draft", "new draft") == [3]
    assert crew.override_output(0, "new research") == [1, 2, 3]  # outline sees every earlier output


def test_changing_an_input_invalidates_the_tasks_that_use_it(llm_calls: list[str]) -> None:
    run_demo_crew()
    crew = Crew.fork(CheckpointConfig(restore_from=metas()[-1].location))
    reset = crew.set_inputs({"audience": "students"})
    assert reset == [1, 2, 3]  # outline names {audience}; draft and review depend on it
    llm_calls.clear()
    crew.kickoff()
    assert len(set(llm_calls)) == 3


def test_resume_from_the_middle_of_a_flow_passes_the_saved_outputs_on() -> None:
    ran: list[str] = []

    class Steps(Flow[dict]):  # type: ignore[type-arg]
        @start()
        def one(self) -> str:
            ran.append("one")
            return "from one"

        @listen(one)
        def two(self, value: str) -> str:
            ran.append("two")
            return value + " via two"

        @listen(two)
        def three(self, value: str) -> str:
            ran.append("three")
            return value + " via three"

    Steps(checkpoint=CheckpointConfig(location="flow", on_events=["method_execution_finished"])).kickoff()
    ms = metas("flow")
    assert [m.tasks_done for m in ms] == [1, 2, 3]
    ran.clear()
    resumed = Steps.from_checkpoint(CheckpointConfig(restore_from=ms[0].location))
    assert resumed.kickoff() == "from one via two via three"
    assert ran == ["two", "three"]


def test_flow_with_pydantic_state_and_router_resumes() -> None:
    flow = TriageFlow(checkpoint=CheckpointConfig(location="tri", on_events=["method_execution_finished"]))
    flow.kickoff()
    first = metas("tri")[0]
    again = TriageFlow.from_checkpoint(CheckpointConfig(restore_from=first.location))
    assert again.state.severity == "high"
    assert again.kickoff() == flow.state.reply


def test_callbacks_are_saved_as_paths_and_imported_only_when_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    import hooks_for_tests

    agent = Agent(role="R")
    task = Task(description="t", agent=agent, callback=hooks_for_tests.remember_output, guardrail="be short")
    Crew(agents=[agent], tasks=[task, Task(description="u", agent=agent)], checkpoint=True).kickoff()
    first = metas(".checkpoints")[0]
    saved = JsonProvider().read(first.location).body["entity"]["tasks"][0]
    assert saved["callback"] == "hooks_for_tests.remember_output"
    assert saved["guardrail"] == {"text": "be short"}
    with pytest.raises(ValueError, match="CREWPOINT_DESERIALIZE_CALLBACKS=1"):
        Crew.from_checkpoint(CheckpointConfig(restore_from=first.location))
    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")
    crew = Crew.from_checkpoint(CheckpointConfig(restore_from=first.location))
    assert crew.tasks[0].callback is hooks_for_tests.remember_output
    assert crew.tasks[0].guardrail == "be short"


def test_unsavable_callables_warn_and_are_not_saved() -> None:
    class Notifier:
        def done(self, output: Any) -> None: ...

    agent = Agent(role="R")
    with pytest.warns(UserWarning, match="callback cannot be saved in a checkpoint"):
        task = Task(description="t", agent=agent, callback=Notifier().done)
    crew = Crew(agents=[agent], tasks=[task], checkpoint=True)
    crew.kickoff()
    saved = JsonProvider().read(metas(".checkpoints")[0].location).body["entity"]["tasks"][0]
    assert saved["callback"] is None and saved["callback_unsaved"] is True
    with pytest.warns(UserWarning, match="callback was not saved in the checkpoint"):
        restored = Crew.from_checkpoint(CheckpointConfig(restore_from=metas(".checkpoints")[0].location))
    assert restored.tasks[0].callback is None


def test_migration_reads_an_older_schema_fixture() -> None:
    shutil.copytree(FIXTURES / "v0-store", "old")
    ms = JsonProvider().list("old")
    assert len(ms) == 1
    crew = Crew.from_checkpoint(CheckpointConfig(restore_from=ms[0].location))
    assert [t.done for t in crew.tasks] == [True, False]
    result = crew.kickoff()
    assert result.tasks_output[0].raw == "Saved research from an older crewpoint."


def test_newer_schema_torn_and_non_utf8_files_are_refused_clearly_and_others_still_work() -> None:
    run_demo_crew()
    ms = metas()
    good = ms[1]
    newer = Path(ms[2].location)
    data = json.loads(newer.read_text())
    data["body"]["schema_version"] = 99
    del data["meta"]["digest"]  # an edited body with its digest kept is altered; without one, it is read
    newer.write_text(json.dumps(data))
    torn = Path(ms[3].location)
    torn.write_bytes(torn.read_bytes()[: torn.stat().st_size // 2])
    bad_utf8 = Path(ms[0].location)
    bad_utf8.write_bytes(b"\xff\xfe\x00garbage" + bad_utf8.read_bytes()[10:])

    with pytest.raises(UnsupportedSchema, match="newer crewpoint"):
        Crew.from_checkpoint(CheckpointConfig(restore_from=str(newer)))
    with pytest.raises(DamagedCheckpoint) as torn_error:
        Crew.from_checkpoint(CheckpointConfig(restore_from=str(torn)))
    assert "\n" not in str(torn_error.value)
    with pytest.raises(DamagedCheckpoint):
        Crew.from_checkpoint(CheckpointConfig(restore_from=str(bad_utf8)))
    listed = {m.id: m for m in JsonProvider().list("cp")}
    assert listed[good.id].damaged is None
    assert Crew.from_checkpoint(CheckpointConfig(restore_from=good.location)).kickoff().raw


def test_a_failed_write_is_logged_counted_and_the_run_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    # The store's folder can be written (so the run starts) but its branch folder is a file.
    Path("blocked").mkdir()
    Path("blocked", "main").write_text("a file where the branch folder should be")
    crew = demo_crew(checkpoint=CheckpointConfig(location="blocked"))
    with caplog.at_level(logging.WARNING, logger="crewpoint.checkpoint"):
        result = crew.kickoff(inputs=DEMO_INPUTS)
    assert len(result.tasks_output) == 4
    assert crew._runtime is not None and crew._runtime.failed == 4
    messages = [r.getMessage() for r in caplog.records]
    assert sum(m.startswith("checkpoint ") and "was not written" in m for m in messages) == 4
    assert any(m.startswith("4 checkpoints were not written") for m in messages)  # the run's summary


def test_max_checkpoints_prunes_per_branch_but_keeps_fork_points_and_the_resume_source() -> None:
    run_demo_crew(max_checkpoints=2)
    assert [m.tasks_done for m in metas()] == [3, 4]
    source = metas()[0]
    Crew.fork(CheckpointConfig(restore_from=source.location), branch="b").override_output(0, "x")
    crew = Crew.fork(CheckpointConfig(restore_from=source.location), branch="b")
    crew.override_output(0, "changed")
    crew.kickoff()
    ids = {m.id for m in JsonProvider().list("cp")}
    assert source.id in ids  # a fork point and the checkpoint the run resumed from
    on_b = [m for m in JsonProvider().list("cp") if m.branch == "b"]
    assert any(m.parent_id == source.id for m in on_b)  # the fork's first checkpoint keeps its link
    assert len(on_b) <= 3  # that first one, and the newest two


def test_sqlite_store_round_trip_and_db_hash_id_refs() -> None:
    crew = demo_crew(checkpoint=CheckpointConfig(location="s.db", provider=SqliteProvider()))
    full = crew.kickoff(inputs=DEMO_INPUTS)
    ms = SqliteProvider().list("s.db")
    ref = f"s.db#{ms[-1].id[:10]}"
    resumed = Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    assert [t.done for t in resumed.tasks] == [True, False, False, False]
    assert resumed.kickoff().raw == full.raw
    assert len(SqliteProvider().list("s.db")) == 7


def test_agent_fork_writes_a_new_branch() -> None:
    agent = Agent(role="R", checkpoint=CheckpointConfig(location="ag", on_events=["lite_agent_execution_completed"]))
    agent.kickoff("hello")
    first = metas("ag")[0]
    forked = Agent.fork(CheckpointConfig(restore_from=first.location), branch="alt")
    forked.kickoff("a different question")
    branches = {m.branch: m for m in metas("ag")}
    assert branches["alt"].parent_id == first.id


def test_wildcard_and_signal_names_are_accepted_and_unknown_names_refused() -> None:
    CheckpointConfig(on_events=["*"])
    CheckpointConfig(on_events=["SIGTERM", "SIGINT", "SIGHUP", "SIGTSTP", "SIGCONT"])
    with pytest.raises(ValueError, match="unknown checkpoint event"):
        CheckpointConfig(on_events=["task_done"])
    assert os.environ.get("CREWPOINT_DESERIALIZE_CALLBACKS") is None
