"""Event classes: Agent. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from crewpoint.events.base import BaseEvent


class AgentEvent(BaseEvent):
    """Events about an agent working on a task or on its own."""

    agent_role: str | None = None


class AgentExecutionStartedEvent(AgentEvent):
    type: Literal["agent_execution_started"] = "agent_execution_started"
    task_prompt: str | None = None
    tools: list[str] | None = None


class AgentExecutionCompletedEvent(AgentEvent):
    type: Literal["agent_execution_completed"] = "agent_execution_completed"
    output: str | None = None


class AgentExecutionErrorEvent(AgentEvent):
    type: Literal["agent_execution_error"] = "agent_execution_error"
    error: str | None = None


class LiteAgentExecutionStartedEvent(AgentEvent):
    type: Literal["lite_agent_execution_started"] = "lite_agent_execution_started"
    messages: list[dict[str, Any]] | None = None
    tools: list[str] | None = None


class LiteAgentExecutionCompletedEvent(AgentEvent):
    type: Literal["lite_agent_execution_completed"] = "lite_agent_execution_completed"
    output: str | None = None


class LiteAgentExecutionErrorEvent(AgentEvent):
    type: Literal["lite_agent_execution_error"] = "lite_agent_execution_error"
    error: str | None = None


class AgentEvaluationStartedEvent(AgentEvent):
    type: Literal["agent_evaluation_started"] = "agent_evaluation_started"
    iteration: int | None = None
    emitted: ClassVar[bool] = False


class AgentEvaluationCompletedEvent(AgentEvent):
    type: Literal["agent_evaluation_completed"] = "agent_evaluation_completed"
    iteration: int | None = None
    metric_category: str | None = None
    score: float | None = None
    emitted: ClassVar[bool] = False


class AgentEvaluationFailedEvent(AgentEvent):
    type: Literal["agent_evaluation_failed"] = "agent_evaluation_failed"
    iteration: int | None = None
    error: str | None = None
    emitted: ClassVar[bool] = False
