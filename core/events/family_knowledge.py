"""Event classes: Knowledge. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Literal

from crewpoint.events.base import BaseEvent


class KnowledgeEvent(BaseEvent):
    """Events about searching knowledge sources."""

    query: str | None = None
    agent_role: str | None = None


class KnowledgeSearchQueryStartedEvent(KnowledgeEvent):
    type: Literal["knowledge_search_query_started"] = "knowledge_search_query_started"


class KnowledgeSearchQueryCompletedEvent(KnowledgeEvent):
    type: Literal["knowledge_search_query_completed"] = "knowledge_search_query_completed"
    results_count: int = 0


class KnowledgeQueryStartedEvent(KnowledgeEvent):
    type: Literal["knowledge_query_started"] = "knowledge_query_started"


class KnowledgeQueryCompletedEvent(KnowledgeEvent):
    type: Literal["knowledge_query_completed"] = "knowledge_query_completed"
    results_count: int = 0


class KnowledgeQueryFailedEvent(KnowledgeEvent):
    type: Literal["knowledge_query_failed"] = "knowledge_query_failed"
    error: str | None = None


class KnowledgeSearchQueryFailedEvent(KnowledgeEvent):
    type: Literal["knowledge_search_query_failed"] = "knowledge_search_query_failed"
    error: str | None = None
