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
import shlex
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crewpoint.providers import is_postgres_location
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

RUNS_COLUMNS = (
    "CREATE INDEX IF NOT EXISTS crewpoint_fleet_runs_lineage ON crewpoint_fleet_runs (lineage)",
    "ALTER TABLE crewpoint_fleet_runs ADD COLUMN IF NOT EXISTS branch text",
)
"""Added after the table's first form (each idempotent): a run's jobs found by its lineage; the branch its job
runs on (a fork shares its run's lineage on a branch of its own)."""


class FleetError(Exception):
    """A fleet command that cannot go on; the message is one line saying what to do."""


def where(location: str) -> PgLocation:
    """The store's parsed location; a location that is not PostgreSQL is refused with one line."""
    if not is_postgres_location(location):
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
            for statement in RUNS_COLUMNS:
                conn.execute(statement)
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


_OURS = (
    "WITH ours AS (SELECT id FROM procrastinate_jobs WHERE id = %(job_id)s AND status = 'doing'"
    " AND worker_id IS NOT DISTINCT FROM %(worker_id)s FOR UPDATE) "
)
FINISH_IF_OURS = _OURS + "SELECT procrastinate_finish_job_v1(id, %(status)s, %(delete_job)s) FROM ours"
"""procrastinate's end of a job, only while the job is still the one its worker took (running, by that worker)."""
RETRY_IF_OURS = (
    _OURS + "SELECT procrastinate_retry_job_v2(id, %(retry_at)s, %(new_priority)s, %(new_queue_name)s, %(new_lock)s)"
    " FROM ours"
)
"""procrastinate's retry of a job, on the same condition."""


def guard_job_ends(app: procrastinate.App, say: Callable[[str], None]) -> None:
    """Make the app end or retry a job only while it is still the one its worker took: running, by the worker
    that fetched it (checked and changed in one statement, the job's row locked). A worker that lost a job (stopped
    past the stalled limit, its job handed to another worker, then continued) never marks it done, failed or
    queued again over the worker that runs it now; it says so instead. Both return whether the job changed."""
    # lazy: procrastinate loads only for the fleet's commands
    from procrastinate.utils import utcnow

    manager, connector = app.job_manager, app.connector

    async def finish_job(job: Any, status: Any, delete_job: bool) -> bool:
        args = {"job_id": job.id, "worker_id": job.worker_id, "status": status.value, "delete_job": delete_job}
        if await connector.execute_query_all_async(FINISH_IF_OURS, **args):
            return True
        say(f"job {job.id}: another worker runs it now; this worker leaves it as it is")
        return False

    async def retry_job(
        job: Any, retry_at: Any = None, priority: Any = None, queue: Any = None, lock: Any = None
    ) -> bool:
        args = {"job_id": job.id, "worker_id": job.worker_id, "retry_at": retry_at or utcnow()}
        args |= {"new_priority": priority, "new_queue_name": queue, "new_lock": lock}
        if await connector.execute_query_all_async(RETRY_IF_OURS, **args):
            return True
        say(f"job {job.id}: another worker runs it now; this worker leaves it as it is")
        return False

    manager.finish_job = finish_job  # type: ignore[method-assign,assignment]  # this app's ends only
    manager.retry_job = retry_job  # type: ignore[method-assign,assignment]


@dataclass(frozen=True, slots=True)
class Job:
    """What a queued run asks: data only."""

    program: str
    inputs: dict[str, str]
    budget: float | None = None
    resume: str | None = None
    """The checkpoint the job goes on from (an answered request's); None: a new run."""
    fork: Fork | None = None
    """The fork the job runs: a new branch from a checkpoint, with its edits; None: not a fork."""

    def args(self) -> dict[str, Any]:
        args: dict[str, Any] = {"program": self.program, "inputs": dict(self.inputs), "budget": self.budget}
        if self.resume is not None:
            args["resume"] = self.resume
        if self.fork is not None:
            args["fork"] = self.fork.args()
        return args

    @classmethod
    def of(cls, args: dict[str, Any]) -> Job:
        """A job from its stored arguments; anything but the expected data is refused."""
        program, inputs, budget = args.get("program"), args.get("inputs", {}), args.get("budget")
        resume = args.get("resume")
        if not isinstance(program, str) or not isinstance(inputs, dict):
            raise FleetError("the job's arguments are not a program name and inputs")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
            raise FleetError("the job's inputs are not text")
        if budget is not None and not isinstance(budget, int | float):
            raise FleetError("the job's budget is not a number")
        if resume is not None and not (isinstance(resume, str) and resume.strip()):
            raise FleetError("the job's checkpoint is not an id")
        extra = sorted(set(args) - {"program", "inputs", "budget", "resume", "fork"})
        if extra:
            raise FleetError(f"the job carries what a worker never takes: {', '.join(extra)}")
        fork = Fork.of(args["fork"]) if args.get("fork") is not None else None
        if fork is not None and resume is not None:
            raise FleetError("the job both resumes and forks")
        return cls(program, {str(k): str(v) for k, v in inputs.items()}, budget, resume, fork)


@dataclass(frozen=True, slots=True)
class Fork:
    """A fork a job runs: from checkpoint ``source`` onto ``branch``, with changed inputs and task outputs (by task
    number from 1, a name or an id prefix, as ``fork --output`` takes them). Data only."""

    source: str
    branch: str
    inputs: dict[str, Any] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)

    def args(self) -> dict[str, Any]:
        return {"source": self.source, "branch": self.branch, "inputs": self.inputs, "outputs": self.outputs}

    @classmethod
    def of(cls, args: object) -> Fork:
        """A fork from its stored arguments; anything but ids, a branch name, JSON inputs and texts is refused."""
        if not isinstance(args, dict) or set(args) - {"source", "branch", "inputs", "outputs"}:
            raise FleetError("the job's fork is not a checkpoint, a branch and edits")
        source, branch = args.get("source"), args.get("branch")
        inputs, outputs = args.get("inputs", {}), args.get("outputs", {})
        if not (isinstance(source, str) and source.strip() and isinstance(branch, str) and branch.strip()):
            raise FleetError("the job's fork does not name its checkpoint and branch")
        if not isinstance(inputs, dict) or not all(isinstance(k, str) for k in inputs):
            raise FleetError("the job's fork inputs are not named values")
        if not isinstance(outputs, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in outputs.items()
        ):
            raise FleetError("the job's fork outputs are not texts by task")
        return cls(source, branch, dict(inputs), dict(outputs))


def submit(location: str, job: Job, lineage: str | None = None, lock: str | None = None) -> int:
    """Queue ``job`` on the store; its id. The job and its run's row (``lineage``: the run it goes on with, None
    for a new run) are written in one transaction, so no worker takes the job before the row names its run (it
    would start a new run instead). ``lock``: one job holding it waits in the queue at a time (procrastinate's
    queueing lock; a second raises ``AlreadyEnqueued`` and writes nothing)."""
    ensure_schema(location)
    app = make_app(location)
    with app.open(), connect(location) as conn, conn.transaction():
        job_id = app.configure_task(TASK, queue=QUEUE, queueing_lock=lock, connection=conn).defer(**job.args())
        conn.execute(
            "INSERT INTO crewpoint_fleet_runs (job_id, program, lineage) VALUES (%s, %s, %s)",
            (job_id, job.program, lineage),
        )
    return int(job_id)


def watch_command(location: str) -> str:
    """The command that shows the fleet's workers and jobs of the store at ``location``, to paste as printed (the
    store named without its password, which comes from PGPASSFILE or PGPASSWORD)."""
    return f"crewpoint worker --status --location {shlex.quote(where(location).name)}"


def has_fleet(conn: psycopg.Connection[Any], place: PgLocation) -> bool:
    """Whether the store at ``place`` has the fleet's tables (a worker or a submit met it); creates nothing."""
    found = conn.execute("SELECT to_regclass(%s)", (f'"{place.schema}".crewpoint_fleet_runs',)).fetchone()
    return found is not None and found[0] is not None


def started(location: str, lineage: str) -> Job | None:
    """The job that started the run ``lineage`` on the fleet (its program and budget), or None: the run is not the
    fleet's (or the store has no fleet). Reads only."""
    place = where(location)
    with connect(location) as conn:
        if not has_fleet(conn, place):
            return None
        row = conn.execute(
            "SELECT f.program, j.args->'budget' FROM crewpoint_fleet_runs f JOIN procrastinate_jobs j"
            " ON j.id = f.job_id WHERE f.lineage = %s ORDER BY f.job_id LIMIT 1",
            (lineage,),
        ).fetchone()
    if row is None:
        return None
    budget = row[1] if isinstance(row[1], int | float) and not isinstance(row[1], bool) else None
    return Job(str(row[0]), {}, budget)


def go_on(location: str, job: Job, lineage: str) -> int:
    """Queue the continuation of the run ``lineage`` from the answered checkpoint ``job.resume``; its job's id.
    One job per checkpoint waits in the queue (procrastinate's queueing lock): a second is refused."""
    # lazy: procrastinate loads only for the fleet's commands
    from procrastinate.exceptions import AlreadyEnqueued, ProcrastinateException

    assert job.resume is not None
    place = where(location)
    try:  # (a run started outside the fleet may be the first of its store to go to it: submit makes the tables)
        return submit(location, job, lineage, lock=f"answer:{job.resume}")
    except AlreadyEnqueued:
        raise FleetError(f"a continuation of checkpoint {job.resume} waits in the queue already") from None
    except ProcrastinateException as exc:
        raise FleetError(f"cannot queue on {place.name}: {place.scrub(' '.join(str(exc).split()))}") from None


def continuation(location: str, checkpoint_id: str) -> int | None:
    """The job that goes on from the answered checkpoint ``checkpoint_id``, or None (not queued yet, or none)."""
    place = where(location)
    with connect(location) as conn:
        if not has_fleet(conn, place):
            return None
        row = conn.execute(
            "SELECT j.id FROM procrastinate_jobs j WHERE j.task_name = %s AND j.args->>'resume' = %s"
            " ORDER BY j.id LIMIT 1",
            (TASK, checkpoint_id),
        ).fetchone()
    return int(row[0]) if row is not None else None


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
        if not has_fleet(conn, place):
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
        if not has_fleet(conn, place):
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
        if not has_fleet(conn, place):
            return {}
        return states_of(conn)


def states_of(conn: psycopg.Connection[Any]) -> dict[str, str]:
    """:func:`run_states` on an open session of a store with the fleet's tables."""
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
