"""Event classes: LLM Guardrail. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Literal

from crewpoint.events.base import BaseEvent


class LLMGuardrailEvent(BaseEvent):
    """Events about a guardrail checking a task's output."""

    retry_count: int = 0


class LLMGuardrailStartedEvent(LLMGuardrailEvent):
    type: Literal["llm_guardrail_started"] = "llm_guardrail_started"
    guardrail: str | None = None


class LLMGuardrailCompletedEvent(LLMGuardrailEvent):
    type: Literal["llm_guardrail_completed"] = "llm_guardrail_completed"
    success: bool = False
    result: str | None = None
    error: str | None = None


class LLMGuardrailFailedEvent(LLMGuardrailEvent):
    type: Literal["llm_guardrail_failed"] = "llm_guardrail_failed"
    error: str | None = None
