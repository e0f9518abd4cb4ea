"""The ``crewpoint`` command. Headless commands never import textual; the app is imported only to run it.

Exit codes: 0 success, 1 the run or command failed, 2 bad input (a wrong path, an unknown id, a damaged or
newer-version checkpoint), 130 interrupted.
"""

from __future__ import annotations

import sys
from typing import Any

import click

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


def fail(message: str, code: int = EXIT_BAD_INPUT) -> None:
    """One line on stderr, no traceback, and exit."""
    click.echo(f"crewpoint: {message}", err=True)
    sys.exit(code)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="crewpoint", prog_name="crewpoint")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """crewpoint: durable multi-agent runs.

    \b
    Exit codes: 0 ok, 1 the run failed, 2 bad input, 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@main.command()
@click.option(
    "--location", default="./.checkpoints", show_default=True, help="Where checkpoints are written."
)
@click.option("--delay", default=0.0, show_default=True, type=float, help="Seconds per offline LLM call.")
@click.option(
    "--provider",
    type=click.Choice(["json", "sqlite"]),
    default="json",
    show_default=True,
    help="Checkpoint storage.",
)
@click.pass_context
def demo(ctx: click.Context, location: str, delay: float, provider: str) -> None:
    """Run the bundled example crew and flow on the offline model, checkpointing as they go."""
    from crewpoint.demo import run_demo

    if provider == "sqlite" and location == "./.checkpoints":
        location = "./.checkpoints.db"
    try:
        result, flow_result = run_demo(location=location, delay=delay, provider=provider)
    except KeyboardInterrupt:
        click.echo("interrupted: resume from the latest checkpoint to continue", err=True)
        sys.exit(130)
    except Exception as exc:
        if ctx.obj.get("debug"):
            raise
        fail(str(exc), EXIT_FAILED)
    for output in result.tasks_output:
        click.echo(f"== {output.name or output.description} ({output.agent})")
        click.echo(output.raw)
        click.echo()
    click.echo(f"== triage flow\n{flow_result}")
    click.echo(f"\ncheckpoints: {location}", err=True)


def run() -> Any:  # pragma: no cover - console entry alias
    return main()
