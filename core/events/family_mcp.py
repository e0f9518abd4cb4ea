"""Event classes: MCP. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from crewpoint.events.base import BaseEvent


class MCPEvent(BaseEvent):
    """Events about Model Context Protocol servers."""

    server_name: str | None = None
    server_url: str | None = None
    transport: str | None = None
    emitted: ClassVar[bool] = False


class MCPConnectionStartedEvent(MCPEvent):
    type: Literal["mcp_connection_started"] = "mcp_connection_started"


class MCPConnectionCompletedEvent(MCPEvent):
    type: Literal["mcp_connection_completed"] = "mcp_connection_completed"
    duration_ms: float | None = None


class MCPConnectionFailedEvent(MCPEvent):
    type: Literal["mcp_connection_failed"] = "mcp_connection_failed"
    error: str | None = None


class MCPToolExecutionStartedEvent(MCPEvent):
    type: Literal["mcp_tool_execution_started"] = "mcp_tool_execution_started"
    tool_name: str | None = None
    tool_args: dict[str, Any] | None = None


class MCPToolExecutionCompletedEvent(MCPEvent):
    type: Literal["mcp_tool_execution_completed"] = "mcp_tool_execution_completed"
    tool_name: str | None = None
    result: str | None = None


class MCPToolExecutionFailedEvent(MCPEvent):
    type: Literal["mcp_tool_execution_failed"] = "mcp_tool_execution_failed"
    tool_name: str | None = None
    error: str | None = None


class MCPConfigFetchFailedEvent(MCPEvent):
    type: Literal["mcp_config_fetch_failed"] = "mcp_config_fetch_failed"
    error: str | None = None
