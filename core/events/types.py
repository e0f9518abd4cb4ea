"""The event catalogue: one pydantic class per event name crewpoint accepts.

Every name of the checkpointing catalogue has a class here, named in CamelCase with an ``Event`` suffix
(``llm_call_completed`` -> :class:`LLMCallCompletedEvent`), plus crewpoint's own checkpoint lifecycle events.
All extra fields are optional. Families share a base class (:class:`LLMEvent`, :class:`ToolEvent`, ...), so a
handler can subscribe to a whole family with ``@event_bus.on(LLMEvent)``.

Classes whose ``emitted`` is False are accepted everywhere (subscriptions, ``on_events``) but the runtime
never emits them, because crewpoint has no such feature (A2A, MCP, skills, training, ...).

Classes live in one module per family (``family_task``, ``family_llm``, ...) and are built on first use:
``from crewpoint.events import LLMCallCompletedEvent`` works as ever, but importing crewpoint builds only the
families it uses. The tables below (names, classes, never emitted) are checked against the classes by a test.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from crewpoint.events.base import BaseEvent

CheckpointEventType = Literal[
    "task_started",
    "task_completed",
    "task_failed",
    "task_evaluation",
    "crew_kickoff_started",
    "crew_kickoff_completed",
    "crew_kickoff_failed",
    "crew_train_started",
    "crew_train_completed",
    "crew_train_failed",
    "crew_test_started",
    "crew_test_completed",
    "crew_test_failed",
    "crew_test_result",
    "agent_execution_started",
    "agent_execution_completed",
    "agent_execution_error",
    "lite_agent_execution_started",
    "lite_agent_execution_completed",
    "lite_agent_execution_error",
    "agent_evaluation_started",
    "agent_evaluation_completed",
    "agent_evaluation_failed",
    "flow_created",
    "flow_started",
    "flow_finished",
    "flow_paused",
    "method_execution_started",
    "method_execution_finished",
    "method_execution_failed",
    "method_execution_paused",
    "human_feedback_requested",
    "human_feedback_received",
    "flow_input_requested",
    "flow_input_received",
    "llm_call_started",
    "llm_call_completed",
    "llm_call_failed",
    "llm_stream_chunk",
    "llm_thinking_chunk",
    "llm_guardrail_started",
    "llm_guardrail_completed",
    "llm_guardrail_failed",
    "tool_usage_started",
    "tool_usage_finished",
    "tool_usage_error",
    "tool_validate_input_error",
    "tool_selection_error",
    "tool_execution_error",
    "memory_save_started",
    "memory_save_completed",
    "memory_save_failed",
    "memory_query_started",
    "memory_query_completed",
    "memory_query_failed",
    "memory_retrieval_started",
    "memory_retrieval_completed",
    "memory_retrieval_failed",
    "knowledge_search_query_started",
    "knowledge_search_query_completed",
    "knowledge_query_started",
    "knowledge_query_completed",
    "knowledge_query_failed",
    "knowledge_search_query_failed",
    "agent_reasoning_started",
    "agent_reasoning_completed",
    "agent_reasoning_failed",
    "mcp_connection_started",
    "mcp_connection_completed",
    "mcp_connection_failed",
    "mcp_tool_execution_started",
    "mcp_tool_execution_completed",
    "mcp_tool_execution_failed",
    "mcp_config_fetch_failed",
    "step_observation_started",
    "step_observation_completed",
    "step_observation_failed",
    "plan_refinement",
    "plan_replan_triggered",
    "goal_achieved_early",
    "skill_discovery_started",
    "skill_discovery_completed",
    "skill_loaded",
    "skill_activated",
    "skill_load_failed",
    "agent_logs_started",
    "agent_logs_execution",
    "a2a_delegation_started",
    "a2a_delegation_completed",
    "a2a_conversation_started",
    "a2a_conversation_completed",
    "a2a_message_sent",
    "a2a_response_received",
    "a2a_polling_started",
    "a2a_polling_status",
    "a2a_push_notification_registered",
    "a2a_push_notification_received",
    "a2a_push_notification_sent",
    "a2a_push_notification_timeout",
    "a2a_streaming_started",
    "a2a_streaming_chunk",
    "a2a_agent_card_fetched",
    "a2a_authentication_failed",
    "a2a_artifact_received",
    "a2a_connection_error",
    "a2a_server_task_started",
    "a2a_server_task_completed",
    "a2a_server_task_canceled",
    "a2a_server_task_failed",
    "a2a_parallel_delegation_started",
    "a2a_parallel_delegation_completed",
    "a2a_transport_negotiated",
    "a2a_content_type_negotiated",
    "a2a_context_created",
    "a2a_context_expired",
    "a2a_context_idle",
    "a2a_context_completed",
    "a2a_context_pruned",
    "SIGTERM",
    "SIGINT",
    "SIGHUP",
    "SIGTSTP",
    "SIGCONT",
    "checkpoint_started",
    "checkpoint_completed",
    "checkpoint_failed",
    "checkpoint_restored",
    "checkpoint_forked",
    "checkpoint_pruned",
]
"""Every event name (the seed catalogue, then the checkpoint lifecycle); ``"*"`` is accepted separately."""


_FAMILY_OF: dict[str, str] = {
    "TaskEvent": "task",
    "TaskStartedEvent": "task",
    "TaskCompletedEvent": "task",
    "TaskFailedEvent": "task",
    "TaskEvaluationEvent": "task",
    "CrewEvent": "crew",
    "CrewKickoffStartedEvent": "crew",
    "CrewKickoffCompletedEvent": "crew",
    "CrewKickoffFailedEvent": "crew",
    "CrewTrainStartedEvent": "crew",
    "CrewTrainCompletedEvent": "crew",
    "CrewTrainFailedEvent": "crew",
    "CrewTestStartedEvent": "crew",
    "CrewTestCompletedEvent": "crew",
    "CrewTestFailedEvent": "crew",
    "CrewTestResultEvent": "crew",
    "AgentEvent": "agent",
    "AgentExecutionStartedEvent": "agent",
    "AgentExecutionCompletedEvent": "agent",
    "AgentExecutionErrorEvent": "agent",
    "LiteAgentExecutionStartedEvent": "agent",
    "LiteAgentExecutionCompletedEvent": "agent",
    "LiteAgentExecutionErrorEvent": "agent",
    "AgentEvaluationStartedEvent": "agent",
    "AgentEvaluationCompletedEvent": "agent",
    "AgentEvaluationFailedEvent": "agent",
    "FlowEvent": "flow",
    "FlowCreatedEvent": "flow",
    "FlowStartedEvent": "flow",
    "FlowFinishedEvent": "flow",
    "FlowPausedEvent": "flow",
    "MethodEvent": "flow",
    "MethodExecutionStartedEvent": "flow",
    "MethodExecutionFinishedEvent": "flow",
    "MethodExecutionFailedEvent": "flow",
    "MethodExecutionPausedEvent": "flow",
    "HumanFeedbackRequestedEvent": "flow",
    "HumanFeedbackReceivedEvent": "flow",
    "FlowInputRequestedEvent": "flow",
    "FlowInputReceivedEvent": "flow",
    "LLMEvent": "llm",
    "LLMCallStartedEvent": "llm",
    "LLMCallCompletedEvent": "llm",
    "LLMCallFailedEvent": "llm",
    "LLMStreamChunkEvent": "llm",
    "LLMThinkingChunkEvent": "llm",
    "LLMGuardrailEvent": "guardrail",
    "LLMGuardrailStartedEvent": "guardrail",
    "LLMGuardrailCompletedEvent": "guardrail",
    "LLMGuardrailFailedEvent": "guardrail",
    "ToolEvent": "tool",
    "ToolUsageStartedEvent": "tool",
    "ToolUsageFinishedEvent": "tool",
    "ToolUsageErrorEvent": "tool",
    "ToolValidateInputErrorEvent": "tool",
    "ToolSelectionErrorEvent": "tool",
    "ToolExecutionErrorEvent": "tool",
    "MemoryEvent": "memory",
    "MemorySaveStartedEvent": "memory",
    "MemorySaveCompletedEvent": "memory",
    "MemorySaveFailedEvent": "memory",
    "MemoryQueryStartedEvent": "memory",
    "MemoryQueryCompletedEvent": "memory",
    "MemoryQueryFailedEvent": "memory",
    "MemoryRetrievalStartedEvent": "memory",
    "MemoryRetrievalCompletedEvent": "memory",
    "MemoryRetrievalFailedEvent": "memory",
    "KnowledgeEvent": "knowledge",
    "KnowledgeSearchQueryStartedEvent": "knowledge",
    "KnowledgeSearchQueryCompletedEvent": "knowledge",
    "KnowledgeQueryStartedEvent": "knowledge",
    "KnowledgeQueryCompletedEvent": "knowledge",
    "KnowledgeQueryFailedEvent": "knowledge",
    "KnowledgeSearchQueryFailedEvent": "knowledge",
    "ReasoningEvent": "reasoning",
    "AgentReasoningStartedEvent": "reasoning",
    "AgentReasoningCompletedEvent": "reasoning",
    "AgentReasoningFailedEvent": "reasoning",
    "MCPEvent": "mcp",
    "MCPConnectionStartedEvent": "mcp",
    "MCPConnectionCompletedEvent": "mcp",
    "MCPConnectionFailedEvent": "mcp",
    "MCPToolExecutionStartedEvent": "mcp",
    "MCPToolExecutionCompletedEvent": "mcp",
    "MCPToolExecutionFailedEvent": "mcp",
    "MCPConfigFetchFailedEvent": "mcp",
    "ObservationEvent": "observation",
    "StepObservationStartedEvent": "observation",
    "StepObservationCompletedEvent": "observation",
    "StepObservationFailedEvent": "observation",
    "PlanRefinementEvent": "observation",
    "PlanReplanTriggeredEvent": "observation",
    "GoalAchievedEarlyEvent": "observation",
    "SkillEvent": "skill",
    "SkillDiscoveryStartedEvent": "skill",
    "SkillDiscoveryCompletedEvent": "skill",
    "SkillLoadedEvent": "skill",
    "SkillActivatedEvent": "skill",
    "SkillLoadFailedEvent": "skill",
    "AgentLogsEvent": "logging",
    "AgentLogsStartedEvent": "logging",
    "AgentLogsExecutionEvent": "logging",
    "A2AEvent": "a2a",
    "A2ADelegationStartedEvent": "a2a",
    "A2ADelegationCompletedEvent": "a2a",
    "A2AConversationStartedEvent": "a2a",
    "A2AConversationCompletedEvent": "a2a",
    "A2AMessageSentEvent": "a2a",
    "A2AResponseReceivedEvent": "a2a",
    "A2APollingStartedEvent": "a2a",
    "A2APollingStatusEvent": "a2a",
    "A2APushNotificationRegisteredEvent": "a2a",
    "A2APushNotificationReceivedEvent": "a2a",
    "A2APushNotificationSentEvent": "a2a",
    "A2APushNotificationTimeoutEvent": "a2a",
    "A2AStreamingStartedEvent": "a2a",
    "A2AStreamingChunkEvent": "a2a",
    "A2AAgentCardFetchedEvent": "a2a",
    "A2AAuthenticationFailedEvent": "a2a",
    "A2AArtifactReceivedEvent": "a2a",
    "A2AConnectionErrorEvent": "a2a",
    "A2AServerTaskStartedEvent": "a2a",
    "A2AServerTaskCompletedEvent": "a2a",
    "A2AServerTaskCanceledEvent": "a2a",
    "A2AServerTaskFailedEvent": "a2a",
    "A2AParallelDelegationStartedEvent": "a2a",
    "A2AParallelDelegationCompletedEvent": "a2a",
    "A2ATransportNegotiatedEvent": "a2a",
    "A2AContentTypeNegotiatedEvent": "a2a",
    "A2AContextCreatedEvent": "a2a",
    "A2AContextExpiredEvent": "a2a",
    "A2AContextIdleEvent": "a2a",
    "A2AContextCompletedEvent": "a2a",
    "A2AContextPrunedEvent": "a2a",
    "SignalEvent": "signals",
    "SigtermEvent": "signals",
    "SigintEvent": "signals",
    "SighupEvent": "signals",
    "SigtstpEvent": "signals",
    "SigcontEvent": "signals",
    "CheckpointEvent": "checkpoint",
    "CheckpointStartedEvent": "checkpoint",
    "CheckpointCompletedEvent": "checkpoint",
    "CheckpointFailedEvent": "checkpoint",
    "CheckpointRestoredEvent": "checkpoint",
    "CheckpointForkedEvent": "checkpoint",
    "CheckpointPrunedEvent": "checkpoint",
}
"""Class name -> the family module (``crewpoint.events.family_<name>``) that defines it."""

_CLASS_OF: dict[str, str] = {
    "task_started": "TaskStartedEvent",
    "task_completed": "TaskCompletedEvent",
    "task_failed": "TaskFailedEvent",
    "task_evaluation": "TaskEvaluationEvent",
    "crew_kickoff_started": "CrewKickoffStartedEvent",
    "crew_kickoff_completed": "CrewKickoffCompletedEvent",
    "crew_kickoff_failed": "CrewKickoffFailedEvent",
    "crew_train_started": "CrewTrainStartedEvent",
    "crew_train_completed": "CrewTrainCompletedEvent",
    "crew_train_failed": "CrewTrainFailedEvent",
    "crew_test_started": "CrewTestStartedEvent",
    "crew_test_completed": "CrewTestCompletedEvent",
    "crew_test_failed": "CrewTestFailedEvent",
    "crew_test_result": "CrewTestResultEvent",
    "agent_execution_started": "AgentExecutionStartedEvent",
    "agent_execution_completed": "AgentExecutionCompletedEvent",
    "agent_execution_error": "AgentExecutionErrorEvent",
    "lite_agent_execution_started": "LiteAgentExecutionStartedEvent",
    "lite_agent_execution_completed": "LiteAgentExecutionCompletedEvent",
    "lite_agent_execution_error": "LiteAgentExecutionErrorEvent",
    "agent_evaluation_started": "AgentEvaluationStartedEvent",
    "agent_evaluation_completed": "AgentEvaluationCompletedEvent",
    "agent_evaluation_failed": "AgentEvaluationFailedEvent",
    "flow_created": "FlowCreatedEvent",
    "flow_started": "FlowStartedEvent",
    "flow_finished": "FlowFinishedEvent",
    "flow_paused": "FlowPausedEvent",
    "method_execution_started": "MethodExecutionStartedEvent",
    "method_execution_finished": "MethodExecutionFinishedEvent",
    "method_execution_failed": "MethodExecutionFailedEvent",
    "method_execution_paused": "MethodExecutionPausedEvent",
    "human_feedback_requested": "HumanFeedbackRequestedEvent",
    "human_feedback_received": "HumanFeedbackReceivedEvent",
    "flow_input_requested": "FlowInputRequestedEvent",
    "flow_input_received": "FlowInputReceivedEvent",
    "llm_call_started": "LLMCallStartedEvent",
    "llm_call_completed": "LLMCallCompletedEvent",
    "llm_call_failed": "LLMCallFailedEvent",
    "llm_stream_chunk": "LLMStreamChunkEvent",
    "llm_thinking_chunk": "LLMThinkingChunkEvent",
    "llm_guardrail_started": "LLMGuardrailStartedEvent",
    "llm_guardrail_completed": "LLMGuardrailCompletedEvent",
    "llm_guardrail_failed": "LLMGuardrailFailedEvent",
    "tool_usage_started": "ToolUsageStartedEvent",
    "tool_usage_finished": "ToolUsageFinishedEvent",
    "tool_usage_error": "ToolUsageErrorEvent",
    "tool_validate_input_error": "ToolValidateInputErrorEvent",
    "tool_selection_error": "ToolSelectionErrorEvent",
    "tool_execution_error": "ToolExecutionErrorEvent",
    "memory_save_started": "MemorySaveStartedEvent",
    "memory_save_completed": "MemorySaveCompletedEvent",
    "memory_save_failed": "MemorySaveFailedEvent",
    "memory_query_started": "MemoryQueryStartedEvent",
    "memory_query_completed": "MemoryQueryCompletedEvent",
    "memory_query_failed": "MemoryQueryFailedEvent",
    "memory_retrieval_started": "MemoryRetrievalStartedEvent",
    "memory_retrieval_completed": "MemoryRetrievalCompletedEvent",
    "memory_retrieval_failed": "MemoryRetrievalFailedEvent",
    "knowledge_search_query_started": "KnowledgeSearchQueryStartedEvent",
    "knowledge_search_query_completed": "KnowledgeSearchQueryCompletedEvent",
    "knowledge_query_started": "KnowledgeQueryStartedEvent",
    "knowledge_query_completed": "KnowledgeQueryCompletedEvent",
    "knowledge_query_failed": "KnowledgeQueryFailedEvent",
    "knowledge_search_query_failed": "KnowledgeSearchQueryFailedEvent",
    "agent_reasoning_started": "AgentReasoningStartedEvent",
    "agent_reasoning_completed": "AgentReasoningCompletedEvent",
    "agent_reasoning_failed": "AgentReasoningFailedEvent",
    "mcp_connection_started": "MCPConnectionStartedEvent",
    "mcp_connection_completed": "MCPConnectionCompletedEvent",
    "mcp_connection_failed": "MCPConnectionFailedEvent",
    "mcp_tool_execution_started": "MCPToolExecutionStartedEvent",
    "mcp_tool_execution_completed": "MCPToolExecutionCompletedEvent",
    "mcp_tool_execution_failed": "MCPToolExecutionFailedEvent",
    "mcp_config_fetch_failed": "MCPConfigFetchFailedEvent",
    "step_observation_started": "StepObservationStartedEvent",
    "step_observation_completed": "StepObservationCompletedEvent",
    "step_observation_failed": "StepObservationFailedEvent",
    "plan_refinement": "PlanRefinementEvent",
    "plan_replan_triggered": "PlanReplanTriggeredEvent",
    "goal_achieved_early": "GoalAchievedEarlyEvent",
    "skill_discovery_started": "SkillDiscoveryStartedEvent",
    "skill_discovery_completed": "SkillDiscoveryCompletedEvent",
    "skill_loaded": "SkillLoadedEvent",
    "skill_activated": "SkillActivatedEvent",
    "skill_load_failed": "SkillLoadFailedEvent",
    "agent_logs_started": "AgentLogsStartedEvent",
    "agent_logs_execution": "AgentLogsExecutionEvent",
    "a2a_delegation_started": "A2ADelegationStartedEvent",
    "a2a_delegation_completed": "A2ADelegationCompletedEvent",
    "a2a_conversation_started": "A2AConversationStartedEvent",
    "a2a_conversation_completed": "A2AConversationCompletedEvent",
    "a2a_message_sent": "A2AMessageSentEvent",
    "a2a_response_received": "A2AResponseReceivedEvent",
    "a2a_polling_started": "A2APollingStartedEvent",
    "a2a_polling_status": "A2APollingStatusEvent",
    "a2a_push_notification_registered": "A2APushNotificationRegisteredEvent",
    "a2a_push_notification_received": "A2APushNotificationReceivedEvent",
    "a2a_push_notification_sent": "A2APushNotificationSentEvent",
    "a2a_push_notification_timeout": "A2APushNotificationTimeoutEvent",
    "a2a_streaming_started": "A2AStreamingStartedEvent",
    "a2a_streaming_chunk": "A2AStreamingChunkEvent",
    "a2a_agent_card_fetched": "A2AAgentCardFetchedEvent",
    "a2a_authentication_failed": "A2AAuthenticationFailedEvent",
    "a2a_artifact_received": "A2AArtifactReceivedEvent",
    "a2a_connection_error": "A2AConnectionErrorEvent",
    "a2a_server_task_started": "A2AServerTaskStartedEvent",
    "a2a_server_task_completed": "A2AServerTaskCompletedEvent",
    "a2a_server_task_canceled": "A2AServerTaskCanceledEvent",
    "a2a_server_task_failed": "A2AServerTaskFailedEvent",
    "a2a_parallel_delegation_started": "A2AParallelDelegationStartedEvent",
    "a2a_parallel_delegation_completed": "A2AParallelDelegationCompletedEvent",
    "a2a_transport_negotiated": "A2ATransportNegotiatedEvent",
    "a2a_content_type_negotiated": "A2AContentTypeNegotiatedEvent",
    "a2a_context_created": "A2AContextCreatedEvent",
    "a2a_context_expired": "A2AContextExpiredEvent",
    "a2a_context_idle": "A2AContextIdleEvent",
    "a2a_context_completed": "A2AContextCompletedEvent",
    "a2a_context_pruned": "A2AContextPrunedEvent",
    "SIGTERM": "SigtermEvent",
    "SIGINT": "SigintEvent",
    "SIGHUP": "SighupEvent",
    "SIGTSTP": "SigtstpEvent",
    "SIGCONT": "SigcontEvent",
    "checkpoint_started": "CheckpointStartedEvent",
    "checkpoint_completed": "CheckpointCompletedEvent",
    "checkpoint_failed": "CheckpointFailedEvent",
    "checkpoint_restored": "CheckpointRestoredEvent",
    "checkpoint_forked": "CheckpointForkedEvent",
    "checkpoint_pruned": "CheckpointPrunedEvent",
}
"""Event name -> class name, in catalogue order, checkpoint lifecycle events last."""

NEVER_EMITTED: frozenset[str] = frozenset(
    {
        "a2a_agent_card_fetched",
        "a2a_artifact_received",
        "a2a_authentication_failed",
        "a2a_connection_error",
        "a2a_content_type_negotiated",
        "a2a_context_completed",
        "a2a_context_created",
        "a2a_context_expired",
        "a2a_context_idle",
        "a2a_context_pruned",
        "a2a_conversation_completed",
        "a2a_conversation_started",
        "a2a_delegation_completed",
        "a2a_delegation_started",
        "a2a_message_sent",
        "a2a_parallel_delegation_completed",
        "a2a_parallel_delegation_started",
        "a2a_polling_started",
        "a2a_polling_status",
        "a2a_push_notification_received",
        "a2a_push_notification_registered",
        "a2a_push_notification_sent",
        "a2a_push_notification_timeout",
        "a2a_response_received",
        "a2a_server_task_canceled",
        "a2a_server_task_completed",
        "a2a_server_task_failed",
        "a2a_server_task_started",
        "a2a_streaming_chunk",
        "a2a_streaming_started",
        "a2a_transport_negotiated",
        "agent_evaluation_completed",
        "agent_evaluation_failed",
        "agent_evaluation_started",
        "agent_logs_execution",
        "agent_logs_started",
        "agent_reasoning_completed",
        "agent_reasoning_failed",
        "agent_reasoning_started",
        "crew_test_completed",
        "crew_test_failed",
        "crew_test_result",
        "crew_test_started",
        "crew_train_completed",
        "crew_train_failed",
        "crew_train_started",
        "flow_input_received",
        "flow_input_requested",
        "flow_paused",
        "goal_achieved_early",
        "human_feedback_received",
        "human_feedback_requested",
        "llm_thinking_chunk",
        "mcp_config_fetch_failed",
        "mcp_connection_completed",
        "mcp_connection_failed",
        "mcp_connection_started",
        "mcp_tool_execution_completed",
        "mcp_tool_execution_failed",
        "mcp_tool_execution_started",
        "method_execution_paused",
        "plan_refinement",
        "plan_replan_triggered",
        "skill_activated",
        "skill_discovery_completed",
        "skill_discovery_started",
        "skill_load_failed",
        "skill_loaded",
        "step_observation_completed",
        "step_observation_failed",
        "step_observation_started",
        "task_evaluation",
        "tool_execution_error",
        "tool_selection_error",
        "tool_validate_input_error",
    }
)
"""Names that are accepted (subscriptions, ``on_events``) but that the runtime never emits."""

CATALOGUE_NAMES: tuple[str, ...] = tuple(name for name in _CLASS_OF if not name.startswith("checkpoint_"))
"""The names of the checkpointing catalogue (without crewpoint's checkpoint lifecycle events)."""


def __getattr__(name: str) -> Any:
    family = _FAMILY_OF.get(name)
    if family is None:
        raise AttributeError(f"module 'crewpoint.events.types' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"crewpoint.events.family_{family}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_FAMILY_OF])


class _EventTypes(Mapping[str, type[BaseEvent]]):
    """Event name -> class; a class is built when it is first looked up."""

    def __getitem__(self, name: str) -> type[BaseEvent]:
        class_name = _CLASS_OF[name]
        cls: type[BaseEvent] = __getattr__(class_name) if class_name not in globals() else globals()[class_name]
        return cls

    def __contains__(self, name: object) -> bool:
        return name in _CLASS_OF

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASS_OF)

    def __len__(self) -> int:
        return len(_CLASS_OF)

    def __repr__(self) -> str:
        return f"<{len(_CLASS_OF)} crewpoint event types>"


EVENT_TYPES: Mapping[str, type[BaseEvent]] = _EventTypes()
"""Event name -> class, in catalogue order, checkpoint lifecycle events last."""


def event_class(name: str) -> type[BaseEvent]:
    """The class for an event name; raises ``ValueError`` naming the unknown name."""
    try:
        return EVENT_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown event type {name!r}; see crewpoint.events.EVENT_TYPES") from None


def parse_event(data: Mapping[str, Any]) -> BaseEvent:
    """Rebuild an event from its ``compact()`` dict.

    An unknown ``type`` (a newer version's event, say) gives a plain :class:`BaseEvent` keeping every field.
    Data that does not fit its known class raises ``pydantic.ValidationError`` (a ``ValueError``).
    """
    name = str(data.get("type"))
    cls = EVENT_TYPES[name] if name in _CLASS_OF else BaseEvent
    return cls.model_validate(dict(data))


if TYPE_CHECKING:
    from crewpoint.events.family_a2a import (
        A2AAgentCardFetchedEvent as A2AAgentCardFetchedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AArtifactReceivedEvent as A2AArtifactReceivedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AAuthenticationFailedEvent as A2AAuthenticationFailedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AConnectionErrorEvent as A2AConnectionErrorEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AContentTypeNegotiatedEvent as A2AContentTypeNegotiatedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AContextCompletedEvent as A2AContextCompletedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AContextCreatedEvent as A2AContextCreatedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AContextExpiredEvent as A2AContextExpiredEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AContextIdleEvent as A2AContextIdleEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AContextPrunedEvent as A2AContextPrunedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AConversationCompletedEvent as A2AConversationCompletedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AConversationStartedEvent as A2AConversationStartedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2ADelegationCompletedEvent as A2ADelegationCompletedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2ADelegationStartedEvent as A2ADelegationStartedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AEvent as A2AEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AMessageSentEvent as A2AMessageSentEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AParallelDelegationCompletedEvent as A2AParallelDelegationCompletedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AParallelDelegationStartedEvent as A2AParallelDelegationStartedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2APollingStartedEvent as A2APollingStartedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2APollingStatusEvent as A2APollingStatusEvent,
    )
    from crewpoint.events.family_a2a import (
        A2APushNotificationReceivedEvent as A2APushNotificationReceivedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2APushNotificationRegisteredEvent as A2APushNotificationRegisteredEvent,
    )
    from crewpoint.events.family_a2a import (
        A2APushNotificationSentEvent as A2APushNotificationSentEvent,
    )
    from crewpoint.events.family_a2a import (
        A2APushNotificationTimeoutEvent as A2APushNotificationTimeoutEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AResponseReceivedEvent as A2AResponseReceivedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AServerTaskCanceledEvent as A2AServerTaskCanceledEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AServerTaskCompletedEvent as A2AServerTaskCompletedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AServerTaskFailedEvent as A2AServerTaskFailedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AServerTaskStartedEvent as A2AServerTaskStartedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AStreamingChunkEvent as A2AStreamingChunkEvent,
    )
    from crewpoint.events.family_a2a import (
        A2AStreamingStartedEvent as A2AStreamingStartedEvent,
    )
    from crewpoint.events.family_a2a import (
        A2ATransportNegotiatedEvent as A2ATransportNegotiatedEvent,
    )
    from crewpoint.events.family_agent import (
        AgentEvaluationCompletedEvent as AgentEvaluationCompletedEvent,
    )
    from crewpoint.events.family_agent import (
        AgentEvaluationFailedEvent as AgentEvaluationFailedEvent,
    )
    from crewpoint.events.family_agent import (
        AgentEvaluationStartedEvent as AgentEvaluationStartedEvent,
    )
    from crewpoint.events.family_agent import (
        AgentEvent as AgentEvent,
    )
    from crewpoint.events.family_agent import (
        AgentExecutionCompletedEvent as AgentExecutionCompletedEvent,
    )
    from crewpoint.events.family_agent import (
        AgentExecutionErrorEvent as AgentExecutionErrorEvent,
    )
    from crewpoint.events.family_agent import (
        AgentExecutionStartedEvent as AgentExecutionStartedEvent,
    )
    from crewpoint.events.family_agent import (
        LiteAgentExecutionCompletedEvent as LiteAgentExecutionCompletedEvent,
    )
    from crewpoint.events.family_agent import (
        LiteAgentExecutionErrorEvent as LiteAgentExecutionErrorEvent,
    )
    from crewpoint.events.family_agent import (
        LiteAgentExecutionStartedEvent as LiteAgentExecutionStartedEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointCompletedEvent as CheckpointCompletedEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointEvent as CheckpointEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointFailedEvent as CheckpointFailedEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointForkedEvent as CheckpointForkedEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointPrunedEvent as CheckpointPrunedEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointRestoredEvent as CheckpointRestoredEvent,
    )
    from crewpoint.events.family_checkpoint import (
        CheckpointStartedEvent as CheckpointStartedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewEvent as CrewEvent,
    )
    from crewpoint.events.family_crew import (
        CrewKickoffCompletedEvent as CrewKickoffCompletedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewKickoffFailedEvent as CrewKickoffFailedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewKickoffStartedEvent as CrewKickoffStartedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTestCompletedEvent as CrewTestCompletedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTestFailedEvent as CrewTestFailedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTestResultEvent as CrewTestResultEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTestStartedEvent as CrewTestStartedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTrainCompletedEvent as CrewTrainCompletedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTrainFailedEvent as CrewTrainFailedEvent,
    )
    from crewpoint.events.family_crew import (
        CrewTrainStartedEvent as CrewTrainStartedEvent,
    )
    from crewpoint.events.family_flow import (
        FlowCreatedEvent as FlowCreatedEvent,
    )
    from crewpoint.events.family_flow import (
        FlowEvent as FlowEvent,
    )
    from crewpoint.events.family_flow import (
        FlowFinishedEvent as FlowFinishedEvent,
    )
    from crewpoint.events.family_flow import (
        FlowInputReceivedEvent as FlowInputReceivedEvent,
    )
    from crewpoint.events.family_flow import (
        FlowInputRequestedEvent as FlowInputRequestedEvent,
    )
    from crewpoint.events.family_flow import (
        FlowPausedEvent as FlowPausedEvent,
    )
    from crewpoint.events.family_flow import (
        FlowStartedEvent as FlowStartedEvent,
    )
    from crewpoint.events.family_flow import (
        HumanFeedbackReceivedEvent as HumanFeedbackReceivedEvent,
    )
    from crewpoint.events.family_flow import (
        HumanFeedbackRequestedEvent as HumanFeedbackRequestedEvent,
    )
    from crewpoint.events.family_flow import (
        MethodEvent as MethodEvent,
    )
    from crewpoint.events.family_flow import (
        MethodExecutionFailedEvent as MethodExecutionFailedEvent,
    )
    from crewpoint.events.family_flow import (
        MethodExecutionFinishedEvent as MethodExecutionFinishedEvent,
    )
    from crewpoint.events.family_flow import (
        MethodExecutionPausedEvent as MethodExecutionPausedEvent,
    )
    from crewpoint.events.family_flow import (
        MethodExecutionStartedEvent as MethodExecutionStartedEvent,
    )
    from crewpoint.events.family_guardrail import (
        LLMGuardrailCompletedEvent as LLMGuardrailCompletedEvent,
    )
    from crewpoint.events.family_guardrail import (
        LLMGuardrailEvent as LLMGuardrailEvent,
    )
    from crewpoint.events.family_guardrail import (
        LLMGuardrailFailedEvent as LLMGuardrailFailedEvent,
    )
    from crewpoint.events.family_guardrail import (
        LLMGuardrailStartedEvent as LLMGuardrailStartedEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeEvent as KnowledgeEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeQueryCompletedEvent as KnowledgeQueryCompletedEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeQueryFailedEvent as KnowledgeQueryFailedEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeQueryStartedEvent as KnowledgeQueryStartedEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeSearchQueryCompletedEvent as KnowledgeSearchQueryCompletedEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeSearchQueryFailedEvent as KnowledgeSearchQueryFailedEvent,
    )
    from crewpoint.events.family_knowledge import (
        KnowledgeSearchQueryStartedEvent as KnowledgeSearchQueryStartedEvent,
    )
    from crewpoint.events.family_llm import (
        LLMCallCompletedEvent as LLMCallCompletedEvent,
    )
    from crewpoint.events.family_llm import (
        LLMCallFailedEvent as LLMCallFailedEvent,
    )
    from crewpoint.events.family_llm import (
        LLMCallStartedEvent as LLMCallStartedEvent,
    )
    from crewpoint.events.family_llm import (
        LLMEvent as LLMEvent,
    )
    from crewpoint.events.family_llm import (
        LLMStreamChunkEvent as LLMStreamChunkEvent,
    )
    from crewpoint.events.family_llm import (
        LLMThinkingChunkEvent as LLMThinkingChunkEvent,
    )
    from crewpoint.events.family_logging import (
        AgentLogsEvent as AgentLogsEvent,
    )
    from crewpoint.events.family_logging import (
        AgentLogsExecutionEvent as AgentLogsExecutionEvent,
    )
    from crewpoint.events.family_logging import (
        AgentLogsStartedEvent as AgentLogsStartedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPConfigFetchFailedEvent as MCPConfigFetchFailedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPConnectionCompletedEvent as MCPConnectionCompletedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPConnectionFailedEvent as MCPConnectionFailedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPConnectionStartedEvent as MCPConnectionStartedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPEvent as MCPEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPToolExecutionCompletedEvent as MCPToolExecutionCompletedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPToolExecutionFailedEvent as MCPToolExecutionFailedEvent,
    )
    from crewpoint.events.family_mcp import (
        MCPToolExecutionStartedEvent as MCPToolExecutionStartedEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryEvent as MemoryEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryQueryCompletedEvent as MemoryQueryCompletedEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryQueryFailedEvent as MemoryQueryFailedEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryQueryStartedEvent as MemoryQueryStartedEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryRetrievalCompletedEvent as MemoryRetrievalCompletedEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryRetrievalFailedEvent as MemoryRetrievalFailedEvent,
    )
    from crewpoint.events.family_memory import (
        MemoryRetrievalStartedEvent as MemoryRetrievalStartedEvent,
    )
    from crewpoint.events.family_memory import (
        MemorySaveCompletedEvent as MemorySaveCompletedEvent,
    )
    from crewpoint.events.family_memory import (
        MemorySaveFailedEvent as MemorySaveFailedEvent,
    )
    from crewpoint.events.family_memory import (
        MemorySaveStartedEvent as MemorySaveStartedEvent,
    )
    from crewpoint.events.family_observation import (
        GoalAchievedEarlyEvent as GoalAchievedEarlyEvent,
    )
    from crewpoint.events.family_observation import (
        ObservationEvent as ObservationEvent,
    )
    from crewpoint.events.family_observation import (
        PlanRefinementEvent as PlanRefinementEvent,
    )
    from crewpoint.events.family_observation import (
        PlanReplanTriggeredEvent as PlanReplanTriggeredEvent,
    )
    from crewpoint.events.family_observation import (
        StepObservationCompletedEvent as StepObservationCompletedEvent,
    )
    from crewpoint.events.family_observation import (
        StepObservationFailedEvent as StepObservationFailedEvent,
    )
    from crewpoint.events.family_observation import (
        StepObservationStartedEvent as StepObservationStartedEvent,
    )
    from crewpoint.events.family_reasoning import (
        AgentReasoningCompletedEvent as AgentReasoningCompletedEvent,
    )
    from crewpoint.events.family_reasoning import (
        AgentReasoningFailedEvent as AgentReasoningFailedEvent,
    )
    from crewpoint.events.family_reasoning import (
        AgentReasoningStartedEvent as AgentReasoningStartedEvent,
    )
    from crewpoint.events.family_reasoning import (
        ReasoningEvent as ReasoningEvent,
    )
    from crewpoint.events.family_signals import (
        SigcontEvent as SigcontEvent,
    )
    from crewpoint.events.family_signals import (
        SighupEvent as SighupEvent,
    )
    from crewpoint.events.family_signals import (
        SigintEvent as SigintEvent,
    )
    from crewpoint.events.family_signals import (
        SignalEvent as SignalEvent,
    )
    from crewpoint.events.family_signals import (
        SigtermEvent as SigtermEvent,
    )
    from crewpoint.events.family_signals import (
        SigtstpEvent as SigtstpEvent,
    )
    from crewpoint.events.family_skill import (
        SkillActivatedEvent as SkillActivatedEvent,
    )
    from crewpoint.events.family_skill import (
        SkillDiscoveryCompletedEvent as SkillDiscoveryCompletedEvent,
    )
    from crewpoint.events.family_skill import (
        SkillDiscoveryStartedEvent as SkillDiscoveryStartedEvent,
    )
    from crewpoint.events.family_skill import (
        SkillEvent as SkillEvent,
    )
    from crewpoint.events.family_skill import (
        SkillLoadedEvent as SkillLoadedEvent,
    )
    from crewpoint.events.family_skill import (
        SkillLoadFailedEvent as SkillLoadFailedEvent,
    )
    from crewpoint.events.family_task import (
        TaskCompletedEvent as TaskCompletedEvent,
    )
    from crewpoint.events.family_task import (
        TaskEvaluationEvent as TaskEvaluationEvent,
    )
    from crewpoint.events.family_task import (
        TaskEvent as TaskEvent,
    )
    from crewpoint.events.family_task import (
        TaskFailedEvent as TaskFailedEvent,
    )
    from crewpoint.events.family_task import (
        TaskStartedEvent as TaskStartedEvent,
    )
    from crewpoint.events.family_tool import (
        ToolEvent as ToolEvent,
    )
    from crewpoint.events.family_tool import (
        ToolExecutionErrorEvent as ToolExecutionErrorEvent,
    )
    from crewpoint.events.family_tool import (
        ToolSelectionErrorEvent as ToolSelectionErrorEvent,
    )
    from crewpoint.events.family_tool import (
        ToolUsageErrorEvent as ToolUsageErrorEvent,
    )
    from crewpoint.events.family_tool import (
        ToolUsageFinishedEvent as ToolUsageFinishedEvent,
    )
    from crewpoint.events.family_tool import (
        ToolUsageStartedEvent as ToolUsageStartedEvent,
    )
    from crewpoint.events.family_tool import (
        ToolValidateInputErrorEvent as ToolValidateInputErrorEvent,
    )
