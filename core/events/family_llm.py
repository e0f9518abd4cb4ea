"""Event classes: LLM. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from crewpoint.events.base import BaseEvent


class LLMEvent(BaseEvent):
    """Events about one model call; ``call_id`` ties a call's events together."""

    model: str | None = None
    call_id: str | None = None
    agent_role: str | None = None


class LLMCallStartedEvent(LLMEvent):
    type: Literal["llm_call_started"] = "llm_call_started"
    message_count: int = 0


class LLMCallCompletedEvent(LLMEvent):
    type: Literal["llm_call_completed"] = "llm_call_completed"
    response: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    usage: dict[str, Any] | None = None
    """The call's usage: the five token counts, ``model``, ``provider``, ``duration_s``, ``estimated``
    (:func:`crewpoint.usage.call_usage`)."""


class LLMCallFailedEvent(LLMEvent):
    type: Literal["llm_call_failed"] = "llm_call_failed"
    error: str | None = None


class LLMStreamChunkEvent(LLMEvent):
    type: Literal["llm_stream_chunk"] = "llm_stream_chunk"
    chunk: str | None = None


class LLMThinkingChunkEvent(LLMEvent):
    type: Literal["llm_thinking_chunk"] = "llm_thinking_chunk"
    chunk: str | None = None
    emitted: ClassVar[bool] = False


class BudgetExceededEvent(LLMEvent):
    """A run's spending reached its budget: the call it was about to make (``model``, ``agent_role``,
    ``task_id``) is not made, and the run stops with a ``budget_exceeded`` checkpoint (see :mod:`crewpoint.budget`).
    ``spent_usd`` is None when the budget counts tokens only."""

    type: Literal["budget_exceeded"] = "budget_exceeded"
    spent_usd: float | None = None
    spent_tokens: int = 0
    budget_usd: float | None = None
    budget_tokens: int | None = None
