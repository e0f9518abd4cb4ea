"""Event classes: Memory. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, Literal

from crewpoint.events.base import BaseEvent


class MemoryEvent(BaseEvent):
    """Events about an agent's or crew's memory."""

    agent_role: str | None = None


class MemorySaveStartedEvent(MemoryEvent):
    type: Literal["memory_save_started"] = "memory_save_started"
    value: str | None = None
    metadata: dict[str, Any] | None = None


class MemorySaveCompletedEvent(MemoryEvent):
    type: Literal["memory_save_completed"] = "memory_save_completed"
    value: str | None = None
    metadata: dict[str, Any] | None = None


class MemorySaveFailedEvent(MemoryEvent):
    type: Literal["memory_save_failed"] = "memory_save_failed"
    value: str | None = None
    error: str | None = None


class MemoryQueryStartedEvent(MemoryEvent):
    type: Literal["memory_query_started"] = "memory_query_started"
    query: str | None = None
    limit: int | None = None


class MemoryQueryCompletedEvent(MemoryEvent):
    type: Literal["memory_query_completed"] = "memory_query_completed"
    query: str | None = None
    limit: int | None = None
    results_count: int = 0


class MemoryQueryFailedEvent(MemoryEvent):
    type: Literal["memory_query_failed"] = "memory_query_failed"
    query: str | None = None
    error: str | None = None


class MemoryRetrievalStartedEvent(MemoryEvent):
    type: Literal["memory_retrieval_started"] = "memory_retrieval_started"
    query: str | None = None


class MemoryRetrievalCompletedEvent(MemoryEvent):
    type: Literal["memory_retrieval_completed"] = "memory_retrieval_completed"
    query: str | None = None
    results_count: int = 0


class MemoryRetrievalFailedEvent(MemoryEvent):
    type: Literal["memory_retrieval_failed"] = "memory_retrieval_failed"
    query: str | None = None
    error: str | None = None
