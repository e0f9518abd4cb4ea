"""What exporting traces adds to a run: the bundled 4-task offline crew kicked off without and with the listener,
exporting over OTLP/HTTP to a local receiver (tests/support/otlp.py); the difference in the CPU time of the run's
thread, per task (the goal: at most 0.5 ms). The run's thread only queues what each event says: the spans are made,
batched and sent on threads of their own."""

from __future__ import annotations

import logging
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

OTEL_TASK_GOAL_MS = 0.5
TASKS = 4


def _kickoff() -> float:
    """The CPU seconds the run's own thread spends in one kickoff of a fresh demo crew (no checkpoints): the spans'
    export runs on a thread of its own, beside the run, as it does while a real run waits on its model."""
    from crewpoint.demo import demo_crew

    crew = demo_crew(checkpoint=False)
    start = time.thread_time()
    crew.kickoff(inputs={"topic": "x", "audience": "y"})
    return time.thread_time() - start


def bench_otel_export(runs: int = 25) -> list[Any]:
    """Runs with and without the listener, one after the other in one warm process (the exporter is made once per
    process, not per run), so the machine's load weighs on both alike."""
    from run import Row
    from support.otlp import OtlpReceiver

    from crewpoint import telemetry
    from crewpoint.events import event_bus

    logging.disable(logging.WARNING)
    saved = {name: os.environ.pop(name, None) for name in telemetry.ENDPOINT_ENVS}
    off: list[float] = []
    on: list[float] = []
    try:
        with OtlpReceiver() as receiver:
            os.environ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = receiver.endpoint + "/v1/traces"
            for _ in range(3):
                _kickoff()  # warm up: the exporter is made, every module the run loads is loaded
            for _ in range(runs):
                event_bus.remove_observer(telemetry._observe)  # the same process, no spans made
                off.append(_kickoff())
                event_bus.add_observer(telemetry._observe)
                on.append(_kickoff())
            telemetry.flush()
            spans = len(receiver.spans)
            telemetry.shutdown()
    finally:
        for name, value in saved.items():
            os.environ.pop(name, None)
            if value is not None:
                os.environ[name] = value
        logging.disable(logging.NOTSET)
    without, with_export = statistics.median(off), statistics.median(on)
    per_task = max(with_export - without, 0.0) / TASKS * 1000
    note = f"{without * 1000:.1f} ms without, {with_export * 1000:.1f} ms with export; {spans} spans received"
    return [Row("traces exported: run thread's CPU added per task", per_task, "ms", OTEL_TASK_GOAL_MS, note)]


def otel_benches() -> list[Callable[[], list[Any]]]:
    return [bench_otel_export]
