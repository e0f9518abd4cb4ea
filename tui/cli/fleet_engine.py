"""The fleet's engine: runs queued on a PostgreSQL store and handed to workers by procrastinate.

procrastinate's tables live in the store's own schema (its connections search that schema first), created when a
worker or a submit first meets the store. A job is data: the program's spec as a name the worker was started with,
the run's inputs and budget; the worker never takes code, a URL or a key variable from it. Each job has a row in
``crewpoint_fleet_runs``: the lineage of the run it started (so a recovery resumes that run from its newest
checkpoint), and the host and process running it now. At most one process runs a job's run at a time: the child
holds the run's advisory lock on its own session for as long as it runs, and a dead child's session (its host
killed) lets the lock go with it. Headless: imports no textual; procrastinate is imported here only.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import CheckpointError
from crewpoint.providers.pg_location import PgLocation, parse
from crewpoint.providers.pg_sql import migrate
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    import procrastinate
    import psycopg

TASK = "crewpoint.run"
"""The one task of the fleet: run (or go on with) a program's run."""

QUEUE = "crewpoint"

LOST = 74
"""The child's exit code when it lost the run's lock (stopped or cut off past the stalled limit): it wrote nothing
after, and the run goes on in another process."""

BUSY = 73
"""The child's exit code when another process holds the run's lock: the job is retried later, never run twice."""

RUNS_TABLE = """
CREATE TABLE IF NOT EXISTS crewpoint_fleet_runs (
    job_id bigint PRIMARY KEY,
    program text NOT NULL,
    lineage text,
    host text,
    pid integer,
    attempts integer NOT NULL DEFAULT 0,
    updated_at timestamptz NOT NULL DEFAULT now()
)
"""


class FleetError(Exception):
    """A fleet command that cannot go on; the message is one line saying what to do."""


def where(location: str) -> PgLocation:
    """The store's parsed location; a location that is not PostgreSQL is refused with one line."""
    if not location.startswith(("postgresql://", "postgres://")):
        raise FleetError(
            f"{location!r} is not a PostgreSQL store: the fleet runs on a postgresql:// location (-l postgresql://…)"
        )
    return parse(location)


def _options(place: PgLocation) -> str:
    return f"-c search_path={place.schema}"


def session(location: str) -> psycopg.Connection[Any]:
    """An autocommit session on the store's server whose search path is the store's schema (the caller closes it)."""
    # lazy: psycopg is the postgres extra's; only fleet commands need it
    import psycopg

    place = where(location)
    try:
        return psycopg.connect(place.conninfo, autocommit=True, options=_options(place), connect_timeout=10)
    except psycopg.Error as exc:
        raise FleetError(f"cannot connect to {place.name}: {place.scrub(' '.join(str(exc).split()))}") from None


@contextmanager
def connect(location: str) -> Iterator[psycopg.Connection[Any]]:
    """:func:`session`, closed when the block ends."""
    with session(location) as conn:
        yield conn


def ensure_schema(location: str) -> None:
    """Create the store's schema, procrastinate's tables and the fleet's runs table when missing (idempotent: two
    processes meeting a new store at once create them once, under an advisory lock)."""
    # lazy: procrastinate's schema text ships with the package
    from procrastinate.schema import SchemaManager

    place = where(location)
    with connect(location) as conn:
        conn.execute("SELECT pg_advisory_lock(%s)", (_key(f"schema:{place.schema}"),))
        try:
            try:
                migrate(conn, place)  # the store first: its schema holds a crewpoint store, then the queue beside it
            except CheckpointError as exc:
                raise FleetError(str(exc)) from None
            found = conn.execute(
                "SELECT 1 FROM pg_tables WHERE schemaname = %s AND tablename = 'procrastinate_jobs'", (place.schema,)
            ).fetchone()
            if found is None:
                conn.execute(SchemaManager.get_schema())
            conn.execute(RUNS_TABLE)
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (_key(f"schema:{place.schema}"),))


def _key(text: str) -> int:
    digest = hashlib.sha256(f"crewpoint:{text}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def run_lock_key(location: str, job_id: int) -> int:
    """The advisory-lock key of a job's run in its store."""
    return _key(f"run:{where(location).schema}:{job_id}")


def make_app(location: str) -> procrastinate.App:
    """procrastinate's app on the store (not opened)."""
    # lazy: procrastinate loads only for the fleet's commands
    import procrastinate

    place = where(location)
    connector = procrastinate.PsycopgConnector(conninfo=place.conninfo, kwargs={"options": _options(place)})
    return procrastinate.App(connector=connector)


@dataclass(frozen=True, slots=True)
class Job:
    """What a queued run asks: data only."""

    program: str
    inputs: dict[str, str]
    budget: float | None = None

    def args(self) -> dict[str, Any]:
        return {"program": self.program, "inputs": dict(self.inputs), "budget": self.budget}

    @classmethod
    def of(cls, args: dict[str, Any]) -> Job:
        """A job from its stored arguments; anything but the expected data is refused."""
        program, inputs, budget = args.get("program"), args.get("inputs", {}), args.get("budget")
        if not isinstance(program, str) or not isinstance(inputs, dict):
            raise FleetError("the job's arguments are not a program name and inputs")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
            raise FleetError("the job's inputs are not text")
        if budget is not None and not isinstance(budget, int | float):
            raise FleetError("the job's budget is not a number")
        extra = sorted(set(args) - {"program", "inputs", "budget"})
        if extra:
            raise FleetError(f"the job carries what a worker never takes: {', '.join(extra)}")
        return cls(program, {str(k): str(v) for k, v in inputs.items()}, budget)


def submit(location: str, job: Job) -> int:
    """Queue ``job`` on the store; its id."""
    ensure_schema(location)
    app = make_app(location)
    with app.open():
        job_id = app.configure_task(TASK, queue=QUEUE).defer(**job.args())
    with connect(location) as conn:
        conn.execute(
            "INSERT INTO crewpoint_fleet_runs (job_id, program) VALUES (%s, %s) ON CONFLICT DO NOTHING",
            (job_id, job.program),
        )
    return int(job_id)


@dataclass(frozen=True, slots=True)
class WorkerRow:
    id: int
    heartbeat_age: float


@dataclass(frozen=True, slots=True)
class JobRow:
    id: int
    status: str
    worker: int | None
    program: str
    lineage: str | None
    host: str | None
    pid: int | None
    attempts: int


def status(location: str) -> tuple[list[WorkerRow], list[JobRow]]:
    """The store's workers (with the age of their last heartbeat) and its jobs, newest first; none on a store no
    worker or submit met yet (reading creates nothing)."""
    place = where(location)
    with connect(location) as conn:
        queue = conn.execute("SELECT to_regclass(%s)", (f'"{place.schema}".crewpoint_fleet_runs',)).fetchone()
        if queue is None or queue[0] is None:
            return [], []
        workers = [
            WorkerRow(int(r[0]), float(r[1]))
            for r in conn.execute(
                "SELECT id, EXTRACT(EPOCH FROM now() - last_heartbeat) FROM procrastinate_workers ORDER BY id"
            ).fetchall()
        ]
        jobs = [
            JobRow(int(r[0]), str(r[1]), r[2], str(r[3] or ""), r[4], r[5], r[6], int(r[7] or 0))
            for r in conn.execute(
                "SELECT j.id, j.status, j.worker_id, COALESCE(f.program, j.args->>'program'), f.lineage, f.host,"
                " f.pid, f.attempts FROM procrastinate_jobs j LEFT JOIN crewpoint_fleet_runs f ON f.job_id = j.id"
                " WHERE j.task_name = %s ORDER BY j.id DESC",
                (TASK,),
            ).fetchall()
        ]
    return workers, jobs


def abort(location: str, run: str) -> tuple[int, str | None, bool] | None:
    """Ask the worker running the fleet's job of ``run`` (the job's number, or its run's lineage or the start of
    it) to stop it: the worker interrupts the run, which ends ``interrupted`` with a checkpoint (a job still queued
    is cancelled). The job's number, its run's lineage and whether it was running; None when no queued or running
    job of the fleet is that run, or the store has no fleet."""
    place = where(location)
    wanted = run.strip()
    if not wanted:
        return None
    with connect(location) as conn:
        queue = conn.execute("SELECT to_regclass(%s)", (f'"{place.schema}".crewpoint_fleet_runs',)).fetchone()
        if queue is None or queue[0] is None:
            return None
        rows = conn.execute(
            "SELECT f.job_id, f.lineage, j.status FROM crewpoint_fleet_runs f"
            " JOIN procrastinate_jobs j ON j.id = f.job_id WHERE j.status IN ('todo', 'doing')"
            " AND (f.job_id::text = %s OR left(f.lineage, length(%s)) = %s)",
            (wanted, wanted, wanted),
        ).fetchall()
    if len(rows) > 1:
        raise FleetError(f"{wanted!r} names {len(rows)} runs of the fleet: give more of the run's id")
    if not rows:
        return None
    job_id, lineage, running = int(rows[0][0]), rows[0][1], rows[0][2] == "doing"
    app = make_app(location)
    with app.open():
        app.job_manager.cancel_job_by_id(job_id, abort=True)
    return job_id, lineage, running


HEARTBEAT = 1.0
"""Seconds between a worker's heartbeats, and between its looks for the jobs of stalled workers and for jobs handed
back to the queue (the workers' default ``--heartbeat``): a few cheap statements a second per worker."""

STALE_WORKER = 4.0
"""Seconds without a heartbeat after which a running job's worker is taken as gone (the workers' default
``--stalled-after``, four missed heartbeats): its run shows ``recovering`` until another worker takes it, which it
does within about this plus two heartbeats and a child's start (``make bench``: p95 under 10 s)."""


def run_states(location: str) -> dict[str, str]:
    """Lineage → what the fleet does with the run now, for ``list``'s STATUS: ``queued``, ``running on HOST`` or
    ``recovering`` (its worker stopped, or it waits to be taken again); runs the fleet is done with are left out,
    as is every run of a store without the fleet's tables. Reads only (imports no procrastinate)."""
    place = where(location)
    with connect(location) as conn:
        queue = conn.execute("SELECT to_regclass(%s)", (f'"{place.schema}".crewpoint_fleet_runs',)).fetchone()
        if queue is None or queue[0] is None:
            return {}
        rows = conn.execute(
            "SELECT f.lineage, j.status, f.host, f.attempts, w.id IS NOT NULL"
            " AND w.last_heartbeat > now() - make_interval(secs => %s)"
            " FROM crewpoint_fleet_runs f JOIN procrastinate_jobs j ON j.id = f.job_id"
            " LEFT JOIN procrastinate_workers w ON w.id = j.worker_id"
            " WHERE f.lineage IS NOT NULL AND j.status IN ('todo', 'doing') ORDER BY j.id",
            (STALE_WORKER,),
        ).fetchall()
    states: dict[str, str] = {}
    for lineage, job_status, host, attempts, worker_alive in rows:
        if job_status == "doing" and worker_alive:
            states[lineage] = f"running on {visible(host, one_line=True)}" if host else "running"
        else:
            states[lineage] = "recovering" if attempts or job_status == "doing" else "queued"
    return states
