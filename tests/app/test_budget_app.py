"""Budgets in the app: a run its budget stopped reads stopped: budget in the tree, and the Resume and Fork dialogs
take a budget in dollars that the run they launch gets as ``--budget`` (a bad number is refused in the dialog)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.reading import choose, text_of
from support.waiting import settle, wait_until
from textual.pilot import Pilot
from textual.widgets import Input, Label, Static

from crewpoint import LLM, Agent, Budget, BudgetExceeded, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointMeta
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import BudgetField, ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.edits import EditsModel
from crewpoint.tui.render import STATE_MARKS
from crewpoint.tui.run_controller import RunController, RunRequest

SIZE = (140, 40)


@pytest.fixture
def stopped(tmp_path: Path) -> Iterator[CheckpointMeta]:
    """A three-task crew its budget stopped after task 1 (the server reports $0.75 a call): its checkpoint."""
    with LLMServer() as server:
        server.usage = {"prompt_tokens": 100_000, "completion_tokens": 50_000}
        llm = LLM(model="gpt-4o", base_url=server.base_url, provider="openai")
        writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
        tasks = [Task(name=f"t{i}", description=f"Step {i}.", expected_output="text", agent=writer) for i in (1, 2, 3)]
        crew = Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location="store"), budget=Budget(usd=0.5))
        with pytest.raises(BudgetExceeded):
            crew.kickoff()
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    assert newest.trigger == "budget_exceeded"
    yield newest


def budget_input(pilot: Pilot[None]) -> Input:
    return pilot.app.screen.query_one(BudgetField).query_one(Input)


def budget_error(pilot: Pilot[None]) -> str:
    return text_of(pilot.app.screen.query_one(BudgetField).query_one(".budget-error", Static))


async def test_the_resume_dialog_passes_its_budget_to_the_run_and_refuses_a_bad_one(
    stopped: CheckpointMeta, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the run ran on gpt-4o, whose server is gone: rebuilt without a program, it goes on only on a model the user
    # names, here the offline one
    monkeypatch.setenv("CREWPOINT_LLM", "offline")
    app = make_app("store", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await choose(pilot, stopped.id)
        index = screen.ckpt_tree.index
        segment = index.segments[index.segment_of[stopped.id]]
        assert index.state_of(segment) == "budget" and STATE_MARKS["budget"][0] == "■ stopped: budget"
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        await settle(pilot)
        label = text_of(pilot.app.screen.query_one(BudgetField).query_one(Label))
        assert label == "Budget (dollars this run may spend; empty: the run's own, $0.5000)"  # saved with the run
        budget_input(pilot).focus()
        await pilot.press(*"lots", "enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ResumeScreen)  # refused in the dialog, in one line
        assert budget_error(pilot) == "budget 'lots' is not a number of dollars (like 5 or 2.50)"
        assert screen.run_panel.request is None
        budget_input(pilot).value = ""
        await pilot.press(*"$2.5", "enter")
        await wait_until(pilot, lambda: screen.run_panel.request is not None)
        request = screen.run_panel.request
        assert request is not None
        at = request.argv.index("--budget")
        assert request.argv[at : at + 2] == ["--budget", "2.5"] and request.argv[4:6] == ["resume", stopped.id]
        await wait_until(pilot, lambda: not screen.run_panel.running and screen.run_panel.has_class("-ok"), 120)


async def test_the_fork_dialog_passes_its_budget_and_an_empty_field_sets_none(stopped: CheckpointMeta) -> None:
    app = make_app("store", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await choose(pilot, stopped.id)
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        await settle(pilot)
        budget_input(pilot).focus()
        await pilot.press(*"0", "enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, ForkScreen)
        assert budget_error(pilot) == "budget '0': give a number of dollars above 0, or leave it empty"
        budget_input(pilot).value = ""
        await pilot.press(*"7", "enter")
        await wait_until(pilot, lambda: screen.run_panel.request is not None)
        request = screen.run_panel.request
        assert request is not None and request.argv[4] == "fork"
        assert request.argv[request.argv.index("--budget") + 1] == "7"
        await wait_until(pilot, lambda: not screen.run_panel.running, 120)


def test_a_run_without_a_budget_is_launched_without_one_and_a_budget_stop_is_told_as_such(
    stopped: CheckpointMeta,
) -> None:
    controller = RunController("store", EditsModel())
    info = ops.describe(ops.load(stopped.id, "store"))
    assert "--budget" not in controller.resume_request(stopped, info, "").argv
    assert controller.resume_request(stopped, info, "", 0.25).argv[-2:] == ["--budget", "0.25"]
    request = RunRequest(["x"], "resume abc on main", "main", source_id=stopped.id)
    said, severity = controller.finished(request, ExitCode.BUDGET, False, "")
    assert (said, severity) == (
        "resume abc on main: stopped at its budget (resume with e and a larger budget)",
        "warning",
    )
