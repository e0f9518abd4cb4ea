"""Event classes: Logging. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from crewpoint.events.family_agent import AgentEvent


class AgentLogsEvent(AgentEvent):
    """Events carrying an agent's verbose log lines."""

    emitted: ClassVar[bool] = False


class AgentLogsStartedEvent(AgentLogsEvent):
    type: Literal["agent_logs_started"] = "agent_logs_started"
    task_description: str | None = None


class AgentLogsExecutionEvent(AgentLogsEvent):
    type: Literal["agent_logs_execution"] = "agent_logs_execution"
    message: str | None = None
