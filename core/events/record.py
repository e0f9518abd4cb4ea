"""The event history of a run: a graph of events with typed edges.

Each added event becomes an :class:`EventNode`. Edges come in pairs, one on each end:

- ``previous`` / ``next``: the order events were added in;
- ``parent`` / ``child``: from ``event.parent_event_id`` (a task's events are children of the crew's kickoff);
- ``triggered_by`` / ``trigger``: from ``event.triggered_by_event_id`` (the event that caused this one);
- ``started`` / ``completed_by``: from ``event.started_event_id`` (a ``*_completed``, ``*_finished`` or
  ``*_failed`` event points to its ``*_started`` event).

An event may name an event that is not in the record yet; the edge is made when that event arrives, so the
graph does not depend on arrival order. Every method is thread-safe: many readers or one writer at a time.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from enum import StrEnum
from typing import Any

from crewpoint.events.base import BaseEvent
from crewpoint.events.types import parse_event


class EdgeKind(StrEnum):
    """The kind of an edge, seen from the node that holds it."""

    PARENT = "parent"
    CHILD = "child"
    TRIGGER = "trigger"
    TRIGGERED_BY = "triggered_by"
    NEXT = "next"
    PREVIOUS = "previous"
    STARTED = "started"
    COMPLETED_BY = "completed_by"


_REVERSE: dict[EdgeKind, EdgeKind] = {
    EdgeKind.PARENT: EdgeKind.CHILD,
    EdgeKind.CHILD: EdgeKind.PARENT,
    EdgeKind.TRIGGERED_BY: EdgeKind.TRIGGER,
    EdgeKind.TRIGGER: EdgeKind.TRIGGERED_BY,
    EdgeKind.NEXT: EdgeKind.PREVIOUS,
    EdgeKind.PREVIOUS: EdgeKind.NEXT,
    EdgeKind.STARTED: EdgeKind.COMPLETED_BY,
    EdgeKind.COMPLETED_BY: EdgeKind.STARTED,
}

# The event field that makes an edge from the new node, and the kind of that edge.
_REFERENCES: tuple[tuple[str, EdgeKind], ...] = (
    ("parent_event_id", EdgeKind.PARENT),
    ("triggered_by_event_id", EdgeKind.TRIGGERED_BY),
    ("started_event_id", EdgeKind.STARTED),
)


class RWLock:
    """Many readers or one writer. Waiting writers go first, so a stream of readers cannot starve them.

    Not re-entrant: a thread holding the lock must not acquire it again.
    """

    def __init__(self) -> None:
        self._cond = threading.Condition(threading.Lock())
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    @contextmanager
    def read(self) -> Iterator[None]:
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                if not self._readers:
                    self._cond.notify_all()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._cond:
            self._writers_waiting += 1
            try:
                while self._writer or self._readers:
                    self._cond.wait()
            finally:
                self._writers_waiting -= 1
            self._writer = True
        try:
            yield
        finally:
            with self._cond:
                self._writer = False
                self._cond.notify_all()


class EventNode:
    """One event in an :class:`EventRecord`, with the ids of the events it is linked to."""

    __slots__ = ("_edges", "compact", "event")

    def __init__(self, event: BaseEvent, compact: dict[str, Any] | None = None) -> None:
        self.event = event
        self.compact: dict[str, Any] = compact if compact is not None else event.compact()
        """The event's ``compact()`` dict, taken when it was added; read-only by convention."""
        self._edges: dict[EdgeKind, list[str]] = {}

    @property
    def event_id(self) -> str:
        return self.event.event_id

    @property
    def type(self) -> str:
        return self.event.type

    def edge_ids(self, kind: EdgeKind | str) -> tuple[str, ...]:
        """Ids of the events this node links to by ``kind``, oldest link first."""
        return tuple(self._edges.get(EdgeKind(kind), ()))

    def _link(self, kind: EdgeKind, other_id: str) -> None:
        self._edges.setdefault(kind, []).append(other_id)

    def _copy(self) -> EventNode:
        node = EventNode(self.event, self.compact)
        node._edges = {kind: list(ids) for kind, ids in self._edges.items()}
        return node

    def __repr__(self) -> str:
        return f"EventNode({self.type!r}, {self.event_id!r})"


class EventRecord:
    """The events of a run in the order they happened, linked into a graph."""

    def __init__(self, events: Iterable[BaseEvent] = ()) -> None:
        self._lock = RWLock()
        self._nodes: dict[str, EventNode] = {}
        self._by_type: dict[str, list[str]] = {}
        self._last: str | None = None
        # Target id -> links from already-added nodes waiting for that target to arrive.
        self._pending: dict[str, list[tuple[str, EdgeKind]]] = {}
        for event in events:
            self.add(event)

    # -- writing ----------------------------------------------------------------------------------------
    def add(self, event: BaseEvent) -> EventNode:
        """Add ``event`` and link it; an event whose id is already here is not added twice."""
        compact = event.compact()
        with self._lock.write():
            return self._add(event, compact)

    def _add(self, event: BaseEvent, compact: dict[str, Any]) -> EventNode:
        existing = self._nodes.get(event.event_id)
        if existing is not None:
            return existing
        node = EventNode(event, compact)
        node_id = node.event_id
        self._nodes[node_id] = node
        self._by_type.setdefault(event.type, []).append(node_id)
        if self._last is not None:
            self._connect(node, EdgeKind.PREVIOUS, self._nodes[self._last])
        self._last = node_id
        for field, kind in _REFERENCES:
            target_id = getattr(event, field, None)
            if not isinstance(target_id, str) or target_id == node_id:
                continue
            target = self._nodes.get(target_id)
            if target is None:
                self._pending.setdefault(target_id, []).append((node_id, kind))
            else:
                self._connect(node, kind, target)
        for source_id, kind in self._pending.pop(node_id, ()):
            self._connect(self._nodes[source_id], kind, node)
        return node

    @staticmethod
    def _connect(node: EventNode, kind: EdgeKind, target: EventNode) -> None:
        node._link(kind, target.event_id)
        target._link(_REVERSE[kind], node.event_id)

    # -- reading ----------------------------------------------------------------------------------------
    def get(self, event_id: str) -> EventNode | None:
        with self._lock.read():
            return self._nodes.get(event_id)

    def __getitem__(self, event_id: str) -> EventNode:
        node = self.get(event_id)
        if node is None:
            raise KeyError(event_id)
        return node

    def __contains__(self, event_id: object) -> bool:
        with self._lock.read():
            return event_id in self._nodes

    def __len__(self) -> int:
        with self._lock.read():
            return len(self._nodes)

    def __iter__(self) -> Iterator[EventNode]:
        """The nodes in the order they were added (a snapshot: adding while iterating is safe)."""
        with self._lock.read():
            nodes = list(self._nodes.values())
        return iter(nodes)

    @property
    def last(self) -> EventNode | None:
        """The most recently added node."""
        with self._lock.read():
            return self._nodes[self._last] if self._last is not None else None

    def roots(self) -> list[EventNode]:
        """Nodes without a parent in this record, in order."""
        with self._lock.read():
            return [n for n in self._nodes.values() if EdgeKind.PARENT not in n._edges]

    def edges(self, event_id: str, kind: EdgeKind | str) -> list[EventNode]:
        """The nodes that ``event_id`` links to by ``kind``; ``KeyError`` if the event is not here."""
        kind = EdgeKind(kind)
        with self._lock.read():
            node = self._require(event_id)
            return [self._nodes[i] for i in node._edges.get(kind, ())]

    def descendants(self, event_id: str) -> list[EventNode]:
        """Children, grandchildren, ... of ``event_id`` in breadth-first order (without the node itself)."""
        with self._lock.read():
            start = self._require(event_id)
            seen = {start.event_id}
            order: list[EventNode] = []
            queue = deque([start])
            while queue:
                for child_id in queue.popleft()._edges.get(EdgeKind.CHILD, ()):
                    if child_id in seen:
                        continue
                    seen.add(child_id)
                    child = self._nodes[child_id]
                    order.append(child)
                    queue.append(child)
            return order

    def by_type(self, name: str) -> list[EventNode]:
        """The nodes whose event has type ``name``, in order."""
        with self._lock.read():
            return [self._nodes[i] for i in self._by_type.get(name, ())]

    def _require(self, event_id: str) -> EventNode:
        node = self._nodes.get(event_id)
        if node is None:
            raise KeyError(f"no event {event_id!r} in this record")
        return node

    # -- copying and serialisation ----------------------------------------------------------------------
    def copy(self) -> EventRecord:
        """A snapshot: later adds to either record do not show in the other. Events are shared, not copied."""
        clone = EventRecord()
        with self._lock.read():
            clone._nodes = {i: n._copy() for i, n in self._nodes.items()}
            clone._by_type = {t: list(ids) for t, ids in self._by_type.items()}
            clone._last = self._last
            clone._pending = {t: list(links) for t, links in self._pending.items()}
        return clone

    def to_list(self) -> list[dict[str, Any]]:
        """The events' compact dicts, in order (JSON-ready; what a checkpoint stores)."""
        with self._lock.read():
            return [dict(n.compact) for n in self._nodes.values()]

    def compacts(self) -> list[dict[str, Any]]:
        """The events' compact dicts themselves, in order: to be read, never changed (:meth:`to_list` copies)."""
        with self._lock.read():
            return [n.compact for n in self._nodes.values()]

    @classmethod
    def from_list(cls, items: Iterable[Mapping[str, Any]]) -> EventRecord:
        """Rebuild the graph from :meth:`to_list` output; unknown event types come back as plain events."""
        record = cls()
        with record._lock.write():
            for item in items:
                event = parse_event(item)
                record._add(event, event.compact())
        return record

    def __repr__(self) -> str:
        return f"EventRecord({len(self)} events)"
