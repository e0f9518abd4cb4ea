"""``Task(human_input=True)``: after the agent's answer a person gives feedback, the agent revises, until the person
accepts; asked in a terminal (a real pty), or waited for durably and answered later from other processes."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
from pathlib import Path

from crewpoint.providers import provider_for
from crewpoint.tui.diagnostics import ExitCode

CREW = """
import json
import sys
from pathlib import Path

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.events import LLMCallStartedEvent, event_bus
from crewpoint.feedback import FeedbackPending

HERE = Path(__file__).parent
calls = []
event_bus.register(LLMCallStartedEvent, lambda source, event: calls.append(event.task_id))


def make_crew(location=None):
    writer = Agent(role="Writer", goal="write well", llm="offline")
    outline = Task(description="Outline a post about tides", expected_output="an outline", agent=writer, name="outline")
    post = Task(
        description="Write the post", expected_output="a post", agent=writer, name="post", human_input=True
    )
    checkpoint = CheckpointConfig(location=location) if location else None
    return Crew(agents=[writer], tasks=[outline, post], checkpoint=checkpoint)


def report(out):
    data = {"calls": len(calls)}
    if isinstance(out, FeedbackPending):
        data.update(ref=out.ref, request_id=out.request_id, output=out.output, task=out.task)
    else:
        data.update(raw=out.raw)
    print("REPORT " + json.dumps(data), flush=True)
    return 75 if isinstance(out, FeedbackPending) else 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        sys.exit(report(make_crew(sys.argv[2]).kickoff(inputs={})))
    sys.exit(report(make_crew().kickoff(from_checkpoint=sys.argv[2], feedback=sys.argv[3])))
"""


def _script(tmp_path: Path) -> Path:
    path = tmp_path / "review_crew.py"
    path.write_text(CREW)
    return path


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_FEEDBACK"}
    env.update(extra)
    return env


def _report(stdout: str) -> dict[str, object]:
    line = next(line for line in stdout.splitlines() if line.startswith("REPORT "))
    data: dict[str, object] = json.loads(line.removeprefix("REPORT "))
    return data


class Terminal:
    """A process on a real pseudo-terminal: read what it shows, type answers."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        self.process = subprocess.Popen(args, stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
        os.close(slave)
        self.seen = ""

    def read_until(self, text: str, count: int = 1) -> str:
        """Read until ``text`` has been shown ``count`` times (the process's end fails the wait)."""
        while self.seen.count(text) < count:
            ready, _, _ = select.select([self.master], [], [], 60)
            assert ready, f"the terminal never showed {text!r}: {self.seen[-2000:]}"
            try:
                chunk = os.read(self.master, 4096)
            except OSError:  # the process ended and closed the terminal
                chunk = b""
            assert chunk, f"the process ended before showing {text!r}: {self.seen[-2000:]}"
            self.seen += chunk.decode("utf-8", "replace")
        return self.seen

    def type(self, line: str) -> None:
        os.write(self.master, line.encode() + b"\r")

    def finish(self) -> int:
        while True:
            try:
                chunk = os.read(self.master, 4096)
            except OSError:
                break
            if not chunk:
                break
            self.seen += chunk.decode("utf-8", "replace")
        code = self.process.wait(timeout=120)
        os.close(self.master)
        return code


PROMPT = "Your feedback (Enter to accept the output as it is): "


def test_in_a_terminal_the_agent_revises_once_then_the_person_accepts(tmp_path: Path) -> None:
    script = _script(tmp_path)
    terminal = Terminal([sys.executable, str(script), "run", str(tmp_path / "store")], _env())
    shown = terminal.read_until(PROMPT)
    assert "Review the task's answer" in shown and "(post)" in shown
    terminal.type("Make it about the moon")
    terminal.read_until(PROMPT, count=2)
    terminal.type("")
    assert terminal.finish() == 0, terminal.seen
    report = _report(terminal.seen)
    assert report["calls"] == 3  # the outline, the post, one revision
    store = str(tmp_path / "store")
    latest = provider_for(store).read(store)
    answered = latest.body["entity"]["human_feedback"]
    assert [a["feedback"] for a in answered] == ["Make it about the moon", ""]
    assert latest.body["entity"]["tasks"][1]["output"]["raw"] == answered[1]["output"] == report["raw"]
    assert answered[0]["output"] != answered[1]["output"]


def test_waiting_feedback_revision_waits_again_then_accept_finishes(tmp_path: Path) -> None:
    script = _script(tmp_path)
    env = _env(CREWPOINT_FEEDBACK="wait")

    def run(*args: str) -> tuple[int, dict[str, object]]:
        done = subprocess.run(
            [sys.executable, str(script), *args], capture_output=True, text=True, env=env, timeout=120
        )
        assert done.returncode in (0, ExitCode.WAITING), done.stderr
        return done.returncode, _report(done.stdout)

    code, first = run("run", str(tmp_path / "store"))
    assert code == ExitCode.WAITING and first["calls"] == 2 and first["task"] == "post"
    code, second = run("answer", str(first["ref"]), "Shorter, and mention the moon")
    assert code == ExitCode.WAITING  # revised, and waits for the person again
    assert second["calls"] == 1  # the revision only: neither the outline nor the first answer ran again
    assert second["request_id"] != first["request_id"] and second["output"] != first["output"]
    code, third = run("answer", str(second["ref"]), "")
    assert code == 0 and third["calls"] == 0
    assert third["raw"] == second["output"]  # the accepted revision is the task's output
    store = str(tmp_path / "store")
    statuses = sorted(r.status for r in provider_for(store).read_runs(store))
    assert statuses == ["answered", "answered", "finished"]
