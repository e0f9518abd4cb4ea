"""The terminal app on CrewAI's own stores (the fixtures crewai 1.15.30 wrote): the tree, every tab, live
watching, and a fork with an edited output written in CrewAI's format from the app."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from crewai_fixtures import FAKE_KEY
from crewai_fixtures import json_store as copy_json_store
from crewai_fixtures import sqlite_store as copy_sqlite_store
from support.reading import browser, choose, screen_text
from support.waiting import settle, wait_until
from textual.widgets import Input, RichLog, TextArea

from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.widgets.raw_view import RawView
from crewpoint.tui.widgets.tabs import TABS
from crewpoint.tui.widgets.task_card import TaskCard

SIZE = (140, 40)
CREW_FIRST_JSON = "20261130T150415_34a58f9a"
CREW_LAST_JSON = "20261130T150415_1a8435d1"


@pytest.fixture(autouse=True)
def no_crewai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREWPOINT_CREWAI_PYTHON", "/nonexistent/python-with-crewai")


@pytest.fixture(params=["json", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    if request.param == "json":
        return copy_json_store(tmp_path / "crewai-json")
    return copy_sqlite_store(tmp_path / "crewai.db")


@pytest.fixture
def json_store(tmp_path: Path) -> Path:
    return copy_json_store(tmp_path / "crewai-json")


async def test_the_tree_groups_crew_flow_and_agent_with_forks_nested(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        assert len(screen.metas) == 13
        assert {m.entity_kind for m in screen.metas} == {"crew", "flow", "agent"}
        crew_main = sorted(
            (m for m in screen.metas if m.entity_kind == "crew" and m.branch == "main"), key=lambda m: m.sequence
        )
        forks = [screen.index.segments[k].branch for k in screen.index.forks[crew_main[0].id]]
        assert "edited" in forks and any(b.startswith("fork/") for b in forks)
        text = screen_text(pilot)
        for label in ("crew research crew", "flow TriageFlow", "agent Summarizer", "task_completed"):
            assert label in text


async def test_every_tab_shows_the_checkpoint_and_no_key(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        for kind in ("crew", "flow", "agent"):
            meta = max((m for m in screen.metas if m.entity_kind == kind), key=lambda m: (m.tasks_done, m.sequence))
            await choose(pilot, meta.id)
            shown = []
            for number in range(1, len(TABS) + 1):
                await pilot.press(str(number))
                await settle(pilot)
                shown.append(screen_text(pilot))
                assert FAKE_KEY[:10] not in pilot.app.export_screenshot()  # what a screenshot would keep
            everything = "\n".join(shown)
            assert FAKE_KEY[:10] not in everything
            assert meta.id.rpartition("_")[2] in everything
            if kind == "crew":
                cards = list(screen.query(TaskCard))
                assert [c.task_info.done for c in cards] == [True, True, True]
                raw = screen.query_one(RawView).shown.plain
                assert '"api_key": "••••"' in raw and FAKE_KEY[:10] not in raw  # the dump, keys masked
            screen.ckpt_tree.focus()


async def test_a_checkpoint_crewai_writes_appears_while_the_app_watches(json_store: Path) -> None:
    app = make_app(str(json_store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(browser(pilot).metas) == 13)  # the watcher never ends: no settle
        screen = browser(pilot)
        source = next(json_store.rglob(f"{CREW_LAST_JSON}_p-*.json"))
        dump = json.loads(source.read_text())
        dump["parent_id"], dump["branch"] = CREW_LAST_JSON, "live"
        (json_store / "live").mkdir()
        new_id = "20261130T160000_0badc0de"
        target = json_store / "live" / f"{new_id}_p-{CREW_LAST_JSON}.json"
        target.write_text(json.dumps(dump))  # written in place, as CrewAI does
        await wait_until(pilot, lambda: any(m.id == new_id for m in screen.metas))
        fresh = next(m for m in screen.metas if m.id == new_id)
        assert fresh.branch == "live" and fresh.parent_id == CREW_LAST_JSON and not fresh.damaged


async def test_a_row_crewai_adds_appears_while_the_app_watches(tmp_path: Path) -> None:
    database = copy_sqlite_store(tmp_path / "crewai.db")
    app = make_app(str(database), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(browser(pilot).metas) == 13)
        screen = browser(pilot)
        con = sqlite3.connect(database)
        with con:  # a copy of a row on a new branch, blob and all, as CrewAI's next checkpoint would land
            con.execute(
                "INSERT INTO checkpoints SELECT ?, created_at, id, 'live', data FROM checkpoints WHERE id = ?",
                ("20261130T160000_0badc0de", "20261130T150420_08a9f6c2"),
            )
        con.close()
        await wait_until(pilot, lambda: any(m.id == "20261130T160000_0badc0de" for m in screen.metas))
        fresh = next(m for m in screen.metas if m.id == "20261130T160000_0badc0de")
        assert (fresh.branch, fresh.parent_id, fresh.tasks_done) == ("live", "20261130T150420_08a9f6c2", 3)


async def test_fork_from_the_app_writes_crewai_format_and_says_crewai_is_missing(json_store: Path) -> None:
    before = {p: p.read_bytes() for p in json_store.rglob("*.json")}
    app = make_app(str(json_store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await choose(pilot, CREW_LAST_JSON)
        await pilot.press("2")
        await settle(pilot)
        outline = next(c for c in screen.query(TaskCard) if c.task_info.name == "outline")
        outline.query_one(TextArea).text = "An outline [with brackets"
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.press("f")
        await pilot.pause()
        fork_screen = pilot.app.screen
        assert isinstance(fork_screen, ForkScreen)
        assert fork_screen.plan.rerun == [2]  # only the article reads the outline
        fork_screen.query_one("#fork-branch", Input).value = "from-app"
        await pilot.press("y")
        await pilot.pause()
        await wait_until(pilot, lambda: not screen.run_panel.running and screen.run_panel.has_class("-shown"))
        await pilot.press("r")
        await settle(pilot)
        forked = [m for m in screen.metas if m.branch == "from-app"]
        assert len(forked) == 1 and forked[0].parent_id == CREW_LAST_JSON and forked[0].tasks_done == 2
        log = " ".join(strip.text for strip in screen.run_panel.query_one(RichLog).lines)
        assert "CrewAI is not installed" in " ".join(log.split())
    written = next((json_store / "from-app").glob("*.json"))
    tasks = json.loads(written.read_text())["entities"][0]["tasks"]
    assert tasks[1]["output"]["raw"] == "An outline [with brackets" and tasks[2]["output"] is None
    for path, data in before.items():
        assert path.read_bytes() == data
    assert os.stat(written).st_mode & 0o777 == 0o600


async def test_resume_from_the_app_says_crewai_is_missing(json_store: Path) -> None:
    before = {p: p.read_bytes() for p in json_store.rglob("*.json")}
    app = make_app(str(json_store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await choose(pilot, CREW_FIRST_JSON)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ResumeScreen)
        await settle(pilot)
        await pilot.press("y")
        await pilot.pause()
        await wait_until(pilot, lambda: screen.run_panel.has_class("-failed"))
        log = " ".join(strip.text for strip in screen.run_panel.query_one(RichLog).lines)
        assert "CrewAI is not installed here" in " ".join(log.split())
    assert {p: p.read_bytes() for p in json_store.rglob("*.json")} == before
