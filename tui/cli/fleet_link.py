"""The app's link to its store's fleet (:class:`crewpoint.tui.fleet_view.Fleet`), on the fleet's engine: the states
``list`` shows (:func:`~crewpoint.tui.cli.fleet_engine.run_states`), the header's counts, a run's job queued to go on
from its newest checkpoint, and a run's job aborted as ``crewpoint checkpoint stop`` does. The app makes one only for a
PostgreSQL store; reading loads no procrastinate (queueing and aborting do)."""

from __future__ import annotations

from crewpoint.tui.cli.fleet_engine import (
    STALE_WORKER,
    TASK,
    Fork,
    Job,
    abort,
    connect,
    has_fleet,
    states_of,
    submit,
    where,
)
from crewpoint.tui.fleet_view import FleetView, ForkJob, Stopped

COUNTS = """
SELECT
    (SELECT count(*) FROM procrastinate_workers WHERE last_heartbeat > now() - make_interval(secs => %(stale)s)),
    count(*) FILTER (WHERE j.status = 'doing' AND alive),
    count(*) FILTER (WHERE j.status = 'todo' AND COALESCE(f.attempts, 0) = 0),
    count(*) FILTER (WHERE NOT (j.status = 'doing' AND alive) AND (j.status = 'doing' OR COALESCE(f.attempts, 0) > 0))
FROM procrastinate_jobs j
LEFT JOIN crewpoint_fleet_runs f ON f.job_id = j.id
LEFT JOIN LATERAL (
    SELECT w.id IS NOT NULL AND w.last_heartbeat > now() - make_interval(secs => %(stale)s) AS alive
    FROM (SELECT 1) one LEFT JOIN procrastinate_workers w ON w.id = j.worker_id
) live ON true
WHERE j.task_name = %(task)s AND j.status IN ('todo', 'doing')
"""
"""Live workers, and the fleet's jobs running, queued and recovering, classified as :func:`run_states` does."""


class FleetLink:
    """The fleet of the PostgreSQL store at ``location``."""

    def __init__(self, location: str) -> None:
        self.location = location

    def read(self) -> FleetView | None:
        place = where(self.location)
        with connect(self.location) as conn:
            if not has_fleet(conn, place):
                return None
            with conn.transaction():  # the runs' states and the counts from one snapshot, at one now()
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
                row = conn.execute(COUNTS, {"stale": STALE_WORKER, "task": TASK}).fetchone()
                states = states_of(conn)
        workers, running, queued, recovering = (int(n or 0) for n in row) if row is not None else (0, 0, 0, 0)
        return FleetView(states, workers, running, queued, recovering)

    def resume(self, lineage: str, program: str, budget: float | None) -> int:
        return submit(self.location, Job(program.strip(), {}, budget), lineage)

    def fork(self, fork: ForkJob) -> int:
        edits = Fork(fork.source, fork.branch, fork.inputs, fork.outputs)
        return submit(self.location, Job(fork.program.strip(), {}, fork.budget, fork=edits))

    def stop(self, lineage: str) -> Stopped | None:
        aborted = abort(self.location, lineage)
        return Stopped(aborted[0], aborted[2]) if aborted is not None else None
