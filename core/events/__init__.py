"""crewpoint events: the bus, the catalogue of event classes and the event history graph.

from crewpoint.events import event_bus, LLMCallCompletedEvent

@event_bus.on(LLMCallCompletedEvent)
def on_llm_done(source, event, state): ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crewpoint.events.base import BaseEvent
from crewpoint.events.bus import EventBus, event_bus
from crewpoint.events.record import EdgeKind, EventNode, EventRecord
from crewpoint.events.types import (
    CATALOGUE_NAMES,
    EVENT_TYPES,
    NEVER_EMITTED,
    CheckpointEventType,
    event_class,
    parse_event,
)


def __getattr__(name: str) -> Any:
    """Event classes are built on first use (see :mod:`crewpoint.events.types`)."""
    from crewpoint.events import types

    value = getattr(types, name)
    globals()[name] = value
    return value


if TYPE_CHECKING:
    from crewpoint.events.types import (
        A2AAgentCardFetchedEvent as A2AAgentCardFetchedEvent,
    )
    from crewpoint.events.types import (
        A2AArtifactReceivedEvent as A2AArtifactReceivedEvent,
    )
    from crewpoint.events.types import (
        A2AAuthenticationFailedEvent as A2AAuthenticationFailedEvent,
    )
    from crewpoint.events.types import (
        A2AConnectionErrorEvent as A2AConnectionErrorEvent,
    )
    from crewpoint.events.types import (
        A2AContentTypeNegotiatedEvent as A2AContentTypeNegotiatedEvent,
    )
    from crewpoint.events.types import (
        A2AContextCompletedEvent as A2AContextCompletedEvent,
    )
    from crewpoint.events.types import (
        A2AContextCreatedEvent as A2AContextCreatedEvent,
    )
    from crewpoint.events.types import (
        A2AContextExpiredEvent as A2AContextExpiredEvent,
    )
    from crewpoint.events.types import (
        A2AContextIdleEvent as A2AContextIdleEvent,
    )
    from crewpoint.events.types import (
        A2AContextPrunedEvent as A2AContextPrunedEvent,
    )
    from crewpoint.events.types import (
        A2AConversationCompletedEvent as A2AConversationCompletedEvent,
    )
    from crewpoint.events.types import (
        A2AConversationStartedEvent as A2AConversationStartedEvent,
    )
    from crewpoint.events.types import (
        A2ADelegationCompletedEvent as A2ADelegationCompletedEvent,
    )
    from crewpoint.events.types import (
        A2ADelegationStartedEvent as A2ADelegationStartedEvent,
    )
    from crewpoint.events.types import (
        A2AEvent as A2AEvent,
    )
    from crewpoint.events.types import (
        A2AMessageSentEvent as A2AMessageSentEvent,
    )
    from crewpoint.events.types import (
        A2AParallelDelegationCompletedEvent as A2AParallelDelegationCompletedEvent,
    )
    from crewpoint.events.types import (
        A2AParallelDelegationStartedEvent as A2AParallelDelegationStartedEvent,
    )
    from crewpoint.events.types import (
        A2APollingStartedEvent as A2APollingStartedEvent,
    )
    from crewpoint.events.types import (
        A2APollingStatusEvent as A2APollingStatusEvent,
    )
    from crewpoint.events.types import (
        A2APushNotificationReceivedEvent as A2APushNotificationReceivedEvent,
    )
    from crewpoint.events.types import (
        A2APushNotificationRegisteredEvent as A2APushNotificationRegisteredEvent,
    )
    from crewpoint.events.types import (
        A2APushNotificationSentEvent as A2APushNotificationSentEvent,
    )
    from crewpoint.events.types import (
        A2APushNotificationTimeoutEvent as A2APushNotificationTimeoutEvent,
    )
    from crewpoint.events.types import (
        A2AResponseReceivedEvent as A2AResponseReceivedEvent,
    )
    from crewpoint.events.types import (
        A2AServerTaskCanceledEvent as A2AServerTaskCanceledEvent,
    )
    from crewpoint.events.types import (
        A2AServerTaskCompletedEvent as A2AServerTaskCompletedEvent,
    )
    from crewpoint.events.types import (
        A2AServerTaskFailedEvent as A2AServerTaskFailedEvent,
    )
    from crewpoint.events.types import (
        A2AServerTaskStartedEvent as A2AServerTaskStartedEvent,
    )
    from crewpoint.events.types import (
        A2AStreamingChunkEvent as A2AStreamingChunkEvent,
    )
    from crewpoint.events.types import (
        A2AStreamingStartedEvent as A2AStreamingStartedEvent,
    )
    from crewpoint.events.types import (
        A2ATransportNegotiatedEvent as A2ATransportNegotiatedEvent,
    )
    from crewpoint.events.types import (
        AgentEvaluationCompletedEvent as AgentEvaluationCompletedEvent,
    )
    from crewpoint.events.types import (
        AgentEvaluationFailedEvent as AgentEvaluationFailedEvent,
    )
    from crewpoint.events.types import (
        AgentEvaluationStartedEvent as AgentEvaluationStartedEvent,
    )
    from crewpoint.events.types import (
        AgentEvent as AgentEvent,
    )
    from crewpoint.events.types import (
        AgentExecutionCompletedEvent as AgentExecutionCompletedEvent,
    )
    from crewpoint.events.types import (
        AgentExecutionErrorEvent as AgentExecutionErrorEvent,
    )
    from crewpoint.events.types import (
        AgentExecutionStartedEvent as AgentExecutionStartedEvent,
    )
    from crewpoint.events.types import (
        AgentLogsEvent as AgentLogsEvent,
    )
    from crewpoint.events.types import (
        AgentLogsExecutionEvent as AgentLogsExecutionEvent,
    )
    from crewpoint.events.types import (
        AgentLogsStartedEvent as AgentLogsStartedEvent,
    )
    from crewpoint.events.types import (
        AgentReasoningCompletedEvent as AgentReasoningCompletedEvent,
    )
    from crewpoint.events.types import (
        AgentReasoningFailedEvent as AgentReasoningFailedEvent,
    )
    from crewpoint.events.types import (
        AgentReasoningStartedEvent as AgentReasoningStartedEvent,
    )
    from crewpoint.events.types import (
        CheckpointCompletedEvent as CheckpointCompletedEvent,
    )
    from crewpoint.events.types import (
        CheckpointEvent as CheckpointEvent,
    )
    from crewpoint.events.types import (
        CheckpointFailedEvent as CheckpointFailedEvent,
    )
    from crewpoint.events.types import (
        CheckpointForkedEvent as CheckpointForkedEvent,
    )
    from crewpoint.events.types import (
        CheckpointPrunedEvent as CheckpointPrunedEvent,
    )
    from crewpoint.events.types import (
        CheckpointRestoredEvent as CheckpointRestoredEvent,
    )
    from crewpoint.events.types import (
        CheckpointStartedEvent as CheckpointStartedEvent,
    )
    from crewpoint.events.types import (
        CrewEvent as CrewEvent,
    )
    from crewpoint.events.types import (
        CrewKickoffCompletedEvent as CrewKickoffCompletedEvent,
    )
    from crewpoint.events.types import (
        CrewKickoffFailedEvent as CrewKickoffFailedEvent,
    )
    from crewpoint.events.types import (
        CrewKickoffStartedEvent as CrewKickoffStartedEvent,
    )
    from crewpoint.events.types import (
        CrewTestCompletedEvent as CrewTestCompletedEvent,
    )
    from crewpoint.events.types import (
        CrewTestFailedEvent as CrewTestFailedEvent,
    )
    from crewpoint.events.types import (
        CrewTestResultEvent as CrewTestResultEvent,
    )
    from crewpoint.events.types import (
        CrewTestStartedEvent as CrewTestStartedEvent,
    )
    from crewpoint.events.types import (
        CrewTrainCompletedEvent as CrewTrainCompletedEvent,
    )
    from crewpoint.events.types import (
        CrewTrainFailedEvent as CrewTrainFailedEvent,
    )
    from crewpoint.events.types import (
        CrewTrainStartedEvent as CrewTrainStartedEvent,
    )
    from crewpoint.events.types import (
        FlowCreatedEvent as FlowCreatedEvent,
    )
    from crewpoint.events.types import (
        FlowEvent as FlowEvent,
    )
    from crewpoint.events.types import (
        FlowFinishedEvent as FlowFinishedEvent,
    )
    from crewpoint.events.types import (
        FlowInputReceivedEvent as FlowInputReceivedEvent,
    )
    from crewpoint.events.types import (
        FlowInputRequestedEvent as FlowInputRequestedEvent,
    )
    from crewpoint.events.types import (
        FlowPausedEvent as FlowPausedEvent,
    )
    from crewpoint.events.types import (
        FlowStartedEvent as FlowStartedEvent,
    )
    from crewpoint.events.types import (
        GoalAchievedEarlyEvent as GoalAchievedEarlyEvent,
    )
    from crewpoint.events.types import (
        HumanFeedbackReceivedEvent as HumanFeedbackReceivedEvent,
    )
    from crewpoint.events.types import (
        HumanFeedbackRequestedEvent as HumanFeedbackRequestedEvent,
    )
    from crewpoint.events.types import (
        KnowledgeEvent as KnowledgeEvent,
    )
    from crewpoint.events.types import (
        KnowledgeQueryCompletedEvent as KnowledgeQueryCompletedEvent,
    )
    from crewpoint.events.types import (
        KnowledgeQueryFailedEvent as KnowledgeQueryFailedEvent,
    )
    from crewpoint.events.types import (
        KnowledgeQueryStartedEvent as KnowledgeQueryStartedEvent,
    )
    from crewpoint.events.types import (
        KnowledgeSearchQueryCompletedEvent as KnowledgeSearchQueryCompletedEvent,
    )
    from crewpoint.events.types import (
        KnowledgeSearchQueryFailedEvent as KnowledgeSearchQueryFailedEvent,
    )
    from crewpoint.events.types import (
        KnowledgeSearchQueryStartedEvent as KnowledgeSearchQueryStartedEvent,
    )
    from crewpoint.events.types import (
        LiteAgentExecutionCompletedEvent as LiteAgentExecutionCompletedEvent,
    )
    from crewpoint.events.types import (
        LiteAgentExecutionErrorEvent as LiteAgentExecutionErrorEvent,
    )
    from crewpoint.events.types import (
        LiteAgentExecutionStartedEvent as LiteAgentExecutionStartedEvent,
    )
    from crewpoint.events.types import (
        LLMCallCompletedEvent as LLMCallCompletedEvent,
    )
    from crewpoint.events.types import (
        LLMCallFailedEvent as LLMCallFailedEvent,
    )
    from crewpoint.events.types import (
        LLMCallStartedEvent as LLMCallStartedEvent,
    )
    from crewpoint.events.types import (
        LLMEvent as LLMEvent,
    )
    from crewpoint.events.types import (
        LLMGuardrailCompletedEvent as LLMGuardrailCompletedEvent,
    )
    from crewpoint.events.types import (
        LLMGuardrailEvent as LLMGuardrailEvent,
    )
    from crewpoint.events.types import (
        LLMGuardrailFailedEvent as LLMGuardrailFailedEvent,
    )
    from crewpoint.events.types import (
        LLMGuardrailStartedEvent as LLMGuardrailStartedEvent,
    )
    from crewpoint.events.types import (
        LLMStreamChunkEvent as LLMStreamChunkEvent,
    )
    from crewpoint.events.types import (
        LLMThinkingChunkEvent as LLMThinkingChunkEvent,
    )
    from crewpoint.events.types import (
        MCPConfigFetchFailedEvent as MCPConfigFetchFailedEvent,
    )
    from crewpoint.events.types import (
        MCPConnectionCompletedEvent as MCPConnectionCompletedEvent,
    )
    from crewpoint.events.types import (
        MCPConnectionFailedEvent as MCPConnectionFailedEvent,
    )
    from crewpoint.events.types import (
        MCPConnectionStartedEvent as MCPConnectionStartedEvent,
    )
    from crewpoint.events.types import (
        MCPEvent as MCPEvent,
    )
    from crewpoint.events.types import (
        MCPToolExecutionCompletedEvent as MCPToolExecutionCompletedEvent,
    )
    from crewpoint.events.types import (
        MCPToolExecutionFailedEvent as MCPToolExecutionFailedEvent,
    )
    from crewpoint.events.types import (
        MCPToolExecutionStartedEvent as MCPToolExecutionStartedEvent,
    )
    from crewpoint.events.types import (
        MemoryEvent as MemoryEvent,
    )
    from crewpoint.events.types import (
        MemoryQueryCompletedEvent as MemoryQueryCompletedEvent,
    )
    from crewpoint.events.types import (
        MemoryQueryFailedEvent as MemoryQueryFailedEvent,
    )
    from crewpoint.events.types import (
        MemoryQueryStartedEvent as MemoryQueryStartedEvent,
    )
    from crewpoint.events.types import (
        MemoryRetrievalCompletedEvent as MemoryRetrievalCompletedEvent,
    )
    from crewpoint.events.types import (
        MemoryRetrievalFailedEvent as MemoryRetrievalFailedEvent,
    )
    from crewpoint.events.types import (
        MemoryRetrievalStartedEvent as MemoryRetrievalStartedEvent,
    )
    from crewpoint.events.types import (
        MemorySaveCompletedEvent as MemorySaveCompletedEvent,
    )
    from crewpoint.events.types import (
        MemorySaveFailedEvent as MemorySaveFailedEvent,
    )
    from crewpoint.events.types import (
        MemorySaveStartedEvent as MemorySaveStartedEvent,
    )
    from crewpoint.events.types import (
        MethodEvent as MethodEvent,
    )
    from crewpoint.events.types import (
        MethodExecutionFailedEvent as MethodExecutionFailedEvent,
    )
    from crewpoint.events.types import (
        MethodExecutionFinishedEvent as MethodExecutionFinishedEvent,
    )
    from crewpoint.events.types import (
        MethodExecutionPausedEvent as MethodExecutionPausedEvent,
    )
    from crewpoint.events.types import (
        MethodExecutionStartedEvent as MethodExecutionStartedEvent,
    )
    from crewpoint.events.types import (
        ObservationEvent as ObservationEvent,
    )
    from crewpoint.events.types import (
        PlanRefinementEvent as PlanRefinementEvent,
    )
    from crewpoint.events.types import (
        PlanReplanTriggeredEvent as PlanReplanTriggeredEvent,
    )
    from crewpoint.events.types import (
        ReasoningEvent as ReasoningEvent,
    )
    from crewpoint.events.types import (
        SigcontEvent as SigcontEvent,
    )
    from crewpoint.events.types import (
        SighupEvent as SighupEvent,
    )
    from crewpoint.events.types import (
        SigintEvent as SigintEvent,
    )
    from crewpoint.events.types import (
        SignalEvent as SignalEvent,
    )
    from crewpoint.events.types import (
        SigtermEvent as SigtermEvent,
    )
    from crewpoint.events.types import (
        SigtstpEvent as SigtstpEvent,
    )
    from crewpoint.events.types import (
        SkillActivatedEvent as SkillActivatedEvent,
    )
    from crewpoint.events.types import (
        SkillDiscoveryCompletedEvent as SkillDiscoveryCompletedEvent,
    )
    from crewpoint.events.types import (
        SkillDiscoveryStartedEvent as SkillDiscoveryStartedEvent,
    )
    from crewpoint.events.types import (
        SkillEvent as SkillEvent,
    )
    from crewpoint.events.types import (
        SkillLoadedEvent as SkillLoadedEvent,
    )
    from crewpoint.events.types import (
        SkillLoadFailedEvent as SkillLoadFailedEvent,
    )
    from crewpoint.events.types import (
        StepObservationCompletedEvent as StepObservationCompletedEvent,
    )
    from crewpoint.events.types import (
        StepObservationFailedEvent as StepObservationFailedEvent,
    )
    from crewpoint.events.types import (
        StepObservationStartedEvent as StepObservationStartedEvent,
    )
    from crewpoint.events.types import (
        TaskCompletedEvent as TaskCompletedEvent,
    )
    from crewpoint.events.types import (
        TaskEvaluationEvent as TaskEvaluationEvent,
    )
    from crewpoint.events.types import (
        TaskEvent as TaskEvent,
    )
    from crewpoint.events.types import (
        TaskFailedEvent as TaskFailedEvent,
    )
    from crewpoint.events.types import (
        TaskStartedEvent as TaskStartedEvent,
    )
    from crewpoint.events.types import (
        ToolEvent as ToolEvent,
    )
    from crewpoint.events.types import (
        ToolExecutionErrorEvent as ToolExecutionErrorEvent,
    )
    from crewpoint.events.types import (
        ToolSelectionErrorEvent as ToolSelectionErrorEvent,
    )
    from crewpoint.events.types import (
        ToolUsageErrorEvent as ToolUsageErrorEvent,
    )
    from crewpoint.events.types import (
        ToolUsageFinishedEvent as ToolUsageFinishedEvent,
    )
    from crewpoint.events.types import (
        ToolUsageStartedEvent as ToolUsageStartedEvent,
    )
    from crewpoint.events.types import (
        ToolValidateInputErrorEvent as ToolValidateInputErrorEvent,
    )

__all__ = [
    "CATALOGUE_NAMES",
    "EVENT_TYPES",
    "NEVER_EMITTED",
    "A2AAgentCardFetchedEvent",
    "A2AArtifactReceivedEvent",
    "A2AAuthenticationFailedEvent",
    "A2AConnectionErrorEvent",
    "A2AContentTypeNegotiatedEvent",
    "A2AContextCompletedEvent",
    "A2AContextCreatedEvent",
    "A2AContextExpiredEvent",
    "A2AContextIdleEvent",
    "A2AContextPrunedEvent",
    "A2AConversationCompletedEvent",
    "A2AConversationStartedEvent",
    "A2ADelegationCompletedEvent",
    "A2ADelegationStartedEvent",
    "A2AEvent",
    "A2AMessageSentEvent",
    "A2AParallelDelegationCompletedEvent",
    "A2AParallelDelegationStartedEvent",
    "A2APollingStartedEvent",
    "A2APollingStatusEvent",
    "A2APushNotificationReceivedEvent",
    "A2APushNotificationRegisteredEvent",
    "A2APushNotificationSentEvent",
    "A2APushNotificationTimeoutEvent",
    "A2AResponseReceivedEvent",
    "A2AServerTaskCanceledEvent",
    "A2AServerTaskCompletedEvent",
    "A2AServerTaskFailedEvent",
    "A2AServerTaskStartedEvent",
    "A2AStreamingChunkEvent",
    "A2AStreamingStartedEvent",
    "A2ATransportNegotiatedEvent",
    "AgentEvaluationCompletedEvent",
    "AgentEvaluationFailedEvent",
    "AgentEvaluationStartedEvent",
    "AgentEvent",
    "AgentExecutionCompletedEvent",
    "AgentExecutionErrorEvent",
    "AgentExecutionStartedEvent",
    "AgentLogsEvent",
    "AgentLogsExecutionEvent",
    "AgentLogsStartedEvent",
    "AgentReasoningCompletedEvent",
    "AgentReasoningFailedEvent",
    "AgentReasoningStartedEvent",
    "BaseEvent",
    "CheckpointCompletedEvent",
    "CheckpointEvent",
    "CheckpointEventType",
    "CheckpointFailedEvent",
    "CheckpointForkedEvent",
    "CheckpointPrunedEvent",
    "CheckpointRestoredEvent",
    "CheckpointStartedEvent",
    "CrewEvent",
    "CrewKickoffCompletedEvent",
    "CrewKickoffFailedEvent",
    "CrewKickoffStartedEvent",
    "CrewTestCompletedEvent",
    "CrewTestFailedEvent",
    "CrewTestResultEvent",
    "CrewTestStartedEvent",
    "CrewTrainCompletedEvent",
    "CrewTrainFailedEvent",
    "CrewTrainStartedEvent",
    "EdgeKind",
    "EventBus",
    "EventNode",
    "EventRecord",
    "FlowCreatedEvent",
    "FlowEvent",
    "FlowFinishedEvent",
    "FlowInputReceivedEvent",
    "FlowInputRequestedEvent",
    "FlowPausedEvent",
    "FlowStartedEvent",
    "GoalAchievedEarlyEvent",
    "HumanFeedbackReceivedEvent",
    "HumanFeedbackRequestedEvent",
    "KnowledgeEvent",
    "KnowledgeQueryCompletedEvent",
    "KnowledgeQueryFailedEvent",
    "KnowledgeQueryStartedEvent",
    "KnowledgeSearchQueryCompletedEvent",
    "KnowledgeSearchQueryFailedEvent",
    "KnowledgeSearchQueryStartedEvent",
    "LLMCallCompletedEvent",
    "LLMCallFailedEvent",
    "LLMCallStartedEvent",
    "LLMEvent",
    "LLMGuardrailCompletedEvent",
    "LLMGuardrailEvent",
    "LLMGuardrailFailedEvent",
    "LLMGuardrailStartedEvent",
    "LLMStreamChunkEvent",
    "LLMThinkingChunkEvent",
    "LiteAgentExecutionCompletedEvent",
    "LiteAgentExecutionErrorEvent",
    "LiteAgentExecutionStartedEvent",
    "MCPConfigFetchFailedEvent",
    "MCPConnectionCompletedEvent",
    "MCPConnectionFailedEvent",
    "MCPConnectionStartedEvent",
    "MCPEvent",
    "MCPToolExecutionCompletedEvent",
    "MCPToolExecutionFailedEvent",
    "MCPToolExecutionStartedEvent",
    "MemoryEvent",
    "MemoryQueryCompletedEvent",
    "MemoryQueryFailedEvent",
    "MemoryQueryStartedEvent",
    "MemoryRetrievalCompletedEvent",
    "MemoryRetrievalFailedEvent",
    "MemoryRetrievalStartedEvent",
    "MemorySaveCompletedEvent",
    "MemorySaveFailedEvent",
    "MemorySaveStartedEvent",
    "MethodEvent",
    "MethodExecutionFailedEvent",
    "MethodExecutionFinishedEvent",
    "MethodExecutionPausedEvent",
    "MethodExecutionStartedEvent",
    "ObservationEvent",
    "PlanRefinementEvent",
    "PlanReplanTriggeredEvent",
    "ReasoningEvent",
    "SigcontEvent",
    "SighupEvent",
    "SigintEvent",
    "SignalEvent",
    "SigtermEvent",
    "SigtstpEvent",
    "SkillActivatedEvent",
    "SkillDiscoveryCompletedEvent",
    "SkillDiscoveryStartedEvent",
    "SkillEvent",
    "SkillLoadFailedEvent",
    "SkillLoadedEvent",
    "StepObservationCompletedEvent",
    "StepObservationFailedEvent",
    "StepObservationStartedEvent",
    "TaskCompletedEvent",
    "TaskEvaluationEvent",
    "TaskEvent",
    "TaskFailedEvent",
    "TaskStartedEvent",
    "ToolEvent",
    "ToolExecutionErrorEvent",
    "ToolSelectionErrorEvent",
    "ToolUsageErrorEvent",
    "ToolUsageFinishedEvent",
    "ToolUsageStartedEvent",
    "ToolValidateInputErrorEvent",
    "event_bus",
    "event_class",
    "parse_event",
]
