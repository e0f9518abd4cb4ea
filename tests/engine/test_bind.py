"""Binding a checkpoint to the caller's own crew, flow or agent, and the settings a checkpoint keeps."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.agent import AgentStep
from crewpoint.checkpoint import ops
from crewpoint.checkpoint.crew_changes import BEFORE_FINGERPRINTS, crew_change_plan
from crewpoint.events.record import EdgeKind, EventRecord
from crewpoint.flow import Flow, listen, start
from crewpoint.llm import BaseLLM
from crewpoint.providers.base import CheckpointError

CALLS: list[str] = []
STEPS: list[AgentStep] = []


class ScriptedLLM(BaseLLM):
    """Answers at once and remembers which task asked."""

    model: str = "scripted"

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        CALLS.append(messages[-1]["content"].split("\n", 1)[0])
        return "Final Answer: ok " + str(len(CALLS))


def record_step(step: AgentStep) -> None:
    STEPS.append(step)


def _crew(location: str = ".checkpoints", **task_settings: Any) -> Crew:
    agent = Agent(role="Writer", llm=ScriptedLLM())
    return Crew(
        agents=[agent],
        tasks=[
            Task(name="outline", description="outline it", agent=agent),
            Task(name="draft", description="draft it", agent=agent, **task_settings),
            Task(name="edit", description="edit it", agent=agent),
        ],
        checkpoint=CheckpointConfig(location=location),
    )


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()
    STEPS.clear()


def test_kickoff_from_a_checkpoint_binds_to_the_callers_crew_and_skips_finished_tasks() -> None:
    _crew().kickoff()
    first = ops.list_checkpoints(".checkpoints")[-1]
    CALLS.clear()
    crew = _crew()
    result = crew.kickoff(from_checkpoint=first.location)
    assert CALLS == ["Current task: draft it", "Current task: edit it"]
    assert result.raw.startswith("ok ") and crew.id == ops.load(first.id, ".checkpoints").body["entity"]["id"]
    newest = ops.list_checkpoints(".checkpoints")[0]
    assert newest.parent_id is not None and newest.lineage == first.lineage and newest.tasks_done == 3


def test_restore_from_takes_a_bare_id_or_prefix_in_the_configured_location() -> None:
    _crew("store").kickoff()
    first = ops.list_checkpoints("store")[-1]
    for ref in (first.id, first.id[:8]):
        crew = Crew.from_checkpoint(CheckpointConfig(location="store", restore_from=ref))
        assert [t.output is not None for t in crew.tasks] == [True, False, False]
    with pytest.raises(CheckpointError, match="no checkpoint"):
        Crew.from_checkpoint(CheckpointConfig(location="store", restore_from="ffffffff"))


def test_task_checkpoint_false_round_trips_and_a_resumed_run_skips_it_too() -> None:
    _crew(checkpoint=False).kickoff()
    assert [m.tasks_done for m in ops.list_checkpoints(".checkpoints")] == [3, 1]
    first = ops.list_checkpoints(".checkpoints")[-1]
    assert ops.load(first.id, ".checkpoints").body["entity"]["tasks"][1]["checkpoint"] is False
    crew = Crew.from_checkpoint(first.location)
    assert crew.tasks[1].checkpoint is False
    crew.kickoff()
    assert [m.tasks_done for m in ops.list_checkpoints(".checkpoints")] == [3, 3, 1]


def test_a_crew_of_another_shape_runs_its_own_tasks_and_no_saved_output_lands_on_them() -> None:
    _crew().kickoff()
    first = ops.list_checkpoints(".checkpoints")[0]  # the finished run: every task has its output
    CALLS.clear()
    agent = Agent(role="Editor", llm=ScriptedLLM())
    other = Crew(agents=[agent], tasks=[Task(description=f"t{i}", agent=agent) for i in range(3)])
    other.kickoff(from_checkpoint=first.location)
    plan = other.change_plan
    assert plan is not None
    assert [(v.verdict, v.runs) for v in plan.verdicts] == [("changed", True)] * 3
    assert "description changed" in plan.verdicts[0].reasons and "agent role changed" in plan.verdicts[0].reasons
    assert "task 1 (t0) matched to the checkpoint's task 1 (outline) by position only: name your tasks" in plan.notes
    assert CALLS == [f"Current task: t{i}" for i in range(3)]  # every task ran: no output was taken over
    short = Crew(agents=[agent], tasks=[Task(name="edit", description="edit it", agent=agent)])
    short.kickoff(from_checkpoint=first.location)
    plan = short.change_plan
    assert plan is not None
    assert [(v.name, v.verdict) for v in plan.verdicts] == [
        ("edit", "changed"),
        ("outline", "dropped"),
        ("draft", "dropped"),
    ]
    assert plan.verdicts[0].reasons == ("context changed", "agent role changed", "moved from 3 to 1")


class Pipeline(Flow[dict[str, Any]]):
    @start()
    def fetch(self) -> str:
        CALLS.append("fetch")
        return "data"

    @listen(fetch)
    def clean(self, data: str) -> str:
        CALLS.append("clean")
        return data.upper()


class OtherPipeline(Pipeline):
    pass


def test_a_live_flow_binds_and_continues_after_its_finished_methods() -> None:
    config = CheckpointConfig(location=".checkpoints", on_events=["method_execution_finished"])
    Pipeline(checkpoint=config).kickoff()
    first = ops.list_checkpoints(".checkpoints")[-1]
    CALLS.clear()
    assert Pipeline(checkpoint=config).kickoff(from_checkpoint=first.location) == "DATA"
    assert CALLS == ["clean"]
    with pytest.raises(CheckpointError, match=r"holds a flow of class .*Pipeline; this flow is an OtherPipeline"):
        OtherPipeline().kickoff(from_checkpoint=first.location)


def test_a_live_agent_binds_and_keeps_its_own_llm() -> None:
    config = CheckpointConfig(location=".checkpoints", on_events=["lite_agent_execution_completed"])
    Agent(role="Helper", llm=ScriptedLLM(), checkpoint=config).kickoff("hello")
    saved = ops.list_checkpoints(".checkpoints")[0]
    llm = ScriptedLLM()
    agent = Agent(role="Helper", llm=llm, checkpoint=config)
    assert agent.kickoff(from_checkpoint=saved.location).raw == "ok 1"  # the saved answer, no new call
    assert len(CALLS) == 1 and agent.get_llm() is llm
    with pytest.raises(CheckpointError, match="holds agent 'Helper'; this agent is 'Other'"):
        Agent(role="Other").kickoff(from_checkpoint=saved.location)


def test_step_callback_sees_each_step_and_is_saved_by_path() -> None:
    agent = Agent(role="Writer", llm=ScriptedLLM(), step_callback=record_step)
    Crew(agents=[agent], tasks=[Task(description="x", agent=agent)], checkpoint=True).kickoff()
    assert [s.kind for s in STEPS] == ["final"] and STEPS[0].output == "ok 1"
    saved = ops.load(ops.list_checkpoints(".checkpoints")[0].id, ".checkpoints").body["entity"]["agents"][0]
    assert saved["step_callback"] == f"{__name__}.record_step"


def test_settings_crewpoint_does_not_use_warn_instead_of_vanishing() -> None:
    with pytest.warns(UserWarning, match="ignores the setting.s. allow_delegation"):
        Agent(role="R", allow_delegation=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Agent(role="R", verbose=True, max_iter=3)


def test_a_checkpoints_events_form_a_tree() -> None:
    _crew().kickoff()
    body = ops.load(ops.list_checkpoints(".checkpoints")[0].id, ".checkpoints").body
    record = EventRecord.from_list(body["events"])
    kickoff = record.by_type("crew_kickoff_started")[0]
    below = {n.type for n in record.descendants(kickoff.event_id)}
    assert {"task_started", "agent_execution_started", "llm_call_started", "task_completed"} <= below
    task_done = record.by_type("task_completed")[0]
    assert [n.type for n in record.edges(task_done.event_id, EdgeKind.STARTED)] == ["task_started"]
    call = record.by_type("llm_call_started")[0]
    assert [n.type for n in record.edges(call.event_id, EdgeKind.PARENT)] == ["agent_execution_started"]
    assert [n.type for n in record.roots()] == ["crew_kickoff_started"]


def test_flow_methods_record_what_triggered_them() -> None:
    flow = Pipeline(checkpoint=CheckpointConfig(location=".checkpoints", on_events=["flow_finished"]))
    flow.kickoff()
    body = ops.load(ops.list_checkpoints(".checkpoints")[0].id, ".checkpoints").body
    record = EventRecord.from_list(body["events"])
    clean = next(n for n in record.by_type("method_execution_started") if n.compact["method_name"] == "clean")
    (trigger,) = record.edges(clean.event_id, EdgeKind.TRIGGERED_BY)
    assert trigger.type == "method_execution_finished" and trigger.compact["method_name"] == "fetch"


def test_a_checkpoint_written_before_fingerprints_matches_by_name_and_place_and_says_so() -> None:
    crew = _crew()
    crew.kickoff()
    saved = [{**task, "fingerprint": None} for task in crew.to_state()["tasks"]]  # as a body before fingerprints
    later = _crew()
    later.tasks[0].description = "outline it again"  # a change a fingerprint would show: unseen without one
    plan, order = crew_change_plan(saved, later)
    assert order == [0, 1, 2]
    assert plan.notes == (BEFORE_FINGERPRINTS,)
    assert [(v.name, v.verdict, v.runs) for v in plan.verdicts] == [
        ("outline", "kept", False),
        ("draft", "kept", False),
        ("edit", "kept", False),
    ]
    fingerprinted = crew_change_plan(crew.to_state()["tasks"], later)[0]
    assert [(v.name, v.verdict, v.runs) for v in fingerprinted.verdicts] == [
        ("outline", "changed", True),
        ("draft", "kept", True),  # it reads the outline, which runs again
        ("edit", "kept", True),
    ]
    assert fingerprinted.verdicts[1].reasons == ("reads 'outline', which runs",)
