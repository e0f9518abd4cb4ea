"""The ``crewpoint`` command. Headless commands never import textual; the app is imported only to run it.

Exit codes: 0 success, 1 the run or command failed, 2 bad input (a wrong path, an unknown id, a damaged or
newer-version checkpoint), 75 a run waits for a person, 76 a run stopped at its budget, 130 interrupted.

Heavy modules (pydantic, the engine, rich) are imported inside the commands so ``crewpoint --help`` stays fast.
Each command lives in a module of its own (:data:`COMMAND_MODULES`), imported when a command is first looked for.
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

COMMAND_MODULES = ("answer", "copy", "cost", "demo", "diff", "fleet", "listing", "new", "prune", "runs", "serve")
"""The modules that register the commands (``@checkpoint.command()``, ``@main.command()``): a new command's module
is named here. They are imported when a command is first looked for, all of them unless :data:`OWN_MODULE`
names the command's own."""
OWN_MODULE = {"list": "listing", "info": "listing"}
"""Commands run often enough to load only their own module (a ``list`` loads no other command's imports)."""


def load_commands(name: str | None = None) -> None:
    """Register the command ``name`` (its own module when :data:`OWN_MODULE` names it, else every command's), or
    every command (``None``)."""
    # lazy: the command groups are click's, built when a command is first looked for
    from crewpoint.tui.cli.root import checkpoint, main

    own = OWN_MODULE.get(name or "")
    if own is not None:
        import_module(f"{__name__}.{own}")
        if name in checkpoint.commands or name in main.commands:
            return
    for module in COMMAND_MODULES:
        import_module(f"{__name__}.{module}")


__all__ = ["COMMAND_MODULES", "checkpoint", "load_commands", "main", "run"]


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
