"""A flow that waits for a person: ``@human_feedback`` asks in a terminal or waits durably, and is answered later,
from another process, through the API; the outcome routes the flow; one answer wins."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.waiting import wait_for

from crewpoint import CheckpointConfig
from crewpoint.feedback import FeedbackPending, answer, collapse
from crewpoint.flow import Flow, HumanFeedbackResult, human_feedback, listen, start
from crewpoint.llm import BaseLLM
from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointError
from crewpoint.tui.diagnostics import ExitCode

FLOW = """
import sys
from pathlib import Path

from crewpoint import CheckpointConfig
from crewpoint.feedback import FeedbackPending
from crewpoint.flow import Flow, human_feedback, listen, start
from crewpoint.tui.diagnostics import ExitCode

HERE = Path(__file__).parent


class Review(Flow):
    @start()
    @human_feedback(message="Approve the draft?", emit=["approved", "rejected"], default_outcome="rejected")
    def draft(self):
        with open(HERE / "ran.txt", "a") as f:
            f.write("draft\\n")
        return "Draft [b]not markup[/b]"

    @listen("approved")
    def publish(self, result):
        (HERE / "route.txt").write_text(f"approved|{result.output}|{result.feedback}|{result.answered_by}")
        return "published"

    @listen("rejected")
    def discard(self, result):
        (HERE / "route.txt").write_text(f"rejected|{result.output}|{result.feedback}|{result.answered_by}")
        return "discarded"


if __name__ == "__main__":
    out = Review(checkpoint=CheckpointConfig(location=sys.argv[1])).kickoff()
    if isinstance(out, FeedbackPending):
        (HERE / "pending.json").write_text(
            __import__("json").dumps({"ref": out.ref, "command": out.command, "request_id": out.request_id})
        )
        print(out)
        if len(sys.argv) > 2:  # stay, waiting, until killed
            sys.stdin.read()
        sys.exit(ExitCode.WAITING)
    print("result:", out)
"""

ANSWER = """
import sys
sys.path.insert(0, sys.argv[1])
from review_flow import Review
out = Review().kickoff(from_checkpoint=sys.argv[2], feedback=sys.argv[3])
print("result:", out)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_FEEDBACK"}
    env.update(extra)
    return env


def _pause(tmp_path: Path, store: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    (tmp_path / "review_flow.py").write_text(FLOW)
    run = subprocess.run(
        [sys.executable, str(tmp_path / "review_flow.py"), store],
        capture_output=True,
        text=True,
        env=_env(CREWPOINT_FEEDBACK="wait"),
        timeout=120,
    )
    return run, json.loads((tmp_path / "pending.json").read_text())


def _answer(tmp_path: Path, ref: str, feedback: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "answer.py").write_text(ANSWER)
    return subprocess.run(
        [sys.executable, str(tmp_path / "answer.py"), str(tmp_path), ref, feedback],
        capture_output=True,
        text=True,
        env=_env(CREWPOINT_FEEDBACK="wait"),
        timeout=120,
    )


def _statuses(store: str) -> list[str]:
    return sorted(run.status for run in provider_for(store).read_runs(store))


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_flow_waits_in_one_process_and_is_answered_from_another(tmp_path: Path, kind: str) -> None:
    store = str(tmp_path / ("store" if kind == "json" else "store.db"))
    run, pending = _pause(tmp_path, store)
    assert run.returncode == ExitCode.WAITING == 75, run.stderr
    record = provider_for(pending["ref"]).read(pending["ref"])
    # the store, and the program that ran, as typed in the folder it ran in
    expected = f"crewpoint checkpoint answer --location {shlex.quote(store)} {record.meta.id[:12]}"
    assert pending["command"] == f"{expected} --app review_flow.py:Review"
    assert pending["command"] in run.stdout
    assert _statuses(store) == ["waiting"]
    assert record.meta.trigger == "human_feedback_requested"
    request = record.body["entity"]["pending_feedback"]
    assert (request["method"], request["outcomes"], request["output"]) == (
        "draft",
        ["approved", "rejected"],
        "Draft [b]not markup[/b]",
    )

    done = _answer(tmp_path, pending["ref"], "Looks fine: approved")
    assert done.returncode == 0, done.stderr
    assert "result: published" in done.stdout
    route, output, feedback, who = (tmp_path / "route.txt").read_text().split("|")
    assert (route, output, feedback) == ("approved", "Draft [b]not markup[/b]", "Looks fine: approved")
    assert "@" in who
    assert (tmp_path / "ran.txt").read_text() == "draft\n"  # the reviewed method ran exactly once
    assert _statuses(store) == ["answered", "finished"]
    triggers = [m.trigger for m in provider_for(store).list(store)]
    assert "human_feedback_received" in triggers


def test_kill_9_while_waiting_loses_nothing(tmp_path: Path) -> None:
    store = str(tmp_path / "store.db")
    (tmp_path / "review_flow.py").write_text(FLOW)
    with open(tmp_path / "stderr.txt", "w") as stderr:
        waiting = subprocess.Popen(
            [sys.executable, str(tmp_path / "review_flow.py"), store, "stay"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=_env(CREWPOINT_FEEDBACK="wait"),
        )
    try:
        wait_for(lambda: (tmp_path / "pending.json").exists() or waiting.poll() is not None, "the waiting checkpoint")
        assert waiting.poll() is None, (tmp_path / "stderr.txt").read_text()
    finally:
        os.kill(waiting.pid, signal.SIGKILL)
        waiting.wait()
    pending = json.loads((tmp_path / "pending.json").read_text())
    done = _answer(tmp_path, pending["ref"], "rejected")
    assert done.returncode == 0, done.stderr
    assert "result: discarded" in done.stdout
    assert (tmp_path / "route.txt").read_text().startswith("rejected|Draft")
    assert (tmp_path / "ran.txt").read_text() == "draft\n"


def test_asked_in_a_terminal_the_output_is_shown_literally(tmp_path: Path) -> None:
    (tmp_path / "review_flow.py").write_text(FLOW.replace('return "Draft', 'return "\\x1b[31m\\u202eDraft'))
    run = subprocess.run(
        [sys.executable, str(tmp_path / "review_flow.py"), str(tmp_path / "store")],
        input="\n",
        capture_output=True,
        text=True,
        env=_env(CREWPOINT_FEEDBACK="ask"),
        timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "Approve the draft?" in run.stdout
    assert "(Enter for the default: rejected)" in run.stdout  # what Enter sends, said as the outcome it is
    assert "\\x1b[31m\\u202eDraft [b]not markup[/b]" in run.stdout  # escaped, never interpreted
    assert "\x1b" not in run.stdout and "\u202e" not in run.stdout
    assert "approved, rejected" in run.stdout
    assert "result: discarded" in run.stdout  # Enter: the default outcome


# -- the outcome ------------------------------------------------------------------------------------------------


class Says(BaseLLM):
    model: str = "says"
    answer: str = ""

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        return self.answer


OUTCOMES = ["approved", "needs_revision", "rejected"]


def test_the_outcome_collapse() -> None:
    assert collapse("  APPROVED ", OUTCOMES) == "approved"  # the word itself
    assert collapse("fine by me, approved.", OUTCOMES, llm=Says(answer="rejected")) == "approved"  # named alone
    # two outcomes named: the model picks; the offline model by the words it shares, ties by order
    assert collapse("approved? no: rejected", OUTCOMES, llm="offline") in ("approved", "rejected")
    assert collapse("it needs another revision", OUTCOMES, llm="offline") == "needs_revision"
    assert collapse("please do a revision", OUTCOMES, llm=Says(answer="Rejected.")) == "rejected"
    assert collapse("", OUTCOMES, "rejected") == "rejected"  # Enter: the default
    assert collapse("", OUTCOMES) == "approved"  # no default: the first
    assert collapse("hmm", OUTCOMES, "rejected", llm=Says(answer="banana")) == "rejected"  # not an outcome
    assert collapse("hmm", OUTCOMES, "rejected", llm="offline") == "rejected"
    assert collapse("anything", []) is None


class Gate(Flow):
    @start()
    @human_feedback(message="Ship it?", emit=["ship", "hold"], default_outcome="hold", timeout=1e-9)
    def build(self) -> str:
        return "build 7"

    @listen("ship")
    def do_ship(self, result: HumanFeedbackResult) -> str:
        return f"shipped {result.output}"

    @listen("hold")
    def do_hold(self, result: HumanFeedbackResult) -> str:
        return f"held {result.output} ({result.feedback!r})"


def _waiting_gate(store: Path) -> FeedbackPending:
    pending = Gate(checkpoint=CheckpointConfig(location=str(store))).kickoff()
    assert isinstance(pending, FeedbackPending)
    return pending


def test_a_request_past_its_deadline_takes_the_default_outcome(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    pending = _waiting_gate(tmp_path / "store")
    assert Gate().kickoff(from_checkpoint=pending.ref) == "held build 7 ('')"


@pytest.mark.parametrize("name", ["store", "store.db"])
def test_the_second_answer_is_refused_naming_the_first(tmp_path: Path, monkeypatch: Any, name: str) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    pending = _waiting_gate(tmp_path / name)
    first = answer(pending.ref, feedback="looks great: ship", outcome=None, who="alice@host1", app=Gate())
    assert first == "shipped build 7"
    latest = provider_for(str(tmp_path / name)).latest(str(tmp_path / name))
    assert latest is not None
    refused = r"^already answered by alice@host1 at \d\d:\d\d: ship; "
    refused += f"the run went on: latest {latest.id[:12]}$"  # nothing the refusal says does the work again
    with pytest.raises(CheckpointError, match=refused):
        answer(pending.ref, feedback=None, outcome="hold", who="bob@host2", app=Gate())


def test_an_answer_to_a_request_no_longer_pending_is_refused(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    store = tmp_path / "store"
    pending = _waiting_gate(store)
    answer(pending.ref, feedback=None, outcome="ship", app=Gate())
    received = next(m for m in provider_for(str(store)).list(str(store)) if m.trigger == "human_feedback_received")
    with pytest.raises(CheckpointError, match=f"^checkpoint {received.id} is not waiting for feedback$"):
        answer(received.location, feedback="ship", outcome=None, app=Gate())
    with pytest.raises(CheckpointError, match="outcome 'later' is not offered: the outcomes are ship, hold"):
        answer(pending.ref, feedback=None, outcome="later", app=Gate())


class Slow(Flow):
    @start()
    @human_feedback(message="Ship it?", emit=["ship", "hold"])
    def build(self) -> str:
        return "build 8"

    @listen("ship")
    def do_ship(self) -> str:
        return "shipped"


def test_a_plain_resume_of_a_waiting_checkpoint_waits_again(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    first = Slow(checkpoint=CheckpointConfig(location=str(tmp_path / "store"))).kickoff()
    assert isinstance(first, FeedbackPending)
    again = Slow().kickoff(from_checkpoint=first.ref)
    assert isinstance(again, FeedbackPending)
    assert again.request_id == first.request_id and again.checkpoint_id != first.checkpoint_id
    assert Slow().kickoff(from_checkpoint=again.ref, outcome="ship") == "shipped"


def test_info_shows_the_pending_request_then_the_answer(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    store = tmp_path / "store"
    pending = _waiting_gate(store)
    info = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "info"]
    shown = subprocess.run([*info, pending.ref], capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert "waiting for feedback on method build: Ship it?" in shown.stdout
    assert "outcomes: ship, hold (default: hold)" in shown.stdout and "build 7" in shown.stdout
    assert pending.command == f"crewpoint checkpoint answer --location {store} {pending.checkpoint_id[:12]}"
    assert f"answer with: {pending.command}" in shown.stdout  # the same text as the run said
    answer(pending.ref, feedback="ship it now", outcome=None, who="alice@host1", app=Gate())
    after = subprocess.run([*info, str(store)], capture_output=True, text=True, timeout=120)
    assert "waiting for feedback" not in after.stdout
    assert "1. build -> ship: ship it now (by alice@host1 at " in after.stdout


class Notes(Flow):
    @start()
    @human_feedback(message="Any notes?")
    async def draft(self) -> str:
        return "notes draft"

    @listen(draft)
    def apply(self, result: HumanFeedbackResult) -> str:
        assert self.human_feedback is result and self.human_feedback_history == [result]
        return f"{result.output} + {result.feedback!r} ({result.outcome})"


def test_an_async_method_without_outcomes_passes_the_result_to_its_listener(tmp_path: Path, monkeypatch: Any) -> None:
    import asyncio

    import crewpoint

    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    pending = asyncio.run(Notes(checkpoint=CheckpointConfig(location=str(tmp_path / "s.db"))).akickoff())
    assert isinstance(pending, crewpoint.FeedbackPending) and pending.outcomes == ()
    assert "answer with: crewpoint checkpoint answer" in str(pending) and pending.method == "draft"
    done = asyncio.run(Notes().akickoff(from_checkpoint=pending.ref, feedback="tighten it"))
    assert done == "notes draft + 'tighten it' (None)"


def test_a_run_with_no_store_refuses_to_wait_in_one_line(monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    with pytest.raises(CheckpointError, match="no checkpoint store to wait in: pass checkpoint=True") as caught:
        Notes(checkpoint=False).kickoff()
    assert "\n" not in str(caught.value)


def test_accept_mode_takes_the_default_at_once(monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "accept")
    assert Gate(checkpoint=False).kickoff() == "held build 7 ('')"


def test_the_request_is_written_once_whatever_on_events_says(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    store = str(tmp_path / "store")
    for events in (["*"], ["task_completed"]):
        flow = Slow(checkpoint=CheckpointConfig(location=store, on_events=events))
        pending = flow.kickoff()
        assert isinstance(pending, FeedbackPending)
    requests = [m for m in provider_for(store).list(store) if m.trigger == "human_feedback_requested"]
    assert len(requests) == 2
    everything = {m.trigger for m in provider_for(store).list(store)}
    assert {"flow_paused", "method_execution_paused"} <= everything  # "*" checkpoints at the pause's events too


class Profile(Flow):
    @start()
    def collect(self) -> str:
        name = self.ask("Your name?")
        color = self.ask("Your favourite colour?")
        return f"{name} likes {color}"

    @listen(collect)
    def greet(self, text: str) -> str:
        return f"hello: {text}"


def test_flow_ask_waits_for_each_value_and_the_method_goes_on_with_them(tmp_path: Path, monkeypatch: Any) -> None:
    from crewpoint.events import FlowInputReceivedEvent, FlowInputRequestedEvent, event_bus

    seen: list[str] = []
    event_bus.register(FlowInputRequestedEvent, lambda source, event: seen.append(f"asked {event.prompt}"))
    event_bus.register(FlowInputReceivedEvent, lambda source, event: seen.append(f"got {event.value}"))
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    first = Profile(checkpoint=CheckpointConfig(location=str(tmp_path / "s.db"))).kickoff()
    assert isinstance(first, FeedbackPending) and (first.kind, first.method, first.message) == (
        "input",
        "collect",
        "Your name?",
    )
    assert str(first).startswith("waiting for input to method collect (Your name?)")
    second = Profile().kickoff(from_checkpoint=first.ref, feedback="Ada")
    assert isinstance(second, FeedbackPending) and second.message == "Your favourite colour?"
    with pytest.raises(CheckpointError, match="already answered by"):
        answer(first.ref, feedback="Bob", outcome=None, app=Profile())
    assert Profile().kickoff(from_checkpoint=second.ref, feedback="blue") == "hello: Ada likes blue"
    assert seen == ["asked Your name?", "got Ada", "asked Your favourite colour?", "got blue"]  # each asked once
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "accept")
    assert Profile(checkpoint=False).kickoff() == "hello:  likes "
    with pytest.raises(RuntimeError, match="for a flow method while the flow runs"):
        Profile(checkpoint=False).ask("now?")


def test_a_flow_waiting_in_a_postgresql_store_takes_one_answer(pg_location: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    pending = Gate(checkpoint=CheckpointConfig(location=pg_location)).kickoff()
    assert isinstance(pending, FeedbackPending)
    assert sorted(r.status for r in provider_for(pg_location).read_runs(pg_location)) == ["waiting"]
    assert answer(pending.ref, feedback=None, outcome="ship", who="alice@host1", app=Gate()) == "shipped build 7"
    with pytest.raises(CheckpointError, match=r"^already answered by alice@host1 at "):
        answer(pending.ref, feedback="hold it", outcome=None, who="bob@host2", app=Gate())
    assert sorted(r.status for r in provider_for(pg_location).read_runs(pg_location)) == ["answered", "finished"]
