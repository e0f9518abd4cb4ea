"""One job of the fleet, in a child process of a worker: ``python -m crewpoint.tui.cli.fleet_child JOB PROGRAM
HEARTBEAT STALLED [RECOVER]``.

Only a worker starts this module, so it imports the engine at once. The store's location comes in
``CREWPOINT_CHECKPOINT_LOCATION`` (never on the command line, where a password would show), the job's inputs and
budget as JSON on stdin. The child takes the run's advisory lock (another process holding it: exit
:data:`~crewpoint.tui.cli.fleet_engine.BUSY`, the job is tried again later), then either starts the program's run on
the store, recording its lineage with the job, or, when the job's run has checkpoints already (its worker died),
resumes the newest of them: finished tasks never run again. A continuation (a job queued by the answer to a request
of a fleet run) resumes the answered checkpoint, or the newest written after it. A recovered run whose program
changed since its checkpoint follows RECOVER (``rerun``, the default: changed tasks run again; ``keep``: their saved
outputs are used; ``strict``: refused), and the plan is said on stderr in a line starting ``recover:``, which the
worker repeats in its log. Exit codes are the command line's.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
from dataclasses import replace
from typing import Any

from crewpoint.budget import Budget, BudgetExceeded
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.checkpoint.program import AppError, load_app
from crewpoint.checkpoint.run import Outcome, PlannedRun, RunOptions, plan_run, run_checkpoint, shown_id
from crewpoint.checkpoint.stores import list_checkpoints, newest_descendant
from crewpoint.events.bus import event_bus
from crewpoint.feedback import FeedbackPending
from crewpoint.providers.pg_sql import PgDialect
from crewpoint.runtime import current_state
from crewpoint.tui.cli.fleet_engine import BUSY, LOST, FleetError, Job, connect, run_lock_key, session
from crewpoint.tui.diagnostics import ExitCode

KINDS = ("crew", "flow", "agent")

RECOVER = ("rerun", "keep", "strict")
"""What a recovered run does when its program changed since its checkpoint (the worker's ``--recover``)."""


def _load(spec: str) -> Any:
    problem: AppError | None = None
    for kind in KINDS:
        try:
            return load_app(spec, kind)
        except AppError as exc:
            problem = problem or exc
    assert problem is not None
    raise problem


def _newest_of(location: str, lineage: str, branch: str | None) -> str | None:
    """The newest checkpoint the job's run wrote: its lineage, on its branch (a fork shares its run's lineage)."""
    metas = [
        m
        for m in list_checkpoints(location)
        if m.lineage == lineage and not m.damaged and (branch is None or m.branch == branch)
    ]
    if not metas:
        return None
    return max(metas, key=lambda m: (m.sequence, m.created_at)).id


def _go_on_from(location: str, answered: str) -> str:
    """Where a continuation goes on: the newest checkpoint written after the answered one (a continuation that was
    itself recovered), else the answered checkpoint."""
    found = newest_descendant(list_checkpoints(location), answered)
    return found.id if found is not None else answered


class LostRun(Exception):
    """This process no longer holds its run's lock (its session ended while it was stopped or cut off): another
    process may run the run now, so this one writes nothing more."""


class Fence:
    """The run's lock, held on a session the server ends after ``stalled_after`` seconds of silence (a process
    stopped or cut off that long has lost its run to another worker), and the job's attempt when this process took
    it: its fencing token. Each write transaction of this process to the store proves, inside that transaction, that
    the job's attempt is still this token (:meth:`in_write`): the process that takes the run next counts a new
    attempt, and waits for a write that read the old one to end, so a process that lost its run writes nothing
    after, however long it was stopped between its check and its write. A thread keeps the session talking every
    ``heartbeat`` seconds and ends the process once the session is gone or a write was refused."""

    def __init__(self, conn: Any, job_id: int, heartbeat: float, stalled_after: float) -> None:
        self.conn = conn
        self.job_id = job_id
        self.token: int | None = None
        self.heartbeat = heartbeat
        self.lost = threading.Event()
        try:
            conn.execute(f"SET idle_session_timeout = {max(1, int(stalled_after * 1000))}")
        except Exception as exc:  # PostgreSQL before 14: the lock ends with the session only
            first = " ".join(str(exc).split())
            print(f"crewpoint: note: a stopped worker keeps its runs until its session ends ({first})", file=sys.stderr)

    def check(self) -> None:
        """Raise :class:`LostRun` unless the run's lock is still this process's."""
        if self.lost.is_set():
            raise LostRun("this process lost its run's lock: another worker runs the run now")
        try:
            self.conn.execute("SELECT 1")
        except Exception:
            self.lost.set()
            raise LostRun("this process lost its run's lock: another worker runs the run now") from None

    def in_write(self, sql: PgDialect) -> None:
        """Inside a write transaction: raise :class:`LostRun` (the transaction writes nothing) unless the job's
        attempt is still this process's. The row stays read-locked to the end of the write, so the process taking
        the run next counts its attempt after it."""
        row = sql.q("SELECT attempts FROM {s}crewpoint_fleet_runs WHERE job_id = ? FOR SHARE", [self.job_id]).fetchone()
        if row is None or row[0] != self.token:
            self.lost.set()
            raise LostRun("this process lost its run: another worker runs the run now; nothing was written")

    def start(self, token: int) -> None:
        """Fence this process's writes with ``token`` and watch the session."""
        self.token = token
        PgDialect.fence = self.in_write
        threading.Thread(target=self._beat, name="crewpoint-fleet-fence", daemon=True).start()

    def _beat(self) -> None:
        while True:
            self.lost.wait(self.heartbeat)
            try:
                self.check()
            except LostRun as exc:
                print(f"crewpoint: {exc}", file=sys.stderr, flush=True)
                os._exit(LOST)


def _plan_recovery(options: RunOptions, recover: str) -> PlannedRun:
    """The resume of a recovered run, planned as ``recover`` says when its program changed since the checkpoint;
    the plan is said in one line. A refusal raises :class:`FleetError` with the plan's reason."""
    planned = plan_run(options)
    changes = planned.prepared.changes
    if changes is None or changes.unchanged:
        return planned
    at = shown_id(planned.record.meta.id)
    if recover == "strict" or changes.blocked:
        what = "; ".join(f"{v.name}: {v.verdict}" for v in changes.verdicts if v.verdict != "kept")
        why = what or changes.blocked
        refusal = "--recover strict refuses it" if recover == "strict" else "it cannot go on"
        raise FleetError(
            f"the program changed since checkpoint {at} ({why}): {refusal}; start a worker with --recover rerun"
            " or keep to go on"
        )
    if recover == "keep" and planned.prepared.task_ids:
        changed = tuple(str(v.index + 1) for v in changes.verdicts if v.verdict == "changed" and v.index is not None)
        if changed:
            planned = plan_run(replace(options, keep=changed))
            changes = planned.prepared.changes or changes
    said = "; ".join(
        f"{v.name}: {v.verdict}, {'runs' if v.runs else 'saved output kept'}"
        for v in changes.verdicts
        if v.verdict != "kept"
    )
    print(f"recover: the program changed since checkpoint {at} (--recover {recover}): {said}", file=sys.stderr)
    return planned


def run(
    job_id: int,
    job: Job,
    location: str,
    heartbeat: float,
    stalled_after: float,
    recover: str,
) -> int:
    """Run the job's run to its end; the exit code."""
    with connect(location) as conn:
        held = conn.execute("SELECT pg_try_advisory_lock(%s)", (run_lock_key(location, job_id),)).fetchone()
        if not held or not held[0]:
            return BUSY
        fence = Fence(conn, job_id, heartbeat, stalled_after)
        row = conn.execute(  # (a job queued by hand, or before its row was written, gets its row here)
            "INSERT INTO crewpoint_fleet_runs (job_id, program, host, pid, attempts) VALUES (%s, %s, %s, %s, 1)"
            " ON CONFLICT (job_id) DO UPDATE SET host = EXCLUDED.host, pid = EXCLUDED.pid,"
            " attempts = crewpoint_fleet_runs.attempts + 1, updated_at = now() RETURNING lineage, attempts, branch",
            (job_id, job.program, socket.gethostname(), os.getpid()),
        ).fetchone()
        assert row is not None  # an upsert returns its row
        lineage, token, branch = row
        fence.start(int(token))  # from here, a write of this process stands only while the job's attempt is ours
        recorded: set[tuple[str, str]] = set()
        writer = session(location)  # the run's thread records its lineage and branch on a session of its own

        def record_lineage(_source: Any, _event: Any) -> None:
            state = current_state()
            if state is None or state.outer is not None or (state.lineage, state.branch) in recorded:
                return
            recorded.add((state.lineage, state.branch))  # (a fork names its new branch once it has forked)
            writer.execute(
                "UPDATE crewpoint_fleet_runs SET lineage = %s, branch = %s, updated_at = now() WHERE job_id = %s",
                (state.lineage, state.branch, job_id),
            )

        event_bus.add_observer(record_lineage)
        # what the run spent before its worker died counts against its budget after it is resumed here
        budget = Budget(job.budget, whole_run=True) if job.budget is not None else None
        if job.fork is not None:  # its own branch, never its source's (named before the fork is made)
            branch = job.fork.branch
        newest = (
            _go_on_from(location, job.resume)
            if job.resume
            else _newest_of(location, lineage, branch)
            if lineage
            else None
        )
        try:
            if newest is not None:
                options = RunOptions(newest, location, app=job.program, budget=budget, force=True)
                return _ended(run_checkpoint(options, planned=_plan_recovery(options, recover)))
            if job.fork is not None:
                fork = job.fork
                options = RunOptions(
                    fork.source,
                    location,
                    fork=True,
                    branch=fork.branch,
                    inputs=fork.inputs,
                    outputs=fork.outputs,
                    app=job.program,
                    budget=budget,
                    force=True,
                )
                return _ended(run_checkpoint(options))
            return _start(job, location, budget)
        finally:
            event_bus.remove_observer(record_lineage)
            writer.close()


def _ended(outcome: Outcome) -> int:
    """The exit code of a resumed or forked run that ended as ``outcome`` (said on stderr)."""
    print(outcome.message, file=sys.stderr)
    codes = {"finished": 0, "waiting": ExitCode.WAITING, "budget": ExitCode.BUDGET, "interrupted": ExitCode.INTERRUPTED}
    return int(codes.get(outcome.kind, ExitCode.FAILED))


def _start(job: Job, location: str, budget: Any) -> int:
    entity = _load(job.program)
    entity.checkpoint = CheckpointConfig(location=location)
    if budget is not None:
        entity.budget = budget
    try:
        result = entity.kickoff(dict(job.inputs)) if job.inputs else entity.kickoff()
    except KeyboardInterrupt:  # the job was aborted: the run's checkpoint holds where it stopped
        print("interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except BudgetExceeded as exc:
        print(f"stopped at its budget: spent {exc.spent()} of {exc.budget}", file=sys.stderr)
        return int(ExitCode.BUDGET)
    if isinstance(result, FeedbackPending):
        print(f"waiting for feedback; answer with: {result.command}", file=sys.stderr)
        return int(ExitCode.WAITING)
    return 0


def main(argv: list[str]) -> int:
    # taken out of the environment: the commands the run prints (the answer of a request) name the store
    location = os.environ.pop("CREWPOINT_CHECKPOINT_LOCATION", "")
    try:
        job_id, program, heartbeat, stalled_after = int(argv[0]), argv[1], float(argv[2]), float(argv[3])
        recover = argv[4] if len(argv) > 4 else "rerun"
        if recover not in RECOVER:
            raise FleetError(f"--recover {recover!r} is not one of {', '.join(RECOVER)}")
        args = json.loads(sys.stdin.read() or "{}")
        job = Job.of({**args, "program": program})
        return run(job_id, job, location, heartbeat, stalled_after, recover)
    except FleetError as exc:
        print(f"crewpoint: {exc}", file=sys.stderr)
        return int(ExitCode.BAD_INPUT)
    except KeyboardInterrupt:  # stopped before its run started
        print("interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
    except Exception as exc:
        print(f"crewpoint: the run failed: {' '.join(str(exc).split()) or type(exc).__name__}", file=sys.stderr)
        return int(ExitCode.FAILED)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
