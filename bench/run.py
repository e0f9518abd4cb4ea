"""crewpoint benchmarks: ``make bench`` prints one table (median of repeated runs on this machine).

Each row names its target; ``ok`` tells whether the figure meets it.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the shared helpers (support)

from rich.console import Console
from rich.table import Table


@dataclass
class Row:
    name: str
    value: float
    unit: str
    target: float | None
    note: str = ""
    at_least: bool = False
    """The target is a floor (a ratio of throughputs, say), not a ceiling."""

    @property
    def ok(self) -> str:
        if self.target is None:
            return "-"
        return "yes" if (self.value >= self.target if self.at_least else self.value <= self.target) else "NO"

    @property
    def goal(self) -> str:
        return "" if self.target is None else f"{'≥' if self.at_least else '≤'} {self.target:g}"


def bench_env() -> dict[str, str]:
    """The environment of an ordinary installation: bytecode caching on (some shells turn it off)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _median_subprocess(code: str, runs: int = 15) -> float:
    times = []
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, env=bench_env())  # warm up
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=bench_env())
        times.append(float(out.stdout.strip()))
    return statistics.median(times)


def bench_import() -> list[Row]:
    code = "import time; t = time.perf_counter(); import crewpoint; print(time.perf_counter() - t)"
    return [Row("import crewpoint", _median_subprocess(code) * 1000, "ms", 150, "CrewAI: 2.8 s")]


def bench_kickoff() -> list[Row]:
    code = (
        "import time, warnings, logging; logging.disable(logging.WARNING)\n"
        "from crewpoint.demo import demo_crew\n"
        "crew = demo_crew(checkpoint=False)\n"
        "t = time.perf_counter(); crew.kickoff(inputs={'topic': 'x', 'audience': 'y'}); "
        "print(time.perf_counter() - t)"
    )
    return [Row("4-task offline crew kickoff (no checkpoints)", _median_subprocess(code, 7) * 1000, "ms", None)]


LIST_FLOOR_GOAL = 2.0
"""``crewpoint checkpoint list`` of 10,000 checkpoints over its floor (``list_floor.py``), at most."""


def _timed(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one whole process (in ``env``, else :func:`bench_env`), and what it printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True, env=env or bench_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, done.stdout


def list_over_floor(store: str, runs: int = 7) -> tuple[float, float, float, float]:
    """``crewpoint checkpoint list STORE`` as a user runs it (this venv's command, bytecode cached) and the
    floor on the same store, in turn ``runs`` times after a first run of each: the medians of each pair's ratio of
    crewpoint's wall and CPU seconds over the floor's (the two of a pair run back to back, so a load that comes and
    goes falls on both alike), then crewpoint's and the floor's median wall seconds. Raises
    ``AssertionError`` when the two print other bytes (no ratio means anything then)."""
    command = [str(Path(sys.executable).with_name("crewpoint")), "checkpoint", "list", store]
    floor = [sys.executable, str(Path(__file__).with_name("list_floor.py")), store]
    ours, theirs = _timed(command)[2], _timed(floor)[2]
    assert ours == theirs, f"list and its floor printed other bytes for {store}"
    got: dict[int, list[tuple[float, float]]] = {0: [], 1: []}
    for _ in range(runs):
        for i, args in enumerate((command, floor)):
            wall, cpu, _ = _timed(args)
            got[i].append((wall, cpu))
    pairs = list(zip(got[0], got[1], strict=True))
    wall_ratio = statistics.median(a[0] / b[0] for a, b in pairs)
    cpu_ratio = statistics.median(a[1] / b[1] for a, b in pairs)
    walls = [statistics.median(w for w, _ in got[i]) for i in (0, 1)]
    return wall_ratio, cpu_ratio, walls[0], walls[1]


def bench_list_floor() -> list[Row]:
    """``list`` of 10,000 checkpoints over its floor, per store kind, with this venv's crewpoint (the side-by-side
    bench measures the same with a wheel installed on its own)."""
    from support.stores import fill_store

    from crewpoint.providers import JsonProvider, SqliteProvider

    rows = []
    for kind, store, provider in (
        ("JSON", "floor-store", JsonProvider(fsync=False)),
        ("SQLite", "floor-store.db", SqliteProvider()),
    ):
        fill_store(provider, store, 10_000)
        provider.close()
        ratio, cpu, ours, floor = list_over_floor(store)
        note = f"{ours:.3f} s / {floor:.3f} s, CPU {cpu:.2f}x; median of 7, side by side"
        rows.append(Row(f"list 10,000 ({kind}) / its floor", ratio, "x", LIST_FLOOR_GOAL, note))
    return rows


def all_benches() -> list[Callable[[], list[Row]]]:
    from app_bench import app_benches
    from changes_bench import changes_benches
    from checkpoint_bench import checkpoint_benches
    from crewai_bench import crewai_benches
    from feedback_bench import feedback_benches
    from fleet_bench import fleet_benches
    from otel_bench import otel_benches
    from pg_bench import pg_benches
    from pg_cost_bench import pg_cost_benches
    from side_by_side import side_by_side_benches
    from store_bench import store_benches
    from usage_bench import usage_benches

    return [
        bench_import,
        bench_kickoff,
        bench_list_floor,
        *checkpoint_benches(),
        *usage_benches(),
        *otel_benches(),
        *feedback_benches(),
        *changes_benches(),
        *store_benches(),
        *side_by_side_benches(),
        *app_benches(),
        *crewai_benches(),
        *pg_benches(),
        *pg_cost_benches(),
        *fleet_benches(),
    ]


def main() -> None:
    os.environ.setdefault("CREWPOINT_BENCH", "1")
    table = Table(title="crewpoint benchmarks")
    for col in ("benchmark", "value", "unit", "target", "ok", "note"):
        table.add_column(col)
    wanted = set(sys.argv[1:])  # bench function names, e.g. bench_import bench_cli; none: all of them
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        for bench in all_benches():
            if wanted and bench.__name__ not in wanted:
                continue
            start = time.perf_counter()
            try:
                rows = bench()
            except Exception as exc:
                rows = [Row(bench.__name__, float("nan"), "", None, f"failed: {exc}")]
            for row in rows:
                table.add_row(row.name, f"{row.value:,.3f}", row.unit, row.goal, row.ok, row.note)
            print(f"{bench.__name__}: {time.perf_counter() - start:.1f} s", file=sys.stderr)
    Console(width=160).print(table)


if __name__ == "__main__":
    main()
