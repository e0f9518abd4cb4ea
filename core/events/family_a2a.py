"""Event classes: A2A. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from crewpoint.events.base import BaseEvent


class A2AEvent(BaseEvent):
    """Events about agent-to-agent (A2A protocol) delegation."""

    endpoint: str | None = None
    a2a_agent_name: str | None = None
    context_id: str | None = None
    a2a_task_id: str | None = None
    emitted: ClassVar[bool] = False


class A2ADelegationStartedEvent(A2AEvent):
    type: Literal["a2a_delegation_started"] = "a2a_delegation_started"
    message: str | None = None


class A2ADelegationCompletedEvent(A2AEvent):
    type: Literal["a2a_delegation_completed"] = "a2a_delegation_completed"
    result: str | None = None
    status: str | None = None


class A2AConversationStartedEvent(A2AEvent):
    type: Literal["a2a_conversation_started"] = "a2a_conversation_started"


class A2AConversationCompletedEvent(A2AEvent):
    type: Literal["a2a_conversation_completed"] = "a2a_conversation_completed"
    result: str | None = None
    status: str | None = None


class A2AMessageSentEvent(A2AEvent):
    type: Literal["a2a_message_sent"] = "a2a_message_sent"
    message: str | None = None


class A2AResponseReceivedEvent(A2AEvent):
    type: Literal["a2a_response_received"] = "a2a_response_received"
    response: str | None = None
    status: str | None = None


class A2APollingStartedEvent(A2AEvent):
    type: Literal["a2a_polling_started"] = "a2a_polling_started"
    interval_s: float | None = None


class A2APollingStatusEvent(A2AEvent):
    type: Literal["a2a_polling_status"] = "a2a_polling_status"
    status: str | None = None
    poll_count: int | None = None


class A2APushNotificationRegisteredEvent(A2AEvent):
    type: Literal["a2a_push_notification_registered"] = "a2a_push_notification_registered"
    callback_url: str | None = None


class A2APushNotificationReceivedEvent(A2AEvent):
    type: Literal["a2a_push_notification_received"] = "a2a_push_notification_received"
    status: str | None = None


class A2APushNotificationSentEvent(A2AEvent):
    type: Literal["a2a_push_notification_sent"] = "a2a_push_notification_sent"
    callback_url: str | None = None


class A2APushNotificationTimeoutEvent(A2AEvent):
    type: Literal["a2a_push_notification_timeout"] = "a2a_push_notification_timeout"
    timeout_s: float | None = None


class A2AStreamingStartedEvent(A2AEvent):
    type: Literal["a2a_streaming_started"] = "a2a_streaming_started"


class A2AStreamingChunkEvent(A2AEvent):
    type: Literal["a2a_streaming_chunk"] = "a2a_streaming_chunk"
    chunk: str | None = None


class A2AAgentCardFetchedEvent(A2AEvent):
    type: Literal["a2a_agent_card_fetched"] = "a2a_agent_card_fetched"
    agent_card: dict[str, Any] | None = None


class A2AAuthenticationFailedEvent(A2AEvent):
    type: Literal["a2a_authentication_failed"] = "a2a_authentication_failed"
    error: str | None = None


class A2AArtifactReceivedEvent(A2AEvent):
    type: Literal["a2a_artifact_received"] = "a2a_artifact_received"
    artifact_name: str | None = None
    mime_type: str | None = None


class A2AConnectionErrorEvent(A2AEvent):
    type: Literal["a2a_connection_error"] = "a2a_connection_error"
    error: str | None = None


class A2AServerTaskStartedEvent(A2AEvent):
    type: Literal["a2a_server_task_started"] = "a2a_server_task_started"


class A2AServerTaskCompletedEvent(A2AEvent):
    type: Literal["a2a_server_task_completed"] = "a2a_server_task_completed"
    result: str | None = None


class A2AServerTaskCanceledEvent(A2AEvent):
    type: Literal["a2a_server_task_canceled"] = "a2a_server_task_canceled"


class A2AServerTaskFailedEvent(A2AEvent):
    type: Literal["a2a_server_task_failed"] = "a2a_server_task_failed"
    error: str | None = None


class A2AParallelDelegationStartedEvent(A2AEvent):
    type: Literal["a2a_parallel_delegation_started"] = "a2a_parallel_delegation_started"
    endpoints: list[str] | None = None


class A2AParallelDelegationCompletedEvent(A2AEvent):
    type: Literal["a2a_parallel_delegation_completed"] = "a2a_parallel_delegation_completed"
    success_count: int | None = None
    failure_count: int | None = None


class A2ATransportNegotiatedEvent(A2AEvent):
    type: Literal["a2a_transport_negotiated"] = "a2a_transport_negotiated"
    transport: str | None = None


class A2AContentTypeNegotiatedEvent(A2AEvent):
    type: Literal["a2a_content_type_negotiated"] = "a2a_content_type_negotiated"
    content_type: str | None = None


class A2AContextCreatedEvent(A2AEvent):
    type: Literal["a2a_context_created"] = "a2a_context_created"


class A2AContextExpiredEvent(A2AEvent):
    type: Literal["a2a_context_expired"] = "a2a_context_expired"


class A2AContextIdleEvent(A2AEvent):
    type: Literal["a2a_context_idle"] = "a2a_context_idle"
    idle_seconds: float | None = None


class A2AContextCompletedEvent(A2AEvent):
    type: Literal["a2a_context_completed"] = "a2a_context_completed"


class A2AContextPrunedEvent(A2AEvent):
    type: Literal["a2a_context_pruned"] = "a2a_context_pruned"
    reason: str | None = None
