"""crewpoint events: the bus, the catalogue of event classes and the event history graph.

from crewpoint.events import event_bus, LLMCallCompletedEvent

@event_bus.on(LLMCallCompletedEvent)
def on_llm_done(source, event, state): ...
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from crewpoint.events import types as _types
from crewpoint.events.base import BaseEvent
from crewpoint.events.bus import EventBus, event_bus
from crewpoint.events.record import EdgeKind, EventNode, EventRecord
from crewpoint.events.types import CATALOGUE_NAMES, EVENT_TYPES, CheckpointEventType, event_class, parse_event


def __getattr__(name: str) -> Any:
    """Event classes are built on first use (see :mod:`crewpoint.events.types`)."""
    value = getattr(_types, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


if TYPE_CHECKING:  # the event classes, for type checkers (at run time they load on first use)
    from crewpoint.events.types import *  # noqa: F403


__all__ = [
    "CATALOGUE_NAMES",
    "EVENT_TYPES",
    "NEVER_EMITTED",
    "BaseEvent",
    "CheckpointEventType",
    "EdgeKind",
    "EventBus",
    "EventNode",
    "EventRecord",
    "event_bus",
    "event_class",
    "parse_event",
]
__all__ += _types.CLASS_NAMES  # every event class and family base, from the catalogue's index
