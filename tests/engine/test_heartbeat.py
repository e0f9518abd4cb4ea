"""Run heartbeats tell running, finished, interrupted and crashed runs apart (real processes and signals)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.waiting import wait_for

from crewpoint import CheckpointConfig
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers.runs import RunInfo, classify, read_runs, this_host

SLOW_RUN = (
    "import sys\n"
    "from crewpoint import CheckpointConfig\n"
    "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
    "from crewpoint.providers import provider_for\n"
    "loc = sys.argv[1]\n"
    "demo_crew(delay=0.5, checkpoint=CheckpointConfig(location=loc, provider=provider_for(loc)))"
    ".kickoff(inputs=DEMO_INPUTS)\n"
)


@pytest.mark.parametrize("location", ["hb", "hb.db"])
def test_finished_run_is_marked_finished(location: str) -> None:
    from crewpoint.providers import provider_for

    demo_crew(checkpoint=CheckpointConfig(location=location, provider=provider_for(location))).kickoff(
        inputs=DEMO_INPUTS
    )
    runs = read_runs(location)
    assert len(runs) == 1
    assert classify(runs[0]) == "finished"
    assert runs[0].entity_name == "research-crew" and runs[0].checkpoint_id


@pytest.mark.parametrize("location", ["live", "live.db"])
def test_running_then_killed_run_reads_running_then_crashed(location: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, location])
    try:
        wait_for(lambda: read_runs(location) and any(p for p in Path(".").glob(location + "*")))
        wait_for(lambda: classify(read_runs(location)[0]) == "running")
        run = read_runs(location)[0]
        assert run.pid == proc.pid
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert classify(read_runs(location)[0]) == "crashed"  # its pid is gone


def test_interrupted_run_is_marked_interrupted() -> None:
    proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, "int"], stderr=subprocess.DEVNULL)
    wait_for(lambda: any(Path("int", "main").glob("*.json")) if Path("int", "main").exists() else False)
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=30)
    assert classify(read_runs("int")[0]) == "interrupted"


def test_a_stale_beat_from_another_host_reads_lost_and_from_this_host_crashed() -> None:
    now = time.time()
    run = RunInfo(run_id="r", pid=1, host="elsewhere", started_at=now - 100, last_beat=now - 60)
    assert classify(run, now=now) == "lost"  # that host may be alive and cut off: only it can tell
    assert classify(replace(run, host=this_host()), now=now) == "crashed"
    assert classify(replace(run, status="crashed"), now=now) == "crashed"  # its host reported
    fresh = RunInfo(run_id="r", pid=1, host="elsewhere", started_at=now - 100, last_beat=now - 1)
    assert classify(fresh, now=now) == "running"
