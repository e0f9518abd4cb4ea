"""Memory: an agent's conversation (short-term) and a crew's shared memory of results (keyword search).

Both save to and restore from plain JSON data, so a checkpoint brings memory back exactly as it was.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from crewpoint.events import (
    MemoryQueryCompletedEvent,
    MemoryQueryFailedEvent,
    MemoryQueryStartedEvent,
    MemoryRetrievalCompletedEvent,
    MemoryRetrievalFailedEvent,
    MemoryRetrievalStartedEvent,
    MemorySaveCompletedEvent,
    MemorySaveFailedEvent,
    MemorySaveStartedEvent,
    event_bus,
)

_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)
STOP_WORDS = frozenset(
    """a an and are as at be but by do does for from has have how i in is it its of on or our so that
    the their them then there these this to was we were what when where which who why will with you your
    """.split()
)
RETRIEVAL_ITEM_CHARS = 300


def keywords(text: str) -> set[str]:
    """The lower-cased words of ``text`` that carry meaning (no stop words, no single letters)."""
    return {w for w in _WORD_RE.findall(text.lower()) if len(w) > 1 and w not in STOP_WORDS}


def _shorten(text: str, limit: int) -> str:
    from crewpoint.text import clip

    return clip(text, limit)


class ShortTermMemory(BaseModel):
    """An agent's conversation: ``{"role", "content"}`` messages in order."""

    model_config = ConfigDict(defer_build=True)

    messages: list[dict[str, str]] = Field(default_factory=list)

    def add(self, role: str, content: str) -> None:
        self.messages.append({"role": role, "content": content})

    def extend(self, messages: list[dict[str, str]]) -> None:
        for message in messages:
            self.add(message["role"], message["content"])

    def clear(self) -> None:
        self.messages.clear()

    def __len__(self) -> int:
        return len(self.messages)

    def to_state(self) -> dict[str, Any]:
        return {"messages": [dict(m) for m in self.messages]}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> ShortTermMemory:
        return cls(messages=[{"role": str(m["role"]), "content": str(m["content"])} for m in state["messages"]])


class MemoryItem(BaseModel):
    """One remembered value; ``sequence`` orders items by when they were saved."""

    model_config = ConfigDict(defer_build=True)

    value: str
    metadata: dict[str, Any] = Field(default_factory=dict)
    sequence: int
    created_at: float = Field(default_factory=time.time)
    score: int | None = Field(default=None, exclude=True)
    """How many query keywords matched (set on search results only)."""


class CrewMemory:
    """A crew's shared memory: results saved as text, found again by keyword overlap.

    ``search`` ranks items by how many of the query's keywords they contain; equal scores go to the most
    recent item first. Thread-safe.
    """

    def __init__(self, crew_id: str | None = None) -> None:
        self.crew_id = crew_id
        self._items: list[MemoryItem] = []
        self._sequence = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def items(self) -> list[MemoryItem]:
        """Every saved item, oldest first (a copy of the list)."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def _ids(self, agent_id: str | None, task_id: str | None, agent_role: str | None) -> dict[str, Any]:
        return {"crew_id": self.crew_id, "agent_id": agent_id, "task_id": task_id, "agent_role": agent_role}

    def save(
        self,
        value: str,
        metadata: dict[str, Any] | None = None,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
        raise_errors: bool = False,
    ) -> MemoryItem | None:
        """Remember ``value``; returns the item, or None (after a ``memory_save_failed`` event) on failure.

        Metadata must be JSON data so the memory can go into a checkpoint. With ``raise_errors`` a failure is
        re-raised after the event.
        """
        ids = self._ids(agent_id, task_id, agent_role)
        text = value if isinstance(value, str) else str(value)
        event_bus.emit(self, MemorySaveStartedEvent(value=text, **ids))
        try:
            if metadata is not None and not isinstance(metadata, dict):
                raise TypeError(f"memory metadata must be a dict, not {type(metadata).__name__}")
            meta = json.loads(json.dumps(metadata or {}))
            with self._lock:
                item = MemoryItem(value=text, metadata=meta, sequence=next(self._sequence))
                self._items.append(item)
        except Exception as exc:
            event_bus.emit(self, MemorySaveFailedEvent(value=text, error=f"{type(exc).__name__}: {exc}", **ids))
            if raise_errors:
                raise
            return None
        event_bus.emit(self, MemorySaveCompletedEvent(value=text, metadata=meta, **ids))
        return item

    def restore_item(self, value: str, metadata: dict[str, Any] | None = None) -> MemoryItem:
        """Add an item without events (rebuilding memory from finished work, not a new memory)."""
        meta = json.loads(json.dumps(metadata or {}, default=str))
        with self._lock:
            item = MemoryItem(value=str(value), metadata=meta, sequence=next(self._sequence))
            self._items.append(item)
        return item

    def _rank(self, query: str, limit: int) -> list[MemoryItem]:
        wanted = keywords(query)
        if not wanted or limit <= 0:
            return []
        with self._lock:
            items = list(self._items)
        scored = [(len(wanted & keywords(item.value)), item) for item in items]
        scored = [(score, item) for score, item in scored if score > 0]
        scored.sort(key=lambda pair: (pair[0], pair[1].sequence), reverse=True)
        return [item.model_copy(update={"score": score}) for score, item in scored[:limit]]

    def search(
        self,
        query: str,
        limit: int = 3,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
        raise_errors: bool = False,
    ) -> list[MemoryItem]:
        """Up to ``limit`` items sharing the most keywords with ``query``, newest first among equals."""
        ids = self._ids(agent_id, task_id, agent_role)
        event_bus.emit(self, MemoryQueryStartedEvent(query=query, limit=limit, **ids))
        try:
            found = self._rank(query, limit)
        except Exception as exc:
            event_bus.emit(self, MemoryQueryFailedEvent(query=query, error=f"{type(exc).__name__}: {exc}", **ids))
            if raise_errors:
                raise
            return []
        event_bus.emit(self, MemoryQueryCompletedEvent(query=query, limit=limit, results_count=len(found), **ids))
        return found

    def retrieve_for(
        self,
        task_description: str,
        limit: int = 3,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
    ) -> str:
        """A short "Relevant memories:" block for a task's prompt; "" when nothing matches or on failure."""
        ids = self._ids(agent_id, task_id, agent_role)
        event_bus.emit(self, MemoryRetrievalStartedEvent(query=task_description, **ids))
        try:
            found = self.search(
                task_description,
                limit,
                agent_id=agent_id,
                task_id=task_id,
                agent_role=agent_role,
                raise_errors=True,
            )
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            event_bus.emit(self, MemoryRetrievalFailedEvent(query=task_description, error=error, **ids))
            return ""
        event_bus.emit(self, MemoryRetrievalCompletedEvent(query=task_description, results_count=len(found), **ids))
        if not found:
            return ""
        lines = [f"- {_shorten(item.value, RETRIEVAL_ITEM_CHARS)}" for item in found]
        return "Relevant memories:\n" + "\n".join(lines)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()

    def to_state(self) -> dict[str, Any]:
        """The memory as JSON data for a checkpoint."""
        with self._lock:
            return {"items": [item.model_dump(mode="json") for item in self._items]}

    @classmethod
    def from_state(cls, state: dict[str, Any], crew_id: str | None = None) -> CrewMemory:
        """Rebuild a memory saved by :meth:`to_state`; new items number on after the restored ones."""
        memory = cls(crew_id=crew_id)
        items = [MemoryItem.model_validate(raw) for raw in state.get("items", [])]
        items.sort(key=lambda item: item.sequence)
        memory._items = items
        memory._sequence = itertools.count((items[-1].sequence if items else 0) + 1)
        return memory


__all__ = ["CrewMemory", "MemoryItem", "ShortTermMemory", "keywords"]
