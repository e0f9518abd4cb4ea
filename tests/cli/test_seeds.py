"""Every code example of the seed pages, renamed per DESIGN §1, runs and does what the page says."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.events import LLMCallCompletedEvent, event_bus
from crewpoint.flow import Flow, listen, start

if TYPE_CHECKING:
    from crewpoint.runtime import RuntimeState


def checkpoint_files(folder: str) -> list[Path]:
    return sorted((p for p in Path(folder).rglob("*.json") if ".runs" not in p.parts), key=lambda p: p.name)


def tutorial_crew(**kwargs: Any) -> Crew:
    researcher = Agent(role="Researcher", goal="Research", backstory="Expert")
    writer = Agent(role="Writer", goal="Write", backstory="Expert")
    return Crew(
        agents=[researcher, writer],
        tasks=[
            Task(description="Research AI trends", agent=researcher, expected_output="bullets"),
            Task(description="Write a summary", agent=writer, expected_output="paragraph"),
        ],
        **kwargs,
    )


def test_tutorial_without_checkpoints_runs() -> None:
    result = tutorial_crew().kickoff()
    assert result.raw and len(result.tasks_output) == 2


def test_tutorial_resume_skips_the_finished_research(llm_calls: list[str]) -> None:
    crew = tutorial_crew(checkpoint=True)
    full = crew.kickoff()
    files = checkpoint_files("./.checkpoints")
    assert len(files) == 2  # one per task_completed
    after_research = files[0]
    llm_calls.clear()
    result = crew.kickoff(from_checkpoint=CheckpointConfig(restore_from=str(after_research)))
    assert result.raw == full.raw
    assert result.tasks_output[0].raw == full.tasks_output[0].raw
    assert len(llm_calls) == 1  # only the writer ran


def test_checkpoint_true_writes_at_every_task_completed() -> None:
    crew = tutorial_crew(checkpoint=True)
    crew.kickoff()
    assert len(checkpoint_files("./.checkpoints")) == 2


def test_custom_location_events_and_max_checkpoints() -> None:
    crew = tutorial_crew(
        checkpoint=CheckpointConfig(
            location="./my_checkpoints",
            on_events=["task_completed", "crew_kickoff_completed"],
            max_checkpoints=5,
        ),
    )
    crew.kickoff()
    crew2 = tutorial_crew(checkpoint=CheckpointConfig(location="./my_checkpoints", max_checkpoints=2))
    crew2.kickoff()
    crew2.kickoff()
    files = checkpoint_files("./my_checkpoints")
    assert 0 < len(files) <= 5


def test_json_provider_choice() -> None:
    from crewpoint.providers import JsonProvider

    crew = tutorial_crew(
        checkpoint=CheckpointConfig(location="./my_checkpoints", provider=JsonProvider(), max_checkpoints=5)
    )
    crew.kickoff()
    assert len(checkpoint_files("./my_checkpoints")) == 2


def test_sqlite_provider_choice() -> None:
    from crewpoint.providers import SqliteProvider

    crew = tutorial_crew(
        checkpoint=CheckpointConfig(location="./.checkpoints.db", provider=SqliteProvider(), max_checkpoints=50)
    )
    crew.kickoff()
    metas = SqliteProvider().list("./.checkpoints.db")
    assert [m.trigger for m in metas] == ["task_completed", "task_completed"]
    import sqlite3

    mode = sqlite3.connect("./.checkpoints.db").execute("PRAGMA journal_mode").fetchone()[0]
    assert mode == "wal"


def test_one_agent_opts_out() -> None:
    researcher = Agent(role="Researcher", goal="g", backstory="b")
    writer = Agent(role="Writer", goal="g", backstory="b", checkpoint=False)
    crew = Crew(
        agents=[researcher, writer],
        tasks=[Task(description="Research", agent=researcher), Task(description="Write", agent=writer)],
        checkpoint=True,
    )
    crew.kickoff()
    files = checkpoint_files("./.checkpoints")
    assert len(files) == 1  # only the researcher's task


def test_fork_to_a_new_branch() -> None:
    tutorial_crew(checkpoint=CheckpointConfig(location="./my_checkpoints")).kickoff()
    first = checkpoint_files("./my_checkpoints")[0]
    config = CheckpointConfig(restore_from=str(first))
    crew = Crew.fork(config, branch="experiment-a")
    result = crew.kickoff(inputs={"strategy": "aggressive"})
    assert result.raw
    from crewpoint.providers import JsonProvider

    metas = JsonProvider().list("./my_checkpoints")
    forked = [m for m in metas if m.branch == "experiment-a"]
    assert len(forked) == 1
    source_id = JsonProvider().read(str(first)).meta.id
    assert forked[0].parent_id == source_id
    assert {m.branch for m in metas} == {"main", "experiment-a"}


def test_fork_without_branch_gets_a_generated_name() -> None:
    tutorial_crew(checkpoint=True).kickoff()
    first = checkpoint_files("./.checkpoints")[0]
    crew = Crew.fork(CheckpointConfig(restore_from=str(first)))
    crew.kickoff()
    from crewpoint.providers import JsonProvider

    branches = {m.branch for m in JsonProvider().list("./.checkpoints")}
    assert len(branches) == 2 and "main" in branches


def test_crew_with_custom_location() -> None:
    researcher = Agent(role="Researcher", goal="g", backstory="b")
    writer = Agent(role="Writer", goal="g", backstory="b")
    research_task = Task(description="Research", agent=researcher)
    write_task = Task(description="Write", agent=writer)
    review_task = Task(description="Review", agent=writer)
    crew = Crew(
        agents=[researcher, writer],
        tasks=[research_task, write_task, review_task],
        checkpoint=CheckpointConfig(location="./crew_cp"),
    )
    crew.kickoff()
    assert len(checkpoint_files("./crew_cp")) == 3


def process(data: str) -> str:
    return data.upper()


class MyFlow(Flow):  # type: ignore[type-arg]
    @start()
    def step_one(self) -> str:
        return "data"

    @listen(step_one)
    def step_two(self, data: str) -> str:
        return process(data)


def test_flow_checkpoints_at_method_execution_finished() -> None:
    flow = MyFlow(
        checkpoint=CheckpointConfig(
            location="./flow_cp",
            on_events=["method_execution_finished"],
        ),
    )
    result = flow.kickoff()
    assert result == "DATA"
    files = checkpoint_files("./flow_cp")
    assert len(files) == 2
    resumed = MyFlow.from_checkpoint(CheckpointConfig(restore_from=str(files[0])))
    assert resumed.kickoff() == "DATA"
    assert [n for n, _ in resumed.method_outputs] == ["step_one", "step_two"]


def test_agent_checkpoint_on_lite_agent_completed() -> None:
    agent = Agent(
        role="Researcher",
        goal="Research topics",
        backstory="Expert researcher",
        checkpoint=CheckpointConfig(
            location="./agent_cp",
            on_events=["lite_agent_execution_completed"],
        ),
    )
    result = agent.kickoff(messages=[{"role": "user", "content": "Research AI trends"}])
    files = checkpoint_files("./agent_cp")
    assert len(files) == 1
    restored = Agent.from_checkpoint(CheckpointConfig(restore_from=str(files[0])))
    assert restored.kickoff().raw == result.raw


def test_manual_checkpoint_from_a_three_parameter_handler(capsys: pytest.CaptureFixture[str]) -> None:
    @event_bus.on(LLMCallCompletedEvent)
    def on_llm_done(source: Any, event: LLMCallCompletedEvent, state: RuntimeState) -> None:
        path = state.checkpoint("./my_checkpoints")
        print(f"Saved checkpoint: {path}")

    tutorial_crew().kickoff()
    out = capsys.readouterr().out
    assert out.count("Saved checkpoint: ") == 2
    assert len(checkpoint_files("./my_checkpoints")) == 2


def test_manual_checkpoint_from_an_async_handler(capsys: pytest.CaptureFixture[str]) -> None:
    @event_bus.on(LLMCallCompletedEvent)
    async def on_llm_done_async(source: Any, event: LLMCallCompletedEvent, state: RuntimeState) -> None:
        path = await state.acheckpoint("./my_checkpoints")
        print(f"Saved checkpoint: {path}")

    tutorial_crew().kickoff()
    assert capsys.readouterr().out.count("Saved checkpoint: ") == 2
    assert len(checkpoint_files("./my_checkpoints")) == 2


class Notifier:
    def __init__(self) -> None:
        self.done: list[str] = []

    def on_task_done(self, output: Any) -> None:
        print(f"Finished: {output.description}")
        self.done.append(output.description)


def test_reattach_an_unsavable_callback_after_from_checkpoint() -> None:
    tutorial_crew(checkpoint=True).kickoff()
    first = checkpoint_files("./.checkpoints")[0]
    notifier = Notifier()
    crew = Crew.from_checkpoint(CheckpointConfig(restore_from=str(first)))
    crew.tasks[-1].callback = notifier.on_task_done
    crew.kickoff()
    assert notifier.done == ["Write a summary"]


def test_async_resume() -> None:
    tutorial_crew(checkpoint=True).kickoff()
    first = checkpoint_files("./.checkpoints")[0]

    async def main() -> str:
        crew = await Crew.afrom_checkpoint(CheckpointConfig(restore_from=str(first)))
        return (await crew.akickoff()).raw

    assert asyncio.run(main())
