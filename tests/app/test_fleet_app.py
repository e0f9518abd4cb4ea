"""The fleet in the app: the tree marks a fleet run ``running on HOST``, then ``recovering`` once its worker died, as
``list`` says it; the header counts the live workers and their jobs, and follows them. On a store without a fleet
there are no counts, and on a store that is not PostgreSQL the app has no fleet at all (procrastinate never loads).
Real PostgreSQL, real worker processes (one killed with SIGKILL), a real model server on 127.0.0.1."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer
from support.fleet import checkpointed_on, finished_steps, kill_worker, model_calls, start_worker, submitted
from support.processes import user_env
from support.reading import browser, choose, notifications, text_of
from support.waiting import settle, wait_for, wait_until
from test_app_snapshots import fixed_id, fixed_store  # noqa: F401  (the fixed store, a fixture)
from textual.pilot import Pilot
from textual.screen import Screen
from textual.widgets import Button, Checkbox, Input

from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.cli.fleet_engine import abort, ensure_schema, status
from crewpoint.tui.fleet_view import FleetView, ForkJob, Stopped
from crewpoint.tui.store_index import SegmentRef
from crewpoint.tui.widgets.app_field import AppField

SIZE = (150, 40)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.mode = "slow"
        running.delay = 1.5
        yield running


def branch_mark(pilot: Pilot[Any], lineage: str) -> str:
    """The tree's label of the run's newest segment (its branch, its state, its progress)."""
    screen = browser(pilot)
    segments = [s for s in screen.index.segments.values() if s.lineage == lineage]
    if not segments:
        return ""
    newest = max(segments, key=lambda s: (s.head.sequence, s.head.created_at))
    return screen.ckpt_tree._label_for(SegmentRef(newest.key)).plain


def header(pilot: Pilot[Any]) -> str:
    return browser(pilot).title or ""


async def test_the_tree_and_the_header_follow_a_fleet_run_from_running_to_recovering(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    env = submitted(pg_location, tmp_path, server, "t", "u")
    a = start_worker(pg_location, tmp_path, env)
    b: subprocess.Popen[bytes] | None = None
    try:
        lineage = checkpointed_on(pg_location, a)
        app = make_app(pg_location, watch=True)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: f"● running on {socket.gethostname()}" in branch_mark(pilot, lineage))
            await wait_until(pilot, lambda: "1 worker · 1 running · 1 queued" in header(pilot))
            b = start_worker(pg_location, tmp_path, env)  # one run at a time: job 2 keeps it busy
            await wait_until(pilot, lambda: "2 workers · 2 running · 0 queued" in header(pilot), timeout=60)
            os.killpg(a.pid, signal.SIGKILL)
            a.wait(timeout=30)
            await wait_until(pilot, lambda: "↻ recovering" in branch_mark(pilot, lineage), timeout=60)
            assert "1 running · 0 queued · 1 recovering" in header(pilot)
            await wait_until(pilot, lambda: "✓ done" in branch_mark(pilot, lineage), timeout=120)
            await wait_until(pilot, lambda: "0 running · 0 queued" in header(pilot), timeout=60)
    finally:
        kill_worker(a)
        if b is not None:
            kill_worker(b)


async def test_a_postgresql_store_without_a_fleet_shows_no_counts(pg_location: str) -> None:
    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.providers import provider_for

    demo_crew(checkpoint=CheckpointConfig(location=pg_location, provider=provider_for(pg_location))).kickoff(
        inputs=DEMO_INPUTS
    )
    app = make_app(pg_location, watch=False)  # the fleet is read every few seconds all the same
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: bool(screen.metas) and "✓ done" in branch_mark(pilot, screen.metas[0].lineage))
        await settle(pilot)  # the fleet's first read too
        assert screen.feed.fleet is not None and screen.feed.fleet_view is None
        assert "worker" not in header(pilot)
        ensure_schema(pg_location)  # as a worker or a submit meeting the store does: the next read finds a fleet
        await wait_until(pilot, lambda: "0 workers · 0 running · 0 queued" in header(pilot))


APP_ON_A_FOLDER = """
import asyncio, sys
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app

async def main():
    app = make_app(sys.argv[1], watch=False)
    async with app.run_test() as pilot:
        while not app.screen.metas:
            await pilot.pause(0.05)
        await app.workers.wait_for_complete()
        print(app.fleet is None, "procrastinate" in sys.modules, "psycopg" in sys.modules, app.screen.title)

asyncio.run(main())
"""


def test_an_app_on_a_folder_has_no_fleet_and_loads_no_queue(tmp_path: Path) -> None:
    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew

    store = tmp_path / "store"
    demo_crew(checkpoint=CheckpointConfig(location=str(store))).kickoff(inputs=DEMO_INPUTS)
    shown = subprocess.run(
        [sys.executable, "-c", APP_ON_A_FOLDER, str(store)], env=user_env(), capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.split() == ["True", "False", "False", "None"], shown.stdout


async def test_x_on_a_fleet_run_aborts_its_job_and_the_run_ends_interrupted_with_a_checkpoint(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    from crewpoint.providers.runs import read_runs

    server.delay = 3.0  # the run is still going when x is pressed
    env = submitted(pg_location, tmp_path, server)
    worker = start_worker(pg_location, tmp_path, env)
    try:
        lineage = checkpointed_on(pg_location, worker)
        app = make_app(pg_location, watch=True)
        said = notifications(app)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: "● running on" in branch_mark(pilot, lineage))
            screen = browser(pilot)
            newest = max((m for m in screen.metas if m.lineage == lineage), key=lambda m: m.sequence)
            assert screen.ckpt_tree.reveal(newest.id)  # (choose() would wait on the store's watch, which goes on)
            await wait_until(pilot, lambda: screen.ckpt_tree.chosen_id == newest.id)
            await pilot.press("x")
            await wait_until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            assert "of the fleet is running on" in text_of(app.screen.query_one("#confirm-question"))
            await pilot.press("y")
            await wait_until(pilot, lambda: any(s.startswith("Stopping job 1:") for s in said))
            await wait_until(pilot, lambda: status(pg_location)[1][0].status == "aborted")
            await wait_until(pilot, lambda: "■ interrupted" in branch_mark(pilot, lineage), timeout=60)
    finally:
        kill_worker(worker)
    record = next(r for r in read_runs(pg_location) if r.lineage == lineage)
    assert record.status == "interrupted"
    assert record.checkpoint_id is not None
    assert "job 1 stopped: its run was interrupted" in (tmp_path / "worker-0.log").read_text(encoding="utf-8")


async def queue_from_the_dialog(
    location: str,
    checkpoint_id: str,
    key: str,
    dialog: type[Screen[Any]],
    fleet_box: str,
    confirm: str,
    fields: dict[str, str] | None = None,
) -> None:
    """In the app on ``location``, the dialog ``key`` opens on ``checkpoint_id``, its ``fields`` filled and its
    program named, sent to the fleet (the box ``fleet_box``, offered with the one worker up) and confirmed
    (``confirm``): the app says job 2 is queued and runs nothing itself; then the worker finishes job 2."""
    app = make_app(location, watch=False)
    said = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: screen.feed.fleet_view is not None and bool(screen.metas))
        await choose(pilot, checkpoint_id)
        await pilot.press(key)
        await wait_until(pilot, lambda: isinstance(app.screen, dialog))
        box = app.screen.query_one(fleet_box, Checkbox)
        assert "Run on the fleet (1 worker up)" in str(box.label)
        for field, value in (fields or {}).items():
            app.screen.query_one(field, Input).value = value
        app.screen.query_one(AppField).query_one(Input).value = "crew_app.py:crew"
        box.value = True
        app.screen.query_one(confirm, Button).focus()
        await pilot.press("y")
        await wait_until(pilot, lambda: any(s.startswith("Queued job 2:") for s in said), timeout=60)
        assert not screen.run_panel.running  # nothing runs in a local process
    wait_for(lambda: status(location)[1][0].status == "succeeded", "the worker finished job 2", timeout=120)


async def test_resume_on_the_fleet_queues_a_job_a_worker_goes_on_with(
    pg_location: str, tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints
    from crewpoint.providers.runs import read_runs

    server.delay = 0.5
    env = submitted(pg_location, tmp_path, server)
    worker = start_worker(pg_location, tmp_path, env)
    try:
        lineage = checkpointed_on(pg_location, worker)
        assert abort(pg_location, lineage) is not None  # the run stops part-way, with a checkpoint
        wait_for(lambda: any(r.lineage == lineage and r.status == "interrupted" for r in read_runs(pg_location)))
        done_before = finished_steps(pg_location)[lineage]
        assert done_before < 4
        asked_before = model_calls(server)
        monkeypatch.chdir(tmp_path)  # the App field's program is found where the user is
        newest = max((m for m in list_checkpoints(pg_location) if m.lineage == lineage), key=lambda m: m.sequence)
        await queue_from_the_dialog(pg_location, newest.id, "e", ResumeScreen, "#resume-fleet", "#confirm-yes")
    finally:
        kill_worker(worker)
    assert finished_steps(pg_location)[lineage] == 4
    assert len({m.lineage for m in list_checkpoints(pg_location)}) == 1  # the same run went on, no new one
    asked = model_calls(server)
    for step in range(1, done_before + 1):  # the tasks finished before the stop ran once
        assert asked[f"step {step} of t"] == asked_before[f"step {step} of t"] == 1


async def test_fork_on_the_fleet_queues_a_job_a_worker_forks_onto_the_branch_named(
    pg_location: str, tmp_path: Path, server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints

    env = submitted(pg_location, tmp_path, server)
    worker = start_worker(pg_location, tmp_path, env)
    try:
        wait_for(lambda: [j.status for j in status(pg_location)[1]] == ["succeeded"], "the run finished")
        second = next(m for m in list_checkpoints(pg_location) if m.tasks_done == 2)
        monkeypatch.chdir(tmp_path)  # the App field's program is found where the user is
        branch = {"#fork-branch": "on-the-fleet"}
        await queue_from_the_dialog(pg_location, second.id, "f", ForkScreen, "#fork-fleet", "#fork-confirm", branch)
    finally:
        kill_worker(worker)
    forked = [m for m in list_checkpoints(pg_location) if m.branch == "on-the-fleet"]
    assert max(m.tasks_done for m in forked) == 4
    assert min(m.sequence for m in forked) > second.sequence  # it went on from the checkpoint chosen
    asked = model_calls(server)  # the fork asked only the tasks after its checkpoint
    assert asked == {"step 1 of t": 1, "step 2 of t": 1, "step 3 of t": 2, "step 4 of t": 2}, asked


class FixedFleet:
    """A fleet read as fixed words, for a picture that is the same on every run: the words and counts the real
    fleet gives are the tests' above."""

    def __init__(self, view: FleetView) -> None:
        self.view = view

    def read(self) -> FleetView | None:
        return self.view

    def resume(self, lineage: str, program: str, budget: float | None) -> int:
        raise AssertionError("a picture queues nothing")

    def fork(self, fork: ForkJob) -> int:
        raise AssertionError("a picture queues nothing")

    def stop(self, lineage: str) -> Stopped | None:
        raise AssertionError("a picture stops nothing")


def test_snapshot_of_a_fleet_run_in_the_tree_and_the_counts_in_the_header(
    snap_compare: object,
    fixed_store: str,  # noqa: F811  (the fixture imported above)
) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints
    from crewpoint.tui.app import CheckpointApp

    shutil.rmtree(Path(fixed_store) / ".runs")  # no record of its own says more than the fleet of these runs
    lineage = next(m.lineage for m in list_checkpoints(fixed_store) if m.id == fixed_id(10))
    states = {lineage: "running on build-7"}  # (the fixed store's runs share one lineage)
    app = CheckpointApp(fixed_store, follow=False, fleet=FixedFleet(FleetView(states, 2, 1, 3)))

    async def run_before(pilot: Pilot[None]) -> None:
        await wait_until(pilot, lambda: "2 workers · 1 running · 3 queued" in header(pilot))
        await choose(pilot, fixed_id(10))

    assert snap_compare(app, terminal_size=(160, 45), run_before=run_before)  # type: ignore[operator]
