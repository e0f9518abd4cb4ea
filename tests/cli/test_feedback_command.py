"""The command that answers a waiting run, as the run says it and as ``info`` shows it (one text): the short id when
the store is the one the command line finds by itself, else ``--location STORE ID``; and it runs as written."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

from support.cli import CHECKPOINT
from support.review import REVIEW, ran

WAIT = "import sys; sys.argv[1:] = [sys.argv[1]]; from review import flow; print(flow.kickoff().command)"


def _waiting(project: Path, store: str, **env: str) -> str:
    """Run the review flow into ``store`` until it waits; the command it says answers it."""
    project.mkdir()
    (project / "review.py").write_text(REVIEW)
    done = subprocess.run(
        [sys.executable, "-c", WAIT, store],
        cwd=project,
        env={**os.environ, "CREWPOINT_FEEDBACK": "wait", **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _info(cwd: Path, *args: str, **env: str) -> str:
    done = subprocess.run(
        [*CHECKPOINT, "info", *args], cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (line,) = [line for line in done.stdout.splitlines() if "answer with:" in line]
    return line.split("answer with: ", 1)[1]


def test_in_the_default_store_the_command_names_the_short_id_and_runs_as_written(tmp_path: Path) -> None:
    project = tmp_path / "project"
    command = _waiting(project, ".checkpoints")
    words = shlex.split(command)
    assert words == ["crewpoint", "checkpoint", "answer", words[3], "--app", "review:Review"]  # the program, too
    assert len(words[3]) == 12 and not words[3].strip("0123456789abcdef")
    assert _info(project) == command  # info of the store found here says the same

    done = subprocess.run(
        [*CHECKPOINT, *words[2:], "--outcome", "approved"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert ran(project) == ["draft", "published"]


def test_elsewhere_the_command_names_the_store(tmp_path: Path) -> None:
    project = tmp_path / "project"
    command = _waiting(project, "reviews")
    store = str(project / "reviews")
    checkpoint_id = shlex.split(command)[-3]
    assert command == f"crewpoint checkpoint answer --location {shlex.quote(store)} {checkpoint_id} --app review:Review"
    assert _info(project, "--location", store) == command

    named = _info(project, "--location", store, CREWPOINT_CHECKPOINT_LOCATION=store)
    assert named == f"crewpoint checkpoint answer {checkpoint_id} --app review:Review"  # the store found by itself
