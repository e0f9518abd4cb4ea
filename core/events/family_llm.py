"""Event classes: LLM. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import model_validator

from crewpoint.events.base import BaseEvent
from crewpoint.usage import CALL_KEY_SET, expand_call_usage, stored_call_usage


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
    (:func:`crewpoint.usage.call_usage`). An event history keeps it compact (:meth:`compact`); an event read back
    from one has it whole again."""

    @model_validator(mode="after")
    def _whole_usage(self) -> LLMCallCompletedEvent:
        usage = self.usage
        if usage is not None and not CALL_KEY_SET.issubset(usage):  # read back from a history: made whole
            self.usage = expand_call_usage(
                usage, model=self.model, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens
            )
        return self

    def compact(self) -> dict[str, Any]:
        """The history's dict, its ``usage`` without what the event already says
        (:func:`crewpoint.usage.stored_call_usage`)."""
        usage = self.usage
        if usage is not None and all(map(_plain, usage.values())):
            # (a call_usage dict is JSON as it is: left out of the dump, then added in its stored form)
            data = self._history_dict(_USAGE)
            data["usage"] = stored_call_usage(
                usage, model=self.model, prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens
            )
            return data
        data = super().compact()
        usage = data.get("usage")
        if isinstance(usage, dict):
            data["usage"] = stored_call_usage(
                usage,
                model=data.get("model"),
                prompt_tokens=data.get("prompt_tokens"),
                completion_tokens=data.get("completion_tokens"),
            )
        return data


_USAGE = {"usage"}
_PLAIN = frozenset({str, int, bool})


def _plain(value: object) -> bool:
    """A value a JSON dump gives back as it is (a float only when finite: a dump writes others as null)."""
    kind = type(value)
    return kind in _PLAIN or (kind is float and math.isfinite(value))  # type: ignore[arg-type]


class LLMCallFailedEvent(LLMEvent):
    type: Literal["llm_call_failed"] = "llm_call_failed"
    error: str | None = None


class LLMStreamChunkEvent(LLMEvent):
    type: Literal["llm_stream_chunk"] = "llm_stream_chunk"
    chunk: str | None = None


class LLMThinkingChunkEvent(LLMEvent):
    """Reasoning text a model streamed before (or beside) its answer (``reasoning_content`` or ``reasoning``)."""

    type: Literal["llm_thinking_chunk"] = "llm_thinking_chunk"
    chunk: str | None = None


class BudgetExceededEvent(LLMEvent):
    """A run's spending reached its budget: the call it was about to make (``model``, ``agent_role``,
    ``task_id``) is not made, and the run stops with a ``budget_exceeded`` checkpoint (see :mod:`crewpoint.budget`).
    ``spent_usd`` is None when the budget counts tokens only."""

    type: Literal["budget_exceeded"] = "budget_exceeded"
    spent_usd: float | None = None
    spent_tokens: int = 0
    budget_usd: float | None = None
    budget_tokens: int | None = None
