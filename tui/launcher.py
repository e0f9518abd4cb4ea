"""The command lines of the runs the app starts: a child ``crewpoint checkpoint resume|fork`` reporting progress
as JSON lines (:mod:`crewpoint.tui.run_protocol`). Headless."""

from __future__ import annotations

import sys
from collections.abc import Mapping


def cli_command(*args: str, app: str = "", budget: float | None = None) -> list[str]:
    """The child command; ``app`` (a program spec) is passed as ``--app`` and ``budget`` (dollars) as ``--budget``
    when given."""
    argv = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", *args, "--progress", "json"]
    if app.strip():
        argv += ["--app", app.strip()]
    if budget is not None:
        argv += ["--budget", f"{budget:g}"]
    return argv


def resume_command(source_id: str, location: str, app: str = "", budget: float | None = None) -> list[str]:
    return cli_command("resume", source_id, "--location", location, app=app, budget=budget)


def fork_command(
    source_id: str,
    location: str,
    branch: str,
    inputs: Mapping[str, str] | None = None,
    outputs: Mapping[int, str] | None = None,
    app: str = "",
    budget: float | None = None,
) -> list[str]:
    """A fork onto ``branch`` with changed inputs and edited outputs (0-based task index → text), stopping at
    ``budget`` dollars when given."""
    args = ["fork", source_id, "--location", location, "--branch", branch]
    for key, value in (inputs or {}).items():
        args += ["--input", f"{key}={value}"]
    for index, text in sorted((outputs or {}).items()):
        args += ["--set-output", f"{index + 1}={text}"]
    return cli_command(*args, app=app, budget=budget)
