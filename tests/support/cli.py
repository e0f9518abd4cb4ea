"""The ``crewpoint`` command as the tests run it: in this process through click's runner (:func:`cli`), or as a
user runs it, in a process of its own (:func:`crewpoint`, :data:`CHECKPOINT`), and the one-line error a refused
command prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import Result

CREWPOINT = str(Path(sys.executable).with_name("crewpoint"))
"""The ``crewpoint`` script of this environment, as a user types it."""

CHECKPOINT = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint"]
"""``crewpoint checkpoint`` run by this interpreter, for ``[*CHECKPOINT, "list", ...]``."""


def cli(*args: str, env: dict[str, str] | None = None, catch_exceptions: bool = True) -> Result:
    """``crewpoint ARGS`` in this process; stdout and stderr apart. With ``catch_exceptions=False`` an exception
    the command does not handle fails the test with its own traceback."""
    from click.testing import CliRunner

    from crewpoint.tui.cli import main

    return CliRunner().invoke(main, list(args), env=env, catch_exceptions=catch_exceptions)


def crewpoint(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``crewpoint ARGS`` in ``cwd`` in a process of its own, its output as text, stdin closed unless ``kwargs``
    say otherwise; ``env`` replaces this environment when given."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [CREWPOINT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs
    )


def checkpoint(
    *args: str, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """``crewpoint checkpoint ARGS`` in ``cwd`` in a process of its own, as :func:`crewpoint` runs it."""
    kwargs.setdefault("stdin", subprocess.DEVNULL)
    return subprocess.run(  # type: ignore[call-overload, no-any-return]
        [*CHECKPOINT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, **kwargs
    )


def one_line_error(result: Result | subprocess.CompletedProcess[str], code: int = 2) -> str:
    """The one line a refused command printed on stderr (``crewpoint: …``), run either way: nothing on stdout,
    exit ``code`` (2: bad input)."""
    exit_code = result.exit_code if isinstance(result, Result) else result.returncode
    assert exit_code == code, (exit_code, result.stdout, result.stderr)
    assert result.stdout == "", result.stdout
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crewpoint: "), result.stderr
    return lines[0]
