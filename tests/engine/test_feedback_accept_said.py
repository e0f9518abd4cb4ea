"""``CREWPOINT_FEEDBACK=accept`` answers every request at once, and says in one stderr line what it sent: the
default outcome by name (which may be a rejection), or a task's output accepted as it is. Each program runs in its
own process, as a user's would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from support.processes import user_env

FLOW = """
from pathlib import Path

from crewpoint import CheckpointConfig
from crewpoint.flow import Flow, human_feedback, listen, start


class Review(Flow):
    @start()
    @human_feedback(message="Approve the draft?", emit=["approved", "rejected"], default_outcome="rejected")
    def draft(self):
        return "the draft"

    @listen("approved")
    def publish(self, result):
        Path("route.txt").write_text("approved")

    @listen("rejected")
    def discard(self, result):
        Path("route.txt").write_text("rejected")


Review(checkpoint=CheckpointConfig(location="store")).kickoff()
"""

CREW = """
from crewpoint import Agent, CheckpointConfig, Crew, Task

writer = Agent(role="Writer", goal="write well", llm="offline")
post = Task(description="Write about tides", expected_output="a post", agent=writer, name="post", human_input=True)
Crew(agents=[writer], tasks=[post], checkpoint=CheckpointConfig(location="store.db")).kickoff(inputs={})
"""


def _run(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "program.py").write_text(source)
    return subprocess.run(
        [sys.executable, "program.py"],
        cwd=tmp_path,
        env=user_env(CREWPOINT_FEEDBACK="accept"),
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_accept_names_the_default_outcome_it_sent_for_a_flow_method(tmp_path: Path) -> None:
    run = _run(tmp_path, FLOW)
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "route.txt").read_text() == "rejected"  # the default outcome routed the flow
    said = [line for line in run.stderr.splitlines() if line.startswith("feedback:")]
    assert said == ['feedback: CREWPOINT_FEEDBACK=accept accepted the default outcome "rejected" for draft']


def test_accept_says_a_task_review_accepted_its_output_as_it_is(tmp_path: Path) -> None:
    run = _run(tmp_path, CREW)
    assert run.returncode == 0, run.stderr
    said = [line for line in run.stderr.splitlines() if line.startswith("feedback:")]
    assert said == ["feedback: CREWPOINT_FEEDBACK=accept accepted the output as it is for post"]


ASK = """
from crewpoint.flow import Flow, start


class Profile(Flow):
    @start()
    def collect(self):
        return f"name={self.ask('Your name?')!r}"


print(Profile(checkpoint=False).kickoff())
"""


def test_accept_says_a_question_got_an_empty_answer(tmp_path: Path) -> None:
    run = _run(tmp_path, ASK)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "name=''"
    said = [line for line in run.stderr.splitlines() if line.startswith("feedback:")]
    assert said == ["feedback: CREWPOINT_FEEDBACK=accept gave an empty answer to collect"]
