"""``crewpoint checkpoint stop RUN``: stop a live run where it runs; it ends ``interrupted`` with a checkpoint.

A run of the fleet (a store on PostgreSQL with the fleet's tables) has its job aborted: the worker running it
interrupts its child as Ctrl-C would. Any other live run is sent SIGINT as the app's ``x`` sends it, only to a
process of this host verified as that run (:mod:`crewpoint.tui.run_control`)."""

from __future__ import annotations

import click

from crewpoint.providers import is_postgres_location
from crewpoint.tui.cli.errors import bad_input, echo, fail
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint


@checkpoint.command()
@click.argument("run", metavar="RUN")
@location_option
@click.pass_context
def stop(ctx: click.Context, run: str, location: str | None) -> None:
    """Stop the live run RUN (an id or its start; a fleet job's number): it ends interrupted with a checkpoint."""
    # lazy: finding the store loads the providers, which --help never needs
    from crewpoint.checkpoint.stores import find_store

    with bad_input(ctx):
        store = find_store(location_of(ctx, location))
    if is_postgres_location(store):
        # lazy: the fleet's engine is the PostgreSQL extra's; only a store on PostgreSQL may have a fleet
        from crewpoint.tui.cli.fleet_engine import FleetError, abort, watch_command

        try:
            aborted = abort(store, run)
        except FleetError as exc:
            fail(str(exc))
        if aborted is not None:
            job_id, lineage, running = aborted
            if running:
                echo(f"stopping job {job_id} (run {(lineage or '-')[:8]}): its worker interrupts it, with a checkpoint")
            else:
                echo(f"cancelled job {job_id}: no worker had started it")
            echo(f"watch it with: {watch_command(store)}")
            return
    _stop_local(store, run)


def _stop_local(store: str, run: str) -> None:
    # lazy: run records and the process check are this command's only
    from crewpoint.providers.runs import classify, read_runs
    from crewpoint.tui.run_control import interrupt

    wanted = run.strip()
    live = [
        r
        for r in read_runs(store)
        if wanted and classify(r) == "running" and (r.run_id.startswith(wanted) or r.lineage.startswith(wanted))
    ]
    if not live:
        fail(f"no live run {wanted!r} in {store}: crewpoint checkpoint list shows the runs and their STATUS")
    if len({r.run_id for r in live}) > 1:
        fail(f"{wanted!r} names {len(live)} live runs: give more of the run's id")
    reason = interrupt(live[0])
    if reason is not None:
        fail(f"cannot stop run {live[0].run_id[:8]}: {reason}")
    echo(f"stopping run {live[0].run_id[:8]}: it ends interrupted, with a checkpoint")
