"""One-line errors, exit codes and JSON output shared by the commands."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import click

from crewpoint.providers.base import CheckpointError
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.visible import visible

EXIT_FAILED = ExitCode.FAILED
EXIT_BAD_INPUT = ExitCode.BAD_INPUT
EXIT_INTERRUPTED = ExitCode.INTERRUPTED


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """One line on stderr, no traceback, and exit."""
    click.echo(f"crewpoint: {visible(message, one_line=True)}", err=True)
    sys.exit(code)


def fail_from(ctx: click.Context, message: str, code: int) -> NoReturn:
    """:func:`fail` while handling an exception: with ``--debug`` its traceback comes first, and the exit code
    stays what it is without ``--debug`` (a bad input exits 2 either way)."""
    if wants_traceback(ctx):
        import traceback

        traceback.print_exc()
    fail(message, code)


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def wants_traceback(ctx: click.Context) -> bool:
    return bool((ctx.find_root().obj or {}).get("debug"))


@contextmanager
def bad_input(ctx: click.Context) -> Iterator[None]:
    """Errors a user can meet become one line on stderr and exit 2 (a traceback with ``--debug``)."""
    try:
        yield
    except BrokenPipeError:  # the reader went away: not the user's input (the root group ends quietly)
        raise
    except (CheckpointError, ValueError, OSError, LookupError) as exc:
        fail_from(ctx, one_line(exc), EXIT_BAD_INPUT)


def emit_json(data: Any) -> None:
    """JSON on stdout; the characters JSON leaves as they are but a terminal acts on (DEL, C1 controls, bidi and other
    format characters, line and paragraph separators) are written as ``\\u`` escapes."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    if visible(text) == text:
        click.echo(text)
        return
    click.echo("".join(json.dumps(c)[1:-1] if c not in "\t\n" and visible(c) != c else c for c in text))
