"""An answer killed after its claim leaves no request stuck: the answering process is killed with SIGKILL while
its first new checkpoint is on its way to the store; a second answer is refused in one line naming who answered
and the command that goes on, and a plain resume (the CLI's, or ``kickoff(from_checkpoint=...)``) goes on with
the claimed answer, recorded as given by its who. Real flows, real processes, JSON and SQLite stores."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.cli import CHECKPOINT
from support.review import answer_held_at_write, listed, ran, run
from test_answer_cli import one_line_refusal, paused

from crewpoint.providers import provider_for
from crewpoint.providers.claims import claim_key

RESUME_API = textwrap.dedent(
    """
    import sys
    from review import flow

    print("result:", flow.kickoff(from_checkpoint=sys.argv[1]))
    """
)


def _killed_after_claim(project: Path, store: str, waiting: str) -> None:
    """``crewpoint checkpoint answer`` killed (SIGKILL) once it has claimed the answer, as its first new
    checkpoint is being written."""
    args = ["answer", waiting, "--location", store, "--feedback", "ship it: approved", "--app", "review.py:flow"]
    child = answer_held_at_write(project, *args)
    os.kill(child.pid, signal.SIGKILL)
    child.communicate(timeout=120)
    assert child.returncode == -signal.SIGKILL


@pytest.mark.parametrize(("store", "resume"), [("store", "cli"), ("store.db", "api")])
def test_an_answer_killed_after_its_claim_goes_on_with_a_plain_resume(tmp_path: Path, store: str, resume: str) -> None:
    project, row = paused(tmp_path, store)
    waiting = str(row["id"])
    _killed_after_claim(project, store, waiting)

    assert ran(project) == ["draft"]  # killed before anything ran on
    location = str(project / store)
    claim = provider_for(location).read_claim(location, claim_key(row["request"]["request_id"], waiting))
    assert claim is not None and claim["outcome"] == "approved" and "@" in claim["who"]
    assert not any(r["trigger"] == "human_feedback_received" for r in listed(project, store))

    again = run("answer", waiting, "--location", store, "--outcome", "rejected", "--app", "review.py:flow", cwd=project)
    said = f"already answered by {claim['who']} at "
    one_line_refusal(again, said, ": approved; `crewpoint checkpoint resume ", "` goes on with that answer")
    command = re.search(r"`(crewpoint checkpoint resume [^`]+)`", again.stderr)
    assert command is not None
    assert command.group(1) == f"crewpoint checkpoint resume --location {shlex.quote(store)} {waiting[:12]}"
    assert ran(project) == ["draft"]

    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    if resume == "cli":  # the command the refusal names, with the program as the answer had it
        words = [*shlex.split(command.group(1))[2:], "--app", "review.py:flow"]
        done = subprocess.run([*CHECKPOINT, *words], cwd=project, env=env, capture_output=True, text=True, timeout=120)
    else:
        (project / "resume_api.py").write_text(RESUME_API)
        ref = f"{project / store}#{waiting}" if store.endswith(".db") else str(_file_of(project / store, waiting))
        done = subprocess.run(
            [sys.executable, "resume_api.py", ref], cwd=project, env=env, capture_output=True, text=True, timeout=120
        )
        assert "result: published" in done.stdout, done.stderr
    assert done.returncode == 0, done.stderr
    assert ran(project) == ["draft", "published"]  # the claimed answer's route; the reviewed method ran once

    rows = listed(project, store)
    assert "waiting" not in {r["status"] for r in rows}
    assert all(r["request"] is None for r in rows)
    received = [r for r in rows if r["trigger"] == "human_feedback_received"]
    assert len(received) == 1
    body = provider_for(location).read(location, received[0]["id"]).body
    (given,) = body["entity"]["human_feedback"]
    who = claim["who"]
    assert (given["outcome"], given["feedback"], given["answered_by"]) == ("approved", "ship it: approved", who)


def _file_of(store: Path, checkpoint_id: str) -> Path:
    (found,) = [path for path in store.rglob("*.json") if checkpoint_id in path.name]
    return found


def _crew(location: str | None = None) -> Any:
    from crewpoint import Agent, CheckpointConfig, Crew, Task

    writer = Agent(role="Writer", goal="write well", llm="offline")
    outline = Task(description="Outline a post about tides", expected_output="an outline", agent=writer, name="outline")
    post = Task(description="Write the post", expected_output="a post", agent=writer, name="post", human_input=True)
    checkpoint = CheckpointConfig(location=location) if location else None
    return Crew(agents=[writer], tasks=[outline, post], checkpoint=checkpoint)


class _Died(BaseException):
    """The answering process ends here (as a kill would), after its claim."""


def test_a_crew_task_review_whose_answer_died_after_its_claim_goes_on_with_a_plain_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint.crew import Crew
    from crewpoint.feedback import FeedbackPending, answer

    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    store = str(tmp_path / "store.db")
    pending = _crew(store).kickoff(inputs={})
    assert isinstance(pending, FeedbackPending) and pending.task == "post"

    def die(self: Any) -> Any:
        raise _Died

    with monkeypatch.context() as patched:
        patched.setattr(Crew, "resume", die)
        with pytest.raises(_Died):
            answer(pending.ref, feedback=None, outcome=None, who="carol@host3", app=_crew())
    assert provider_for(store).read_claim(store, claim_key(pending.request_id, pending.checkpoint_id)) is not None

    done = _crew().kickoff(from_checkpoint=pending.ref)  # no feedback given: the claimed answer (accept) goes on
    assert not isinstance(done, FeedbackPending)
    assert done.raw == pending.output  # accepted as it was, not revised
    newest = provider_for(store).list(store)[0]
    given = provider_for(store).read(store, newest.id).body["entity"]["human_feedback"]
    assert [(g["task"], g["who"], g["feedback"]) for g in given] == [("post", "carol@host3", "")]
