"""Event classes: Crew. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from crewpoint.events.base import BaseEvent


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
