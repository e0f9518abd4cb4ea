"""SVG snapshots of the app's screens on a store with fixed ids and times (``--snapshot-update`` to accept)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.reading import choose
from support.stores import fix_store
from support.waiting import settle
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from crewpoint.tui.app import make_app
from crewpoint.tui.widgets.task_card import TaskCard

SIZE = (160, 45)
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]


MAKE_RAW_STORE = """
import sys

sys.path.insert(0, sys.argv[2])  # the shared test helpers
from support.stores import make_forked_store

make_forked_store(sys.argv[1], inputs={"topic": "durable AI agent pipelines", "audience": "new hires"})
"""


def fixed_id(n: int) -> str:
    return f"{n:02x}" + "c0ffee" * 5


@pytest.fixture
def fixed_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A demo run and a fork, rewritten with ids, lineage and times that are the same on every run."""
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    raw = tmp_path / "raw"
    # In a fresh process: what earlier tests left in this one (handlers, notices said once) never reaches the body.
    tests = str(Path(__file__).resolve().parents[1])
    subprocess.run([sys.executable, "-c", MAKE_RAW_STORE, str(raw), tests], check=True, capture_output=True)
    fix_store(str(raw), "store", fixed_id, {})  # each call 1.0 s: the screens show no measured duration
    return "store"


@pytest.mark.parametrize("size", SIZES)
def test_tree_with_fork_and_overview(snap_compare: object, fixed_store: str, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await choose(pilot, fixed_id(10))  # the experiment branch's newest checkpoint (after the flow's three)

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=size, run_before=run_before)  # type: ignore[operator]


def test_tasks_tab_with_an_edited_output(snap_compare: object, fixed_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        screen = await choose(pilot, fixed_id(4))  # main, 4/4
        await pilot.press("2")
        await settle(pilot)
        draft = next(card for card in screen.query(TaskCard) if card.task_info.name == "draft")
        draft.query_one(TextArea).text = "A tighter draft."
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.pause()

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]


@pytest.mark.parametrize("size", SIZES)
def test_fork_confirmation(snap_compare: object, fixed_store: str, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        screen = await choose(pilot, fixed_id(4))
        await pilot.press("3")
        await settle(pilot)
        field = next(i for i in screen.query(Input) if i.value == "engineering leads")
        field.value = "new hires"
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.press("f")
        await pilot.pause()
        pilot.app.screen.query_one("#fork-branch", Input).value = "what-if"
        pilot.app.screen.query_one("#fork-app Input", Input).value = ""  # the suggestion names an installed path
        await settle(pilot)

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=size, run_before=run_before)  # type: ignore[operator]


def test_branch_graph(snap_compare: object, fixed_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await choose(pilot, fixed_id(2))
        await pilot.press("g")
        await settle(pilot)

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]


def test_help_screen(snap_compare: object, fixed_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]
