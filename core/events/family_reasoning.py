"""Event classes: Reasoning. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from crewpoint.events.family_agent import AgentEvent


class ReasoningEvent(AgentEvent):
    """Events about an agent planning before it works."""

    attempt: int | None = None
    emitted: ClassVar[bool] = False


class AgentReasoningStartedEvent(ReasoningEvent):
    type: Literal["agent_reasoning_started"] = "agent_reasoning_started"


class AgentReasoningCompletedEvent(ReasoningEvent):
    type: Literal["agent_reasoning_completed"] = "agent_reasoning_completed"
    plan: str | None = None
    ready: bool | None = None


class AgentReasoningFailedEvent(ReasoningEvent):
    type: Literal["agent_reasoning_failed"] = "agent_reasoning_failed"
    error: str | None = None
