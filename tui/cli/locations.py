"""Where a command finds its store: ``--location``, the group's location, the environment."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import click

LOCATION_HELP = (
    "Checkpoint folder, SQLite database or postgresql:// URL (default: $CREWPOINT_CHECKPOINT_LOCATION, else"
    " ./.checkpoints, else ./.checkpoints.db)."
)


def location_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    import click  # here: only a module that declares a command asks for the option (list's fast path never)

    return click.option("--location", "-l", metavar="PATH", default=None, help=LOCATION_HELP)(fn)


def location_of(ctx: click.Context | None, given: str | None) -> str | None:
    if given is not None or ctx is None:
        return given
    return (ctx.obj or {}).get("location")
