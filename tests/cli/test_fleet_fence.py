"""A worker's child writes to the store only while the run is its own, proved inside each write's transaction: once
another process took the run (counted a new attempt of its job), the child's next write is refused and writes
nothing, though its own session, and with it the run's lock, is still alive. Real PostgreSQL, a real child process
writing real checkpoints."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from support.processes import user_env

from crewpoint.checkpoint.stores import list_checkpoints
from crewpoint.tui.cli.fleet_engine import LOST, connect, ensure_schema

TESTS = Path(__file__).parents[1]

WRITER = textwrap.dedent(
    """
    import sys

    sys.path.insert(0, sys.argv[2])
    from support.stores import demo_records

    from crewpoint.providers.postgres_provider import PostgresProvider
    from crewpoint.tui.cli.fleet_child import Fence
    from crewpoint.tui.cli.fleet_engine import session

    location = sys.argv[1]
    records = demo_records()
    fence = Fence(session(location), 1, 60.0, 600.0)
    fence.start(1)  # job 1's first attempt: this process's run
    provider = PostgresProvider()
    provider.write(location, records[0])
    print(f"wrote {records[0].meta.id}", flush=True)
    sys.stdin.readline()  # the test lets another process take the run meanwhile
    try:
        provider.write(location, records[1])
        print(f"wrote {records[1].meta.id}", flush=True)
    except Exception as exc:
        print(f"refused {records[1].meta.id}: {exc}", file=sys.stderr, flush=True)
    """
)


def test_a_child_whose_run_was_taken_writes_nothing_though_its_session_lives(pg_location: str, tmp_path: Path) -> None:
    ensure_schema(pg_location)
    with connect(pg_location) as conn:
        conn.execute("INSERT INTO crewpoint_fleet_runs (job_id, program, attempts) VALUES (1, 'crew_app.py:crew', 1)")
    child = subprocess.Popen(
        [sys.executable, "-c", WRITER, pg_location, str(TESTS)],
        cwd=tmp_path,
        env=user_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdin is not None
        first = child.stdout.readline()
        assert first.startswith("wrote "), child.stderr.read() if child.stderr else ""
        with connect(pg_location) as conn:  # another worker's child takes the run: its job's next attempt
            conn.execute("UPDATE crewpoint_fleet_runs SET attempts = attempts + 1 WHERE job_id = 1")
        child.stdin.write("go on\n")
        child.stdin.flush()
        child.wait(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(timeout=30)
    said = child.stderr.read() if child.stderr else ""
    # its second write was refused inside its transaction, and the process ended at once (its session alive: only
    # the refused write tells it the run is gone)
    assert child.returncode == LOST, said
    assert "another worker runs the run now" in said, said
    written = {m.id for m in list_checkpoints(pg_location)}
    assert written == {first.split()[1]}  # the first checkpoint, and nothing after the run was taken
