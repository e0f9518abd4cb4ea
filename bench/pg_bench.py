"""PostgreSQL store benchmarks, on a throw-away local server (``tests/pg_server.py``, fsync on).

Write latency per checkpoint of a demo run, listing 10,000 and the newest 50 of 1,000,000, a checkpoint written by
another process appearing in the app's tree, and 8 writer processes at once with nothing lost.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from run import Row, bench_env
from support.stores import demo_records, fill_store

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pg_server import LocalServer

from crewpoint.providers import PostgresProvider
from crewpoint.providers.base import CheckpointRecord
from crewpoint.providers.pg_location import parse


def _write_latency(location: str, runs: int = 60) -> float:
    """Median milliseconds per checkpoint write, demo runs of four chained checkpoints (warm connection)."""
    provider = PostgresProvider()
    records = demo_records()
    times: list[float] = []
    try:
        for run in range(runs):
            lineage, parent = uuid.uuid4().hex, None
            for seq, record in enumerate(records, start=1):
                cid = uuid.uuid4().hex
                meta = replace(
                    record.meta, id=cid, parent_id=parent, lineage=lineage, sequence=seq, created_at=time.time()
                )
                started = time.perf_counter()
                provider.write(location, CheckpointRecord(meta=meta, body=record.body))
                if run >= 5:  # the first runs warm the connection pool and the chunk memo
                    times.append(time.perf_counter() - started)
                parent = cid
    finally:
        provider.close()
    return statistics.median(times) * 1000


def _timed(action: Callable[[], object], runs: int = 7) -> float:
    action()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _cli_wall(args: list[str], runs: int = 7) -> float:
    command = [sys.executable, "-m", "crewpoint.tui.cli", *args]
    subprocess.run(command, capture_output=True, check=True, env=bench_env())
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(command, capture_output=True, check=True, env=bench_env())
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def _million(location: str, count: int = 1_000_000) -> None:
    """``count`` metadata rows made on the server (list views read no bodies): runs of four, a fork per ten."""
    import psycopg

    PostgresProvider().write(location, demo_records()[0])  # makes the store
    where = parse(location)
    s = f'"{where.schema}"'
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        conn.execute(
            f"INSERT INTO {s}.checkpoints (id, parent_id, branch, lineage, sequence, created_at, trigger,"
            " entity_kind, entity_name, tasks_done, tasks_total, schema_version, version, size)"
            " SELECT md5(n::text), CASE WHEN n %% 4 = 0 THEN NULL ELSE md5((n - 1)::text) END,"
            " CASE WHEN (n / 4) %% 10 = 9 THEN 'fork-' || (n / 40) ELSE 'main' END, md5('run' || (n / 4)),"
            " n %% 4 + 1, 1790000000 + n, 'task_completed', 'crew', 'research-crew', n %% 4 + 1, 4, 1, '0.1.0', 27000"
            " FROM generate_series(1, %s) AS n",
            [count],
        )
        conn.execute(f"ANALYZE {s}.checkpoints")


WRITER = r"""
import sys, time, uuid
from dataclasses import replace
sys.path.insert(0, sys.argv[3])
from support.stores import demo_records
from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointRecord
location, count = sys.argv[1], int(sys.argv[2])
records = demo_records()
provider = provider_for(location)
print("ready", flush=True)
sys.stdin.readline()
written = 0
while written < count:
    lineage, parent = uuid.uuid4().hex, None
    for seq, record in enumerate(records[: count - written], start=1):
        cid = uuid.uuid4().hex
        meta = replace(record.meta, id=cid, parent_id=parent, lineage=lineage, sequence=seq, created_at=time.time())
        provider.write(location, CheckpointRecord(meta=meta, body=record.body))
        parent, written = cid, written + 1
"""


def _concurrent(location: str, writers: int = 8, each: int = 250) -> tuple[float, int]:
    """Checkpoints per second of ``writers`` processes writing ``each`` at once, and how many were lost."""
    PostgresProvider().write(location, demo_records()[0])  # the store exists before they start
    here = str(Path(__file__).resolve().parent.parent / "tests")  # the shared helpers (support)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, str(each), here],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=bench_env(),
        )
        for _ in range(writers)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    started = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        if proc.wait() != 0:
            raise RuntimeError("a writer failed")
    elapsed = time.perf_counter() - started
    provider = PostgresProvider()
    try:
        metas = provider.list(location)
    finally:
        provider.close()
    good = sum(1 for m in metas if m.damaged is None) - 1
    return writers * each / elapsed, writers * each - good


def bench_postgres() -> list[Row]:
    from app_bench import _live_latency

    with LocalServer() as server:
        os.environ.update(server.env())
        url = server.url
        write_ms = _write_latency(f"{url}?schema=writes")
        tenk = f"{url}?schema=tenk"
        fill_store(PostgresProvider(), tenk, 10_000)
        provider = PostgresProvider()
        list_10k = _timed(lambda: provider.list(tenk))
        million = f"{url}?schema=million"
        _million(million)
        newest_50 = _timed(lambda: provider.list_newest(million, 50))
        cli_50 = _cli_wall(["checkpoint", "list", "--limit", "50", million])
        provider.close()
        live = statistics.median(asyncio.run(_live_latency(f"{url}?schema=live")))
        rate, lost = _concurrent(f"{url}?schema=writers")
    return [
        Row("postgres: write one checkpoint (demo run, local server)", write_ms, "ms", 2.0, "median, fsync on"),
        Row("postgres: list 10,000", list_10k, "s", 0.3),
        Row("postgres: newest 50 of 1,000,000", newest_50, "s", 0.2, f"CLI list --limit 50: {cli_50:.2f} s"),
        Row("postgres: checkpoint from another process appears in the app", live, "s", 0.2, "median of 20"),
        Row("postgres: 8 writer processes", rate, "ckpt/s", None, f"target >= 500; lost: {lost}"),
    ]


def pg_benches() -> list[Callable[[], list[Row]]]:
    return [bench_postgres]


if __name__ == "__main__":
    for row in bench_postgres():
        print(f"{row.name:60} {row.value:10.3f} {row.unit:7} target {row.target} {row.note}")
