"""``crewpoint checkpoint list`` on the fleet's store: a run's STATUS says ``running on HOST`` while a worker runs it,
``recovering`` once its worker died and it waits for another, and ``done`` at its end. Real PostgreSQL, real worker
processes (one killed with SIGKILL), a real model server on 127.0.0.1."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import checkpointed_on, cli_argv, kill_worker, start_worker, submitted
from support.waiting import wait_for

from crewpoint.checkpoint.stores import list_checkpoints
from crewpoint.providers.base import CheckpointMeta
from crewpoint.tui.cli.fleet_engine import status


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 1.5
        yield running


def test_list_status_says_running_on_host_then_recovering_then_done(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = submitted(pg_location, tmp_path, server, "t", "u")

    def statuses(lineage: str) -> set[str]:
        """The STATUS cells ``list`` shows for the run's rows (the column after COST)."""
        listed = subprocess.run(
            cli_argv("checkpoint", "list", "-l", pg_location), cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert listed.returncode == 0, listed.stderr
        lines = listed.stdout.splitlines()
        start = lines[0].index("STATUS")
        ids = {m.id[:8] for m in list_of(lineage)}
        assert ids
        return {line[start:].strip() for line in lines[1:] if line.split()[0][:8] in ids}

    def list_of(lineage: str) -> list[CheckpointMeta]:
        return [m for m in list_checkpoints(pg_location) if m.lineage == lineage]

    a = start_worker(pg_location, tmp_path, env)
    b: subprocess.Popen[bytes] | None = None
    try:
        lineage = checkpointed_on(pg_location, a)
        assert statuses(lineage) == {f"running on {socket.gethostname()}"}
        server.hold()  # job 2 keeps B busy until the test has seen job 1 recovering, however slow the machine
        b = start_worker(pg_location, tmp_path, env)  # one run at a time: job 2 keeps it busy
        wait_for(lambda: next(j for j in status(pg_location)[1] if j.id == 2).status == "doing", "B running job 2")
        os.killpg(a.pid, signal.SIGKILL)
        a.wait(timeout=30)
        wait_for(lambda: statuses(lineage) == {"recovering"}, "job 1 shown recovering once A is gone")
        server.release()
        wait_for(lambda: all(j.status == "succeeded" for j in status(pg_location)[1]), "both runs finished on B")
    finally:
        kill_worker(a)
        if b is not None:
            kill_worker(b)
    assert statuses(lineage) == {"done"}
