"""Store benchmarks (issue 8's targets): whole processes from a shell, bytecode cached; medians.

* ``checkpoint list`` of 10,000 checkpoints (JSON and SQLite), ``info`` of a 10,000-row SQLite store;
* ``list --limit 50`` of a 1,000,000-row SQLite store;
* what a checkpoint after every task adds to a 30-task crew, kickoff to return, writes durable;
* ``python -c "from crewpoint import Agent, Crew, Task"``.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from run import Row, bench_env
from support.stores import clone_sqlite_rows, fill_store

CLI = [sys.executable, "-m", "crewpoint.tui.cli"]


def _wall(args: list[str], runs: int = 7) -> float:
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=bench_env())
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=bench_env())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _first_line(args: list[str], runs: int = 5) -> float:
    """Median seconds from starting ``args`` to the first line after the header on its stdout; the process
    is then stopped (it was started here)."""
    times = []
    for _ in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=bench_env())
        assert proc.stdout is not None
        proc.stdout.readline()  # the header
        proc.stdout.readline()
        times.append(time.perf_counter() - start)
        proc.kill()
        proc.wait()
        proc.stdout.close()
    return statistics.median(times[1:])


def _stores() -> dict[str, str]:
    from crewpoint.providers import JsonProvider, SqliteProvider

    paths = {"json10k": "sb10k", "db10k": "sb10k.db", "db1m": "sb1m.db"}
    if not Path(paths["json10k"]).exists():
        fill_store(JsonProvider(fsync=False), paths["json10k"], 10_000)
        fill_store(SqliteProvider(), paths["db10k"], 10_000)
        provider = SqliteProvider()
        fill_store(provider, paths["db1m"], 4)
        provider.close()
        clone_sqlite_rows(paths["db1m"], 1_000_000)
    return paths


def bench_store_cli() -> list[Row]:
    s = _stores()
    return [
        Row(
            "store: list 10,000 (JSON)",
            _wall([*CLI, "checkpoint", "list", s["json10k"]]),
            "s",
            0.30,
            "CrewAI 1,000: 3.6 s",
        ),
        Row("store: list 10,000 (SQLite)", _wall([*CLI, "checkpoint", "list", s["db10k"]]), "s", 0.25),
        Row("store: info, 10,000-row SQLite", _wall([*CLI, "checkpoint", "info", s["db10k"]]), "s", 0.12),
        Row(
            "store: list --limit 50, 1,000,000-row SQLite",
            _wall([*CLI, "checkpoint", "list", s["db1m"], "--limit", "50"], runs=3),
            "s",
            0.2,
        ),
        Row(
            "store: first row of a full listing, 1,000,000-row SQLite (provider, process start included)",
            _wall([sys.executable, "-c", _FIRST_ROW, s["db1m"]], runs=3),
            "s",
            0.2,
            "iter_list",
        ),
        Row(
            "store: `list` of a 1,000,000-row SQLite store, command start to its first row on stdout",
            _first_line([sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", s["db1m"]], runs=3),
            "s",
            0.2,
            "the table streams in chunks",
        ),
    ]


_FIRST_ROW = (
    "import sys\n"
    "from crewpoint.providers import provider_for\n"
    "rows = provider_for(sys.argv[1]).iter_list(sys.argv[1])\n"
    "print(next(rows).id)\n"
)


_CREW = """
import sys, time, tempfile, logging
logging.disable(logging.WARNING)
from crewpoint import Agent, Crew, Task, CheckpointConfig
from crewpoint.providers import JsonProvider

def crew(checkpoint):
    agent = Agent(role="Writer", goal="Write", backstory="Experienced")
    tasks = [Task(description=f"Step {i} on {{topic}}", expected_output="One line", agent=agent) for i in range(30)]
    return Crew(agents=[agent], tasks=tasks, checkpoint=checkpoint)

with_checkpoints = sys.argv[1] == "1"
folder = tempfile.mkdtemp(dir=".")
config = CheckpointConfig(location=folder + "/cp", provider=JsonProvider()) if with_checkpoints else False
c = crew(config)
t = time.perf_counter()
c.kickoff(inputs={"topic": "tides"})  # returns after every checkpoint is written and fsync'd
print(time.perf_counter() - t)
"""


def _kickoff(with_checkpoints: bool, runs: int = 9) -> float:
    times = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _CREW, "1" if with_checkpoints else "0"],
            capture_output=True,
            text=True,
            check=True,
            env=bench_env(),
        )
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def bench_checkpoint_per_task() -> list[Row]:
    plain = _kickoff(False)
    checked = _kickoff(True)
    per_task = (checked - plain) / 30 * 1000
    return [Row("store: 30-task crew, a checkpoint per task, cost per task", per_task, "ms", 2.0, "CrewAI: 103 ms")]


def bench_import_api() -> list[Row]:
    code = "from crewpoint import Agent, Crew, Task"
    return [
        Row(
            'python -c "from crewpoint import Agent, Crew, Task"',
            _wall([sys.executable, "-c", code], 15) * 1000,
            "ms",
            150,
            "CrewAI: 4.3-6.0 s",
        )
    ]


def store_benches() -> list[Callable[[], list[Row]]]:
    return [bench_store_cli, bench_checkpoint_per_task, bench_import_api]
