"""The root ``crewpoint`` group and ``crewpoint checkpoint``, which opens the terminal app."""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any

import click

from crewpoint.tui.cli import COMMANDS, load_commands
from crewpoint.tui.cli.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    bad_input,
    fail,
    fail_from,
    one_line,
    quiet_exit,
    show_warning,
    wants_traceback,
)
from crewpoint.tui.cli.locations import LOCATION_HELP
from crewpoint.tui.diagnostics import no_checkpoints


class _Commands(click.Group):
    """A group whose commands the modules of ``crewpoint.tui.cli`` register, each imported when its command runs
    (:data:`crewpoint.tui.cli.COMMANDS`): help and the other commands load no command's module."""

    def _known(self) -> dict[str, tuple[str, str]]:
        return COMMANDS.get(self.name or "", {})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands:
            load_commands(self.name, cmd_name)
        return super().get_command(ctx, cmd_name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self._known()})

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's list of commands, with the short help of :data:`~crewpoint.tui.cli.COMMANDS` for a command whose
        module is not loaded (shortened to the terminal's width as click shortens a command's own)."""
        known = self._known()
        shown = [(name, self.commands.get(name) or click.Command(name, help=known[name][1])) for name in known]
        shown += [(name, command) for name, command in self.commands.items() if name not in known]
        shown = sorted(((name, command) for name, command in shown if not command.hidden), key=lambda pair: pair[0])
        if shown:
            limit = formatter.width - 6 - max(len(name) for name, _ in shown)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in shown])


class _Main(_Commands):
    """The root group: an unexpected error is one line (its traceback with ``--debug``); Ctrl-C exits 130; a
    usage error is one line and exit 2; a reader that goes away (``list | head``) ends the command quietly."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, **extra)
        warnings.showwarning = show_warning
        try:
            code = super().main(args, prog_name, complete_var, False, **extra)
        except click.exceptions.UsageError as exc:
            where = exc.ctx.command_path if exc.ctx is not None else "crewpoint"
            fail(f"{_message(exc)} (see `{where} --help`)", exc.exit_code or EXIT_BAD_INPUT)
        except click.ClickException as exc:
            fail(_message(exc), exc.exit_code)
        except click.exceptions.Abort:
            fail("interrupted", EXIT_INTERRUPTED)
        except BrokenPipeError:
            quiet_exit()
        sys.exit(code if isinstance(code, int) else 0)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("crewpoint: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # the reader went away (``crewpoint checkpoint list | head``)
            quiet_exit()
        except Exception as exc:
            hint = "" if wants_traceback(ctx) else " (run with --debug for the traceback)"
            fail_from(ctx, f"{one_line(exc)}{hint}", EXIT_FAILED)


def _message(exc: click.ClickException) -> str:
    """Click's message as crewpoint writes a line: lower-case first letter, sentences joined by ``;``, no full
    stop (``no such command 'lst'; did you mean 'list'?``)."""
    parts = [p.strip() for p in " ".join(exc.format_message().split()).split(". ") if p.strip()]
    parts = [p[:1].lower() + p[1:] if p[:2].isalpha() and not p[1:2].isupper() else p for p in parts]
    return "; ".join(parts).removesuffix(".")


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="crewpoint", prog_name="crewpoint")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """crewpoint: durable multi-agent runs.

    \b
    Exit codes: 0 ok, 1 the run failed, 2 bad input, 130 interrupted; 75 the run waits
    for a person (answer it), 76 the run stopped at its budget (resume it with a larger one).
    Data goes to stdout, diagnostics to stderr; NO_COLOR turns colours off.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@main.group(cls=_Commands, invoke_without_command=True)
@click.option(
    "--location", "-l", metavar="PATH", default=None, envvar="CREWPOINT_CHECKPOINT_LOCATION", help=LOCATION_HELP
)
@click.option("--read-only", is_flag=True, help="Open the app with resume, fork, edit, cancel and prune turned off.")
@click.pass_context
def checkpoint(ctx: click.Context, location: str | None, read_only: bool) -> None:
    """Browse checkpoints in the terminal app; or list, inspect, resume, fork, compare and prune them.

    \b
    Without a subcommand this opens the terminal app on the store.
    IDs may be given by a unique prefix; an ambiguous prefix lists the matches.
    Exit codes: 0 ok, 1 the run failed, 2 bad input, 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj["location"] = location
    if ctx.invoked_subcommand is not None:
        return
    # lazy: the providers and crewpoint.checkpoint.ops (the body schema) are for the app, not for ``--help``
    from crewpoint.checkpoint.ops import find_store
    from crewpoint.providers.base import CheckpointNotFound

    with bad_input(ctx):
        try:
            store = find_store(location)
        except CheckpointNotFound:
            if location is not None and "://" not in location and os.path.isdir(location):
                fail(no_checkpoints(location))
            raise
    try:
        # lazy: the app loads textual; only the commands that open it import it
        from crewpoint.tui.app import make_app
    except ImportError as exc:
        fail_from(ctx, f"the terminal app cannot start: {one_line(exc)}", EXIT_FAILED)
    make_app(store, read_only=read_only).run()
