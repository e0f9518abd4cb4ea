"""``cost --by run --since 7d`` against ``list --limit 50`` on one PostgreSQL store of 1,000,000 checkpoint rows.

The rows are made on the bench's own throw-away server (``tests/pg_server.py``) in one ``INSERT ... SELECT`` over
``generate_series``, as ``pg_bench.py`` makes its million: runs of :data:`RUN_LENGTH` checkpoints spread over 60
days, each row with its run id and its usage summary (gpt-4o, growing as the run goes), and each with a body row
(the first checkpoint's manifest), so that both commands read sound rows. Both commands run as a user runs them
(whole processes), in turn, and the row is the ratio of their median wall times: the goal is 2 or less.
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
from support.stores import demo_records

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pg_server import LocalServer

from crewpoint.providers import PostgresProvider
from crewpoint.providers.pg_location import parse

GOAL = 2.0
ROWS = 1_000_000
RUN_LENGTH = 50
"""Checkpoints per run: a million rows are 20,000 runs, about 2,300 of them in the last seven days."""
DAY = 86_400.0
USAGE = (
    'format(\'{"chain":[["gpt-4o","openai",%%s,%%s,%%s,0,0,%%s,%%s,false]],'
    '"run":[["gpt-4o","openai",%%s,%%s,%%s,0,0,%%s,%%s,false]]}\','
    " k * 1200, k * 300, k * 200, k, k * 1.5, k * 1200, k * 300, k * 200, k, k * 1.5)"
)
"""The usage summary of a run's k-th checkpoint: k calls of 1,200 tokens in (200 cached) and 300 out."""


def load(location: str, count: int = ROWS, now: float | None = None) -> None:
    """``count`` checkpoint rows in runs of :data:`RUN_LENGTH` over the 60 days before ``now``, each with its
    run id, usage summary and a body row."""
    import psycopg

    now = time.time() if now is None else now
    first = demo_records()[0]
    provider = PostgresProvider()
    try:
        provider.write(location, first)  # makes the store, at this crewpoint's schema
    finally:
        provider.close()
    where = parse(location)
    s = f'"{where.schema}"'
    step = 60 * DAY / count
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {s}.checkpoints (id, parent_id, branch, lineage, sequence, created_at, trigger,"
            " entity_kind, entity_name, tasks_done, tasks_total, schema_version, version, size, run_id, usage)"
            f" SELECT md5(n::text), CASE WHEN k = 1 THEN NULL ELSE md5((n - 1)::text) END, 'main',"
            f" md5('run' || r), k, %s + n * %s, 'task_completed', 'crew', 'research-crew', k, {RUN_LENGTH}, 1,"
            f" '0.1.0', 27000, left(md5('r' || r), 16), {USAGE}"
            f" FROM (SELECT n, n / {RUN_LENGTH} AS r, n %% {RUN_LENGTH} + 1 AS k"
            "       FROM generate_series(1, %s) AS n) AS g",
            [now - 60 * DAY, step, count],
        )
        conn.execute(
            f"INSERT INTO {s}.bodies (id, manifest) SELECT md5(n::text), b.manifest"
            f" FROM generate_series(1, %s) AS n, (SELECT manifest FROM {s}.bodies WHERE id = %s) AS b",
            [count, first.meta.id],
        )
        conn.execute(f"ANALYZE {s}.checkpoints")
        conn.execute(f"ANALYZE {s}.bodies")


def side_by_side(commands: list[list[str]], runs: int = 7) -> list[float]:
    """The median wall seconds of each command (whole processes), run in turn ``runs`` times after one of each."""
    times: list[list[float]] = [[] for _ in commands]
    for attempt in range(runs + 1):
        for i, args in enumerate(commands):
            started = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "crewpoint.tui.cli", *args], capture_output=True, env=bench_env()
            )
            if done.returncode != 0:
                raise RuntimeError(f"{' '.join(args[:2])} failed: {done.stderr.decode(errors='replace')[-500:]}")
            if attempt:
                times[i].append(time.perf_counter() - started)
    return [statistics.median(t) for t in times]


def measure(location: str, count: int = ROWS, runs: int = 7) -> Row:
    """Load ``count`` rows at ``location`` and time both commands on them, side by side."""
    load(location, count)
    cost, listing = side_by_side(
        [
            ["checkpoint", "cost", location, "--by", "run", "--since", "7d", "--json"],
            ["checkpoint", "list", "--limit", "50", location],
        ],
        runs,
    )
    note = f"{cost:.2f} s / {listing:.2f} s, medians of {runs}, side by side"
    return Row(
        f"postgres: cost --by run --since 7d / list --limit 50 ({count:,} rows)", cost / listing, "x", GOAL, note
    )


def bench_pg_cost() -> list[Row]:
    with LocalServer() as server:
        os.environ.update(server.env())
        return [measure(f"{server.url}?schema=costs", int(os.environ.get("PG_COST_BENCH_ROWS", ROWS)))]


def pg_cost_benches() -> list[Callable[[], list[Row]]]:
    return [bench_pg_cost]


if __name__ == "__main__":
    for row in bench_pg_cost():
        print(f"{row.name:70} {row.value:8.3f} {row.unit:3} target {row.target} {row.note}")
