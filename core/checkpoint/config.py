"""``CheckpointConfig`` and the ``checkpoint=`` inheritance rule."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from crewpoint.events.types import EVENT_TYPES, CheckpointEventType
from crewpoint.providers import JsonProvider, check_provider_owns, provider_for, shown_location, writable_provider_for
from crewpoint.providers.base import BaseProvider


def _default_provider() -> BaseProvider:

    return JsonProvider()


def _default_location() -> str:
    """``$CREWPOINT_CHECKPOINT_LOCATION`` (a team's ``postgresql://`` store, say), else ``./.checkpoints``."""
    import os

    return os.environ.get("CREWPOINT_CHECKPOINT_LOCATION") or "./.checkpoints"


def _default_events() -> list[CheckpointEventType | Literal["*"]]:
    """After each finished task of a crew, each finished method of a flow, and a standalone agent's finished
    kickoff."""
    return ["task_completed", "method_execution_finished", "lite_agent_execution_completed"]


class CheckpointConfig(BaseModel):
    """Where, when and how checkpoints are written, and where a run restores from."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    location: str = Field(default_factory=_default_location)
    on_events: list[CheckpointEventType | Literal["*"]] = Field(default_factory=_default_events)
    provider: BaseProvider = Field(default_factory=_default_provider)
    max_checkpoints: int | None = None
    """Keep the newest N checkpoints of each entity per branch (see ``crewpoint.providers.prune.PruneStrategy``).
    Set only by the running program: a checkpoint's saved setting never brings it back."""
    restore_from: Path | str | None = None
    otel: bool | dict[str, Any] | None = None
    """Export the run's spans over OTLP/HTTP (:mod:`crewpoint.telemetry`): a table (``endpoint``, ``headers``,
    ``service_name``, ``capture_content``), True (the standard ``OTEL_EXPORTER_OTLP_*`` variables, else
    ``http://localhost:4318``) or False (never, whatever the project or the environment says). None: as the
    project's ``[tool.crewpoint] otel`` or the variables say. Set only by the running program: never saved."""

    @field_validator("on_events", mode="before")
    @classmethod
    def _known_events(cls, value: list[str]) -> list[str]:  # a clearer message than pydantic's

        unknown = [name for name in value if name != "*" and name not in EVENT_TYPES]
        if unknown:
            raise ValueError(f"unknown checkpoint event type(s): {', '.join(unknown)}")
        return value

    @field_validator("otel")
    @classmethod
    def _otel_setting(cls, value: Any) -> Any:
        # lazy: crewpoint.telemetry imports the runtime's neighbours; a config is made before any run
        from crewpoint.telemetry import check_setting

        return None if value is None else check_setting(value, "CheckpointConfig(otel=...)")

    @field_validator("max_checkpoints")
    @classmethod
    def _positive(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError("max_checkpoints must be at least 1")
        return value

    @field_validator("location", mode="before")
    @classmethod
    def _str_location(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @model_validator(mode="after")
    def _provider_of_the_location(self) -> CheckpointConfig:
        """With no provider given, the location names its kind of store through the one resolver: a URL
        (``postgresql://``) is its URL's provider, a path ending in ``.db``/``.sqlite``/``.sqlite3`` (or an existing
        SQLite file) is a SQLite store, anything else JSON folders."""
        if "provider" not in self.model_fields_set:
            self.provider = writable_provider_for(self.location)
        else:
            check_provider_owns(self.location, self.provider)
        return self

    def wants(self, event_type: str) -> bool:
        """Does an event of this type trigger a checkpoint? ``"*"`` matches every catalogue event."""
        if event_type in self.on_events:
            return True
        return "*" in self.on_events and not event_type.startswith("checkpoint_")


CheckpointSetting = CheckpointConfig | bool | None


def resolve(*settings: CheckpointSetting) -> CheckpointConfig | None:
    """Resolve the nearest explicit setting, child first: ``None`` inherits, ``False`` stops, ``True`` defaults."""
    for setting in settings:
        if setting is None:
            continue
        if setting is False:
            return None
        if setting is True:
            return CheckpointConfig()
        return setting
    return None


def config_state(setting: CheckpointSetting) -> Any:
    """A ``checkpoint=`` setting as JSON data for a checkpoint body."""
    if setting is None or isinstance(setting, bool):
        return setting

    return {
        "location": shown_location(setting.location),  # a password in a URL is never saved
        "on_events": list(setting.on_events),
        "provider": setting.provider.kind,
        "max_checkpoints": setting.max_checkpoints,
    }


def config_from_state(data: Any) -> CheckpointSetting:
    """A ``checkpoint=`` setting saved by :func:`config_state`.

    The saved location is where the original run wrote; a restore that does not trust the checkpoint points it
    back at the store the checkpoint came from (see ``restore_entities``).
    """
    if data is None or isinstance(data, bool):
        return data
    if not isinstance(data, dict):
        raise ValueError(f"a saved checkpoint setting is damaged: {type(data).__name__}, not a mapping")

    location = str(data.get("location") or "./.checkpoints")
    # max_checkpoints is never read back: only the running program's configuration prunes (DESIGN §3 "Deletion")
    return CheckpointConfig(
        location=location,
        on_events=data.get("on_events", ["task_completed"]),
        provider=provider_for(location),
    )
