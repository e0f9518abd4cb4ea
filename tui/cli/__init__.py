"""The ``crewpoint`` command. Headless commands never import textual; the app is imported only to run it.

Exit codes: 0 success, 1 the run or command failed, 2 bad input (a wrong path, an unknown id, a damaged or
newer-version checkpoint), 130 interrupted.

Heavy modules (pydantic, the engine, rich) are imported inside the commands so ``crewpoint --help`` stays fast.
Each command lives in a module of its own (:data:`COMMAND_MODULES`), imported when a command is first looked for.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

from crewpoint.tui.cli.root import checkpoint, main

COMMAND_MODULES = ("answer", "copy", "cost", "demo", "diff", "listing", "new", "prune", "runs", "serve")
"""The modules that register the commands (``@checkpoint.command()``, ``@main.command()``): a new command's module
is named here. They are imported when a command is first looked for, all of them unless :data:`OWN_MODULE`
names the command's own."""
OWN_MODULE = {"list": "listing", "info": "listing"}
"""Commands run often enough to load only their own module (a ``list`` loads no other command's imports)."""


def load_commands(name: str | None = None) -> None:
    """Register the command ``name`` (its own module when :data:`OWN_MODULE` names it, else every command's), or
    every command (``None``)."""
    own = OWN_MODULE.get(name or "")
    if own is not None:
        import_module(f"{__name__}.{own}")
        if name in checkpoint.commands or name in main.commands:
            return
    for module in COMMAND_MODULES:
        import_module(f"{__name__}.{module}")


__all__ = ["COMMAND_MODULES", "checkpoint", "load_commands", "main", "run"]


def run() -> Any:  # pragma: no cover - console entry alias
    return main()
