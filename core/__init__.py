"""crewpoint: durable multi-agent runs.

``import crewpoint`` is cheap: public names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crewpoint._version import __version__

_EXPORTS: dict[str, str] = {
    "Agent": "crewpoint.agent",
    "Task": "crewpoint.task",
    "TaskOutput": "crewpoint.task",
    "Crew": "crewpoint.crew",
    "CrewOutput": "crewpoint.crew",
    "Process": "crewpoint.process",
    "Flow": "crewpoint.flow",
    "start": "crewpoint.flow",
    "listen": "crewpoint.flow",
    "router": "crewpoint.flow",
    "CheckpointConfig": "crewpoint.checkpoint.config",
    "FeedbackPending": "crewpoint.feedback",
    "Budget": "crewpoint.budget",
    "BudgetExceeded": "crewpoint.budget",
    "JsonProvider": "crewpoint.providers",
    "SqliteProvider": "crewpoint.providers",
    "BaseLLM": "crewpoint.llm",
    "OfflineLLM": "crewpoint.llm",
    "LLM": "crewpoint.llm",
    "BaseTool": "crewpoint.tools",
    "tool": "crewpoint.tools",
    "StringKnowledgeSource": "crewpoint.knowledge",
    "TextFileKnowledgeSource": "crewpoint.knowledge",
    "RuntimeState": "crewpoint.runtime",
    "CheckpointState": "crewpoint.serialize",
}

__all__ = [
    "LLM",
    "Agent",
    "BaseLLM",
    "BaseTool",
    "Budget",
    "BudgetExceeded",
    "CheckpointConfig",
    "CheckpointState",
    "Crew",
    "CrewOutput",
    "FeedbackPending",
    "Flow",
    "JsonProvider",
    "OfflineLLM",
    "Process",
    "RuntimeState",
    "SqliteProvider",
    "StringKnowledgeSource",
    "Task",
    "TaskOutput",
    "TextFileKnowledgeSource",
    "__version__",
    "listen",
    "router",
    "start",
    "tool",
]

if TYPE_CHECKING:
    from crewpoint.agent import Agent
    from crewpoint.budget import Budget, BudgetExceeded
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.crew import Crew, CrewOutput
    from crewpoint.feedback import FeedbackPending
    from crewpoint.flow import Flow, listen, router, start
    from crewpoint.knowledge import StringKnowledgeSource, TextFileKnowledgeSource
    from crewpoint.llm import LLM, BaseLLM, OfflineLLM
    from crewpoint.process import Process
    from crewpoint.providers import JsonProvider, SqliteProvider
    from crewpoint.runtime import RuntimeState
    from crewpoint.serialize import CheckpointState
    from crewpoint.task import Task, TaskOutput
    from crewpoint.tools import BaseTool, tool


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'crewpoint' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
