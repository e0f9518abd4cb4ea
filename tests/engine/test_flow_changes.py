"""A flow resumed after its program changed runs again what changed and what listens to it, and keeps the rest.

A user's flow (``begin`` → ``research`` → ``write``, and a variant whose ``route`` router picks ``deep`` or ``short``)
calls a real model server on 127.0.0.1 (``tests/llm_server.py``) from each method. Its first run is killed with
SIGKILL once the second method's checkpoint is on disk (the third method waits forever before its model call). The
program is then edited (a method's body, a router's route, a method added, one removed) and resumed with
``crewpoint checkpoint resume --app``: the plan says each method's verdict on stderr, only the changed methods and
their listeners call the model server, and the methods kept hand on their saved outputs.
"""

from __future__ import annotations

import copy
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer
from support.cli import crewpoint
from support.processes import done_counts, kill_when, user_env

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.flow_changes import BEFORE_FINGERPRINTS, flow_change_plan
from crewpoint.checkpoint.program import load_app
from crewpoint.feedback import FeedbackPending
from crewpoint.flow import Flow
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord

HEAD = '''
import os
import threading

from crewpoint import CheckpointConfig
from crewpoint.flow import Flow, listen, router, start
from crewpoint.llm import LLM

HERE = os.path.dirname(os.path.abspath(__file__))
llm = LLM(model="gpt-4o-mini", base_url=os.environ["FLOW_TEST_LLM"])


def ask(prompt):
    return llm.call([{"role": "user", "content": prompt}])


def hold():
    """The first run stops here, for good: the test kills it."""
    if os.environ.get("FLOW_TEST_HOLD"):
        threading.Event().wait()
'''

TAIL = """
store = CheckpointConfig(location=os.path.join(HERE, "store"), on_events=["method_execution_finished"])
flow = Report(checkpoint=store)

if __name__ == "__main__":
    import sys

    print("RESULT", flow.kickoff(from_checkpoint=sys.argv[1]) if len(sys.argv) > 1 else flow.kickoff())
"""

BEGIN = """
class Report(Flow):
    @start()
    def begin(self):
        self.state["topic"] = ask("topic please")
        return self.state["topic"]
"""
RESEARCH = """
    @listen(begin)
    def research(self, topic):
        self.state["notes"] = ask("research " + topic)
        return self.state["notes"]
"""
WRITE = """
    @listen(research)
    def write(self, notes):
        hold()
        return ask("write from " + notes)
"""
ROUTE = """
    @router(begin)
    def route(self, topic):
        return "deep"

    @listen("deep")
    def deep_dive(self, label):
        hold()
        return ask("dig into " + self.state["topic"])

    @listen("short")
    def summary(self, label):
        hold()
        return ask("sum up " + self.state["topic"])
"""


def program(*parts: str) -> str:
    return HEAD + "".join(parts) + TAIL


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def killed(tmp_path: Path, server: LLMServer, source: str) -> Path:
    """A project whose flow was killed with SIGKILL once its first two methods' checkpoints were written."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "report.py").write_text(source, encoding="utf-8")
    env = user_env(FLOW_TEST_LLM=server.base_url, FLOW_TEST_HOLD="1")
    ready = lambda: any(done >= 2 for done in done_counts(project / "store"))  # noqa: E731
    kill_when([sys.executable, "report.py"], project, ready, "the second method's checkpoint", env)
    return project


def saved(project: Path) -> dict[str, object]:
    """The flow in the newest checkpoint."""
    newest = ops.list_checkpoints(str(project / "store"))[0]
    entity: dict[str, object] = ops.load(newest.id, str(project / "store")).body["entity"]
    return entity


def resume(project: Path, server: LLMServer, source: str, ref: str | None = None) -> subprocess.CompletedProcess[str]:
    """The edited program written, then the killed run (its newest checkpoint, or ``ref``) resumed with it
    (``--app``) from the folder it is in."""
    (project / "report.py").write_text(source, encoding="utf-8")
    newest = ops.list_checkpoints(str(project / "store"))[0]
    server.requests.clear()
    proc = crewpoint(
        "checkpoint",
        "resume",
        ref or newest.id,
        "--location",
        "store",
        "--app",
        "report.py:flow",
        cwd=project,
        env=user_env(FLOW_TEST_LLM=server.base_url),
    )
    assert proc.returncode == 0, proc.stderr
    return proc


def prompts(server: LLMServer) -> list[str]:
    return [str(r.body["messages"][-1]["content"]) for r in server.requests]


def outputs(entity: dict[str, object]) -> dict[str, object]:
    return {str(name): out for name, out in entity["method_outputs"]}  # type: ignore[attr-defined]


def test_a_changed_method_runs_again_with_its_listeners_and_the_rest_is_kept(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    before = outputs(saved(project))
    assert list(before) == ["begin", "research"] and prompts(server) == ["topic please", "research echo: topic please"]
    plan = flow_change_plan(
        saved(project), _flow_class(project, program(BEGIN, RESEARCH.replace("research ", "study "), WRITE))
    )
    assert [(v.name, v.verdict, v.runs) for v in plan.verdicts] == [
        ("begin", "kept", False),
        ("research", "changed", True),
        ("write", "kept", True),
    ]
    assert plan.verdicts[1].reasons == ("source changed",)

    proc = resume(project, server, program(BEGIN, RESEARCH.replace("research ", "study "), WRITE))
    assert "flow Report: method 'research' changed (source changed): it runs again" in proc.stderr
    assert proc.stderr.count("flow Report:") == 1
    assert prompts(server) == ["study echo: topic please", "write from echo: study echo: topic please"]
    after = saved(project)
    assert outputs(after)["begin"] == before["begin"]  # the unchanged method's saved output is what goes on
    assert outputs(after)["research"] == "echo: study echo: topic please"
    assert after["state"] == {"topic": "echo: topic please", "notes": "echo: study echo: topic please"}


def test_a_changed_start_runs_everything_that_listens_to_it_again(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    proc = resume(project, server, program(BEGIN.replace("topic please", "subject please"), RESEARCH, WRITE))
    assert "method 'begin' changed (source changed): it runs again, and so does 'research'" in proc.stderr
    assert prompts(server) == [
        "subject please",
        "research echo: subject please",
        "write from echo: research echo: subject please",
    ]


def test_an_added_method_runs_and_the_completed_ones_are_kept(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    before = outputs(saved(project))
    scope = """
    @listen(begin)
    def scope(self, topic):
        return ask("scope " + topic)
"""
    proc = resume(project, server, program(BEGIN, scope, RESEARCH, WRITE))
    assert "flow Report: method 'scope' is new: it runs" in proc.stderr
    assert sorted(prompts(server)) == ["scope echo: topic please", "write from echo: research echo: topic please"]
    after = outputs(saved(project))
    assert after["begin"] == before["begin"] and after["research"] == before["research"]
    assert after["scope"] == "echo: scope echo: topic please"


def test_a_removed_method_is_said_with_the_state_it_wrote(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    write = WRITE.replace("@listen(research)", "@listen(begin)")
    plan = flow_change_plan(saved(project), _flow_class(project, program(BEGIN, write)))
    assert [(v.name, v.verdict, v.reasons) for v in plan.verdicts] == [
        ("begin", "kept", ()),
        ("write", "changed", ("listens to begin now",)),
        ("research", "dropped", ("the state keys it wrote keep their saved values: notes",)),
    ]
    proc = resume(project, server, program(BEGIN, write))
    assert "method 'write' changed (listens to begin now): it runs again" in proc.stderr
    assert (
        "flow Report: method 'research' was dropped, its saved output is not used: "
        "the state keys it wrote keep their saved values: notes"
    ) in proc.stderr
    assert prompts(server) == ["write from echo: topic please"]  # begin's saved output, not research's
    after = saved(project)
    assert [name for name, _ in after["method_outputs"]] == ["begin", "write"]  # type: ignore[attr-defined]


def test_a_router_whose_route_changed_runs_again_and_its_new_route_follows(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, ROUTE))
    assert list(outputs(saved(project))) == ["begin", "route"]
    assert prompts(server) == ["topic please"]
    edited = program(BEGIN, ROUTE.replace('return "deep"', 'return "short"'))
    plan = flow_change_plan(saved(project), _flow_class(project, edited))
    verdicts = {v.name: (v.verdict, v.runs, v.reasons) for v in plan.verdicts}
    assert verdicts["begin"] == ("kept", False, ())
    assert verdicts["route"] == ("changed", True, ("routes to short now", "source changed"))
    proc = resume(project, server, edited)
    assert "method 'route' changed (routes to short now; source changed): it runs again" in proc.stderr
    assert prompts(server) == ["sum up echo: topic please"]  # begin is kept; only the new route's listener calls
    assert [name for name, _ in saved(project)["method_outputs"]] == ["begin", "route", "summary"]  # type: ignore[attr-defined]


def test_the_script_resuming_its_own_edited_flow_gets_the_same_plan(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    (project / "report.py").write_text(program(BEGIN, RESEARCH.replace("research ", "study "), WRITE), encoding="utf-8")
    newest = ops.list_checkpoints(str(project / "store"))[0]
    server.requests.clear()
    proc = subprocess.run(
        [sys.executable, "report.py", newest.location],
        cwd=project,
        env=user_env(FLOW_TEST_LLM=server.base_url),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines() == ["flow Report: method 'research' changed (source changed): it runs again"]
    assert prompts(server) == ["study echo: topic please", "write from echo: study echo: topic please"]


def test_a_completed_flow_whose_last_method_changed_runs_that_method_alone(tmp_path: Path, server: LLMServer) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "report.py").write_text(program(BEGIN, RESEARCH, WRITE), encoding="utf-8")
    env = user_env(FLOW_TEST_LLM=server.base_url)
    first = subprocess.run(
        [sys.executable, "report.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert first.returncode == 0, first.stderr
    before = outputs(saved(project))
    assert list(before) == ["begin", "research", "write"] and len(server.requests) == 3
    proc = resume(project, server, program(BEGIN, RESEARCH, WRITE.replace("write from ", "write up ")))
    assert "flow Report: method 'write' changed (source changed): it runs again" in proc.stderr
    assert prompts(server) == ["write up echo: research echo: topic please"]
    assert outputs(saved(project)) == {**before, "write": "echo: write up echo: research echo: topic please"}


def test_an_unchanged_program_resumes_as_before_and_says_nothing(tmp_path: Path, server: LLMServer) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    proc = resume(project, server, program(BEGIN, RESEARCH, WRITE))
    assert "flow Report:" not in proc.stderr
    assert prompts(server) == ["write from echo: research echo: topic please"]


def test_a_checkpoint_written_before_fingerprints_keeps_its_methods_and_says_so(
    tmp_path: Path, server: LLMServer
) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    entity = {k: v for k, v in saved(project).items() if k not in {"method_fingerprints", "state_writers"}}
    plan = flow_change_plan(
        entity, _flow_class(project, program(BEGIN, RESEARCH.replace("research ", "study "), WRITE))
    )
    assert plan.notes == (BEFORE_FINGERPRINTS,)
    assert [(v.name, v.verdict, v.runs) for v in plan.verdicts] == [
        ("begin", "kept", False),
        ("research", "kept", False),
        ("write", "kept", True),
    ]


def _flow_class(project: Path, source: str) -> type[Flow[Any]]:
    """The flow class of the program ``source``, loaded as ``--app`` loads the user's program."""
    path = project / "edited_report.py"
    path.write_text(source, encoding="utf-8")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("FLOW_TEST_LLM", "http://127.0.0.1:9/v1")  # read when the program is loaded; never called
        return type(load_app(f"{path}:flow", "flow"))


REVIEWED = """
import os

from crewpoint import CheckpointConfig
from crewpoint.flow import Flow, human_feedback, listen, start

HERE = os.path.dirname(os.path.abspath(__file__))


class Review(Flow):
    @start()
    def begin(self):
        return "tides"
SCOPE
    @listen(begin)
    @human_feedback(message="Good notes?")
    def research(self, topic):
        return "notes on " + topic

    @listen(research)
    def write(self, review):
        return "post from " + review.output + ", reviewed: " + str(review.feedback)


store = CheckpointConfig(location=os.path.join(HERE, "store"), on_events=["method_execution_finished"])
flow = Review(checkpoint=store)
"""
SCOPE = """
    @listen(begin)
    def scope(self, topic):
        return "scope of " + topic
"""


def test_a_review_waiting_on_a_kept_method_is_answered_where_that_method_now_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    (tmp_path / "first.py").write_text(REVIEWED.replace("SCOPE\n", ""), encoding="utf-8")
    pending = load_app(f"{tmp_path / 'first.py'}:flow", "flow").kickoff()
    assert isinstance(pending, FeedbackPending)
    (tmp_path / "edited.py").write_text(REVIEWED.replace("SCOPE\n", SCOPE), encoding="utf-8")
    edited = load_app(f"{tmp_path / 'edited.py'}:flow", "flow")
    result = edited.kickoff(from_checkpoint=pending.ref, feedback="solid")
    assert result == "post from notes on tides, reviewed: solid"
    assert [name for name, _ in edited.method_outputs] == ["begin", "scope", "research", "write"]
    assert [(r.method, r.feedback) for r in edited.human_feedback_history] == [("research", "solid")]


def test_a_checkpoint_written_before_fingerprints_resumes_as_before_and_says_so_once(
    tmp_path: Path, server: LLMServer
) -> None:
    project = killed(tmp_path, server, program(BEGIN, RESEARCH, WRITE))
    record = ops.load(ops.list_checkpoints(str(project / "store"))[0].id, str(project / "store"))
    body = copy.deepcopy(record.body)
    del body["entity"]["method_fingerprints"], body["entity"]["state_writers"]
    old_id = uuid.uuid4().hex
    body["lineage"]["id"] = old_id
    meta = CheckpointMeta(**{**record.meta.to_dict(), "id": old_id, "location": "", "size": 0})
    JsonProvider().write(str(project / "store"), CheckpointRecord(meta=meta, body=body))

    proc = resume(project, server, program(BEGIN, RESEARCH.replace("research ", "study "), WRITE), ref=old_id)
    assert proc.stderr.count("flow Report:") == 1
    assert f"flow Report: {BEFORE_FINGERPRINTS}" in proc.stderr
    assert prompts(server) == ["write from echo: research echo: topic please"]  # the saved research goes on
