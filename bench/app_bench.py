"""Benchmarks of the command line and the terminal app on large stores."""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from run import Row, bench_env
from support.stores import fill_store

CLI = [sys.executable, "-m", "crewpoint.tui.cli"]


def _wall(args: list[str], runs: int = 7) -> float:
    times = []
    subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=bench_env())
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(args, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=bench_env())
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _stores() -> dict[str, str]:
    from crewpoint.providers import JsonProvider, SqliteProvider

    paths = {"json1k": "store1k", "json10k": "store10k", "db10k": "store10k.db", "db1k": "store1k.db"}
    if not Path(paths["json10k"]).exists():
        fast = JsonProvider(fsync=False)
        fill_store(fast, paths["json1k"], 1000)
        fill_store(fast, paths["json10k"], 10_000)
        fill_store(SqliteProvider(), paths["db1k"], 1000)
        fill_store(SqliteProvider(), paths["db10k"], 10_000)
    return paths


def bench_cli() -> list[Row]:
    s = _stores()
    rows = [
        Row("crewpoint --help", _wall([*CLI, "--help"]), "s", 0.15, "CrewAI: 0.21 s"),
        Row(
            "checkpoint list, 1,000 (JSON)",
            _wall([*CLI, "checkpoint", "list", s["json1k"]]),
            "s",
            0.15,
            "CrewAI: 1.6 s",
        ),
        Row("checkpoint list, 10,000 (JSON)", _wall([*CLI, "checkpoint", "list", s["json10k"]]), "s", 0.5),
        Row("checkpoint list, 1,000 (SQLite)", _wall([*CLI, "checkpoint", "list", s["db1k"]]), "s", 0.15),
        Row("checkpoint list, 10,000 (SQLite)", _wall([*CLI, "checkpoint", "list", s["db10k"]]), "s", 0.5),
        Row(
            "checkpoint info, 10,000-row SQLite",
            _wall([*CLI, "checkpoint", "info", s["db10k"]]),
            "s",
            0.15,
            "CrewAI: 0.27 s on 1,000",
        ),
    ]
    return rows


async def _first_paint(location: str) -> float:
    """Seconds from making the app to its tree drawn with the store's checkpoints.

    Nothing polls: the tree says when it has drawn its lines, and the time is taken at the first drawing that
    shows the store's checkpoints.
    """
    from crewpoint.screens.browser import BrowserScreen
    from crewpoint.tui.app import make_app

    start = time.perf_counter()
    app = make_app(location, watch=False)
    async with app.run_test(size=(140, 40)):
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        drawn = asyncio.Event()
        elapsed = 0.0

        def check() -> None:
            nonlocal elapsed
            if screen.metas:
                elapsed = time.perf_counter() - start
                drawn.set()
            else:
                screen.ckpt_tree.after_drawn(check)

        screen.ckpt_tree.after_drawn(check)
        await asyncio.wait_for(drawn.wait(), 60)
        return elapsed


async def _live_latency(location: str, samples: int = 20) -> list[float]:
    """Seconds from another process writing a checkpoint to the app holding it, once per sample.

    The writer makes the store with a first checkpoint before the app opens, then writes one checkpoint each time
    it is asked. Every wait has a deadline, and the writer's lines are read off the event loop, so the app keeps
    running while the bench waits.
    """
    from crewpoint.screens.browser import BrowserScreen
    from crewpoint.tui.app import make_app

    writer_code = (
        "import sys, time, uuid\n"
        "from dataclasses import replace\n"
        "sys.path.insert(0, sys.argv[2])\n"
        "from support.stores import demo_records\n"
        "from crewpoint.providers import provider_for\n"
        "from crewpoint.providers.base import CheckpointRecord\n"
        "record = demo_records()[0]\n"
        "provider = provider_for(sys.argv[1])\n"
        "print('ready', flush=True)\n"
        "for line in sys.stdin:\n"
        "    cid = uuid.uuid4().hex\n"
        "    meta = replace(record.meta, id=cid, branch='live', lineage=cid, parent_id=None, created_at=time.time())\n"
        "    provider.write(sys.argv[1], CheckpointRecord(meta=meta, body=record.body))\n"
        "    print(cid, time.time(), flush=True)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", writer_code, location, str(Path(__file__).resolve().parent.parent / "tests")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=bench_env(),
    )
    stdin, stdout = proc.stdin, proc.stdout
    assert stdin is not None and stdout is not None

    async def line_from_writer() -> str:
        line = await asyncio.wait_for(asyncio.to_thread(stdout.readline), 60)
        if not line:
            raise RuntimeError(f"the writer process ended (exit {proc.wait()})")
        return line

    async def write_one() -> tuple[str, float]:
        stdin.write("go\n")
        stdin.flush()
        checkpoint_id, written = (await line_from_writer()).split()
        return checkpoint_id, float(written)

    async def until(condition: Callable[[], bool], what: str, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what}: not within {timeout:g} s")
            await asyncio.sleep(0.002)

    latencies: list[float] = []
    try:
        await line_from_writer()  # ready
        first, _ = await write_one()
        app = make_app(location, watch=True)
        async with app.run_test(size=(140, 40)):
            await until(lambda: isinstance(app.screen, BrowserScreen) and first in app.screen.index.metas, "open")
            screen = app.screen
            assert isinstance(screen, BrowserScreen)
            await asyncio.sleep(0.5)
            for _ in range(samples):
                checkpoint_id, written = await write_one()
                await until(lambda: checkpoint_id in screen.index.metas, "a written checkpoint shown")  # noqa: B023
                latencies.append(time.time() - written)
                await asyncio.sleep(0.3)
    finally:
        stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return latencies


def bench_app() -> list[Row]:
    s = _stores()
    paint = statistics.median(asyncio.run(_first_paint(s["json10k"])) for _ in range(3))
    paint_db = statistics.median(asyncio.run(_first_paint(s["db10k"])) for _ in range(3))
    live = statistics.median(asyncio.run(_live_latency("live-store")))
    return [
        Row("app: start to first painted tree, 10,000 (JSON)", paint, "s", 0.5, "CrewAI: 1.5 s on 1,000"),
        Row("app: start to first painted tree, 10,000 (SQLite)", paint_db, "s", 0.5),
        Row("app: checkpoint from another process appears", live, "s", 0.5, "median of 20"),
    ]


def app_benches() -> list[Callable[[], list[Row]]]:
    return [bench_cli, bench_app]
