"""A standalone agent: kickoff with messages, conversation memory, events."""

from __future__ import annotations

from crewpoint import Agent
from crewpoint.events import event_bus


def test_agent_kickoff_with_messages_returns_output_and_keeps_the_conversation() -> None:
    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    agent = Agent(role="Researcher", goal="Research topics", backstory="Expert researcher")
    result = agent.kickoff(messages=[{"role": "user", "content": "Research AI trends"}])
    assert result.raw
    assert str(result) == result.raw
    assert types[0] == "lite_agent_execution_started" and types[-1] == "lite_agent_execution_completed"
    contents = [m["content"] for m in agent.conversation.messages]
    assert "Research AI trends" in contents[0]
    assert len(contents) == 2


def test_agent_kickoff_is_deterministic_offline() -> None:
    a = Agent(role="Researcher", goal="g").kickoff("Explain checkpoints")
    b = Agent(role="Researcher", goal="g").kickoff("Explain checkpoints")
    c = Agent(role="Researcher", goal="g").kickoff("Explain forks")
    assert a.raw == b.raw != c.raw
