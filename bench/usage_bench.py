"""What recording usage costs a run: a 30-task offline crew, checkpointed at every task, with and without it.

"Without" is this bench's own switch, the pieces that record usage replaced by what they would be without it: the
offline model counts nothing and reports nothing, the LLM's completion event carries no counts, and the runtime
neither follows units nor sums calls nor writes a ``usage`` section (nor a usage summary in its metadata). Counting
what a call sent and said is part of recording, so it lands on the recorded side. Both sides do the same work (each
run's output and number of checkpoints are compared), in fresh stores; runs alternate (each side first in every
other round) so that the machine's drift lands on both, and each figure is the median of the rounds' ratios. The
target row is the run's wall time, what a user waits (checkpoints fsync'd); the CPU-time row (this process, all its
threads: the writer's too) is the stricter view, since an offline call costs nothing next to writing a checkpoint. A
third side records usage but writes no ``usage`` section, to show what the section's rows cost on their own (every
checkpoint holds every row so far). A fourth side is the second once more: how far apart two equal sides read.

``USAGE_BENCH_ROUNDS`` and ``USAGE_BENCH_TASKS`` make it smaller (the smoke test runs it so).
"""

from __future__ import annotations

import gc
import logging
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from run import Row

logging.disable(logging.WARNING)

TASKS = int(os.environ.get("USAGE_BENCH_TASKS", "30"))
ROUNDS = int(os.environ.get("USAGE_BENCH_ROUNDS", "41"))


def _crew(location: str) -> Any:
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
def _usage_off() -> Iterator[None]:
    """Run without usage: the pieces that record it replaced by what ran before it existed."""
    from crewpoint.llm import BaseLLM, OfflineLLM, _counter_lock
    from crewpoint.runtime import RuntimeState

    saved = (
        BaseLLM._emit_started,
        BaseLLM._emit_completed,
        OfflineLLM._reply,
        RuntimeState.on_event,
        RuntimeState.usage_section,
        RuntimeState.capture,
    )

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

    BaseLLM._emit_started = emit_started  # type: ignore[method-assign]
    BaseLLM._emit_completed = emit_completed  # type: ignore[method-assign]
    OfflineLLM._reply = reply  # type: ignore[method-assign]
    RuntimeState.on_event = on_event  # type: ignore[method-assign]
    RuntimeState.usage_section = lambda self, entity: _EMPTY  # type: ignore[method-assign]
    RuntimeState.capture = _without_section(RuntimeState.capture)  # type: ignore[method-assign]
    try:
        yield
    finally:
        (
            BaseLLM._emit_started,
            BaseLLM._emit_completed,
            OfflineLLM._reply,
            RuntimeState.on_event,
            RuntimeState.usage_section,
            RuntimeState.capture,
        ) = saved  # type: ignore[method-assign]


@contextmanager
def _no_section() -> Iterator[None]:
    """Record usage but write no ``usage`` section: what the rest of recording costs without the rows."""
    from crewpoint.runtime import RuntimeState

    saved = RuntimeState.usage_section, RuntimeState.capture
    RuntimeState.usage_section = lambda self, entity: _EMPTY  # type: ignore[method-assign]
    RuntimeState.capture = _without_section(RuntimeState.capture)  # type: ignore[method-assign]
    try:
        yield
    finally:
        RuntimeState.usage_section, RuntimeState.capture = saved  # type: ignore[method-assign]


def _kickoff(location: str) -> tuple[float, float, str]:
    """The run's wall time and CPU time (its checkpoints written), and what it did: its output and how many
    checkpoints it wrote (a side whose checkpoints fail would look cheap)."""
    from crewpoint.checkpoint.writer import writer
    from crewpoint.providers import JsonProvider

    crew = _crew(location)
    wall, cpu = time.perf_counter(), time.process_time()
    output = crew.kickoff()
    writer.flush()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, f"{len(JsonProvider(fsync=False).list(location))} checkpoints; {output}"


SIDES: dict[str, Callable[[], Any]] = {
    "recorded": nullcontext,
    "off": _usage_off,
    "no section": _no_section,
    "off again": _usage_off,
}
"""The sides; "off again" is "off" once more, measured the same way: how far apart two equal sides read."""


def _ratio(runs: dict[str, list[tuple[float, float, str]]], side: str, index: int) -> float:
    return statistics.median(a[index] / b[index] for a, b in zip(runs[side], runs["off"], strict=True))


def bench_usage_recording() -> list[Row]:
    runs: dict[str, list[tuple[float, float, str]]] = {side: [] for side in SIDES}
    names = list(SIDES)
    with tempfile.TemporaryDirectory() as tmp:
        for side, switch in SIDES.items():  # imports and first-use costs land on no side
            with switch():
                _kickoff(f"{tmp}/warm-{side}")
        for i in range(ROUNDS):
            order = names[i % len(names) :] + names[: i % len(names)]  # each side goes first, ..., last in turn
            for side in order if i % 2 == 0 else order[::-1]:
                gc.collect()
                with SIDES[side]():
                    runs[side].append(_kickoff(f"{tmp}/{side}-{i}"))
    outputs = {run[2] for side_runs in runs.values() for run in side_runs}
    assert len(outputs) == 1, "the sides did not do the same work"
    rounds = f"median of {ROUNDS} rounds"
    return [
        Row(
            f"{TASKS}-task offline crew, checkpointed, usage recorded",
            statistics.median(a[0] for a in runs["recorded"]) * 1000,
            "ms",
            None,
        ),
        Row(
            f"{TASKS}-task offline crew, checkpointed, no usage",
            statistics.median(b[0] for b in runs["off"]) * 1000,
            "ms",
            None,
        ),
        Row("recording usage / not recording it (wall time)", _ratio(runs, "recorded", 0), "x", 1.02, rounds),
        Row("recording usage / not recording it (CPU time)", _ratio(runs, "recorded", 1), "x", None, rounds),
        Row(
            "recording usage without its rows / not recording it (CPU time)",
            _ratio(runs, "no section", 1),
            "x",
            None,
            "the rest is the usage rows every checkpoint repeats",
        ),
        Row(
            "not recording / not recording, a second side (wall time)",
            _ratio(runs, "off again", 0),
            "x",
            None,
            "the bench's own spread between two equal sides",
        ),
    ]


def usage_benches() -> list[Callable[[], list[Row]]]:
    return [bench_usage_recording]
