"""The base class every crewpoint event derives from."""

from __future__ import annotations

import itertools
import time
import uuid
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field

from crewpoint.text import clip

_sequence = itertools.count(1)

HISTORY_TEXT_LIMIT = 160


def next_sequence() -> int:
    """A process-wide, strictly increasing event number (order never depends on the clock)."""
    return next(_sequence)


class BaseEvent(BaseModel):
    """An event: what happened, when, and which entities it concerns (by id, never by a full dump).

    Subclasses set ``type`` to their catalogue name with a ``Literal`` default.
    """

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True, defer_build=True)

    type: str = "event"
    event_id: str = Field(default_factory=lambda: uuid.uuid4().hex[:12])
    timestamp: float = Field(default_factory=time.time)
    sequence: int = 0
    source_type: str | None = None
    source_id: str | None = None
    parent_event_id: str | None = None
    started_event_id: str | None = None
    triggered_by_event_id: str | None = None
    crew_id: str | None = None
    flow_id: str | None = None
    agent_id: str | None = None
    task_id: str | None = None

    emitted: ClassVar[bool] = True
    """False for catalogue names the runtime accepts but never emits (A2A, MCP, …)."""

    def compact(self) -> dict[str, Any]:
        """A small JSON-ready dict for event histories: no ``None`` fields, the time to the millisecond, and long
        texts (outputs, responses, already kept whole in the entity state) cut to :data:`HISTORY_TEXT_LIMIT`."""
        return self._history_dict()

    def _history_dict(self, exclude: set[str] | None = None) -> dict[str, Any]:
        """:meth:`compact` of the fields but those in ``exclude`` (a subclass adds them in its own form)."""
        data = self.model_dump(mode="json", exclude_none=True, exclude=exclude)
        data["timestamp"] = round(self.timestamp, 3)
        for key, value in data.items():
            if isinstance(value, str) and len(value) > HISTORY_TEXT_LIMIT:
                data[key] = clip(value, HISTORY_TEXT_LIMIT, one_line=False)
        return data
