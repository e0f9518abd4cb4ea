"""The ``crewpoint`` command. Headless commands never import textual; the app is imported only to run it.

Exit codes: 0 success, 1 the run or command failed, 2 bad input (a wrong path, an unknown id, a damaged or
newer-version checkpoint), 75 a run waits for a person, 76 a run stopped at its budget, 130 interrupted.

Heavy modules (pydantic, the engine, rich) are imported inside the commands so ``crewpoint --help`` stays fast.
Each command lives in a module of its own, imported only when that command runs (:data:`COMMANDS` names it and
holds the short help ``--help`` lists, so help loads no command's module).
The command line itself (click, :data:`main`, :data:`checkpoint`) is built when first asked for: the entry point
(:func:`run`) lists a store without it when ``checkpoint list`` comes with arguments it fully understands.
"""

from __future__ import annotations

import gc
import sys
from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crewpoint.tui.cli.root import checkpoint, main

COMMANDS: dict[str, dict[str, tuple[str, str]]] = {
    "main": {
        "demo": ("demo", "Run the bundled example crew and flow on the offline model, checkpointing as they go."),
        "new": (
            "new",
            "Write a runnable crew project into the folder NAME: agents and tasks in YAML, a @CrewBase crew with a "
            "feedback step, and a README with the commands that run and resume it.",
        ),
        "submit": (
            "fleet",
            "Queue a run of the program SPEC on the team's store; a worker started with --app SPEC runs it.",
        ),
        "worker": (
            "fleet",
            "Run queued runs of the programs given with --app, each in a child process; with --status, list workers.",
        ),
    },
    "checkpoint": {
        "answer": (
            "answer",
            "Answer the run waiting for a person at checkpoint ID, then run on from there as resume does.",
        ),
        "check": (
            "check",
            "Which resumable checkpoints in STORE the program can go on from, and what each resume would run again.",
        ),
        "copy": ("copy", "Copy every checkpoint of the store SRC into the crewpoint store DST, keeping lineage."),
        "cost": (
            "cost",
            "What recorded usage cost: tokens by kind and dollars, per task, agent, model, branch or run.",
        ),
        "diff": ("diff", "Compare two checkpoints: inputs, task statuses and outputs, flow state and method outputs."),
        "fork": (
            "runs",
            "Start a new branch from checkpoint ID and run it, optionally with edited inputs or task outputs.",
        ),
        "info": ("listing", "Show one checkpoint: metadata, ancestry, inputs and each task's status and output."),
        "list": ("listing", "List checkpoints, newest first (reads no checkpoint bodies)."),
        "prune": ("prune", "Delete old checkpoints in the store LOCATION names (and nowhere else)."),
        "resume": ("runs", "Continue a run from checkpoint ID; finished tasks are not run again."),
        "serve": (
            "serve",
            "Serve the app to web browsers until Ctrl-C; prints the URL to open, with the access token in it.",
        ),
        "stop": (
            "stop",
            "Stop the live run RUN (an id or its start; a fleet job's number): it ends interrupted with a checkpoint.",
        ),
    },
}
"""Group → command → (the module that registers it, its short help as ``--help`` lists it): a command's module is
imported when the command is run, never for ``--help`` or another command. A new command gets a line here (a test
fails until the line and the command agree)."""

COMMAND_MODULES = tuple(sorted({module for commands in COMMANDS.values() for module, _ in commands.values()}))
"""The modules that register the commands (``@checkpoint.command()``, ``@main.command()``)."""


def load_commands(group: str | None = None, name: str | None = None) -> None:
    """Register the command ``name`` of ``group`` (its own module, from :data:`COMMANDS`), or every command (no name,
    or a name no command has: click suggests the nearest of those it holds)."""
    found = COMMANDS.get(group or "", {}).get(name or "")
    for module in (found[0],) if found is not None else COMMAND_MODULES:
        import_module(f"{__name__}.{module}")


__all__ = ["COMMANDS", "COMMAND_MODULES", "checkpoint", "load_commands", "main", "run"]


def __getattr__(name: str) -> Any:
    """:data:`main` and :data:`checkpoint`, the click groups, built on first use."""
    if name in ("main", "checkpoint"):
        return getattr(import_module(f"{__name__}.root"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run() -> Any:
    """The ``crewpoint`` console command: ``checkpoint list`` with arguments the listing understands on its own
    runs without click (:func:`crewpoint.tui.cli.listing_run.list_fast`, which exits); anything else is
    :data:`main`'s."""
    if sys.argv[1:2] == ["checkpoint"] and "list" in sys.argv[2:]:
        gc.disable()  # what a listing imports and reads holds no cycles worth collecting (it ends the process)
        # lazy: the listing loads the providers, which no other command's start needs
        from crewpoint.tui.cli.listing_run import list_fast

        list_fast(sys.argv[1:])
        gc.enable()  # not a listing it runs alone: the command line's, as any other
    # lazy: click and the groups, for every other command line
    from crewpoint.tui.cli.root import main

    return main()
