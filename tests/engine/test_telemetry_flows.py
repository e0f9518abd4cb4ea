"""Traces of runs that stop before their end or start from a checkpoint: a flow waiting for a person and answered (a
run of its own, linked to the one that waited), a crew stopped at its budget, a fork on its own branch. Exported over
OTLP/HTTP to the receiver of tests/support/otlp.py, configured by the standard variable this time."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.otlp import OtlpReceiver, Span, assert_golden, tree

from crewpoint import LLM, Agent, Budget, BudgetExceeded, CheckpointConfig, Crew, Task
from crewpoint import telemetry as otel
from crewpoint.feedback import FeedbackPending
from crewpoint.flow import Flow, human_feedback, listen, start
from crewpoint.providers import JsonProvider


@pytest.fixture
def receiver(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[OtlpReceiver]:
    monkeypatch.chdir(tmp_path)
    for name in (*otel.ENDPOINT_ENVS, otel.CAPTURE_ENV, "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    with OtlpReceiver() as running:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", running.endpoint + "/v1/traces")
        yield running
    otel.shutdown()


class Release(Flow):
    @start()
    @human_feedback(message="Ship it?", emit=["ship", "hold"])
    def build(self) -> str:
        return "build 8"

    @listen("ship")
    def do_ship(self) -> str:
        return "shipped"

    @listen("hold")
    def do_hold(self) -> str:
        return "held"


def roots(receiver: OtlpReceiver, count: int) -> list[Span]:
    assert otel.flush()
    return receiver.wait_for(lambda spans: sum(s.name.startswith("invoke_workflow") for s in spans) >= count)


def events_of(span: Span) -> list[str]:
    return [name for name, _ in span.events]


def test_a_wait_for_a_person_pauses_one_trace_and_the_answer_resumes_in_a_linked_one(receiver: OtlpReceiver) -> None:
    pending = Release(checkpoint=CheckpointConfig(location="store")).kickoff()
    assert isinstance(pending, FeedbackPending)
    first = roots(receiver, 1)
    assert tree(first) == ["invoke_workflow Release [INTERNAL]", "  invoke_agent build [INTERNAL]"]
    waited = next(s for s in first if s.name.startswith("invoke_workflow"))
    build = next(s for s in first if s.name == "invoke_agent build")
    assert events_of(waited) == ["paused"] and events_of(build) == []  # the review is asked once the method ended
    assert waited.attributes["crewpoint.waiting"] is True and "error.type" not in waited.attributes
    assert dict(waited.events)["paused"]["crewpoint.request.id"] == pending.request_id

    assert Release().kickoff(from_checkpoint=pending.ref, outcome="ship") == "shipped"
    spans = roots(receiver, 2)
    assert_golden("flow-feedback", spans)
    answered = next(s for s in spans if s.name.startswith("invoke_workflow") and s.trace_id != waited.trace_id)
    assert [link[:2] for link in answered.links] == [(waited.trace_id, waited.span_id)]
    assert [s.name for s in spans if s.parent_id == answered.span_id] == ["invoke_agent do_ship"]
    resumed = dict(answered.events)["resumed"]
    assert resumed["crewpoint.request.id"] == pending.request_id and resumed["crewpoint.wait.seconds"] >= 0
    assert answered.attributes["crewpoint.resumed_from"] == pending.checkpoint_id


def test_a_budget_stop_ends_the_run_span_with_its_error_type(receiver: OtlpReceiver) -> None:
    with LLMServer() as server:
        server.usage = {"prompt_tokens": 100_000, "completion_tokens": 50_000}  # $0.75 a call at gpt-4o's price
        writer = Agent(role="Writer", goal="g", backstory="b", llm=LLM(model="gpt-4o", base_url=server.base_url))
        tasks = [Task(description=f"Part {i}.", expected_output="text", agent=writer) for i in (1, 2)]
        crew = Crew(agents=[writer], tasks=tasks, budget=Budget(usd=0.5), checkpoint=CheckpointConfig(location="store"))
        with pytest.raises(BudgetExceeded):
            crew.kickoff()
    spans = roots(receiver, 1)
    root = next(s for s in spans if s.name.startswith("invoke_workflow"))
    assert root.attributes["error.type"] == "budget_exceeded" and root.status == 2
    assert root.attributes["crewpoint.cost.usd"] == pytest.approx(0.75)
    assert [s.name for s in spans if s.name.startswith("chat ")] == ["chat gpt-4o"]  # the call past it was not made


def test_a_fork_is_a_trace_on_its_branch_linked_to_the_run_it_forks(receiver: OtlpReceiver) -> None:
    writer = Agent(role="Writer", goal="g", backstory="b", llm="offline")
    editor = Agent(role="Editor", goal="g", backstory="b", llm="offline")
    tasks = [
        Task(name="draft", description="Draft a note.", expected_output="text", agent=writer),
        Task(name="edit", description="Edit the note.", expected_output="text", agent=editor),
    ]
    Crew(name="notes", agents=[writer, editor], tasks=tasks, checkpoint=CheckpointConfig(location="store")).kickoff()
    original = next(s for s in roots(receiver, 1) if s.name == "invoke_workflow notes")
    assert original.attributes["crewpoint.branch"] == "main"

    first = next(m for m in JsonProvider().list("store") if m.tasks_done == 2)
    forked = Crew.fork(CheckpointConfig(restore_from=first.location), branch="shorter")
    forked.override_output("draft", "A shorter draft.")
    forked.kickoff()
    spans = roots(receiver, 2)
    assert_golden("fork", spans)
    fork = next(s for s in spans if s.name == "invoke_workflow notes" and s.trace_id != original.trace_id)
    assert fork.attributes["crewpoint.branch"] == "shorter"
    assert [link[:2] for link in fork.links] == [(original.trace_id, original.span_id)]
    assert fork.attributes["crewpoint.resumed_from"] == first.id
    rerun = [s.name for s in spans if s.trace_id == fork.trace_id and s.name.startswith("invoke_agent")]
    assert rerun == ["invoke_agent Editor"]  # only the task the new draft resets runs again


class Publish(Flow):
    @start()
    def write(self) -> str:
        writer = Agent(role="Writer", goal="g", backstory="b", llm="offline")
        task = Task(name="draft", description="Draft a note.", expected_output="text", agent=writer)
        return Crew(name="notes", agents=[writer], tasks=[task]).kickoff().raw


def test_a_crew_kicked_off_in_a_flow_method_is_part_of_the_flow_trace(receiver: OtlpReceiver) -> None:
    Publish(checkpoint=CheckpointConfig(location="store")).kickoff()
    spans = roots(receiver, 2)
    assert tree(spans) == [
        "invoke_workflow Publish [INTERNAL]",
        "  invoke_agent write [INTERNAL]",
        "    invoke_workflow notes [INTERNAL]",
        "      invoke_agent Writer [INTERNAL]",
        "        chat offline [CLIENT]",
    ]
    assert len({s.trace_id for s in spans}) == 1
    flow = next(s for s in spans if s.name == "invoke_workflow Publish")
    crew = next(s for s in spans if s.name == "invoke_workflow notes")
    assert not crew.links and crew.attributes["crewpoint.run.id"] != flow.attributes["crewpoint.run.id"]
