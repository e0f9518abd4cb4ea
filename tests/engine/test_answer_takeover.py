"""An answer whose process died (SIGKILL) after its claim, before its first new checkpoint, is taken over by one
plain resume: two ``resume`` processes started together on that checkpoint, exactly one goes on with the answer,
the other is refused in one line naming the process that goes on, and the answered route runs once."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.cli import CHECKPOINT
from support.review import listed, ran, wait_in
from test_feedback_crash import _killed_after_claim

APP = ["--app", "review.py:flow"]


@pytest.mark.parametrize("store", ["store", "store.db"])
def test_two_resumes_of_an_answer_whose_process_died_one_goes_on_the_other_is_refused(
    tmp_path: Path, store: str
) -> None:
    project = tmp_path / "project"
    waiting = wait_in(project, store)["id"]
    _killed_after_claim(project, store, waiting)
    assert ran(project) == ["draft"]
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    resumes = [
        subprocess.Popen(
            [*CHECKPOINT, "resume", waiting, "--location", store, *APP],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    done = [(p.pid, *p.communicate(timeout=120), p.returncode) for p in resumes]
    codes = sorted(code for *_, code in done)
    assert codes == [0, 2], done
    (winner,) = [pid for pid, _, _, code in done if code == 0]
    (refused,) = [err for _, _, err, code in done if code == 2]
    (line,) = [line for line in refused.splitlines() if line.startswith("crewpoint: ")]  # one line says it
    if "already answered" in line:  # found the answer taken over as it started
        assert "answered by" in line and "approved" in line, refused
        assert f"pid {winner} " in line or "the run went on: latest" in line, refused  # names the one going on
    else:  # found the winner's run already going, before it started
        assert f"is live (pid {winner} " in line, refused
    assert "goes on with that answer" not in refused and "failed" not in refused  # nothing that runs it again
    assert ran(project) == ["draft", "published"]  # the answered route ran once

    after = subprocess.run(
        [*CHECKPOINT, "resume", waiting, "--location", store, *APP],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
    )
    assert after.returncode == 2 and f"the run went on: latest {listed(project, store)[0]['id'][:12]}" in after.stderr
    assert ran(project) == ["draft", "published"]
