"""The event catalogue: one pydantic class per event name crewpoint accepts.

Every name of the checkpointing catalogue has a class here, named in CamelCase with an ``Event`` suffix
(``llm_call_completed`` -> :class:`LLMCallCompletedEvent`), plus crewpoint's own checkpoint lifecycle events.
All extra fields are optional. Families share a base class (:class:`LLMEvent`, :class:`ToolEvent`, ...), so a
handler can subscribe to a whole family with ``@event_bus.on(LLMEvent)``.

Classes whose ``emitted`` is False are accepted everywhere (subscriptions, ``on_events``) but the runtime
never emits them, because crewpoint has no such feature (A2A, MCP, skills, training, ...).
"""

from __future__ import annotations

import signal
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from crewpoint.events.base import BaseEvent


def _signum(name: str) -> int | None:
    sig = getattr(signal, name, None)
    return int(sig) if sig is not None else None


# -- Task ----------------------------------------------------------------------------------------------------


class TaskEvent(BaseEvent):
    """Events about one task of a crew."""

    task_name: str | None = None
    agent_role: str | None = None


class TaskStartedEvent(TaskEvent):
    type: Literal["task_started"] = "task_started"
    description: str | None = None


class TaskCompletedEvent(TaskEvent):
    type: Literal["task_completed"] = "task_completed"
    output: str | None = None


class TaskFailedEvent(TaskEvent):
    type: Literal["task_failed"] = "task_failed"
    error: str | None = None


class TaskEvaluationEvent(TaskEvent):
    type: Literal["task_evaluation"] = "task_evaluation"
    score: float | None = None
    feedback: str | None = None
    emitted: ClassVar[bool] = False


# -- Crew ----------------------------------------------------------------------------------------------------


class CrewEvent(BaseEvent):
    """Events about a crew run, training or test."""

    crew_name: str | None = None


class CrewKickoffStartedEvent(CrewEvent):
    type: Literal["crew_kickoff_started"] = "crew_kickoff_started"
    inputs: dict[str, Any] | None = None


class CrewKickoffCompletedEvent(CrewEvent):
    type: Literal["crew_kickoff_completed"] = "crew_kickoff_completed"
    output: str | None = None
    total_tokens: int | None = None


class CrewKickoffFailedEvent(CrewEvent):
    type: Literal["crew_kickoff_failed"] = "crew_kickoff_failed"
    error: str | None = None


class CrewTrainStartedEvent(CrewEvent):
    type: Literal["crew_train_started"] = "crew_train_started"
    n_iterations: int | None = None
    filename: str | None = None
    inputs: dict[str, Any] | None = None
    emitted: ClassVar[bool] = False


class CrewTrainCompletedEvent(CrewEvent):
    type: Literal["crew_train_completed"] = "crew_train_completed"
    n_iterations: int | None = None
    filename: str | None = None
    emitted: ClassVar[bool] = False


class CrewTrainFailedEvent(CrewEvent):
    type: Literal["crew_train_failed"] = "crew_train_failed"
    error: str | None = None
    emitted: ClassVar[bool] = False


class CrewTestStartedEvent(CrewEvent):
    type: Literal["crew_test_started"] = "crew_test_started"
    n_iterations: int | None = None
    eval_llm: str | None = None
    inputs: dict[str, Any] | None = None
    emitted: ClassVar[bool] = False


class CrewTestCompletedEvent(CrewEvent):
    type: Literal["crew_test_completed"] = "crew_test_completed"
    n_iterations: int | None = None
    emitted: ClassVar[bool] = False


class CrewTestFailedEvent(CrewEvent):
    type: Literal["crew_test_failed"] = "crew_test_failed"
    error: str | None = None
    emitted: ClassVar[bool] = False


class CrewTestResultEvent(CrewEvent):
    type: Literal["crew_test_result"] = "crew_test_result"
    quality: float | None = None
    execution_duration: float | None = None
    model: str | None = None
    emitted: ClassVar[bool] = False


# -- Agent ---------------------------------------------------------------------------------------------------


class AgentEvent(BaseEvent):
    """Events about an agent working on a task or on its own."""

    agent_role: str | None = None


class AgentExecutionStartedEvent(AgentEvent):
    type: Literal["agent_execution_started"] = "agent_execution_started"
    task_prompt: str | None = None
    tools: list[str] | None = None


class AgentExecutionCompletedEvent(AgentEvent):
    type: Literal["agent_execution_completed"] = "agent_execution_completed"
    output: str | None = None


class AgentExecutionErrorEvent(AgentEvent):
    type: Literal["agent_execution_error"] = "agent_execution_error"
    error: str | None = None


class LiteAgentExecutionStartedEvent(AgentEvent):
    type: Literal["lite_agent_execution_started"] = "lite_agent_execution_started"
    messages: list[dict[str, Any]] | None = None
    tools: list[str] | None = None


class LiteAgentExecutionCompletedEvent(AgentEvent):
    type: Literal["lite_agent_execution_completed"] = "lite_agent_execution_completed"
    output: str | None = None


class LiteAgentExecutionErrorEvent(AgentEvent):
    type: Literal["lite_agent_execution_error"] = "lite_agent_execution_error"
    error: str | None = None


class AgentEvaluationStartedEvent(AgentEvent):
    type: Literal["agent_evaluation_started"] = "agent_evaluation_started"
    iteration: int | None = None
    emitted: ClassVar[bool] = False


class AgentEvaluationCompletedEvent(AgentEvent):
    type: Literal["agent_evaluation_completed"] = "agent_evaluation_completed"
    iteration: int | None = None
    metric_category: str | None = None
    score: float | None = None
    emitted: ClassVar[bool] = False


class AgentEvaluationFailedEvent(AgentEvent):
    type: Literal["agent_evaluation_failed"] = "agent_evaluation_failed"
    iteration: int | None = None
    error: str | None = None
    emitted: ClassVar[bool] = False


# -- Flow ----------------------------------------------------------------------------------------------------


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
    type: Literal["flow_paused"] = "flow_paused"
    method_name: str | None = None
    reason: str | None = None
    emitted: ClassVar[bool] = False


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
    type: Literal["method_execution_paused"] = "method_execution_paused"
    reason: str | None = None
    emitted: ClassVar[bool] = False


class HumanFeedbackRequestedEvent(MethodEvent):
    type: Literal["human_feedback_requested"] = "human_feedback_requested"
    message: str | None = None
    emitted: ClassVar[bool] = False


class HumanFeedbackReceivedEvent(MethodEvent):
    type: Literal["human_feedback_received"] = "human_feedback_received"
    feedback: str | None = None
    outcome: str | None = None
    emitted: ClassVar[bool] = False


class FlowInputRequestedEvent(MethodEvent):
    type: Literal["flow_input_requested"] = "flow_input_requested"
    prompt: str | None = None
    emitted: ClassVar[bool] = False


class FlowInputReceivedEvent(MethodEvent):
    type: Literal["flow_input_received"] = "flow_input_received"
    value: str | None = None
    emitted: ClassVar[bool] = False


# -- LLM -----------------------------------------------------------------------------------------------------


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


# -- LLM Guardrail -------------------------------------------------------------------------------------------


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


# -- Tool ----------------------------------------------------------------------------------------------------


class ToolEvent(BaseEvent):
    """Events about an agent using a tool."""

    tool_name: str | None = None
    tool_args: dict[str, Any] | None = None
    agent_role: str | None = None


class ToolUsageStartedEvent(ToolEvent):
    type: Literal["tool_usage_started"] = "tool_usage_started"


class ToolUsageFinishedEvent(ToolEvent):
    type: Literal["tool_usage_finished"] = "tool_usage_finished"
    output: str | None = None
    from_cache: bool = False


class ToolUsageErrorEvent(ToolEvent):
    type: Literal["tool_usage_error"] = "tool_usage_error"
    error: str | None = None


class ToolValidateInputErrorEvent(ToolEvent):
    type: Literal["tool_validate_input_error"] = "tool_validate_input_error"
    error: str | None = None
    emitted: ClassVar[bool] = False


class ToolSelectionErrorEvent(ToolEvent):
    type: Literal["tool_selection_error"] = "tool_selection_error"
    error: str | None = None
    emitted: ClassVar[bool] = False


class ToolExecutionErrorEvent(ToolEvent):
    type: Literal["tool_execution_error"] = "tool_execution_error"
    error: str | None = None
    emitted: ClassVar[bool] = False


# -- Memory --------------------------------------------------------------------------------------------------


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


# -- Knowledge -----------------------------------------------------------------------------------------------


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


# -- Reasoning -----------------------------------------------------------------------------------------------


class ReasoningEvent(AgentEvent):
    """Events about an agent planning before it works."""

    attempt: int | None = None
    emitted: ClassVar[bool] = False


class AgentReasoningStartedEvent(ReasoningEvent):
    type: Literal["agent_reasoning_started"] = "agent_reasoning_started"


class AgentReasoningCompletedEvent(ReasoningEvent):
    type: Literal["agent_reasoning_completed"] = "agent_reasoning_completed"
    plan: str | None = None
    ready: bool | None = None


class AgentReasoningFailedEvent(ReasoningEvent):
    type: Literal["agent_reasoning_failed"] = "agent_reasoning_failed"
    error: str | None = None


# -- MCP -----------------------------------------------------------------------------------------------------


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


# -- Observation ---------------------------------------------------------------------------------------------


class ObservationEvent(AgentEvent):
    """Events about an agent observing its own steps and plan."""

    step_number: int | None = None
    emitted: ClassVar[bool] = False


class StepObservationStartedEvent(ObservationEvent):
    type: Literal["step_observation_started"] = "step_observation_started"
    step_description: str | None = None


class StepObservationCompletedEvent(ObservationEvent):
    type: Literal["step_observation_completed"] = "step_observation_completed"
    observation: str | None = None
    success: bool | None = None


class StepObservationFailedEvent(ObservationEvent):
    type: Literal["step_observation_failed"] = "step_observation_failed"
    error: str | None = None


class PlanRefinementEvent(ObservationEvent):
    type: Literal["plan_refinement"] = "plan_refinement"
    refinement: str | None = None


class PlanReplanTriggeredEvent(ObservationEvent):
    type: Literal["plan_replan_triggered"] = "plan_replan_triggered"
    reason: str | None = None


class GoalAchievedEarlyEvent(ObservationEvent):
    type: Literal["goal_achieved_early"] = "goal_achieved_early"
    steps_remaining: int | None = None


# -- Skill ---------------------------------------------------------------------------------------------------


class SkillEvent(BaseEvent):
    """Events about discovering and loading agent skills."""

    skill_name: str | None = None
    emitted: ClassVar[bool] = False


class SkillDiscoveryStartedEvent(SkillEvent):
    type: Literal["skill_discovery_started"] = "skill_discovery_started"
    search_paths: list[str] | None = None


class SkillDiscoveryCompletedEvent(SkillEvent):
    type: Literal["skill_discovery_completed"] = "skill_discovery_completed"
    skill_names: list[str] | None = None


class SkillLoadedEvent(SkillEvent):
    type: Literal["skill_loaded"] = "skill_loaded"
    path: str | None = None


class SkillActivatedEvent(SkillEvent):
    type: Literal["skill_activated"] = "skill_activated"


class SkillLoadFailedEvent(SkillEvent):
    type: Literal["skill_load_failed"] = "skill_load_failed"
    path: str | None = None
    error: str | None = None


# -- Logging -------------------------------------------------------------------------------------------------


class AgentLogsEvent(AgentEvent):
    """Events carrying an agent's verbose log lines."""

    emitted: ClassVar[bool] = False


class AgentLogsStartedEvent(AgentLogsEvent):
    type: Literal["agent_logs_started"] = "agent_logs_started"
    task_description: str | None = None


class AgentLogsExecutionEvent(AgentLogsEvent):
    type: Literal["agent_logs_execution"] = "agent_logs_execution"
    message: str | None = None


# -- A2A -----------------------------------------------------------------------------------------------------


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


# -- System signals -----------------------------------------------------------------------------------------


class SignalEvent(BaseEvent):
    """The process received a signal; ``signal_number`` is its number here (None where it does not exist)."""

    signal_number: int | None = None


class SigtermEvent(SignalEvent):
    type: Literal["SIGTERM"] = "SIGTERM"
    signal_number: int | None = _signum("SIGTERM")


class SigintEvent(SignalEvent):
    type: Literal["SIGINT"] = "SIGINT"
    signal_number: int | None = _signum("SIGINT")


class SighupEvent(SignalEvent):
    type: Literal["SIGHUP"] = "SIGHUP"
    signal_number: int | None = _signum("SIGHUP")


class SigtstpEvent(SignalEvent):
    type: Literal["SIGTSTP"] = "SIGTSTP"
    signal_number: int | None = _signum("SIGTSTP")


class SigcontEvent(SignalEvent):
    type: Literal["SIGCONT"] = "SIGCONT"
    signal_number: int | None = _signum("SIGCONT")


# -- Checkpoint lifecycle (crewpoint's own; not part of the seed catalogue) ----------------------------------


class CheckpointEvent(BaseEvent):
    """Events about checkpoints themselves: written, failed, restored, forked, pruned."""

    checkpoint_id: str | None = None
    location: str | None = None
    trigger: str | None = None
    branch: str | None = None


class CheckpointStartedEvent(CheckpointEvent):
    type: Literal["checkpoint_started"] = "checkpoint_started"


class CheckpointCompletedEvent(CheckpointEvent):
    type: Literal["checkpoint_completed"] = "checkpoint_completed"


class CheckpointFailedEvent(CheckpointEvent):
    type: Literal["checkpoint_failed"] = "checkpoint_failed"
    error: str | None = None


class CheckpointRestoredEvent(CheckpointEvent):
    type: Literal["checkpoint_restored"] = "checkpoint_restored"


class CheckpointForkedEvent(CheckpointEvent):
    type: Literal["checkpoint_forked"] = "checkpoint_forked"
    source_checkpoint_id: str | None = None


class CheckpointPrunedEvent(CheckpointEvent):
    type: Literal["checkpoint_pruned"] = "checkpoint_pruned"
    removed_ids: list[str] | None = None


# -- The catalogue ------------------------------------------------------------------------------------------

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

_CLASSES: tuple[type[BaseEvent], ...] = (
    TaskStartedEvent,
    TaskCompletedEvent,
    TaskFailedEvent,
    TaskEvaluationEvent,
    CrewKickoffStartedEvent,
    CrewKickoffCompletedEvent,
    CrewKickoffFailedEvent,
    CrewTrainStartedEvent,
    CrewTrainCompletedEvent,
    CrewTrainFailedEvent,
    CrewTestStartedEvent,
    CrewTestCompletedEvent,
    CrewTestFailedEvent,
    CrewTestResultEvent,
    AgentExecutionStartedEvent,
    AgentExecutionCompletedEvent,
    AgentExecutionErrorEvent,
    LiteAgentExecutionStartedEvent,
    LiteAgentExecutionCompletedEvent,
    LiteAgentExecutionErrorEvent,
    AgentEvaluationStartedEvent,
    AgentEvaluationCompletedEvent,
    AgentEvaluationFailedEvent,
    FlowCreatedEvent,
    FlowStartedEvent,
    FlowFinishedEvent,
    FlowPausedEvent,
    MethodExecutionStartedEvent,
    MethodExecutionFinishedEvent,
    MethodExecutionFailedEvent,
    MethodExecutionPausedEvent,
    HumanFeedbackRequestedEvent,
    HumanFeedbackReceivedEvent,
    FlowInputRequestedEvent,
    FlowInputReceivedEvent,
    LLMCallStartedEvent,
    LLMCallCompletedEvent,
    LLMCallFailedEvent,
    LLMStreamChunkEvent,
    LLMThinkingChunkEvent,
    LLMGuardrailStartedEvent,
    LLMGuardrailCompletedEvent,
    LLMGuardrailFailedEvent,
    ToolUsageStartedEvent,
    ToolUsageFinishedEvent,
    ToolUsageErrorEvent,
    ToolValidateInputErrorEvent,
    ToolSelectionErrorEvent,
    ToolExecutionErrorEvent,
    MemorySaveStartedEvent,
    MemorySaveCompletedEvent,
    MemorySaveFailedEvent,
    MemoryQueryStartedEvent,
    MemoryQueryCompletedEvent,
    MemoryQueryFailedEvent,
    MemoryRetrievalStartedEvent,
    MemoryRetrievalCompletedEvent,
    MemoryRetrievalFailedEvent,
    KnowledgeSearchQueryStartedEvent,
    KnowledgeSearchQueryCompletedEvent,
    KnowledgeQueryStartedEvent,
    KnowledgeQueryCompletedEvent,
    KnowledgeQueryFailedEvent,
    KnowledgeSearchQueryFailedEvent,
    AgentReasoningStartedEvent,
    AgentReasoningCompletedEvent,
    AgentReasoningFailedEvent,
    MCPConnectionStartedEvent,
    MCPConnectionCompletedEvent,
    MCPConnectionFailedEvent,
    MCPToolExecutionStartedEvent,
    MCPToolExecutionCompletedEvent,
    MCPToolExecutionFailedEvent,
    MCPConfigFetchFailedEvent,
    StepObservationStartedEvent,
    StepObservationCompletedEvent,
    StepObservationFailedEvent,
    PlanRefinementEvent,
    PlanReplanTriggeredEvent,
    GoalAchievedEarlyEvent,
    SkillDiscoveryStartedEvent,
    SkillDiscoveryCompletedEvent,
    SkillLoadedEvent,
    SkillActivatedEvent,
    SkillLoadFailedEvent,
    AgentLogsStartedEvent,
    AgentLogsExecutionEvent,
    A2ADelegationStartedEvent,
    A2ADelegationCompletedEvent,
    A2AConversationStartedEvent,
    A2AConversationCompletedEvent,
    A2AMessageSentEvent,
    A2AResponseReceivedEvent,
    A2APollingStartedEvent,
    A2APollingStatusEvent,
    A2APushNotificationRegisteredEvent,
    A2APushNotificationReceivedEvent,
    A2APushNotificationSentEvent,
    A2APushNotificationTimeoutEvent,
    A2AStreamingStartedEvent,
    A2AStreamingChunkEvent,
    A2AAgentCardFetchedEvent,
    A2AAuthenticationFailedEvent,
    A2AArtifactReceivedEvent,
    A2AConnectionErrorEvent,
    A2AServerTaskStartedEvent,
    A2AServerTaskCompletedEvent,
    A2AServerTaskCanceledEvent,
    A2AServerTaskFailedEvent,
    A2AParallelDelegationStartedEvent,
    A2AParallelDelegationCompletedEvent,
    A2ATransportNegotiatedEvent,
    A2AContentTypeNegotiatedEvent,
    A2AContextCreatedEvent,
    A2AContextExpiredEvent,
    A2AContextIdleEvent,
    A2AContextCompletedEvent,
    A2AContextPrunedEvent,
    SigtermEvent,
    SigintEvent,
    SighupEvent,
    SigtstpEvent,
    SigcontEvent,
    CheckpointStartedEvent,
    CheckpointCompletedEvent,
    CheckpointFailedEvent,
    CheckpointRestoredEvent,
    CheckpointForkedEvent,
    CheckpointPrunedEvent,
)


def _name_of(cls: type[BaseEvent]) -> str:
    return str(cls.model_fields["type"].default)


EVENT_TYPES: dict[str, type[BaseEvent]] = {_name_of(cls): cls for cls in _CLASSES}
"""Event name -> class, in catalogue order, checkpoint lifecycle events last."""

CATALOGUE_NAMES: tuple[str, ...] = tuple(name for name in EVENT_TYPES if not name.startswith("checkpoint_"))
"""The names of the checkpointing catalogue (without crewpoint's checkpoint lifecycle events)."""

NEVER_EMITTED: frozenset[str] = frozenset(name for name, cls in EVENT_TYPES.items() if not cls.emitted)
"""Names that are accepted (subscriptions, ``on_events``) but that the runtime never emits."""


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
    cls = EVENT_TYPES.get(str(data.get("type")), BaseEvent)
    return cls.model_validate(dict(data))
