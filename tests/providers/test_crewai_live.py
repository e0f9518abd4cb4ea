"""A CrewAI checkpoint written while its JSON store is watched shows once whole, whatever the timing: in a branch
folder the watcher never saw made (moved in whole, or made and written before its own watch was in place), or
written in place in two steps whose second leaves its modification time where the first put it."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from crewai_fixtures import json_store as copy_json_store
from support.reading import browser
from support.waiting import wait_until

from crewpoint.providers import provider_for
from crewpoint.providers.base import StoreChange
from crewpoint.tui.app import make_app

SIZE = (140, 40)
CREW_LAST = "20261130T150415_1a8435d1"
NEW_ID = "20261130T160000_0badc0de"
NEXT_ID = "20261130T160001_0c0ffee0"


@pytest.fixture
def json_store(tmp_path: Path) -> Path:
    return copy_json_store(tmp_path / "crewai-json")


@pytest.fixture(autouse=True)
def no_crewai(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CREWPOINT_CREWAI_PYTHON", "/nonexistent/python-with-crewai")


def checkpoint_text(store: Path, parent: str, branch: str) -> str:
    """A checkpoint as CrewAI would write next: the crew's last one, on ``branch`` after ``parent``."""
    dump = json.loads(next(store.rglob(f"{CREW_LAST}_p-*.json")).read_text())
    dump["parent_id"], dump["branch"] = parent, branch
    return json.dumps(dump)


async def next_change(changes: AsyncIterator[StoreChange]) -> StoreChange | None:
    """The next change the watch reports; None when none comes (the timeout only guards a hang: the watch is
    then cancelled and ends)."""
    try:
        return await asyncio.wait_for(anext(changes), timeout=30)
    except (TimeoutError, StopAsyncIteration):
        return None


@pytest.mark.parametrize("branch", ["live", "fork/20261130T150415_1a8435d1_c0ffee"])
def test_a_branch_folder_moved_into_a_watched_store_is_reported_and_listed_whole(
    json_store: Path, tmp_path: Path, branch: str
) -> None:
    """No file event ever comes from inside a folder moved in: the folder itself must count, and the watch must
    follow it, so the checkpoint written there next is reported too."""
    provider, location = provider_for(str(json_store)), str(json_store)
    outside = tmp_path / "made-elsewhere"
    folder = outside.joinpath(*branch.split("/"))
    folder.mkdir(parents=True)
    (folder / f"{NEW_ID}_p-{CREW_LAST}.json").write_text(checkpoint_text(json_store, CREW_LAST, branch))
    moved = outside / branch.split("/")[0]
    target = json_store / branch.split("/")[0]

    async def watch() -> tuple[StoreChange | None, list[str], StoreChange | None]:
        stop, ready = asyncio.Event(), asyncio.Event()
        changes = provider.watch(location, stop, debounce_ms=50, ready=ready.set)
        waiter = asyncio.ensure_future(next_change(changes))
        await asyncio.wait({waiter, asyncio.ensure_future(ready.wait())}, return_when=asyncio.FIRST_COMPLETED)
        assert ready.is_set(), "the watch ended before it was in place"
        if target.exists():  # fork/ is there already: move the new fork folder into it
            os.rename(moved / branch.split("/")[1], target / branch.split("/")[1])
        else:
            os.rename(moved, target)
        first = await waiter
        listed = [m.id for m in provider.list(location) if not m.damaged and m.branch == branch]
        (json_store / branch / f"{NEXT_ID}_p-{NEW_ID}.json").write_text(checkpoint_text(json_store, NEW_ID, branch))
        second = await next_change(changes)
        stop.set()
        await changes.aclose()  # type: ignore[attr-defined]
        return first, listed, second

    first, listed, second = asyncio.run(watch())
    assert first is not None and not first.runs_only, "the folder moved in was not reported"
    assert listed == [NEW_ID]
    assert second is not None, "a checkpoint written in the new folder afterwards was not reported"
    fresh = {m.id: m for m in provider.list(location)}
    assert fresh[NEXT_ID].parent_id == NEW_ID and fresh[NEXT_ID].branch == branch and not fresh[NEXT_ID].damaged


def test_a_branch_folder_moved_out_of_a_watched_store_is_reported(json_store: Path, tmp_path: Path) -> None:
    """No file event comes for the checkpoints of a folder moved out whole: the folder itself must count."""
    provider, location = provider_for(str(json_store)), str(json_store)
    branches = {m.branch for m in provider.list(location)}
    assert "main" in branches and len(branches) > 1
    gone = {m.id for m in provider.list(location) if m.branch == "main"}

    async def watch() -> StoreChange | None:
        stop, ready = asyncio.Event(), asyncio.Event()
        changes = provider.watch(location, stop, debounce_ms=50, ready=ready.set)
        waiter = asyncio.ensure_future(next_change(changes))
        await asyncio.wait({waiter, asyncio.ensure_future(ready.wait())}, return_when=asyncio.FIRST_COMPLETED)
        assert ready.is_set(), "the watch ended before it was in place"
        os.rename(json_store / "main", tmp_path / "moved-away")
        change = await waiter
        stop.set()
        await changes.aclose()  # type: ignore[attr-defined]
        return change

    change = asyncio.run(watch())
    assert change is not None and not change.runs_only, "the folder moved out was not reported"
    assert gone and not gone & {m.id for m in provider.list(location)}


@pytest.mark.parametrize("first_part", ["blank", "half"])
async def test_a_checkpoint_written_in_place_in_two_steps_shows_once_whole(json_store: Path, first_part: str) -> None:
    """The app reads the file between the two steps (blank or torn: damaged), then the second step leaves its
    modification time (and, for blank, its size) where the first put it: what the app shows must still be whole."""
    text = checkpoint_text(json_store, CREW_LAST, "main")
    target = json_store / "main" / f"{NEW_ID}_p-{CREW_LAST}.json"
    app = make_app(str(json_store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(browser(pilot).metas) == 13)
        screen = browser(pilot)
        target.write_text(" " * len(text) if first_part == "blank" else text[: len(text) // 2])
        before = os.stat(target).st_mtime_ns
        await wait_until(pilot, lambda: any(m.id == NEW_ID and m.damaged for m in screen.metas))
        with target.open("r+") as handle:  # in place, as CrewAI writes
            handle.write(text)
        os.utime(target, ns=(before, before))  # a coarse clock: the time did not move
        await wait_until(pilot, lambda: any(m.id == NEW_ID and not m.damaged for m in screen.metas))
        shown = [m for m in screen.metas if m.id == NEW_ID]
        assert len(shown) == 1 and shown[0].branch == "main" and shown[0].parent_id == CREW_LAST
        assert shown[0].tasks_done == next(m for m in screen.metas if m.id == CREW_LAST).tasks_done
