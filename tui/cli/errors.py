"""One-line errors, exit codes and JSON output shared by the commands.

Nothing here imports click: ``crewpoint checkpoint list`` runs through these without building the command line
(``crewpoint.tui.cli.run``), and a command's ``click.Context`` is only read (``ctx.find_root().obj``)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, TextIO

from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    import click

EXIT_FAILED = ExitCode.FAILED
EXIT_BAD_INPUT = ExitCode.BAD_INPUT
EXIT_INTERRUPTED = ExitCode.INTERRUPTED


def echo(text: str, err: bool = False) -> None:
    """``click.echo(text, err=err)``: ``text`` and a newline on stdout (stderr), flushed. Text without escape
    codes to a UTF-8 stream is written as it is, without loading click; anything else is click's to write (it
    strips escape codes from a stream that is not a terminal and mends a misconfigured one)."""
    stream: TextIO | None = sys.stderr if err else sys.stdout
    if stream is None:
        return
    if "\x1b" in text or str(getattr(stream, "encoding", "")).lower().replace("_", "-") not in _UTF8:
        import click

        click.echo(text, err=err)
        return
    stream.write(text + "\n")
    stream.flush()


_UTF8 = {"utf-8", "utf8"}


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """One line on stderr, no traceback, and exit."""
    echo(f"crewpoint: {visible(message, one_line=True)}", err=True)
    sys.exit(code)


def fail_from(ctx: click.Context | None, message: str, code: int) -> NoReturn:
    """:func:`fail` while handling an exception: with ``--debug`` its traceback comes first, and the exit code
    stays what it is without ``--debug`` (a bad input exits 2 either way)."""
    if wants_traceback(ctx):
        import traceback

        traceback.print_exc()
    fail(message, code)


def show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: TextIO | None = None,
    line: str | None = None,
) -> None:
    """A warning as the command line writes it: one line, ``crewpoint: warning: ...``, without the file, line and
    source Python's ``warnings`` would show (the filters still choose which warnings are shown)."""
    try:
        (file or sys.stderr).write(f"crewpoint: warning: {visible(str(message), one_line=True)}\n")
    except (OSError, ValueError):  # no stderr to write to: a warning never stops a command
        pass


def quiet_exit() -> None:
    """End after the reader of stdout went away: nothing on stderr, and nothing left to flush at exit."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    sys.exit(EXIT_FAILED)


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def wants_traceback(ctx: click.Context | None) -> bool:
    """Was ``--debug`` given (``None``: a command run without click, which it never is with ``--debug``)?"""
    return ctx is not None and bool((ctx.find_root().obj or {}).get("debug"))


@contextmanager
def bad_input(ctx: click.Context | None) -> Iterator[None]:
    """Errors a user can meet become one line on stderr and exit 2 (a traceback with ``--debug``)."""
    # lazy: the providers are the commands' to load; ``crewpoint --help`` loads none
    from crewpoint.providers.base import CheckpointError

    try:
        yield
    except BrokenPipeError:  # the reader went away: not the user's input (the root group ends quietly)
        raise
    except (CheckpointError, ValueError, OSError, LookupError) as exc:
        fail_from(ctx, one_line(exc), EXIT_BAD_INPUT)


def emit_json(data: Any) -> None:
    """JSON on stdout; the characters JSON leaves as they are but a terminal acts on (DEL, C1 controls, bidi and other
    format characters, line and paragraph separators) are written as ``\\u`` escapes."""
    # lazy: only --json output needs json, and every command line (--help too) loads this module
    import json

    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    if visible(text) == text:
        echo(text)
        return
    echo("".join(json.dumps(c)[1:-1] if c not in "\t\n" and visible(c) != c else c for c in text))
