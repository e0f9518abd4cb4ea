"""Watching a PostgreSQL store live: notifications (LISTEN/NOTIFY) from writers in other processes and on
other hosts reach the watch and the app's tree; nothing polls the store."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest
from support.reading import browser, screen_text
from support.waiting import wait_until

from crewpoint import CheckpointConfig
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers import PostgresProvider, StoreChange, provider_for
from crewpoint.providers.runs import STALE_AFTER, RunInfo, read_runs, write_run
from crewpoint.tui.app import make_app

ON_HOST_B = "import socket; socket.gethostname = lambda: 'host-b'\n"
SLOW_RUN = (
    "import sys\n"
    "from crewpoint import CheckpointConfig\n"
    "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
    "from crewpoint.providers import provider_for\n"
    "loc = sys.argv[1]\n"
    "demo_crew(delay=float(sys.argv[2]), checkpoint=CheckpointConfig(location=loc, provider=provider_for(loc)))"
    ".kickoff(inputs=DEMO_INPUTS)\n"
)
BEAT = (
    "import sys, time\n"
    "from crewpoint.providers.runs import RunInfo, write_run\n"
    "now = time.time()\n"
    "write_run(sys.argv[1], RunInfo('beat-1', 4242, 'host-b', now, now, lineage='x'))\n"
)
SIZE = (140, 40)


def seed(location: str) -> None:
    demo_crew(checkpoint=CheckpointConfig(location=location, provider=provider_for(location))).kickoff(
        inputs=DEMO_INPUTS
    )


async def test_notifications_from_another_process_reach_the_watch(pg_location: str) -> None:
    """A checkpoint from another process is one change; a heartbeat alone says it touched only run records."""
    seed(pg_location)
    provider = PostgresProvider()
    stop = asyncio.Event()
    received: asyncio.Queue[StoreChange] = asyncio.Queue()

    async def collect() -> None:
        async for change in provider.watch(pg_location, stop, debounce_ms=20):
            received.put_nowait(change)

    collector = asyncio.ensure_future(collect())
    try:
        await _listening(pg_location)
        writer = await asyncio.create_subprocess_exec(sys.executable, "-c", ON_HOST_B + SLOW_RUN, pg_location, "0")
        assert await writer.wait() == 0
        seen = [await asyncio.wait_for(received.get(), timeout=30)]
        while True:  # let what the run's last writes sent arrive, then send a heartbeat alone
            try:
                seen.append(await asyncio.wait_for(received.get(), timeout=0.5))
            except TimeoutError:
                break
        assert {c.location for c in seen} == {pg_location}
        assert any(not c.runs_only for c in seen)  # its checkpoints (its beats came too)
        beat = await asyncio.create_subprocess_exec(sys.executable, "-c", BEAT, pg_location)
        assert await beat.wait() == 0
        change = await asyncio.wait_for(received.get(), timeout=30)
        assert change.runs_only is True
    finally:
        stop.set()
        await asyncio.wait_for(collector, timeout=10)
        provider.close()


async def _listening(location: str, timeout: float = 30.0) -> None:
    """Wait until a session of this process LISTENs (the server says so), never for a fixed time."""
    import psycopg

    from crewpoint.providers.pg_location import parse

    where = parse(location)
    deadline = time.monotonic() + timeout
    async with await psycopg.AsyncConnection.connect(where.conninfo, autocommit=True) as conn:
        while time.monotonic() < deadline:
            cur = await conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE %s",
                [f'LISTEN "{where.channel}"%'],
            )
            row = await cur.fetchone()
            if row and row[0]:
                return
            await asyncio.sleep(0.02)
    raise AssertionError("the watch never listened")


async def test_the_tree_follows_a_run_on_another_host_and_its_crash(pg_location: str) -> None:
    seed(pg_location)
    app = make_app(pg_location, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=20)
        screen = browser(pilot)
        before = len(screen.metas)
        await _listening(pg_location)
        writer = subprocess.Popen([sys.executable, "-c", ON_HOST_B + SLOW_RUN, pg_location, "1.0"])
        try:
            await wait_until(pilot, lambda: len(screen.metas) > before, timeout=30)
            assert writer.poll() is None  # the node appeared while the run on host-b still goes
            await wait_until(pilot, lambda: "● live" in screen_text(pilot), timeout=20)
        finally:
            writer.send_signal(signal.SIGKILL)
            await asyncio.to_thread(writer.wait)
        # From here a killed run on host-b is not known to be dead; host-b's own reader finds out and says so.
        reader = ON_HOST_B + "import sys\nfrom crewpoint.providers.runs import read_runs\nread_runs(sys.argv[1])\n"
        subprocess.run([sys.executable, "-c", reader, pg_location], check=True)
        await wait_until(pilot, lambda: "✗ crashed" in screen_text(pilot), timeout=20)
        assert "● live" not in screen_text(pilot)


async def test_a_stale_beat_from_another_host_shows_lost(pg_location: str) -> None:
    seed(pg_location)
    lineage = provider_for(pg_location).list(pg_location)[0].lineage
    app = make_app(pg_location, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=20)
        await wait_until(pilot, lambda: "✓ done" in screen_text(pilot), timeout=20)  # run records follow the tree
        await _listening(pg_location)
        # a run resuming main on host-c, newer than the finished one, whose beats stopped coming
        started = time.time()
        stale = started - STALE_AFTER - 5
        write_run(pg_location, RunInfo("far-1", os.getpid(), "host-c", started, stale, "running", "main", lineage))
        await wait_until(pilot, lambda: "? lost" in screen_text(pilot), timeout=20)
        assert read_runs(pg_location)[0].status == "running"  # only host-c could say it crashed


async def test_the_watch_and_the_writes_come_back_after_the_server_restarts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Sessions end when the server restarts: the watch connects again, says something may have changed, and
    follows the store as before; the provider's pool replaces its ended sessions and writes go on."""
    from pg_server import LocalServer

    server = await asyncio.to_thread(LocalServer().start)
    location = f"{server.url}?schema=restarts"
    provider = PostgresProvider()
    stop = asyncio.Event()
    received: asyncio.Queue[StoreChange] = asyncio.Queue()

    async def collect() -> None:
        async for change in provider.watch(location, stop, debounce_ms=20):
            received.put_nowait(change)

    def seed_here() -> None:
        config = CheckpointConfig(location=location, provider=provider)
        demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)

    try:
        monkeypatch.setenv("PGPASSFILE", str(server.passfile))
        seed_here()
        collector = asyncio.ensure_future(collect())
        await _listening(location)
        await asyncio.to_thread(server.restart)
        change = await asyncio.wait_for(received.get(), timeout=60)  # told once it listens again
        assert change.runs_only is False
        await _listening(location)
        await asyncio.to_thread(seed_here)  # through the same provider, whose sessions the restart ended
        change = await asyncio.wait_for(received.get(), timeout=60)
        assert len(provider.list(location)) == 8
        stop.set()
        await asyncio.wait_for(collector, timeout=10)
    finally:
        stop.set()
        provider.close()
        await asyncio.to_thread(server.stop)
