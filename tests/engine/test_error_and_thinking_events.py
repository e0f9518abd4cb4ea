"""The events behind a tool that is unknown, given bad arguments or raising, and a model's streamed reasoning: each is
emitted where its feature runs, with the fields a listener reads (a trace's span, a log line)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from llm_server import LLMServer

from crewpoint import LLM, Agent, Crew, Task, tool
from crewpoint.events import (
    BaseEvent,
    LLMStreamChunkEvent,
    LLMThinkingChunkEvent,
    ToolExecutionErrorEvent,
    ToolSelectionErrorEvent,
    ToolUsageErrorEvent,
    ToolUsageStartedEvent,
    ToolValidateInputErrorEvent,
    event_bus,
)


@tool
def spell(word: str) -> str:
    """Spell a word."""
    return "-".join(word)


@tool
def crash(word: str) -> str:
    """Always fails."""
    raise KeyError(word)


@pytest.fixture
def seen() -> Iterator[list[BaseEvent]]:
    events: list[BaseEvent] = []

    def record(source: Any, event: BaseEvent) -> None:
        events.append(event)

    with event_bus.scoped_handlers():
        event_bus.register("*", record)
        yield events


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def test_bad_arguments_are_refused_before_the_tool_runs(seen: list[BaseEvent]) -> None:
    out = spell.run(agent_id="a1", task_id="t1", agent_role="Speller", letters="owl")
    assert out.startswith("Error: ") and "'letters'" in out and "word" in out
    (refused,) = seen
    assert isinstance(refused, ToolValidateInputErrorEvent)
    assert (refused.tool_name, refused.tool_args, refused.agent_role, refused.task_id) == (
        "spell",
        {"letters": "owl"},
        "Speller",
        "t1",
    )
    assert refused.error is not None and "letters" in refused.error
    assert spell.run().startswith("Error: ")  # a missing argument as well
    missing = seen[-1]
    assert isinstance(missing, ToolValidateInputErrorEvent) and "'word'" in (missing.error or "")


def test_a_tool_that_raises_emits_its_execution_error_inside_its_use(seen: list[BaseEvent]) -> None:
    out = crash.run(word="owl")
    assert out.startswith("Error: ") and "KeyError" in out
    started, failed, ended = seen
    assert isinstance(started, ToolUsageStartedEvent) and isinstance(ended, ToolUsageErrorEvent)
    assert isinstance(failed, ToolExecutionErrorEvent)
    assert failed.tool_name == "crash" and failed.error == "KeyError: 'owl'"
    assert failed.parent_event_id == started.event_id  # nested in the tool's use, which the usage error ends
    assert ended.started_event_id == started.event_id


def test_an_agent_asking_for_a_tool_it_does_not_have_emits_a_selection_error(
    server: LLMServer, seen: list[BaseEvent]
) -> None:
    server.replies = ['Action: shout\nAction Input: {"word": "owl"}', "Final Answer: o-w-l"]
    speller = Agent(
        role="Speller", goal="g", backstory="b", llm=LLM(model="m", base_url=server.base_url), tools=[spell]
    )
    task = Task(description="Spell owl.", expected_output="letters", agent=speller)
    assert Crew(agents=[speller], tasks=[task]).kickoff().raw == "o-w-l"
    (refused,) = [e for e in seen if isinstance(e, ToolSelectionErrorEvent)]
    assert (refused.tool_name, refused.tool_args, refused.agent_role, refused.task_id) == (
        "shout",
        {"word": "owl"},
        "Speller",
        task.id,
    )
    assert refused.error is not None and "no tool named 'shout'" in refused.error and "spell" in refused.error
    assert not any(isinstance(e, ToolUsageStartedEvent) for e in seen)


def test_streamed_reasoning_comes_as_thinking_chunks_apart_from_the_answer(
    server: LLMServer, seen: list[BaseEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    server.mode = "stream"
    server.thinking = ["The user wants ", "a short answer."]
    server.reply = "Owls hoot."
    reply = LLM(model="m", base_url=server.base_url, stream=True).invoke([{"role": "user", "content": "owls?"}])
    assert reply == "Owls hoot."  # the reasoning is not part of the answer
    thinking = [e for e in seen if isinstance(e, LLMThinkingChunkEvent)]
    chunks = [e for e in seen if isinstance(e, LLMStreamChunkEvent)]
    assert [e.chunk for e in thinking] == server.thinking
    assert "".join(e.chunk or "" for e in chunks) == "Owls hoot."
    assert {e.call_id for e in thinking} == {e.call_id for e in chunks} != {None}
    assert max(e.sequence for e in thinking) < min(e.sequence for e in chunks)
