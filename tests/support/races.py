"""``crewpoint`` commands in processes of their own, released at one moment: two people pressing enter together.

Each process loads the command line's code first and says it is ready on a pipe; once all are ready (or one died
first) the test closes a second pipe, and every process reads its end of file at once and runs its command."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

STARTER = r"""
import os, runpy, sys
import crewpoint.tui.cli  # loaded before the start, so every command sets off from the same line
ready, go = int(sys.argv[1]), int(sys.argv[2])
os.write(ready, b"r")
os.close(ready)
os.read(go, 1)  # end of file when the test closes the pipe: every command is released at once
os.close(go)
sys.argv = ["crewpoint", *sys.argv[3:]]
runpy.run_module("crewpoint.tui.cli", run_name="__main__", alter_sys=True)
"""


@dataclass(frozen=True)
class Ended:
    """How one released command ended: who ran it, its exit code and what it printed."""

    who: str
    returncode: int
    stdout: str
    stderr: str


def released_together(commands: dict[str, list[str]], cwd: Path, env: dict[str, str]) -> list[Ended]:
    """``crewpoint ARGS`` for each person of ``commands`` (their login name: ``USER``/``LOGNAME``), each in a
    process of its own in ``cwd``, released together; how each ended, in the order given."""
    ready_read, ready_write = os.pipe()
    go_read, go_write = os.pipe()
    procs: list[tuple[str, subprocess.Popen[str]]] = []
    try:
        for who, args in commands.items():
            procs.append(
                (
                    who,
                    subprocess.Popen(
                        [sys.executable, "-c", STARTER, str(ready_write), str(go_read), *args],
                        cwd=cwd,
                        env={**env, "USER": who, "LOGNAME": who},
                        stdin=subprocess.DEVNULL,
                        stdout=subprocess.PIPE,
                        stderr=subprocess.PIPE,
                        text=True,
                        pass_fds=(ready_write, go_read),
                    ),
                )
            )
        os.close(ready_write)
        os.close(go_read)
        seen = b""
        while len(seen) < len(procs):  # each says it is ready; end of file if one died first
            got = os.read(ready_read, 1)
            if not got:
                break
            seen += got
    finally:
        os.close(go_write)  # all go at once
        os.close(ready_read)
    ended = []
    for who, proc in procs:
        stdout, stderr = proc.communicate(timeout=120)
        ended.append(Ended(who, proc.returncode, stdout, stderr))
    assert len(seen) == len(procs), ended
    return ended
