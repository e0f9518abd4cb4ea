"""What a CrewAI user expects: a second kickoff runs again, a standalone agent checkpoints, a location names its
kind of store, a flow that would trigger itself is refused, and the checkpoint lifecycle events are emitted."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Literal

import pytest
from click.testing import Result
from support.cli import cli as run_cli

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.flow import Flow, listen, or_, router, start
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointError


def cli(*args: str) -> Result:
    return run_cli(*args, catch_exceptions=False)


def two_task_crew(location: str | None = None, **config: Any) -> Crew:
    writer = Agent(role="Writer", goal="Write about {topic}")
    tasks = [
        Task(description="Outline {topic}", expected_output="an outline", agent=writer, name="outline"),
        Task(description="Write about {topic}", expected_output="a paragraph", agent=writer, name="draft"),
    ]
    checkpoint = CheckpointConfig(location=location, **config) if location is not None else None
    return Crew(agents=[writer], tasks=tasks, checkpoint=checkpoint)


# -- 1. a second kickoff is a new run ---------------------------------------------------------------------------


def test_a_second_kickoff_with_the_same_inputs_runs_the_crew_again(llm_calls: list[str]) -> None:
    crew = two_task_crew()
    first = crew.kickoff(inputs={"topic": "tides"})
    assert len(llm_calls) == 2
    second = crew.kickoff(inputs={"topic": "tides"})
    assert len(llm_calls) == 4  # both tasks asked the LLM again
    assert second.raw == first.raw  # the offline model answers the same prompt the same way


def test_a_second_kickoff_is_a_new_run_with_its_own_checkpoints(llm_calls: list[str]) -> None:
    crew = two_task_crew("store")
    crew.kickoff(inputs={"topic": "tides"})
    crew.kickoff()  # no inputs: the last run's inputs again
    assert len(llm_calls) == 4
    metas = ops.list_checkpoints("store")
    assert len(metas) == 4
    lineages = {m.lineage for m in metas}
    assert len(lineages) == 2  # two runs, neither continuing the other's chain
    assert all(m.parent_id is None for m in metas if m.tasks_done == 1)


def test_new_inputs_on_a_finished_crew_replace_the_last_ones(llm_calls: list[str]) -> None:
    crew = two_task_crew()
    crew.kickoff(inputs={"topic": "tides"})
    result = crew.kickoff(inputs={"topic": "winds"})
    assert len(llm_calls) == 4
    assert "winds" in result.tasks_output[0].description
    assert crew.inputs == {"topic": "winds"}


def test_a_restored_crew_still_resumes_and_skips_finished_work(llm_calls: list[str]) -> None:
    crew = two_task_crew("store")
    crew.kickoff(inputs={"topic": "tides"})
    first = min(ops.list_checkpoints("store"), key=lambda m: m.sequence)
    llm_calls.clear()

    restored = Crew.from_checkpoint(CheckpointConfig(restore_from=first.location))
    restored.kickoff()
    assert len(llm_calls) == 1  # only the task that had not run at that checkpoint

    bound = two_task_crew("store")
    bound.kickoff(from_checkpoint=first.location)
    assert len(llm_calls) == 2

    forked = Crew.fork(CheckpointConfig(restore_from=first.location), branch="again")
    forked.kickoff()
    assert len(llm_calls) == 3


def test_a_crew_restored_at_its_end_returns_the_saved_result_then_runs_anew(llm_calls: list[str]) -> None:
    crew = two_task_crew("store")
    done = crew.kickoff(inputs={"topic": "tides"})
    last = max(ops.list_checkpoints("store"), key=lambda m: m.sequence)
    llm_calls.clear()
    restored = Crew.from_checkpoint(CheckpointConfig(restore_from=last.location))
    assert restored.kickoff().raw == done.raw
    assert llm_calls == []  # resuming a finished run redoes nothing (the seed's promise)
    restored.kickoff()
    assert len(llm_calls) == 2  # and the kickoff after that is a new run


def test_an_edit_after_a_finished_run_continues_from_the_edit(llm_calls: list[str]) -> None:
    crew = two_task_crew()
    crew.kickoff(inputs={"topic": "tides"})
    crew.override_output("outline", "1. Moon 2. Sun")
    llm_calls.clear()
    crew.kickoff()
    assert len(llm_calls) == 1  # only the draft, which depends on the edited outline
    assert crew.tasks[0].output is not None and crew.tasks[0].output.raw == "1. Moon 2. Sun"


def test_a_standalone_agent_runs_again_on_a_second_kickoff(llm_calls: list[str]) -> None:
    agent = Agent(role="Researcher", goal="Research topics")
    agent.kickoff(messages=[{"role": "user", "content": "Research AI trends"}])
    agent.kickoff(messages=[{"role": "user", "content": "Research AI trends"}])
    assert len(llm_calls) == 2


# -- 2. a standalone agent with checkpoint=True checkpoints ---------------------------------------------------------


def test_a_standalone_agent_with_checkpoint_true_writes_a_checkpoint_when_its_kickoff_ends() -> None:
    agent = Agent(role="Researcher", goal="Research topics", checkpoint=True)
    result = agent.kickoff(messages=[{"role": "user", "content": "Research AI trends"}])
    metas = ops.list_checkpoints(".checkpoints")
    assert [(m.entity_kind, m.trigger, m.tasks_done) for m in metas] == [("agent", "lite_agent_execution_completed", 1)]
    restored = Agent.from_checkpoint(CheckpointConfig(restore_from=metas[0].location))
    assert restored.kickoff().raw == result.raw


def test_a_standalone_agent_with_its_own_events_checkpoints_at_those_only() -> None:
    agent = Agent(
        role="Researcher", checkpoint=CheckpointConfig(location="cp", on_events=["lite_agent_execution_started"])
    )
    agent.kickoff(messages="Research AI trends")
    assert [m.trigger for m in ops.list_checkpoints("cp")] == ["lite_agent_execution_started"]


# -- 3. and 4. a location names its kind of store ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["x.db", "x.sqlite", "x.sqlite3", "sub/X.DB"])
def test_a_location_ending_in_a_database_suffix_is_a_sqlite_store(name: str) -> None:
    config = CheckpointConfig(location=f"./{name}")
    assert config.provider.kind == "sqlite"
    two_task_crew(f"./{name}").kickoff(inputs={"topic": "tides"})
    assert os.path.isfile(name)  # a database file, not a folder of JSON files
    with open(name, "rb") as db:
        assert db.read(16) == b"SQLite format 3\x00"
    assert len(ops.list_checkpoints(name)) == 2


def test_other_locations_stay_json_folders_and_an_explicit_provider_wins_for_a_path() -> None:
    assert CheckpointConfig(location="./.checkpoints").provider.kind == "json"
    assert CheckpointConfig().provider.kind == "json"
    assert CheckpointConfig(location="./x.db", provider=JsonProvider()).provider.kind == "json"


def test_demo_on_an_existing_sqlite_file_adds_to_it() -> None:
    first = cli("demo", "--location", "./demo.db")
    assert first.exit_code == 0, first.output
    before = len(ops.list_checkpoints("demo.db"))
    again = cli("demo", "--location", "./demo.db")
    assert again.exit_code == 0, again.output
    assert "in the way" not in again.output
    assert len(ops.list_checkpoints("demo.db")) == 2 * before
    assert os.path.isfile("demo.db")


def test_demo_on_a_plain_sqlite_file_that_is_not_a_store_is_refused_without_touching_it() -> None:
    with sqlite3.connect("notes.db") as db:
        db.execute("CREATE TABLE notes (body TEXT)")
        db.execute("INSERT INTO notes VALUES ('keep me')")
    result = cli("demo", "--location", "./notes.db")
    assert result.exit_code != 0
    assert "in the way" not in result.output
    with sqlite3.connect("notes.db") as db:
        assert db.execute("SELECT body FROM notes").fetchall() == [("keep me",)]
    assert not os.path.isdir("notes.db")


URL = "postgresql://nobody@127.0.0.1:9/nowhere"


def test_a_url_location_is_its_urls_provider_in_the_config() -> None:
    assert CheckpointConfig(location=URL).provider.kind == "postgres"
    assert CheckpointConfig(location="memory://semantics").provider.kind == "memory"
    with pytest.raises(CheckpointError, match="is a postgres store") as caught:
        CheckpointConfig(location="postgresql://nobody:s3cret@127.0.0.1:9/nowhere", provider=JsonProvider())
    assert "s3cret" not in str(caught.value)


def test_demo_with_a_url_location_never_makes_a_local_folder() -> None:
    result = cli("demo", "--location", URL)
    assert result.exit_code != 0  # nothing listens there: every checkpoint is reported as not written
    assert os.listdir(".") == ["home"]  # no folder named "postgresql:" appeared
    refused = cli("demo", "--location", URL, "--provider", "json")
    assert refused.exit_code == 2
    assert os.listdir(".") == ["home"]


@pytest.mark.parametrize("command", [["list"], ["info"], ["prune", "--keep", "1"]])
def test_a_same_named_local_folder_never_stands_for_a_url(command: list[str]) -> None:
    decoy = Path("postgresql:/nobody@127.0.0.1:9/nowhere")
    decoy.mkdir(parents=True)
    two_task_crew(str(decoy)).kickoff(inputs={"topic": "tides"})
    files = sorted(p.name for p in decoy.glob("main/*.json"))
    assert len(files) == 2
    result = cli("checkpoint", *command, URL)
    assert result.exit_code != 0
    assert "cannot connect" in result.output or "postgres" in result.output
    assert sorted(p.name for p in decoy.glob("main/*.json")) == files  # the folder was neither read as it nor pruned
    assert files[0][:8] not in result.output


# -- 6. a flow method that triggers itself is refused when the flow is built -----------------------------------------


def test_a_router_listening_to_its_own_label_is_refused_when_the_flow_is_built() -> None:
    class Retry(Flow[dict[str, Any]]):
        @start()
        def begin(self) -> str:
            return "go"

        @router(or_(begin, "again"))
        def check(self) -> str:
            return "again" if len(self.state) < 100 else "done"

    with pytest.raises(ValueError, match=r"flow Retry: method 'check' listens to 'again', a label it returns") as err:
        Retry()
    assert "\n" not in str(err.value)
    assert not os.path.exists(".checkpoints")


def test_a_method_listening_to_itself_and_a_literal_typed_router_are_refused() -> None:
    class Echo(Flow[dict[str, Any]]):
        @start()
        def begin(self) -> None:
            return None

        @listen(or_(begin, "echo"))
        def echo(self) -> None:
            return None

    with pytest.raises(ValueError, match="method 'echo' listens to itself"):
        Echo()

    class Typed(Flow[dict[str, Any]]):
        @start()
        def begin(self) -> None:
            return None

        @router(or_(begin, "loop"))
        def decide(self) -> Literal["loop", "stop"]:
            return self.state["next"]  # type: ignore[no-any-return]

    with pytest.raises(ValueError, match="method 'decide' listens to 'loop'"):
        Typed()


def test_a_label_made_at_run_time_that_would_loop_stops_at_once(tmp_path: Path) -> None:
    class Dynamic(Flow[dict[str, Any]]):
        @start()
        def begin(self) -> None:
            self.state["label"] = "re" + "peat"

        @router(or_(begin, "repeat"))
        def decide(self) -> str:
            label: str = self.state["label"]
            return label

    flow = Dynamic(checkpoint=CheckpointConfig(location=str(tmp_path / "cp")))
    with pytest.raises(ValueError, match="method 'decide' listens to 'repeat'"):
        flow.kickoff()
    assert len(ops.list_checkpoints(str(tmp_path / "cp"))) <= 2  # begin and decide, never thousands


def test_routers_and_loops_through_other_methods_still_build_and_run(llm_calls: list[str]) -> None:
    class Triage(Flow[dict[str, Any]]):
        @start()
        def classify(self) -> str:
            return "high"

        @router(classify)
        def route(self, severity: str) -> str:
            return "urgent" if severity == "high" else "routine"

        @listen("urgent")
        def page(self) -> str:
            def helper() -> str:
                return "route"  # a nested function's return is not the router's label

            return helper()

    flow = Triage()
    assert flow.kickoff() == "route"
    assert [name for name, _ in flow.method_outputs] == ["classify", "route", "page"]


def test_a_finished_flow_runs_again_on_a_second_kickoff() -> None:
    class Count(Flow[dict[str, Any]]):
        @start()
        def bump(self) -> int:
            self.state["n"] = self.state.get("n", 0) + 1
            return int(self.state["n"])

    flow = Count()
    assert flow.kickoff() == 1
    assert flow.kickoff() == 2  # the method ran again


# -- 7. checkpoint_started for a standalone agent ---------------------------------------------------------------------


def test_checkpoint_started_and_completed_come_in_order_for_a_standalone_agent() -> None:
    from crewpoint.events import CheckpointCompletedEvent, CheckpointStartedEvent, event_bus

    order: list[str] = []

    @event_bus.on(CheckpointStartedEvent)
    def started(source: Any, event: CheckpointStartedEvent) -> None:
        order.append(f"started {event.trigger} {event.checkpoint_id}")

    @event_bus.on(CheckpointCompletedEvent)
    def completed(source: Any, event: CheckpointCompletedEvent) -> None:
        order.append(f"completed {event.trigger} {event.checkpoint_id}")

    Agent(role="Researcher", checkpoint=True).kickoff(messages="Research AI trends")
    (only,) = ops.list_checkpoints(".checkpoints")
    assert order == [
        f"started lite_agent_execution_completed {only.id}",
        f"completed lite_agent_execution_completed {only.id}",
    ]


@pytest.mark.parametrize(
    "command", [["checkpoint", "list", "memory://nowhere"], ["checkpoint", "-l", "memory://nowhere"]]
)
def test_a_url_with_no_store_is_said_so_and_a_same_named_folder_is_never_described(command: list[str]) -> None:
    decoy = Path("memory:/nowhere/main")
    decoy.mkdir(parents=True)
    (decoy / "notes.json").write_text("{}")
    result = cli(*command)
    assert result.exit_code == 2
    assert "no checkpoint store at memory://nowhere" in result.stderr
    assert ".json" not in result.output and "holds" not in result.output


def test_a_runs_events_never_nest_under_checkpoint_started() -> None:
    from crewpoint.events import BaseEvent, event_bus

    seen: list[BaseEvent] = []
    event_bus.register("*", lambda source, event: seen.append(event))
    two_task_crew("store").kickoff(inputs={"topic": "tides"})
    started = {e.event_id for e in seen if e.type == "checkpoint_started"}
    assert len(started) == 2
    assert not [e.type for e in seen if e.parent_event_id in started]
    kickoff = next(e.event_id for e in seen if e.type == "crew_kickoff_started")
    assert [e.parent_event_id for e in seen if e.type == "task_started"] == [kickoff, kickoff]
