"""A review flow that waits for a person, run in its own process, and the CLI that answers it: shared by the
tests of answering from the command line and of two answers racing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from support.cli import checkpoint, cli
from support.waiting import wait_for

REVIEW = textwrap.dedent(
    """
    import sys
    from pathlib import Path

    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.feedback import FeedbackPending, human_feedback
    from crewpoint.flow import Flow, listen, start

    HERE = Path(__file__).parent


    def note(word):
        with open(HERE / "ran.txt", "a") as f:
            f.write(word + "\\n")


    class Review(Flow):
        @start()
        @human_feedback(message="Publish the [draft]?", emit=["approved", "rejected"], default_outcome="approved")
        def draft(self):
            note("draft")
            return "Draft [bold]text[/bold] of the post"

        @listen("approved")
        def publish(self, result):
            note("published")
            return "published"

        @listen("rejected")
        def redo(self, result):
            note("redone")
            return "redone"


    WHERE = sys.argv[1] if len(sys.argv) > 1 else "store"
    flow = Review(checkpoint=CheckpointConfig(location=WHERE if "://" in WHERE else str(HERE / WHERE)))

    if __name__ == "__main__":
        result = flow.kickoff()
        sys.exit(75 if isinstance(result, FeedbackPending) else 0)
    """
)

DEADLINED = REVIEW.replace('default_outcome="approved")', 'default_outcome="approved", timeout=0.001)')
"""The review flow with a deadline that has passed by the time anyone answers: its default outcome goes on."""

STOP_AT_WRITE = textwrap.dedent(
    """
    # Test-only: the command line, as `crewpoint` runs it, with the stores' writes held once an answer is claimed,
    # so the test can kill the process while its first new checkpoint is on its way (nothing here ships).
    import os
    import sys
    import threading
    from pathlib import Path

    from crewpoint.providers.json_provider import JsonProvider
    from crewpoint.providers.sqlite_provider import SqliteProvider

    claimed = []


    def hold(cls):
        claim, write = cls.claim, cls.write

        def claiming(self, *args, **kwargs):
            won = claim(self, *args, **kwargs)
            claimed.append(won)
            return won

        def writing(self, *args, **kwargs):
            if claimed:
                Path(os.environ["STOP_MARK"]).write_text(str(os.getpid()))
                threading.Event().wait()  # the test kills the process here
            return write(self, *args, **kwargs)

        cls.claim, cls.write = claiming, writing


    hold(JsonProvider)
    hold(SqliteProvider)

    from crewpoint.tui.cli import main

    sys.argv[0] = "crewpoint"
    main()
    """
)


def run(*args: str, cwd: Path, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """``crewpoint checkpoint ARGS`` in ``cwd``, as a user runs it."""
    return checkpoint(*args, cwd=cwd, stdin=stdin)


def ran(project: Path) -> list[str]:
    """The methods of the review flow that ran, in order (each notes itself in ``ran.txt``)."""
    path = project / "ran.txt"
    return path.read_text().split() if path.exists() else []


def listed(project: Path, store: str) -> list[dict[str, Any]]:
    """``list STORE --json`` in ``project``. A test reads the store this way between the commands it runs, so the
    listing runs in the test's process (the same command, without a process start each time)."""
    done = cli("checkpoint", "list", store if "://" in store else str(project / store), "--json")
    assert done.exit_code == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def write_review(project: Path, source: str = REVIEW) -> None:
    """The review flow (``source``: :data:`REVIEW` or a variant of it) as ``project/review.py``."""
    project.mkdir(exist_ok=True)
    (project / "review.py").write_text(source)


def run_until_waiting(project: Path, store: str) -> None:
    """One run of ``project``'s review flow, in its own process, until it waits in ``store`` (exit 75)."""
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    waited = subprocess.run(
        [sys.executable, "review.py", store], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert waited.returncode == 75, waited.stderr


def wait_in(project: Path, store: str, source: str = REVIEW) -> dict[str, Any]:
    """The review flow (``source``) written into ``project`` (a new folder) and run in its own process until it
    waits in ``store`` (exit 75); the one row of ``list --json`` that holds its request."""
    project.mkdir()
    write_review(project, source)
    run_until_waiting(project, store)
    rows = [row for row in listed(project, store) if row["request"] is not None]
    assert len(rows) == 1, rows
    return rows[0]


def answer_held_at_write(project: Path, *args: str) -> subprocess.Popen[bytes]:
    """``crewpoint checkpoint ARGS`` (an answer) in ``project``, held once it has claimed the answer, as its first
    new checkpoint is on its way: the test kills it there (SIGKILL) or acts while it holds."""
    (project / "stop_at_write.py").write_text(STOP_AT_WRITE)
    mark = project / "writing.pid"
    child = subprocess.Popen(
        [sys.executable, "stop_at_write.py", "checkpoint", *args],
        cwd=project,
        env={**os.environ, "STOP_MARK": str(mark), "CREWPOINT_FEEDBACK": "wait"},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        wait_for(lambda: mark.exists() or child.poll() is not None, "the answer's first new checkpoint")
        assert mark.exists(), child.communicate()
    except BaseException:
        child.kill()
        child.communicate(timeout=120)
        raise
    return child
