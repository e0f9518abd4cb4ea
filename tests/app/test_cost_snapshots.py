"""SVG snapshots of what runs cost in the app (``--snapshot-update`` to accept): the Cost tab's chart, the Overview's
spent and saved, and the fork confirmation's estimate. The store is a real run of a 3-task crew on gpt-4o against the
local OpenAI-compatible server with known usage, and its fork, rewritten with fixed ids, times and durations."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.cost_runs import fix, fixed_id, usage_server
from support.reading import choose
from support.waiting import settle
from textual.pilot import Pilot
from textual.widgets import Input

from crewpoint.tui.app import make_app

SIZE = (150, 40)

BUILD = """
import sys

sys.path.insert(0, sys.argv[3])  # the shared test helpers
from support.cost_runs import build

build(sys.argv[1], sys.argv[2])
"""


@pytest.fixture
def cost_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The run and its fork, made in a fresh process (nothing earlier tests left reaches the bodies), then fixed."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    raw = tmp_path / "raw"
    tests = str(Path(__file__).resolve().parents[1])
    with usage_server() as server:
        subprocess.run([sys.executable, "-c", BUILD, str(raw), server.base_url, tests], check=True, capture_output=True)
    fix(str(raw), "store")
    return "store"


def test_cost_tab(snap_compare: object, cost_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await choose(pilot, fixed_id(4))  # the fork's newest checkpoint: task 3 ran twice on its chain
        await pilot.press("8")
        await settle(pilot)

    assert snap_compare(make_app(cost_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]


def test_overview_spent_and_saved(snap_compare: object, cost_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await choose(pilot, fixed_id(4))

    assert snap_compare(make_app(cost_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]


def test_fork_confirmation_with_its_estimate(snap_compare: object, cost_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        screen = await choose(pilot, fixed_id(3))  # main, 3/3
        screen.edits.keep(fixed_id(3), outputs={1: "A shorter outline."})  # task 2's output: task 3 runs again
        screen.edits_changed(fixed_id(3), redraw=True)
        await settle(pilot)
        await pilot.press("f")
        await settle(pilot)
        pilot.app.screen.query_one("#fork-branch", Input).value = "shorter"
        pilot.app.screen.query_one("#fork-app Input", Input).value = ""  # the suggestion names an installed path
        await settle(pilot)

    assert snap_compare(make_app(cost_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]
