"""``crewpoint submit`` and ``crewpoint worker``: runs queued on the team's PostgreSQL store and the workers that run
them, each job in a child process (:mod:`crewpoint.tui.cli.fleet_child`), so a crashing run never takes its worker
down. A worker whose heartbeats stop (its host killed) has its jobs handed back to the queue by the others, and the
worker that takes one resumes its run from the newest checkpoint."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import time
from typing import Any

import click

from crewpoint.tui.cli.errors import fail
from crewpoint.tui.cli.fleet_engine import (
    BUSY,
    HEARTBEAT,
    LOST,
    QUEUE,
    STALE_WORKER,
    TASK,
    FleetError,
    Job,
    ensure_schema,
    guard_job_ends,
    make_app,
    status,
    watch_command,
)
from crewpoint.tui.cli.fleet_engine import submit as queue_job
from crewpoint.tui.cli.root import main
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.visible import visible

LOCATION_HELP = "The team's store: postgresql://USER@HOST/DB (?schema=NAME for a store of its own)."
RECOVER_HELP = (
    "When a recovered run's program changed since its checkpoint: keep the finished tasks, rerun the changed ones,"
    " or refuse (strict)."
)


def _location(given: str | None) -> str:
    location = given or os.environ.get("CREWPOINT_CHECKPOINT_LOCATION")
    if not location:
        fail("no store given: pass -l postgresql://USER@HOST/DB")
    return location


def _inputs(pairs: tuple[str, ...]) -> dict[str, str]:
    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            fail(f"--input {pair!r} is not KEY=VALUE")
        out[key.strip()] = value
    return out


@main.command()
@click.argument("spec", metavar="FILE.py:ATTR")
@click.option("--location", "-l", metavar="URL", default=None, help=LOCATION_HELP)
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="A kickoff input (repeatable).")
@click.option("--budget", type=float, default=None, metavar="USD", help="Stop the run before a call once spent.")
def submit(spec: str, location: str | None, inputs: tuple[str, ...], budget: float | None) -> None:
    """Queue a run of the program SPEC on the team's store; a worker started with --app SPEC runs it."""
    where = _location(location)
    job = Job(spec.strip(), _inputs(inputs), budget)
    try:
        job_id = queue_job(where, job)
    except FleetError as exc:
        fail(str(exc))
    click.echo(f"queued job {job_id}: {spec}")
    click.echo(f"watch it with: {watch_command(where)}")


@main.command()
@click.option("--location", "-l", metavar="URL", default=None, help=LOCATION_HELP)
@click.option("--app", "apps", multiple=True, metavar="FILE.py:ATTR", help="A program this worker runs (repeatable).")
@click.option("--concurrency", type=click.IntRange(1, 64), default=1, show_default=True, help="Runs at a time.")
@click.option("--recover", type=click.Choice(["keep", "rerun", "strict"]), default="rerun", help=RECOVER_HELP)
@click.option("--status", "show_status", is_flag=True, help="List the store's workers, their jobs and heartbeats.")
@click.option(
    "--heartbeat",
    type=float,
    default=HEARTBEAT,
    show_default=True,
    help="Seconds between heartbeats (and between looks for runs to take back).",
)
@click.option(
    "--stalled-after",
    type=float,
    default=STALE_WORKER,
    show_default=True,
    help="Seconds without a heartbeat after which a worker's runs go to another.",
)
def worker(
    location: str | None,
    apps: tuple[str, ...],
    concurrency: int,
    recover: str,
    show_status: bool,
    heartbeat: float,
    stalled_after: float,
) -> None:
    """Run queued runs of the programs given with --app, each in a child process; with --status, list workers."""
    where = _location(location)
    try:
        if show_status:
            _print_status(where)
            return
        if not apps:
            fail("a worker runs only the programs it is started with: give at least one --app FILE.py:ATTR")

        ensure_schema(where)
        asyncio.run(_work(where, [a.strip() for a in apps], concurrency, heartbeat, stalled_after, recover))
    except FleetError as exc:
        fail(str(exc))


def _print_status(location: str) -> None:

    workers, jobs = status(location)
    click.echo(f"{'WORKER':<8} {'HEARTBEAT':<12} JOBS")
    for w in workers:
        mine = [str(j.id) for j in jobs if j.worker == w.id and j.status == "doing"]
        click.echo(f"{w.id:<8} {f'{w.heartbeat_age:.0f}s ago':<12} {', '.join(mine) or '-'}")
    click.echo()
    click.echo(f"{'JOB':<8} {'STATUS':<10} {'WORKER':<8} {'RUN':<10} {'TRIES':<6} {'ON':<24} PROGRAM")
    for j in jobs:
        worker_id = f"{j.worker}" if j.worker is not None else "-"
        run = (j.lineage or "-")[:8]
        on = f"{j.host} pid {j.pid}" if j.host and j.status == "doing" else "-"
        program = visible(j.program, one_line=True)
        click.echo(f"{j.id:<8} {j.status:<10} {worker_id:<8} {run:<10} {j.attempts:<6} {on:<24} {program}")


class Busy(Exception):
    """Another process holds the run's lock: the job is tried again later."""


class Refused(Exception):
    """The job names a program this worker was not started with, or carries more than data."""


class RunFailed(Exception):
    """The child's run failed; the message is its last line."""


def _say(text: str) -> None:
    click.echo(f"crewpoint worker: {text}", err=True)


async def _work(
    location: str, programs: list[str], concurrency: int, heartbeat: float, stalled_after: float, recover: str
) -> None:
    # lazy: procrastinate loads only for the fleet's commands
    from procrastinate import RetryStrategy

    # what procrastinate logs of a job's end the worker says itself, in one line (tracebacks stay out of the way)
    logging.getLogger("procrastinate").addHandler(logging.NullHandler())
    app = make_app(location)
    guard_job_ends(app, _say)  # a job this worker lost (stopped, then continued) is left to the one that runs it
    retry = RetryStrategy(max_attempts=1000, wait=max(1, int(heartbeat)), retry_exceptions={Busy})

    @app.task(name=TASK, queue=QUEUE, pass_context=True, retry=retry)
    async def crewpoint_run(context: Any, /, **args: Any) -> None:
        job_id = int(context.job.id)
        try:
            job = Job.of(args)
        except FleetError as exc:
            _say(f"job {job_id} refused: {exc}")
            raise Refused(str(exc)) from None
        if job.program not in programs:
            why = f"this worker runs only {', '.join(programs)}, not {visible(job.program, one_line=True)}"
            _say(f"job {job_id} refused: {why}")
            raise Refused(why)
        await _run_child(location, job_id, job, heartbeat, stalled_after, recover)

    async with app.open_async():
        recovery = asyncio.create_task(_recover(app, heartbeat, stalled_after))
        _say(f"started on {socket.gethostname()} (pid {os.getpid()}) for {', '.join(programs)}")
        try:
            await app.run_worker_async(
                queues=[QUEUE],
                concurrency=concurrency,
                update_heartbeat_interval=heartbeat,
                stalled_worker_timeout=stalled_after,
                fetch_job_polling_interval=heartbeat,  # a job handed back sends no notification: looked for as often
                install_signal_handlers=True,
            )
        finally:
            recovery.cancel()


async def _run_child(
    location: str, job_id: int, job: Job, heartbeat: float, stalled_after: float, recover: str
) -> None:
    # lazy: the job's arguments as the child reads them
    import json

    env = {**os.environ, "CREWPOINT_CHECKPOINT_LOCATION": location}
    argv = [sys.executable, "-m", "crewpoint.tui.cli.fleet_child", str(job_id), job.program]
    argv += [f"{heartbeat:g}", f"{stalled_after:g}", recover]
    started = time.monotonic()
    child = await asyncio.create_subprocess_exec(
        *argv, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=env
    )
    try:
        args = {key: value for key, value in job.args().items() if key != "program"}  # (the program is argv's)
        _, err = await child.communicate(json.dumps(args).encode())
    except asyncio.CancelledError:  # the job was aborted (checkpoint stop) or this worker stops: the run is
        if child.returncode is None:  # interrupted as Ctrl-C would, and ends with its checkpoint
            child.send_signal(signal.SIGINT)
            await child.wait()
        _say(f"job {job_id} stopped: its run was interrupted")
        raise
    code = child.returncode
    lines = [line for line in err.decode(errors="replace").splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    for line in lines:  # the plan a recovered run follows, recorded with the run in the worker's log
        if line.startswith("recover: ") and line != last:
            _say(f"job {job_id} {line}")
    if code == BUSY:
        raise Busy(f"job {job_id}: its run is held by another process")
    if code == LOST:
        _say(f"job {job_id}: this worker lost the run's lock (stopped or cut off); another worker runs it")
        raise Busy(f"job {job_id}: its run went on in another process")
    took = time.monotonic() - started
    if code == ExitCode.INTERRUPTED:  # a signal not from checkpoint stop (Ctrl-C on the worker's terminal)
        _say(f"job {job_id}: its run was interrupted; queued again to go on from its checkpoint")
        raise Busy(f"job {job_id}: its run was interrupted")
    if code in (ExitCode.OK, ExitCode.WAITING, ExitCode.BUDGET):
        _say(f"job {job_id} ended in {took:.1f}s{': ' + last if last else ''}")
        return
    _say(f"job {job_id} failed (exit {code}): {last}")
    raise RunFailed(last or f"the run's process ended with exit {code}")


async def _recover(app: Any, heartbeat: float, stalled_after: float) -> None:
    """Hand back to the queue the jobs of workers whose heartbeats stopped: the worker that takes one resumes its
    run from the newest checkpoint (its lock keeps it to one process at a time)."""
    while True:
        await asyncio.sleep(heartbeat)
        try:
            stalled = await app.job_manager.get_stalled_jobs(seconds_since_heartbeat=stalled_after, queue=QUEUE)
            for job in stalled:  # (another worker that handed it back first: it is left as it is)
                if await app.job_manager.retry_job(job):
                    _say(f"job {job.id}: its worker stopped; queued again to resume its run")
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            _say(f"cannot look for stalled jobs now: {' '.join(str(exc).split())}")


__all__ = ["submit", "worker"]
