"""What runs cost, in the app: the Overview's spent, this run and saved with a per-task table, the Cost tab's chart,
and the estimate the Fork and Resume dialogs show for what will run; the figures are ``crewpoint.cost.price_rows``'
of the checkpoint's own usage rows. A real 3-task crew on gpt-4o against the local OpenAI-compatible server, then a
fork that re-runs task 3 (tests/support/cost_runs.py)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from support.cost_runs import build, usage_server
from support.reading import choose
from support.waiting import wait_until
from textual.app import App, ComposeResult
from textual.widgets import Static

from crewpoint.checkpoint import ops
from crewpoint.cost import Prices, price_rows, usage_rows
from crewpoint.estimate import NO_HISTORY, cost_text, pending_tasks
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointRecord
from crewpoint.screens.answer_dialog import AnswerScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.store_index import CheckpointRef
from crewpoint.tui.widgets.branch_graph import Graph
from crewpoint.tui.widgets.cost_view import CostView, EstimateView
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.overview_view import OverviewView

SIZE = (150, 45)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Any]]]:
    location = str(tmp_path_factory.mktemp("cost-app") / "store")
    with usage_server() as server:
        yield location, build(location, server.base_url)


def shown_text(widget: Static) -> str:
    """What a Static was given to show (a rich renderable), as plain text at a wide width."""
    console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
    console.print(widget.content)
    return console.export_text()


def body_of(meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = ops.load(meta.location).body
    return body


def priced(rows: list[dict[str, Any]]) -> Any:
    return price_rows(rows, Prices())


async def test_the_overview_shows_spent_this_run_saved_and_each_task(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    fork_head = [m for m in metas if m.branch == "rewrite"][-1]
    body = body_of(fork_head)
    rows, before, reused = (usage_rows(body, part) for part in ("rows", "before", "reused"))
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, fork_head.id)
        overview = pilot.app.screen.query_one(OverviewView)
        await wait_until(pilot, lambda: overview.chain is not None)
        chain = overview.chain
        assert chain is not None
        assert chain.spent.usd == priced([*before, *rows]).usd and chain.spent.tokens == priced([*before, *rows]).tokens
        assert chain.this_run.usd == priced(rows).usd and chain.this_run.tokens["input_tokens"] == 2000
        assert chain.saved.usd == priced(reused).usd and [r.label for r in reused] == ["t1", "t2"]
        assert [u.label for u in chain.units] == ["1. t1", "2. t2", "3. t3"]
        task_3 = [r for r in [*before, *rows] if r.label == "t3"]
        assert len(task_3) == 2 and chain.units[2].summary.usd == priced(task_3).usd  # both runs of it
        shown = shown_text(overview.query_one("#overview-body", Static))
        assert cost_text(chain.spent) in shown and cost_text(chain.saved) in shown
    cli = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "cost", fork_head.location, "--json"]
    said = json.loads(subprocess.run(cli, capture_output=True, text=True, check=True).stdout)
    for figures, summary in ((said, chain.spent), (said["this_run"], chain.this_run), (said["saved"], chain.saved)):
        assert figures["cost_usd"] == summary.to_json()["cost_usd"]
        assert figures["usage"] == summary.to_json()["usage"]


async def test_the_cost_tab_charts_each_task_of_the_chain(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    last = [m for m in metas if m.branch == "main"][-1]
    body = body_of(last)
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        screen = await choose(pilot, last.id)
        screen.detail.activate("tab-cost")
        await wait_until(pilot, lambda: bool(pilot.app.screen.query(CostView)))
        view = pilot.app.screen.query_one(CostView)
        await wait_until(pilot, lambda: view.chain is not None)
        assert view.chain is not None
        by_label = {u.label: u.summary for u in view.chain.units}
        for n, row in enumerate(usage_rows(body), 1):
            assert by_label[f"{n}. {row.label}"].usd == priced([row]).usd
        shown = shown_text(view.query_one("#cost-body", Static))
        assert "█" in shown and "$0.0140" in shown
        await wait_until(pilot, lambda: bool(view.branches))
        fork_head = [m for m in metas if m.branch == "rewrite"][-1]
        chains = {branch: body_of(head) for branch, head in (("main", last), ("rewrite", fork_head))}
        expected = {
            f"crew crew ⎇ {branch}": priced([*usage_rows(b, "before"), *usage_rows(b, "rows")]).usd
            for branch, b in chains.items()
        }
        assert {label: summary.usd for label, summary in view.branches} == expected
        assert [label for label, _ in view.branches] == ["crew crew ⎇ rewrite", "crew crew ⎇ main"]  # dearest first
        assert "$0.0380" in shown_text(view.query_one("#cost-branches", Static))


async def test_the_tree_shows_each_runs_cost_beside_its_newest_checkpoint(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    main = [m for m in metas if m.branch == "main"]
    fork_head = [m for m in metas if m.branch == "rewrite"][-1]
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        screen = await choose(pilot, fork_head.id)

        def line(meta: Any) -> str:
            return screen.ckpt_tree._label_for(CheckpointRef(meta.id)).plain

        run_main, run_fork = (cost_text(priced(usage_rows(body_of(m)))) for m in (main[-1], fork_head))
        assert (run_main, run_fork) == ("$0.0240", "$0.0140")  # each run's own spend, not its chain's
        assert line(main[-1]).endswith(f"task_completed  {run_main}")
        assert line(fork_head).endswith(f"task_completed  {run_fork}")
        assert all(line(m).endswith("task_completed") for m in main[:2])  # only beside a run's newest


async def test_the_fork_dialog_estimates_what_its_edits_make_run_again(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    main = [m for m in metas if m.branch == "main"]
    task_3 = [r for r in usage_rows(body_of(main[-1])) if r.label == "t3"]
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        screen = await choose(pilot, main[-1].id)
        screen.edits.keep(main[-1].id, outputs={1: "A shorter outline."})  # task 2's output: task 3 runs again
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        assert view.estimate is not None
        assert [u.label for u in view.estimate.units] == ["3. t3"]
        assert view.estimate.total.usd == priced(task_3).usd
        assert view.estimate.total.tokens == priced(task_3).tokens
        assert "$0.0140" in shown_text(view)
        await pilot.press("n")

        await choose(pilot, main[1].id)  # after task 2: task 3 ran only after this checkpoint, and that counts
        screen.edits.keep(main[1].id, outputs={1: "A shorter outline."})
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        assert view.estimate is not None and view.estimate.missing == []
        assert view.estimate.total.usd == priced(task_3).usd and "$0.0140" in shown_text(view)


async def test_the_resume_dialog_estimates_the_tasks_left(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    first = next(m for m in metas if m.branch == "main")
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, first.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        assert view.estimate is not None and view.estimate.missing == []  # both ran after it: their figures
        assert [u.label for u in view.estimate.units] == ["2. t2", "3. t3"]
        after = usage_rows(body_of([m for m in metas if m.branch == "main"][-1]))
        assert view.estimate.total.usd == priced([r for r in after if r.label in ("t2", "t3")]).usd
        await pilot.press("n")


async def test_a_dialog_on_a_checkpoint_nothing_ran_after_has_no_history_to_go_on(
    store: tuple[str, list[Any]], tmp_path: Path
) -> None:
    location, metas = store
    first = next(m for m in metas if m.branch == "main")
    alone = tmp_path / "alone"  # the store without what ran after the first checkpoint
    shutil.copytree(location, alone)
    JsonProvider().delete(str(alone), [m.id for m in ops.list_checkpoints(str(alone)) if m.id != first.id])
    async with make_app(str(alone), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, first.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        assert view.estimate is not None and view.estimate.missing == ["2. t2", "3. t3"]
        assert NO_HISTORY in shown_text(view)
        await pilot.press("n")


class _Views(App[None]):
    def compose(self) -> ComposeResult:
        yield OverviewView(id="overview")
        yield CostView(id="cost")


@pytest.mark.parametrize(
    "usage",
    [
        "not a section",
        {"rows": [None, 5, {"unit": "[red]x", "label": "[bold]y", "model": 3}], "before": {"a": 1}, "reused": 9},
        {"rows": [{"unit": "t1", "label": "[b]t1", "model": "gpt-4o", "input_tokens": 10**40}]},
        {"rows": [{"unit": "t1", "label": "\x1b[2Jt1", "model": "no-such-model", "input_tokens": 5}]},
    ],
)
async def test_a_hostile_usage_section_is_drawn_as_data(usage: Any, store: tuple[str, list[Any]]) -> None:
    _location, metas = store
    record = ops.load(metas[0].location)
    hostile = CheckpointRecord(meta=record.meta, body={**record.body, "usage": usage})
    detail = Detail(record.meta, hostile, ops.describe(record))
    async with _Views().run_test(size=SIZE) as pilot:
        overview, cost = pilot.app.query_one(OverviewView), pilot.app.query_one(CostView)
        overview.detail = detail
        cost.detail = detail
        await pilot.pause()
        assert overview.chain is not None and cost.chain is not None
        shown = shown_text(cost.query_one("#cost-body", Static))
        if cost.chain.recorded:
            assert "price unknown" in shown and "\x1b" not in shown
        else:
            assert "no usage recorded" in shown


def test_the_store_is_a_real_run(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    assert [m.branch for m in metas].count("main") == 3 and Path(location, "rewrite").is_dir()


WAITING = """
import os

from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task

llm = LLM(model="gpt-4o", base_url=os.environ["CREWPOINT_TEST_COST_URL"], provider="openai")
writer = Agent(role="Writer", goal="Write well", backstory="A writer", llm=llm)
tasks = [
    Task(name="t1", description="Research owls.", expected_output="text", agent=writer),
    Task(name="t2", description="Outline the post.", expected_output="text", agent=writer, human_input=True),
    Task(name="t3", description="Write the post.", expected_output="text", agent=writer),
]
crew = Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location="store"))

if __name__ == "__main__":
    crew.kickoff()
"""


async def test_the_answer_dialog_estimates_what_runs_on(tmp_path: Path) -> None:
    (tmp_path / "crew.py").write_text(WAITING)
    with usage_server() as server:
        env = {**os.environ, "CREWPOINT_FEEDBACK": "wait", "CREWPOINT_TEST_COST_URL": server.base_url}
        waited = subprocess.run([sys.executable, "crew.py"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert waited.returncode == 0, waited.stderr  # kickoff answers FeedbackPending: the run waits
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    body = body_of(newest)
    async with make_app(str(tmp_path / "store"), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, newest.id)
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, AnswerScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        assert view.estimate is not None
        pending = [f"{i + 1}. {body['entity']['tasks'][i]['name']}" for i in pending_tasks(body)]
        assert [u.label for u in view.estimate.units] == pending and "3. t3" in pending
        for unit in view.estimate.units:
            rows = [r for r in usage_rows(body) if r.unit == unit.unit]
            assert unit.summary.usd == priced(rows).usd
        assert view.estimate.missing == ["3. t3"]
        await pilot.press("escape")


FORGED_SUMMARIES = ["", "not json", '{"chain": [[1, 2, 3]]}', '{"chain": [["m", "p", -1, 0, 0, 0, 0, 1, false]]}']


@pytest.mark.parametrize("usage", FORGED_SUMMARIES)
async def test_a_forged_usage_summary_draws_no_branch(usage: str, store: tuple[str, list[Any]]) -> None:
    _location, metas = store
    forged = [m.with_(usage=usage) for m in metas]
    async with _Views().run_test(size=SIZE) as pilot:
        cost = pilot.app.query_one(CostView)
        cost.graph = Graph(tuple(forged))
        await pilot.pause()
        assert cost.branches == []
        assert "open a checkpoint" in shown_text(cost.query_one("#cost-branches", Static))
