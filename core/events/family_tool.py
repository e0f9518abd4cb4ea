"""Event classes: Tool. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, Literal

from crewpoint.events.base import BaseEvent


class ToolEvent(BaseEvent):
    """Events about an agent using a tool."""

    tool_name: str | None = None
    tool_args: dict[str, Any] | None = None
    agent_role: str | None = None


class ToolUsageStartedEvent(ToolEvent):
    type: Literal["tool_usage_started"] = "tool_usage_started"


class ToolUsageFinishedEvent(ToolEvent):
    type: Literal["tool_usage_finished"] = "tool_usage_finished"
    output: str | None = None
    from_cache: bool = False


class ToolUsageErrorEvent(ToolEvent):
    type: Literal["tool_usage_error"] = "tool_usage_error"
    error: str | None = None


class ToolValidateInputErrorEvent(ToolEvent):
    type: Literal["tool_validate_input_error"] = "tool_validate_input_error"
    error: str | None = None


class ToolSelectionErrorEvent(ToolEvent):
    type: Literal["tool_selection_error"] = "tool_selection_error"
    error: str | None = None


class ToolExecutionErrorEvent(ToolEvent):
    type: Literal["tool_execution_error"] = "tool_execution_error"
    error: str | None = None
