"""Event classes: Flow. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, Literal

from crewpoint.events.base import BaseEvent


class FlowEvent(BaseEvent):
    """Events about a flow run."""

    flow_name: str | None = None


class FlowCreatedEvent(FlowEvent):
    type: Literal["flow_created"] = "flow_created"
    inputs: dict[str, Any] | None = None


class FlowStartedEvent(FlowEvent):
    type: Literal["flow_started"] = "flow_started"
    inputs: dict[str, Any] | None = None


class FlowFinishedEvent(FlowEvent):
    type: Literal["flow_finished"] = "flow_finished"
    result: str | None = None


class FlowPausedEvent(FlowEvent):
    """The flow stopped to wait for a person (``reason``: ``human_feedback``) at ``method_name``."""

    type: Literal["flow_paused"] = "flow_paused"
    method_name: str | None = None
    reason: str | None = None


class MethodEvent(FlowEvent):
    """Events about one method of a flow."""

    method_name: str | None = None


class MethodExecutionStartedEvent(MethodEvent):
    type: Literal["method_execution_started"] = "method_execution_started"
    params: dict[str, Any] | None = None


class MethodExecutionFinishedEvent(MethodEvent):
    type: Literal["method_execution_finished"] = "method_execution_finished"
    result: str | None = None


class MethodExecutionFailedEvent(MethodEvent):
    type: Literal["method_execution_failed"] = "method_execution_failed"
    error: str | None = None


class MethodExecutionPausedEvent(MethodEvent):
    """The method's output waits for a person's review."""

    type: Literal["method_execution_paused"] = "method_execution_paused"
    reason: str | None = None


class HumanFeedbackRequestedEvent(MethodEvent):
    """A person is asked to review an output: a ``@human_feedback`` method's (``method_name``) or a
    ``human_input`` task's (``task_id``; ``method_name`` holds the task's label)."""

    type: Literal["human_feedback_requested"] = "human_feedback_requested"
    message: str | None = None
    request_id: str | None = None
    outcomes: list[str] | None = None


class HumanFeedbackReceivedEvent(MethodEvent):
    """A person answered: their ``feedback``, the ``outcome`` it routes to, and ``who`` (user@host)."""

    type: Literal["human_feedback_received"] = "human_feedback_received"
    feedback: str | None = None
    outcome: str | None = None
    who: str | None = None
    request_id: str | None = None


class FlowInputRequestedEvent(MethodEvent):
    """A flow method asks a person for a value (``Flow.ask``)."""

    type: Literal["flow_input_requested"] = "flow_input_requested"
    prompt: str | None = None


class FlowInputReceivedEvent(MethodEvent):
    """The value a person gave (``None``: the request's timeout passed)."""

    type: Literal["flow_input_received"] = "flow_input_received"
    value: str | None = None
