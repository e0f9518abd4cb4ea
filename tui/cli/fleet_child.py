"""One job of the fleet, run in a child process of a worker: ``python -m crewpoint.tui.cli.fleet_child JOB PROGRAM``.

Only a worker starts this module, so it imports the engine at once. The store's location comes in
``CREWPOINT_CHECKPOINT_LOCATION`` (never on the command line, where a password would show), the job's inputs and
budget as JSON on stdin. The child takes the run's advisory lock (another process holding it: exit
:data:`~crewpoint.tui.cli.fleet_engine.BUSY`, the job is tried again later), then either starts the program's run
on the store, recording its lineage with the job, or, when the job's run has checkpoints already (its worker died),
resumes the newest of them: finished tasks never run again. Exit codes are the command line's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from typing import Any

from crewpoint.budget import Budget, BudgetExceeded
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.checkpoint.program import AppError, load_app
from crewpoint.checkpoint.run import RunOptions, run_checkpoint
from crewpoint.checkpoint.stores import list_checkpoints
from crewpoint.events.bus import event_bus
from crewpoint.feedback import FeedbackPending
from crewpoint.runtime import current_state
from crewpoint.tui.cli.fleet_engine import BUSY, FleetError, Job, connect, run_lock_key, session
from crewpoint.tui.diagnostics import ExitCode

KINDS = ("crew", "flow", "agent")


def _load(spec: str) -> Any:
    problem: AppError | None = None
    for kind in KINDS:
        try:
            return load_app(spec, kind)
        except AppError as exc:
            problem = problem or exc
    assert problem is not None
    raise problem


def _newest_of(location: str, lineage: str) -> str | None:
    metas = [m for m in list_checkpoints(location) if m.lineage == lineage and not m.damaged]
    if not metas:
        return None
    return max(metas, key=lambda m: (m.sequence, m.created_at)).id


def run(job_id: int, job: Job, location: str) -> int:
    """Run the job's run to its end; the exit code."""
    with connect(location) as conn:
        held = conn.execute("SELECT pg_try_advisory_lock(%s)", (run_lock_key(location, job_id),)).fetchone()
        if not held or not held[0]:
            return BUSY
        row = conn.execute(
            "UPDATE crewpoint_fleet_runs SET host = %s, pid = %s, attempts = attempts + 1, updated_at = now()"
            " WHERE job_id = %s RETURNING lineage",
            (socket.gethostname(), os.getpid(), job_id),
        ).fetchone()
        lineage = row[0] if row is not None else None
        recorded: set[str] = set()
        writer = session(location)  # the run's thread records its lineage on a session of its own

        def record_lineage(_source: Any, _event: Any) -> None:
            state = current_state()
            if state is None or state.outer is not None or state.lineage in recorded:
                return
            recorded.add(state.lineage)
            writer.execute(
                "UPDATE crewpoint_fleet_runs SET lineage = %s, updated_at = now() WHERE job_id = %s",
                (state.lineage, job_id),
            )

        event_bus.add_observer(record_lineage)
        budget = Budget.of(job.budget)
        newest = _newest_of(location, lineage) if lineage else None
        try:
            if newest is not None:
                options = RunOptions(newest, location, app=job.program, budget=budget, force=True)
                outcome = run_checkpoint(options)
                print(outcome.message, file=sys.stderr)
                codes = {"finished": 0, "waiting": ExitCode.WAITING, "budget": ExitCode.BUDGET}
                return int(codes.get(outcome.kind, ExitCode.FAILED))
            return _start(job, location, budget)
        finally:
            event_bus.remove_observer(record_lineage)
            writer.close()


def _start(job: Job, location: str, budget: Any) -> int:
    entity = _load(job.program)
    entity.checkpoint = CheckpointConfig(location=location)
    if budget is not None:
        entity.budget = budget
    try:
        result = entity.kickoff(dict(job.inputs)) if job.inputs else entity.kickoff()
    except BudgetExceeded as exc:
        print(f"stopped at its budget: spent {exc.spent()} of {exc.budget}", file=sys.stderr)
        return int(ExitCode.BUDGET)
    if isinstance(result, FeedbackPending):
        print(f"waiting for feedback; answer with: {result.command}", file=sys.stderr)
        return int(ExitCode.WAITING)
    return 0


def main(argv: list[str]) -> int:
    location = os.environ.get("CREWPOINT_CHECKPOINT_LOCATION", "")
    try:
        job_id, program = int(argv[0]), argv[1]
        args = json.loads(sys.stdin.read() or "{}")
        job = Job.of({**args, "program": program})
        return run(job_id, job, location)
    except FleetError as exc:
        print(f"crewpoint: {exc}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    except Exception as exc:
        print(f"crewpoint: the run failed: {' '.join(str(exc).split()) or type(exc).__name__}", file=sys.stderr)
        return int(ExitCode.FAILED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
