"""The command lines of the runs the app starts: a child ``crewpoint checkpoint resume|fork|answer`` reporting
progress as JSON lines (:mod:`crewpoint.tui.run_protocol`), which runs :func:`crewpoint.checkpoint.run.run_checkpoint`
as the command line does. Headless."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crewpoint.checkpoint.run import RunOptions

CHILD = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint"]
"""The command the app's runs start, before the subcommand."""


def cli_command(*args: str, app: str = "", budget: float | None = None) -> list[str]:
    """The child command; ``app`` (a program spec) is passed as ``--app`` and ``budget`` (dollars) as ``--budget``
    when given."""
    argv = [*CHILD, *args, "--progress", "json"]
    if app.strip():
        argv += ["--app", app.strip()]
    if budget is not None:
        argv += ["--budget", f"{budget:g}"]
    return argv


def run_command(options: RunOptions) -> list[str]:
    """The child ``crewpoint checkpoint resume|fork`` that runs ``options``, reporting JSON lines."""
    return [*CHILD, *options.argv(progress="json")]


def resume_command(source_id: str, location: str, app: str = "", budget: float | None = None) -> list[str]:
    """The child resume of ``source_id`` in ``location`` with the program ``app`` (none: the project's), stopping
    at ``budget`` dollars when given."""
    # lazy: the run's options live with the engine's run, loaded only when a run starts
    from crewpoint.budget import Budget
    from crewpoint.checkpoint.run import RunOptions

    return run_command(RunOptions(source_id, location, app=app or None, budget=Budget.of(budget)))
