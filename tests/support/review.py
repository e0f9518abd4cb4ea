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

from support.cli import checkpoint

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


def run(*args: str, cwd: Path, stdin: Any = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    """``crewpoint checkpoint ARGS`` in ``cwd``, as a user runs it."""
    return checkpoint(*args, cwd=cwd, stdin=stdin)


def ran(project: Path) -> list[str]:
    """The methods of the review flow that ran, in order (each notes itself in ``ran.txt``)."""
    path = project / "ran.txt"
    return path.read_text().split() if path.exists() else []


def listed(project: Path, store: str) -> list[dict[str, Any]]:
    """``list STORE --json``."""
    done = run("list", store, "--json", cwd=project)
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, Any]] = json.loads(done.stdout)
    return rows


def wait_in(project: Path, store: str) -> dict[str, Any]:
    """The review flow written into ``project`` (a new folder) and run in its own process until it waits in
    ``store`` (exit 75); the one row of ``list --json`` that holds its request."""
    project.mkdir()
    (project / "review.py").write_text(REVIEW)
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    waited = subprocess.run(
        [sys.executable, "review.py", store], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert waited.returncode == 75, waited.stderr
    rows = [row for row in listed(project, store) if row["request"] is not None]
    assert len(rows) == 1, rows
    return rows[0]
