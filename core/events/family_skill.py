"""Event classes: Skill. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

from typing import ClassVar, Literal

from crewpoint.events.base import BaseEvent


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
