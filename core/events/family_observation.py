"""Event classes: Observation. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from crewpoint.events.family_agent import AgentEvent


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
