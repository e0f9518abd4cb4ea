"""The event bus: handlers subscribe to event classes, catalogue names or ``"*"``.

Handlers may be plain functions or coroutines, taking ``(source, event)`` or ``(source, event, state)``;
with three parameters the current :class:`crewpoint.runtime.RuntimeState` is passed. Async handlers run to
completion on the bus's own event-loop thread before ``emit`` returns, so handler order is stable.
A handler that raises is logged and never stops the run.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crewpoint.events.base import BaseEvent, next_sequence

if TYPE_CHECKING:
    import asyncio

log = logging.getLogger("crewpoint.events")

Target = type[BaseEvent] | str
Handler = Callable[..., Any]
Observer = Callable[[Any, BaseEvent], None]


@dataclass(frozen=True, slots=True)
class _Subscription:
    target: Target
    handler: Handler
    wants_state: bool
    is_async: bool

    def matches(self, event: BaseEvent) -> bool:
        if isinstance(self.target, str):
            return self.target == "*" or self.target == event.type
        return isinstance(event, self.target)


def _positional_arity(fn: Handler) -> int:
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    count = 0
    for p in params:
        if p.kind is inspect.Parameter.VAR_POSITIONAL:
            return 3
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD):
            count += 1
    return count


# The ``*_started`` events still open in this context, innermost last: (type prefix, event id).
_open_scopes: ContextVar[tuple[tuple[str, str], ...]] = ContextVar("crewpoint_event_scopes", default=())
_END_SUFFIXES = ("_completed", "_finished", "_failed", "_error")


def _nest(event: BaseEvent) -> None:
    """Link ``event`` into the nesting of the run: a ``*_started`` event opens a scope its inner events are
    children of; the matching ``*_completed``/``*_finished``/``*_failed``/``*_error`` closes it and points back
    to its start."""
    scopes = _open_scopes.get()
    kind = event.type
    for suffix in _END_SUFFIXES:
        if kind.endswith(suffix):
            prefix = kind[: -len(suffix)]
            for depth in range(len(scopes) - 1, -1, -1):
                if scopes[depth][0] == prefix:
                    if event.started_event_id is None:
                        event.started_event_id = scopes[depth][1]
                    scopes = scopes[:depth]
                    _open_scopes.set(scopes)
                    break
            break
    if event.parent_event_id is None and scopes and scopes[-1][1] != event.event_id:
        event.parent_event_id = scopes[-1][1]
    if kind.endswith("_started"):
        _open_scopes.set((*scopes, (kind[: -len("_started")], event.event_id)))


class EventBus:
    """Process-wide publish/subscribe for crewpoint events."""

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._subs: list[_Subscription] = []
        self._observers: list[Observer] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: threading.Thread | None = None

    # -- subscription -------------------------------------------------------------------------------
    def on(self, *targets: Target) -> Callable[[Handler], Handler]:
        """Decorator: ``@event_bus.on(TaskCompletedEvent)``, ``@event_bus.on("task_completed")``, ``"*"``."""
        if not targets:
            targets = ("*",)

        def decorator(fn: Handler) -> Handler:
            for target in targets:
                self.register(target, fn)
            return fn

        return decorator

    def register(self, target: Target, handler: Handler) -> None:
        if isinstance(target, str):
            # lazy: crewpoint.events.types imports this module back (cycle)
            from crewpoint.events.types import EVENT_TYPES

            if target != "*" and target not in EVENT_TYPES:
                raise ValueError(f"unknown event type {target!r}; see crewpoint.events.EVENT_TYPES")
        elif not (isinstance(target, type) and issubclass(target, BaseEvent)):
            raise TypeError(f"cannot subscribe to {target!r}: pass an event class, a name or '*'")
        sub = _Subscription(
            target=target,
            handler=handler,
            wants_state=_positional_arity(handler) >= 3,
            is_async=inspect.iscoroutinefunction(handler),
        )
        with self._lock:
            self._subs.append(sub)

    def off(self, handler: Handler) -> None:
        """Remove every subscription of ``handler``."""
        with self._lock:
            self._subs = [s for s in self._subs if s.handler is not handler]

    def add_observer(self, observer: Observer) -> None:
        """Internal hook run before handlers for every event (event history, checkpoint triggers)."""
        with self._lock:
            if observer not in self._observers:
                self._observers.append(observer)

    def remove_observer(self, observer: Observer) -> None:
        with self._lock:
            if observer in self._observers:
                self._observers.remove(observer)

    @contextmanager
    def scoped_handlers(self) -> Iterator[None]:
        """Handlers registered inside the block are removed when it ends (tests, one-off listeners)."""
        with self._lock:
            saved = list(self._subs)
        try:
            yield
        finally:
            with self._lock:
                self._subs = saved

    # -- emission -----------------------------------------------------------------------------------
    def emit(self, source: Any, event: BaseEvent) -> BaseEvent:
        """Publish ``event``; returns it with its ``sequence`` set and linked to the events around it
        (``parent_event_id``, ``started_event_id``), unless the emitter set those itself."""
        if not event.sequence:
            event.sequence = next_sequence()
        _nest(event)
        with self._lock:
            observers = list(self._observers)
            subs = [s for s in self._subs if s.matches(event)]
        for observer in observers:
            try:
                observer(source, event)
            except Exception:  # an observer must never stop the run
                log.exception("event observer failed on %s", event.type)
        if not subs:
            return event
        state = None
        if any(s.wants_state for s in subs):
            # lazy: crewpoint.runtime imports this module back (cycle)
            from crewpoint.runtime import current_state

            state = current_state()
        for sub in subs:
            args = (source, event, state) if sub.wants_state else (source, event)
            try:
                if sub.is_async:
                    self._run_async(sub.handler(*args))
                else:
                    result = sub.handler(*args)
                    if inspect.isawaitable(result):
                        self._run_async(result)
            except Exception:
                log.exception("event handler %r failed on %s", getattr(sub.handler, "__name__", sub), event.type)
        return event

    def _run_async(self, awaitable: Any) -> None:
        import asyncio

        loop = self._ensure_loop()
        future = asyncio.run_coroutine_threadsafe(_await(awaitable), loop)
        future.result()

    def _ensure_loop(self) -> asyncio.AbstractEventLoop:
        import asyncio

        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                thread = threading.Thread(target=loop.run_forever, name="crewpoint-events", daemon=True)
                thread.start()
                self._loop, self._loop_thread = loop, thread
            return self._loop


async def _await(awaitable: Any) -> Any:
    return await awaitable


event_bus = EventBus()
