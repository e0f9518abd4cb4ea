"""A user's program run in its own process and killed with SIGKILL part-way, as a crash would end it, and the
traces it leaves: the log files it appends words to and the checkpoints it wrote."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from support.waiting import wait_for


def user_env(**extra: str) -> dict[str, str]:
    """This environment as a user's who never trusted checkpoints to name code (no
    ``CREWPOINT_DESERIALIZE_CALLBACKS``), without colours, and with ``extra``."""
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_DESERIALIZE_CALLBACKS"}
    return {**env, "NO_COLOR": "1", **extra}


def words(path: Path) -> list[str]:
    """The words a program logged to ``path``; none when it never wrote it."""
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def done_counts(store: Path) -> list[int]:
    """``tasks_done`` of each undamaged checkpoint in ``store``, newest first; none while the store does not exist
    or cannot be read yet (a run is writing its first checkpoint)."""
    from crewpoint.checkpoint import ops

    if not store.exists():
        return []
    try:
        return [m.tasks_done for m in ops.list_checkpoints(str(store)) if not m.damaged]
    except Exception:
        return []


def kill_when(argv: Sequence[str], cwd: Path, ready: Callable[[], bool], what: str, env: dict[str, str]) -> None:
    """Run ``argv`` in ``cwd`` and kill it with SIGKILL once ``ready()`` holds; a program that ends before fails
    the test with what it wrote on stderr."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:

        def running_and_ready() -> bool:
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            return ready()

        wait_for(running_and_ready, what)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stderr is not None:
            proc.stderr.close()
    assert proc.returncode == -signal.SIGKILL


GATED_DEMO = """
import sys
import crewpoint.demo
from crewpoint.llm import OfflineLLM

held = []

class Gated(OfflineLLM):
    def call(self, messages, **kwargs):
        if self.calls == 2 and not held:  # the first task is done and checkpointed
            held.append(sys.stdin.readline())  # the test's word: the run goes on
        return super().call(messages, **kwargs)

crewpoint.demo.OfflineLLM = Gated
crewpoint.demo.run_demo(location=sys.argv[1])
"""


def gated_demo(store: Path) -> list[str]:
    """The demo run (``crewpoint demo --location STORE``) as a command that holds after its first task until a
    line arrives on its stdin: the run is live for as long as a test looks. Start it with ``stdin=PIPE``."""
    return [sys.executable, "-c", GATED_DEMO, str(store)]
