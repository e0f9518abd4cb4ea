"""The ``crewpoint`` command. Headless commands never import textual; the app is imported only to run it.

Exit codes: 0 success, 1 the run or command failed, 2 bad input (a wrong path, an unknown id, a damaged or
newer-version checkpoint), 130 interrupted.

Heavy modules (pydantic, the engine, rich) are imported inside the commands so ``crewpoint --help`` stays fast.
Each command lives in a module of its own; importing this package registers them all on ``main``.
"""

from __future__ import annotations

from typing import Any

from crewpoint.tui.cli import answer, copy, cost, demo, diff, listing, new, prune, runs, serve  # noqa: F401  (registers the commands)
from crewpoint.tui.cli.root import checkpoint, main

__all__ = ["checkpoint", "main", "run"]


def run() -> Any:  # pragma: no cover - console entry alias
    return main()
