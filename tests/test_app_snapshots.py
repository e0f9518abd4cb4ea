"""SVG snapshots of the app's screens on a store with fixed ids and times (``--snapshot-update`` to accept)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.reading import browser
from support.waiting import settle
from textual.pilot import Pilot
from textual.widgets import Input, TextArea

from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointRecord
from crewpoint.screens.browser import BrowserScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.widgets.task_card import TaskCard

SIZE = (160, 45)
SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((160, 45), id="160x45")]
BASE_TIME = 1_704_164_645.0  # 2024-01-02 03:04:05 UTC


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
    from crewpoint.providers import JsonProvider

    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    raw = tmp_path / "raw"
    # In a fresh process: what earlier tests left in this one (handlers, notices said once) never reaches the body.
    tests = str(Path(__file__).resolve().parent)
    subprocess.run([sys.executable, "-c", MAKE_RAW_STORE, str(raw), tests], check=True, capture_output=True)
    metas = sorted(ops.list_checkpoints(str(raw)), key=lambda m: (m.created_at, m.sequence))
    ids = {meta.id: fixed_id(n) for n, meta in enumerate(metas, 1)}
    provider = JsonProvider()
    for n, meta in enumerate(metas, 1):
        record = provider.read(meta.location)
        stamp = BASE_TIME + 60 * n
        new_meta = meta.with_(
            id=ids[meta.id],
            parent_id=ids.get(meta.parent_id or ""),
            lineage="5eed" * 8,
            created_at=stamp,
            location="",
            size=0,
        )
        body = dict(record.body)
        body["lineage"] = {
            **body["lineage"],
            "id": new_meta.id,
            "parent_id": new_meta.parent_id,
            "lineage": new_meta.lineage,
        }
        body["created_at"] = stamp
        body.pop("origin", None)  # where the program came from differs between machines and test orders
        for i, event in enumerate(body.get("events", [])):
            event["timestamp"] = stamp + i / 8
            event["sequence"] = i + 1  # the runtime numbers events per process
        for i, item in enumerate(body["entity"].get("crew_memory", {}).get("items", [])):
            item["created_at"] = stamp + i / 8
        # the temporary folder's name (and so the body's size) differs from run to run
        body = json.loads(json.dumps(body).replace(str(raw), "/raw"))
        provider.write("store", CheckpointRecord(new_meta, body))
    return "store"


async def open_checkpoint(pilot: Pilot[None], n: int) -> BrowserScreen:
    await settle(pilot)
    screen = browser(pilot)
    assert screen.ckpt_tree.reveal(fixed_id(n))
    await settle(pilot)
    return screen


@pytest.mark.parametrize("size", SIZES)
def test_tree_with_fork_and_overview(snap_compare: object, fixed_store: str, size: tuple[int, int]) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await open_checkpoint(pilot, 10)  # the experiment branch's newest checkpoint (after the flow's three)

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=size, run_before=run_before)  # type: ignore[operator]


def test_tasks_tab_with_an_edited_output(snap_compare: object, fixed_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        screen = await open_checkpoint(pilot, 4)  # main, 4/4
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
        screen = await open_checkpoint(pilot, 4)
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
        await open_checkpoint(pilot, 2)
        await pilot.press("g")
        await settle(pilot)

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]


def test_help_screen(snap_compare: object, fixed_store: str) -> None:
    async def run_before(pilot: Pilot[None]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(make_app(fixed_store, watch=False), terminal_size=SIZE, run_before=run_before)  # type: ignore[operator]
