"""Where a command finds its store: ``--location``, the group's location, the environment."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

LOCATION_HELP = (
    "Checkpoint folder, SQLite database or postgresql:// URL (default: $CREWPOINT_CHECKPOINT_LOCATION, else"
    " ./.checkpoints, else ./.checkpoints.db)."
)


def location_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--location", "-l", metavar="PATH", default=None, help=LOCATION_HELP)(fn)


def location_of(ctx: click.Context, given: str | None) -> str | None:
    return given if given is not None else (ctx.obj or {}).get("location")
