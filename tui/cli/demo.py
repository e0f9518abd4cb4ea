"""``crewpoint demo``: the bundled crew on the offline model, and the live demo in the app."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

import click

from crewpoint.providers import shown_location
from crewpoint.tui.cli.errors import EXIT_FAILED, EXIT_INTERRUPTED, fail
from crewpoint.tui.cli.root import main

if TYPE_CHECKING:
    import subprocess


@main.command()
@click.option("--location", default="./.checkpoints", show_default=True, help="Where checkpoints are written.")
@click.option("--delay", default=0.0, show_default=True, type=float, help="Seconds per offline LLM call.")
@click.option(
    "--provider",
    type=click.Choice(["json", "sqlite"]),
    default=None,
    help="Checkpoint storage for a path (default: SQLite for a .db/.sqlite path, else JSON; a URL is its own).",
)
@click.option(
    "--live",
    is_flag=True,
    help="Open the app on a fresh demo store (a run and a fork) while a slow demo run writes into it.",
)
@click.option("--force", is_flag=True, help="With --live: replace LOCATION even when it holds other things.")
@click.option("--from-start", is_flag=True, hidden=True, help="Checkpoint when the crew starts too (the live run).")
@click.pass_context
def demo(
    ctx: click.Context, location: str, delay: float, provider: str | None, live: bool, force: bool, from_start: bool
) -> None:
    """Run the bundled example crew and flow on the offline model, checkpointing as they go. With --live the
    slow run takes about a minute (--delay sets the seconds per model call)."""
    from crewpoint.demo import LIVE_DELAY, run_demo

    if provider == "sqlite" and location == "./.checkpoints":
        location = "./.checkpoints.db"
    if provider is not None and "://" in location:
        fail(f"--provider is for a path: a URL location is its own kind of store ({location.partition('://')[0]})")
    if live:
        _live_demo(location, provider, delay or LIVE_DELAY, force=force)
        return
    # lazy: the event bus loads the event catalogue; only a demo run listens to it
    from crewpoint.events import CheckpointFailedEvent, event_bus

    lost: list[str] = []

    def on_failed(source: Any, event: CheckpointFailedEvent) -> None:
        lost.append(event.error or "unknown error")

    event_bus.register(CheckpointFailedEvent, on_failed)
    try:
        result, flow_result = run_demo(location=location, delay=delay, provider=provider, from_start=from_start)
    except KeyboardInterrupt:
        click.echo("interrupted: resume from the latest checkpoint to continue", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except Exception as exc:
        if ctx.obj.get("debug"):
            raise
        fail(str(exc), EXIT_FAILED)
    finally:
        event_bus.off(on_failed)
    for output in result.tasks_output:
        click.echo(f"== {output.name or output.description} ({output.agent})")
        click.echo(output.raw)
        click.echo()
    click.echo(f"== triage flow\n{flow_result}")
    # lazy: masking is needed only when a demo checkpoint was lost
    from crewpoint.providers.masking import mask_in

    if lost:  # the runs finished, but not every checkpoint reached the store
        plural = "s were" if len(lost) != 1 else " was"
        fail(mask_in(f"{len(lost)} checkpoint{plural} not written to {location}: {lost[-1]}", location), EXIT_FAILED)
    click.echo(f"\ncheckpoints: {shown_location(location)}", err=True)


def _clear_demo_location(location: str, force: bool) -> None:
    """Make room for a fresh demo store: an empty folder, nothing, or a demo store made earlier is replaced;
    anything else only with ``force``."""
    import shutil

    from crewpoint.demo import is_demo_store

    if os.path.islink(location):
        fail(f"{location} is a link: choose another --location")
    if os.path.isdir(location):
        if os.listdir(location) and not is_demo_store(location) and not force:
            fail(
                f"{location} is not empty and is not a demo store: choose another --location, "
                "or add --force to delete what it holds"
            )
        shutil.rmtree(location)
    elif os.path.exists(location):
        if not is_demo_store(location) and not force:
            fail(f"{location} exists and is not a demo store: choose another --location, or add --force to replace it")
        for path in (location, f"{location}-wal", f"{location}-shm"):
            if os.path.exists(path):
                os.remove(path)


def live_run_command(location: str, provider: str | None, delay: float) -> list[str]:
    """The slow run of the live demo: the crew and the flow on the offline model, checkpointing from the start."""
    return [
        sys.executable,
        "-m",
        "crewpoint.tui.cli",
        "demo",
        "--location",
        location,
        *(["--provider", provider] if provider else []),
        "--delay",
        str(delay),
        "--from-start",
    ]


def start_live_demo(
    location: str, provider: str | None, delay: float, *, force: bool = False
) -> subprocess.Popen[bytes]:
    """A finished run and a stopped fork in a fresh store, and the slow run started: its first checkpoint (at the
    crew's start) lands while the app opens."""
    import subprocess

    from crewpoint.demo import seed_demo_store

    _clear_demo_location(location, force)
    click.echo(f"making a demo store at {location} …", err=True)
    seed_demo_store(location, provider)
    return subprocess.Popen(
        live_run_command(location, provider, delay), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )


def _live_demo(location: str, provider: str | None, delay: float, *, force: bool = False) -> None:
    """The demo store, the slow run writing into it, and the app watching it all; the run stops with the app."""
    child = start_live_demo(location, provider, delay, force=force)
    try:
        # lazy: the app loads textual; only the commands that open it import it
        from crewpoint.tui.app import make_app

        make_app(location).run()
    finally:
        if child.poll() is None:
            child.terminate()
            child.wait(timeout=10)
