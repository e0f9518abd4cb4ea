"""The Resume, Fork and Answer dialogs price what will run at the model the run calls, as the command line's dry run
does: rebuilt from the checkpoint alone, crewpoint's models come back as the one ``CREWPOINT_LLM`` names, so the
estimate is priced there, not at the model the checkpoint records.

The store is a real priced run on gpt-4o against the local test server (``tests/support/cost_runs.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.cost_runs import build, usage_server
from support.reading import choose
from support.waiting import wait_until

from crewpoint.checkpoint import ops
from crewpoint.cost import Prices, price_rows, usage_rows
from crewpoint.llm import LLM
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.widgets.cost_view import EstimateView

SIZE = (150, 45)
NAMED = "gpt-4o-mini"


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Any]]]:
    location = str(tmp_path_factory.mktemp("dialog-models") / "store")
    with usage_server() as server:
        yield location, build(location, server.base_url, fork=False)


def _called(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` as the run will call them: at the model ``CREWPOINT_LLM`` names."""
    provider = LLM(model=NAMED).provider_name()
    return [row._replace(model=NAMED, provider=provider) for row in rows]


async def test_the_resume_dialog_prices_the_model_crewpoint_llm_names(
    store: tuple[str, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREWPOINT_LLM", NAMED)
    location, metas = store
    first, last = metas[0], metas[-1]
    ran = [r for r in usage_rows(ops.load(last.location or last.id).body) if r.label in ("t2", "t3")]
    assert {r.model for r in ran} == {"gpt-4o"}  # what the checkpoint records
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, first.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        estimate = view.estimate
        assert estimate is not None and [u.label for u in estimate.units] == ["2. t2", "3. t3"]
        assert {r.model for u in estimate.units for r in u.rows} == {NAMED}
        assert estimate.total.usd == price_rows(_called(ran), Prices()).usd
        assert estimate.total.usd < price_rows(ran, Prices()).usd  # gpt-4o-mini costs less than what it recorded
        await pilot.press("n")


async def test_the_fork_dialog_prices_the_model_crewpoint_llm_names(
    store: tuple[str, list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREWPOINT_LLM", NAMED)
    location, metas = store
    last = metas[-1]
    task_3 = [r for r in usage_rows(ops.load(last.location or last.id).body) if r.label == "t3"]
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        screen = await choose(pilot, last.id)
        screen.edits.keep(last.id, outputs={1: "A shorter outline."})  # task 2's output: task 3 runs again
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        estimate = view.estimate
        assert estimate is not None and [u.label for u in estimate.units] == ["3. t3"]
        assert estimate.total.usd == price_rows(_called(task_3), Prices()).usd
        await pilot.press("n")


async def test_without_a_model_named_the_dialog_prices_the_recorded_one(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    last = metas[-1]
    task_3 = [r for r in usage_rows(ops.load(last.location or last.id).body) if r.label == "t3"]
    async with make_app(location, watch=False).run_test(size=SIZE) as pilot:
        screen = await choose(pilot, last.id)
        screen.edits.keep(last.id, outputs={1: "A shorter outline."})
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        view = pilot.app.screen.query_one(EstimateView)
        await wait_until(pilot, lambda: view.estimate is not None)
        assert view.estimate is not None
        assert view.estimate.total.usd == price_rows(task_3, Prices()).usd
        await pilot.press("n")
