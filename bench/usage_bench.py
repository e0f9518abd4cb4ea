"""What recording usage costs a run: a 30-task offline crew, checkpointed at every task, with and without it.

"Without" is this bench's own switch: the LLM's completion event as it was before usage (only the counts the model
reported), and a runtime that neither follows units nor sums calls nor writes a ``usage`` section. Runs alternate
(each side first in every other pair) so that the machine's drift lands on both; each figure is the median of the
pairs' ratios. The target row is the run's wall time, what a user waits (checkpoints fsync'd); the CPU-time row
(this process, all its threads: the writer's too) is the stricter view, since an offline call costs nothing next to
writing a checkpoint, and other processes on a shared machine disturb it less than the clock.
"""

from __future__ import annotations

import gc
import logging
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from run import Row

logging.disable(logging.WARNING)

TASKS = 30
PAIRS = 21


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
    )

    def emit_started(self: Any, ctx: Any, messages: list[dict[str, str]]) -> None:
        from crewpoint.events import LLMCallStartedEvent, event_bus

        event_bus.emit(
            self,
            LLMCallStartedEvent(
                model=self.model,
                call_id=ctx.call_id,
                message_count=len(messages),
                agent_id=ctx.agent_id,
                task_id=ctx.task_id,
                agent_role=ctx.agent_role,
                source_type="llm",
            ),
        )

    def reply(self: Any, messages: list[dict[str, str]]) -> str:
        with _counter_lock:
            self._calls += 1
        return str(self.respond(messages))  # the same text, nothing counted

    def emit_completed(self: Any, ctx: Any, text: str) -> None:
        from crewpoint.events import LLMCallCompletedEvent, event_bus

        event_bus.emit(
            self,
            LLMCallCompletedEvent(
                model=self.model,
                call_id=ctx.call_id,
                response=text,
                agent_id=ctx.agent_id,
                task_id=ctx.task_id,
                agent_role=ctx.agent_role,
                source_type="llm",
            ),
        )

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
    RuntimeState.usage_section = lambda self, entity: None  # type: ignore[method-assign,assignment,return-value]
    try:
        yield
    finally:
        (
            BaseLLM._emit_started,
            BaseLLM._emit_completed,
            OfflineLLM._reply,
            RuntimeState.on_event,
            RuntimeState.usage_section,
        ) = saved  # type: ignore[method-assign]


def _kickoff(location: str) -> tuple[float, float]:
    """The run's wall time and CPU time, its checkpoints written."""
    from crewpoint.checkpoint.writer import writer

    crew = _crew(location)
    wall, cpu = time.perf_counter(), time.process_time()
    crew.kickoff()
    writer.flush()
    return time.perf_counter() - wall, time.process_time() - cpu


def bench_usage_recording() -> list[Row]:
    on: list[tuple[float, float]] = []
    off: list[tuple[float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        _kickoff(f"{tmp}/warm")  # imports and first-use costs land on neither side
        for i in range(PAIRS):
            for recorded in (True, False) if i % 2 == 0 else (False, True):  # neither side always goes first
                gc.collect()
                if recorded:
                    on.append(_kickoff(f"{tmp}/on{i}"))
                    continue
                with _usage_off():
                    off.append(_kickoff(f"{tmp}/off{i}"))
    wall = statistics.median(a[0] / b[0] for a, b in zip(on, off, strict=True))
    cpu = statistics.median(a[1] / b[1] for a, b in zip(on, off, strict=True))
    return [
        Row(
            f"{TASKS}-task offline crew, checkpointed, usage recorded",
            statistics.median(a[0] for a in on) * 1000,
            "ms",
            None,
        ),
        Row(
            f"{TASKS}-task offline crew, checkpointed, no usage",
            statistics.median(b[0] for b in off) * 1000,
            "ms",
            None,
        ),
        Row("recording usage / not recording it (wall time)", wall, "x", 1.02, f"median of {PAIRS} pairs"),
        Row("recording usage / not recording it (CPU time)", cpu, "x", None, "offline calls cost nothing: worst case"),
    ]


def usage_benches() -> list[Callable[[], list[Row]]]:
    return [bench_usage_recording]
