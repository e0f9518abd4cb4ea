"""Event classes: Task. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from crewpoint.events.base import BaseEvent


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
