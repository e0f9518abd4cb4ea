"""The sides the usage bench compares, kept light so that a whole process running one side (``usage_run.py``)
imports nothing the bench's table needs: the 30-task offline crew, and the switches that run it without recording
usage (or without its rows).

"Without" is the pieces that record usage replaced by what they would be without it: the offline model counts
nothing and reports nothing, the LLM's completion event carries no counts, and the runtime neither follows units nor
sums calls nor writes a ``usage`` section (nor a usage summary in its metadata). Counting what a call sent and said
is part of recording, so it lands on the recorded side.

``USAGE_BENCH_TASKS`` makes the crew smaller (the smoke test runs it so).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

TASKS = int(os.environ.get("USAGE_BENCH_TASKS", "30"))


def crew(location: str) -> Any:
    from crewpoint import Agent, CheckpointConfig, Crew, OfflineLLM, Task

    llm = OfflineLLM()
    agents = [Agent(role=f"Agent {i}", goal="Do the work well", backstory="Experienced", llm=llm) for i in range(3)]
    tasks: list[Task] = []
    for i in range(TASKS):
        tasks.append(
            Task(
                name=f"step-{i}",
                description=f"Step {i}: extend the report on owls",
                expected_output="One paragraph",
                agent=agents[i % 3],
                context=tasks[-1:],
            )
        )
    return Crew(agents=agents, tasks=tasks, checkpoint=CheckpointConfig(location=location))


_EMPTY: tuple[dict[str, list[Any]], str] = ({"rows": [], "before": [], "reused": []}, "")
"""What ``RuntimeState.usage_section`` gives for a run that recorded nothing: no rows, no summary."""


def _without_section(capture: Callable[..., Any]) -> Callable[..., Any]:
    """``RuntimeState.capture`` writing no ``usage`` section (with ``usage_section`` giving an empty one, its
    metadata carries no usage summary either)."""

    def capture_without(self: Any, trigger: str) -> Any:
        record = capture(self, trigger)
        record.body.pop("usage", None)
        return record

    return capture_without


@contextmanager
def _patched(owner: Any, **replacements: Any) -> Iterator[None]:
    """``owner``'s attributes replaced for the block, then put back."""
    saved = {name: owner.__dict__[name] for name in replacements}
    for name, value in replacements.items():
        setattr(owner, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(owner, name, value)


@contextmanager
def _usage_off() -> Iterator[None]:
    """Run without usage: the pieces that record it replaced by what ran before it existed."""
    from crewpoint.llm import BaseLLM, OfflineLLM, _counter_lock
    from crewpoint.runtime import RuntimeState

    def emit_started(self: Any, ctx: Any, messages: list[dict[str, str]]) -> None:
        from crewpoint.events import LLMCallStartedEvent, event_bus

        event_bus.emit(self, LLMCallStartedEvent(message_count=len(messages), **self._event_ids(ctx)))

    def reply(self: Any, messages: list[dict[str, str]]) -> str:
        with _counter_lock:
            self._calls += 1
        return str(self.respond(messages))  # the same text, nothing counted

    def emit_completed(self: Any, ctx: Any, text: str) -> None:
        from crewpoint.events import LLMCallCompletedEvent, event_bus

        event_bus.emit(self, LLMCallCompletedEvent(response=text, **self._event_ids(ctx)))

    def on_event(self: Any, source: Any, event: Any) -> None:
        if event.type.startswith("checkpoint_"):
            return
        self.events.add(event)
        config = self.root.checkpoint_config_for(event)
        if config is not None and config.wants(event.type):
            self.submit(self.capture(event.type), config)

    with (
        _patched(BaseLLM, _emit_started=emit_started, _emit_completed=emit_completed),
        _patched(OfflineLLM, _reply=reply),
        _patched(RuntimeState, on_event=on_event),
        _no_section(),
    ):
        yield


@contextmanager
def _no_section() -> Iterator[None]:
    """Record usage but write no ``usage`` section: what the rest of recording costs without the rows."""
    from crewpoint.runtime import RuntimeState

    capture = _without_section(RuntimeState.capture)
    with _patched(RuntimeState, usage_section=lambda self, entity: _EMPTY, capture=capture):
        yield


SIDES: dict[str, Callable[[], Any]] = {
    "recorded": nullcontext,
    "off": _usage_off,
    "no section": _no_section,
    "off again": _usage_off,
}
"""The sides; "off again" is "off" once more, measured the same way: how far apart two equal sides read."""
