"""What recording usage costs a run: a 30-task offline crew, checkpointed at every task, with and without it.

The sides are ``usage_sides.py``'s. Two views, both with each run's checkpoints written (fsync'd):

* **a whole process**, as a user runs a crew (``usage_run.py``: start, import, build, run, exit), with this
  environment's crewpoint and bytecode caching on: the target row, what a user waits;
* **the kickoff alone**, in this process: the stricter view, with nothing around the run. Its CPU-time row (this
  process, all its threads: the writer's too) is stricter still, since an offline call costs nothing next to writing
  a checkpoint. A third side records usage but writes no ``usage`` section, to show what the section's rows cost on
  their own (every checkpoint holds every row so far); a fourth side is the second once more: how far apart two
  equal sides read.

Both sides do the same work (each run's output and number of checkpoints are compared), in fresh stores; runs
alternate (each side first in every other round) so that the machine's drift lands on both, and each figure is the
median of the rounds' ratios. ``USAGE_BENCH_ROUNDS`` and ``USAGE_BENCH_TASKS`` make it smaller (the smoke test runs
it so).
"""

from __future__ import annotations

import gc
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import usage_sides
from run import Row, _timed, bench_env
from usage_sides import SIDES

logging.disable(logging.WARNING)

ROUNDS = int(os.environ.get("USAGE_BENCH_ROUNDS", "41"))
REPO = Path(__file__).resolve().parent.parent
PROCESS_SIDES = ("recorded", "off", "off again")
"""The sides run as whole processes (the section's own cost is the kickoff view's question)."""


def _kickoff(location: str) -> tuple[float, float, str]:
    """The run's wall time and CPU time (its checkpoints written), and what it did: its output and how many
    checkpoints it wrote (a side whose checkpoints fail would look cheap)."""
    from crewpoint.checkpoint.writer import writer
    from crewpoint.providers import JsonProvider

    crew = usage_sides.crew(location)
    wall, cpu = time.perf_counter(), time.process_time()
    output = crew.kickoff()
    writer.flush()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return wall, cpu, f"{len(JsonProvider(fsync=False).list(location))} checkpoints; {output}"


def _ratio(runs: dict[str, list[tuple[float, float, str]]], side: str, index: int) -> float:
    return statistics.median(a[index] / b[index] for a, b in zip(runs[side], runs["off"], strict=True))


def _in_turn(names: list[str], rounds: int, run: Callable[[str, int], tuple[float, float, str]]) -> dict[str, Any]:
    """``run(side, round)`` for every side, ``rounds`` times: each side goes first, ..., last in turn, forwards and
    backwards; asserts that every run did the same work."""
    runs: dict[str, list[tuple[float, float, str]]] = {side: [] for side in names}
    for i in range(rounds):
        order = names[i % len(names) :] + names[: i % len(names)]
        for side in order if i % 2 == 0 else order[::-1]:
            runs[side].append(run(side, i))
    outputs = {done[2] for side_runs in runs.values() for done in side_runs}
    assert len(outputs) == 1, f"the sides did not do the same work: {sorted(outputs)[:2]}"
    return runs


def _installed(tmp: str) -> dict[str, str]:
    """The environment of a normal (non-editable) install of this tree, made under ``tmp``: crewpoint from there,
    its dependencies from this environment, bytecode caching on."""
    site = Path(tmp) / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(REPO)]
    subprocess.run(pip, check=True, capture_output=True)
    env = {**bench_env(), "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import crewpoint; print(crewpoint.__file__)"],
        env=env,
        text=True,
        capture_output=True,
        check=True,
    )
    assert Path(where.stdout.strip()).is_relative_to(site), f"crewpoint came from {where.stdout.strip()}"
    return env


def _whole_processes(tmp: str) -> list[Row]:
    from crewpoint.providers import JsonProvider

    script = str(Path(__file__).with_name("usage_run.py"))
    env = _installed(tmp)

    def run(side: str, i: int) -> tuple[float, float, str]:
        store = f"{tmp}/process-{side}-{i}"
        wall, cpu, out = _timed([sys.executable, script, side, store], env)
        return wall, cpu, f"{len(JsonProvider(fsync=False).list(store))} checkpoints; {out.decode().strip()}"

    for side in PROCESS_SIDES:  # bytecode compiled, files cached: the first runs land on no side
        run(side, -1)
    runs = _in_turn(list(PROCESS_SIDES), ROUNDS, run)
    return _rows(runs, "whole process", "as a process", target=1.02)


def _kickoffs(tmp: str) -> list[Row]:
    def run(side: str, i: int) -> tuple[float, float, str]:
        gc.collect()
        with SIDES[side]():
            return _kickoff(f"{tmp}/{side}-{i}")

    for side, switch in SIDES.items():  # imports and first-use costs land on no side
        with switch():
            _kickoff(f"{tmp}/warm-{side}")
    runs = _in_turn(list(SIDES), ROUNDS, run)
    rows = _rows(runs, "kickoff alone", "kickoff alone", target=None)
    section = Row(
        "recording usage without its rows / not recording it (kickoff alone, CPU)",
        _ratio(runs, "no section", 1),
        "x",
        None,
        "the rest is the usage rows every checkpoint repeats",
    )
    return [*rows[:4], section, *rows[4:]]


def _rows(runs: dict[str, Any], view: str, run_is: str, target: float | None) -> list[Row]:
    """The rows of one view: each side's median wall time, recording over not recording (wall, then CPU), and the
    spread between the two equal sides."""
    rounds = f"median of {ROUNDS} rounds"
    crew = f"{usage_sides.TASKS}-task offline crew {run_is}"
    return [
        Row(f"{crew}, usage recorded", statistics.median(a[0] for a in runs["recorded"]) * 1000, "ms", None),
        Row(f"{crew}, no usage", statistics.median(b[0] for b in runs["off"]) * 1000, "ms", None),
        Row(f"recording usage / not recording it ({view}, wall)", _ratio(runs, "recorded", 0), "x", target, rounds),
        Row(f"recording usage / not recording it ({view}, CPU)", _ratio(runs, "recorded", 1), "x", None, rounds),
        Row(
            f"not recording / not recording, a second side ({view}, wall)",
            _ratio(runs, "off again", 0),
            "x",
            None,
            "the bench's own spread between two equal sides",
        ),
    ]


def bench_usage_recording() -> list[Row]:
    with tempfile.TemporaryDirectory() as tmp:
        return _whole_processes(tmp) + _kickoffs(tmp)


def usage_benches() -> list[Callable[[], list[Row]]]:
    return [bench_usage_recording]
