"""The crew runtime: placeholders, context passing, outputs, callbacks, guardrails, memory, knowledge, events."""

from __future__ import annotations

from typing import Any

import pytest

from crewpoint import Agent, Crew, Task, TaskOutput
from crewpoint.events import BaseEvent, event_bus
from crewpoint.llm import BaseLLM


class EchoLLM(BaseLLM):
    """Answers with the prompt it was given, so tests can see exactly what an agent was told."""

    model: str = "echo"

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        return "Final Answer: " + messages[-1]["content"]


def on_done_marker(output: TaskOutput) -> None:
    output.summary = "seen"


def test_placeholders_are_filled_from_inputs() -> None:
    agent = Agent(role="Writer {who}", goal="Write about {topic}", llm=EchoLLM())
    task = Task(description="Summarise {topic} in {n} words", expected_output="{n} words", agent=agent)
    crew = Crew(agents=[agent], tasks=[task])
    assert crew.placeholders() == ["topic", "n"]
    result = crew.kickoff(inputs={"topic": "solar power", "n": 50, "who": "A"})
    assert "Summarise solar power in 50 words" in result.raw
    assert "Expected output: 50 words" in result.raw
    assert task.description == "Summarise {topic} in {n} words"
    assert "Writer A" in agent.system_prompt()


def test_sequential_tasks_get_all_previous_outputs_unless_context_is_set() -> None:
    agent = Agent(role="R", llm=EchoLLM())
    first = Task(description="FIRST", agent=agent)
    second = Task(description="SECOND", agent=agent)
    third = Task(description="THIRD", agent=agent, context=[first])
    fourth = Task(description="FOURTH", agent=agent)
    crew = Crew(agents=[agent], tasks=[first, second, third, fourth])
    result = crew.kickoff()
    outs = [t.raw for t in result.tasks_output]
    assert "Context" not in outs[0]
    assert "FIRST" in outs[1]
    assert "FIRST" in outs[2] and "SECOND" not in outs[2]
    assert all(word in outs[3] for word in ("FIRST", "SECOND", "THIRD"))
    assert result.raw == outs[3]
    assert len(result.tasks_output) == 4


def test_dependents_follow_explicit_and_implicit_context() -> None:
    agent = Agent(role="R", llm=EchoLLM())
    a = Task(description="a", agent=agent)
    b = Task(description="b", agent=agent, context=[])
    c = Task(description="c", agent=agent, context=[a])
    d = Task(description="d", agent=agent, context=[b])
    crew = Crew(agents=[agent], tasks=[a, b, c, d])
    assert crew.dependents(0) == [2]
    assert crew.dependents(1) == [3]
    assert crew.dependents(2) == []


def test_task_callback_and_crew_callback_run() -> None:
    seen: list[str] = []
    agent = Agent(role="R", llm=EchoLLM())
    task = Task(description="x", agent=agent, callback=on_done_marker)
    crew = Crew(agents=[agent], tasks=[task], task_callback=on_done_marker)
    crew.kickoff()
    assert task.output is not None and task.output.summary == "seen"
    assert seen == []


def test_unsavable_callback_warns() -> None:
    agent = Agent(role="R", llm=EchoLLM())
    with pytest.warns(UserWarning, match="callback cannot be saved in a checkpoint"):
        Task(description="x", agent=agent, callback=lambda out: None)


def test_callable_guardrail_retries_until_it_passes() -> None:
    attempts: list[str] = []

    def needs_two(output: TaskOutput) -> tuple[bool, Any]:
        attempts.append(output.raw)
        return (len(attempts) >= 2, "too short" if len(attempts) < 2 else output.raw.upper())

    agent = Agent(role="R", llm=EchoLLM())
    with pytest.warns(UserWarning):
        task = Task(description="x", agent=agent, guardrail=needs_two)
    Crew(agents=[agent], tasks=[task]).kickoff()
    assert len(attempts) == 2
    assert "did not pass review: too short" in attempts[1]
    assert task.output is not None and task.output.raw == attempts[1].upper()


def test_guardrail_that_never_passes_fails_the_task() -> None:
    agent = Agent(role="R", llm=EchoLLM())
    with pytest.warns(UserWarning):
        task = Task(description="x", agent=agent, guardrail=lambda o: (False, "no"), guardrail_max_retries=1)
    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    with pytest.raises(ValueError, match="failed its guardrail 2 times"):
        Crew(agents=[agent], tasks=[task]).kickoff()
    assert "task_failed" in types and "crew_kickoff_failed" in types


def test_string_guardrail_is_judged_by_the_llm() -> None:
    class Strict(BaseLLM):
        model: str = "strict"
        judged: int = 0

        def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
            if messages[0]["content"].startswith("You check work"):
                self.judged += 1
                return "PASS" if self.judged > 1 else "FAIL: mention the sun"
            return "Final Answer: the sun"

    llm = Strict()
    agent = Agent(role="R", llm=llm)
    task = Task(description="x", agent=agent, guardrail="must mention the sun")
    Crew(agents=[agent], tasks=[task]).kickoff()
    assert llm.judged == 2
    assert task.output is not None and task.output.raw == "the sun"


def test_event_order_of_a_two_task_run() -> None:
    events: list[BaseEvent] = []
    event_bus.register("*", lambda s, e: events.append(e))
    agent = Agent(role="R", llm=EchoLLM())
    Crew(agents=[agent], tasks=[Task(description="a", agent=agent), Task(description="b", agent=agent)]).kickoff()
    per_task = [
        "task_started",
        "agent_execution_started",
        "llm_call_started",
        "llm_call_completed",
        "agent_execution_completed",
        "task_completed",
    ]
    assert [e.type for e in events] == ["crew_kickoff_started", *per_task, *per_task, "crew_kickoff_completed"]
    seqs = [e.sequence for e in events]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    completed = [e for e in events if e.type == "task_completed"]
    assert all(e.task_id and e.crew_id for e in completed)


def test_crew_memory_is_queried_for_later_tasks() -> None:
    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    agent = Agent(role="R", llm=EchoLLM())
    first = Task(description="List facts about volcanoes", agent=agent)
    second = Task(description="Write about volcanoes for kids", agent=agent, context=[])
    Crew(agents=[agent], tasks=[first, second], memory=True).kickoff()
    assert second.output is not None
    assert "Relevant memories" in second.output.raw
    assert "memory_save_completed" in types and "memory_retrieval_completed" in types


def test_knowledge_sources_are_queried_per_task(tmp_path: Any) -> None:
    from crewpoint import StringKnowledgeSource, TextFileKnowledgeSource

    notes = tmp_path / "notes.txt"
    notes.write_text("Penguins live in the southern hemisphere.\n\nCamels store fat in their humps.")
    agent = Agent(
        role="R",
        llm=EchoLLM(),
        knowledge_sources=[StringKnowledgeSource(content="The moon orbits the earth every 27 days.")],
    )
    task = Task(description="Explain where penguins live", agent=agent)
    crew = Crew(agents=[agent], tasks=[task], knowledge_sources=[TextFileKnowledgeSource(file_paths=[notes])])
    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    crew.kickoff()
    assert task.output is not None and "southern hemisphere" in task.output.raw
    assert "knowledge_query_completed" in types


def test_offline_model_uses_a_tool_when_the_task_asks() -> None:
    from crewpoint import tool

    @tool("lookup")
    def lookup(query: str) -> str:
        """Look a word up."""
        return f"LOOKED UP {query}"

    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    agent = Agent(role="R", tools=[lookup])
    task = Task(description="Use the lookup tool to define entropy", agent=agent)
    Crew(agents=[agent], tasks=[task]).kickoff()
    assert "tool_usage_started" in types and "tool_usage_finished" in types
    assert task.output is not None and "LOOKED UP" in task.output.raw


async def test_akickoff_returns_the_same_result() -> None:
    agent = Agent(role="R", llm=EchoLLM())
    crew = Crew(agents=[agent], tasks=[Task(description="hello {x}", agent=agent)])
    result = await crew.akickoff(inputs={"x": "async"})
    assert "hello async" in result.raw


def test_task_without_agent_takes_the_first_agent_and_bad_context_is_refused() -> None:
    agent = Agent(role="R", llm=EchoLLM())
    task = Task(description="x")
    Crew(agents=[agent], tasks=[task])
    assert task.agent is agent
    stray = Task(description="stray", agent=agent)
    with pytest.raises(ValueError, match="not in the crew"):
        Crew(agents=[agent], tasks=[Task(description="y", agent=agent, context=[stray])])
