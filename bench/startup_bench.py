"""Start-up: ``crewpoint --help`` and ``crewpoint checkpoint --help`` against CrewAI's ``crewai --help``, side by side.

Both are whole processes as a user runs them, each from an ordinary install: crewpoint from a wheel of this tree in
a venv of its own (``side_by_side.install``: its dependencies pinned to this environment's), CrewAI from the venv
``make test-crewai`` makes (``.venv-crewai``, CrewAI 1.15.30). Bytecode is cached (a first run of each writes it);
the commands run in turn so that a busy machine slows them alike, and each row is a ratio of medians measured in
the same run, never an absolute time (the note gives the times).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from run import Row, bench_env
from side_by_side import REPO, install, tree_source

CREWAI = REPO / ".venv-crewai" / "bin" / "crewai"
"""CrewAI's command, from the venv ``make test-crewai`` makes."""
GOAL = 0.2
"""crewpoint's ``--help`` over CrewAI's, at most: five times faster."""
RUNS = int(os.environ.get("STARTUP_BENCH_RUNS", "21"))
_QUIET = {"OTEL_SDK_DISABLED": "true", "CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false"}
"""CrewAI's telemetry off, as ``make test-crewai`` runs it: a help screen that waits on the network measures that."""


def _wall(args: list[str]) -> float:
    env = {**bench_env(), **_QUIET}
    start = time.perf_counter()
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    return time.perf_counter() - start


def medians(commands: dict[str, list[str]], runs: int = RUNS) -> dict[str, float]:
    """Each command's median wall seconds over ``runs`` runs in turn, after a first run of each (bytecode, caches)."""
    for args in commands.values():
        _wall(args)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for i in range(runs):
        names = list(commands) if i % 2 == 0 else list(commands)[::-1]
        for name in names:
            times[name].append(_wall(commands[name]))
    return {name: statistics.median(got) for name, got in times.items()}


def rows_of(crewpoint: str, crewai: Path, runs: int = RUNS) -> list[Row]:
    """The rows for the ``crewpoint`` command at ``crewpoint`` against ``crewai`` (a row that says how to get CrewAI's
    venv when it is not there)."""
    commands = {"help": [crewpoint, "--help"], "checkpoint help": [crewpoint, "checkpoint", "--help"]}
    if not crewai.is_file():
        got = medians(commands, runs)
        note = f"{got['help']:.3f} s; no CrewAI to compare with: `make test-crewai` makes {crewai.parent.parent.name}"
        return [Row("crewpoint --help / crewai --help", float("nan"), "x", GOAL, note)]
    got = medians({**commands, "crewai": [str(crewai), "--help"]}, runs)
    return [
        Row(
            f"crewpoint {what} / crewai --help",
            got[name] / got["crewai"],
            "x",
            GOAL,
            f"{got['crewai'] / got[name]:.1f}x faster: {got[name]:.3f} s / {got['crewai']:.3f} s; median of {runs}",
        )
        for name, what in (("help", "--help"), ("checkpoint help", "checkpoint --help"))
    ]


def bench_startup() -> list[Row]:
    """Run from the bench's temporary folder (``run.py`` changes into it)."""
    work = Path("startup").resolve()
    work.mkdir(exist_ok=True)
    constraints = work / "constraints.txt"
    pinned = subprocess.run(
        [sys.executable, "-m", "pip", "list", "--format=freeze", "--exclude-editable"],
        capture_output=True,
        check=True,
    ).stdout
    constraints.write_bytes(pinned)
    venv = work / "venv"
    install(tree_source(work / "src"), venv, constraints)
    return rows_of(str(venv / "bin" / "crewpoint"), CREWAI)


def startup_benches() -> list[Callable[[], list[Row]]]:
    return [bench_startup]
