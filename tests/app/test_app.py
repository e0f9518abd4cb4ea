"""The terminal app, driven through Pilot on real stores written by real runs (and real child processes)."""

from __future__ import annotations

import asyncio
import gc
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import gated_demo
from support.reading import browser, choose, log_text, screen_text, text_of
from support.stores import make_forked_store
from support.waiting import settle, wait_until
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input, Label, RichLog, Static, TextArea

from crewpoint.providers.base import CheckpointMeta
from crewpoint.screens.browser import BrowserScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.help import HelpScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.store_index import CheckpointRef, SegmentRef, StoreIndex
from crewpoint.tui.widgets.checkpoint_tree import CheckpointTree
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.tabs import TABS
from crewpoint.tui.widgets.task_card import TaskCard

SIZE = (140, 40)


# -- stores ------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def template_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A demo run (4 checkpoints on main) and a fork of its second checkpoint onto ``experiment``."""
    store = tmp_path_factory.mktemp("template") / "store"
    make_forked_store(str(store), inputs={"topic": "checkpoint forks", "audience": "testers"})
    return store


@pytest.fixture
def store(template_store: Path, tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(template_store, target)
    return target


@pytest.fixture(scope="session")
def slow_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store whose crew's offline model takes 0.4 s per call, so a run from it can be caught mid-way."""
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew

    store = tmp_path_factory.mktemp("slow") / "store"
    demo_crew(delay=0.4, checkpoint=CheckpointConfig(location=str(store))).kickoff(inputs=DEMO_INPUTS)
    return store


# -- helpers -------------------------------------------------------------------------------------------------


def palette_choice(pilot: Pilot[None]) -> str:
    """The command the open command palette would run on enter ("" while it has none)."""
    palette = pilot.app.screen
    if not isinstance(palette, CommandPalette):
        return ""
    commands = palette.query_one(CommandList)
    if commands.highlighted is None:
        return ""
    return str(commands.get_option_at_index(commands.highlighted).prompt)


def sorted_metas(screen: BrowserScreen, branch: str) -> list[CheckpointMeta]:
    """The demo crew's checkpoints on ``branch`` in order (the demo's flow writes on ``main`` too)."""
    return sorted((m for m in screen.metas if m.branch == branch and m.entity_kind == "crew"), key=lambda m: m.sequence)


def visible_checkpoints(tree: CheckpointTree) -> list[str]:
    ids = []
    for line in range(tree.last_line + 1):
        node = tree.get_node_at_line(line)
        if node is not None and isinstance(node.data, CheckpointRef):
            ids.append(node.data.id)
    return ids


# -- browsing ------------------------------------------------------------------------------------------------


async def test_choosing_a_checkpoint_shows_its_details(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        main = sorted_metas(screen, "main")
        assert len(main) == 4
        # forks sit under the checkpoint they came from
        fork_segments = screen.index.forks[main[1].id]
        assert [screen.index.segments[k].branch for k in fork_segments] == ["experiment"]

        newest = max(screen.metas, key=lambda m: m.created_at)
        assert newest.branch == "experiment"
        assert screen.ckpt_tree.chosen_id == newest.id  # the newest checkpoint is shown at start
        assert gc.isenabled()  # paused while the app starts, back once the tree is drawn
        await pilot.press("up")
        await settle(pilot)
        chosen = screen.detail.meta
        assert chosen is not None and chosen.id == screen.ckpt_tree.chosen_id == newest.parent_id
        assert screen.detail.info is not None and screen.detail.info.name == "research-crew"
        assert chosen.id in screen_text(pilot)

        await pilot.press("2")  # the Tasks tab
        await settle(pilot)
        cards = list(screen.query(TaskCard))
        assert len(cards) == 4
        assert sum(1 for c in cards if c.task_info.done) == chosen.tasks_done
        assert "will run" in screen_text(pilot)  # the tasks left for a resume


async def test_filter_by_branch_and_clear(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        everything = len(screen.metas)
        await pilot.press("slash")
        assert screen.query_one("#filter", Input).has_focus
        await pilot.press(*"branch:experiment")
        await settle(pilot)
        shown = visible_checkpoints(screen.ckpt_tree)
        experiment = {m.id for m in screen.metas if m.branch == "experiment"}
        assert shown and set(shown) == experiment

        await pilot.press("enter", "escape")
        await settle(pilot)
        assert not screen.query_one("#filter", Input).value
        assert len(screen.ckpt_tree.index.metas) == everything


async def test_editing_an_input_marks_tasks_to_rerun(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        last = sorted_metas(screen, "main")[-1]
        await choose(pilot, last.id)
        await pilot.press("3")  # Inputs
        await settle(pilot)
        inputs = screen.query_one(InputsView)
        assert set(inputs.keys) >= {"topic", "audience"}
        field = next(i for i in inputs.query(Input) if i.value == "engineering leads")
        field.focus()
        field.value = "new hires"
        await settle(pilot)
        assert screen.detail.changed_inputs == {"audience": "new hires"}
        screen.ckpt_tree.focus()
        await pilot.press("2")  # the Tasks tab shows which tasks the edit makes run again
        await settle(pilot)
        rerun = [c.task_info.name for c in screen.query(TaskCard) if c.has_class("-rerun")]
        assert rerun == ["outline", "draft", "review"]  # research does not use {audience}


async def test_editing_an_output_marks_only_dependents(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[-1].id)
        await pilot.press("2")
        await settle(pilot)
        draft = next(c for c in screen.query(TaskCard) if c.task_info.name == "draft")
        area = draft.query_one(TextArea)
        area.text = "A shorter draft."
        await settle(pilot)
        assert screen.detail.edited_outputs == {2: "A shorter draft."}
        assert draft.has_class("-edited")
        rerun = [c.task_info.name for c in screen.query(TaskCard) if c.has_class("-rerun")]
        assert rerun == ["review"]  # review takes the draft as context; research and outline stay
        assert "will re-run" in screen_text(pilot)


# -- runs ----------------------------------------------------------------------------------------------------


async def test_fork_confirm_runs_and_its_checkpoints_appear(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        source = sorted_metas(screen, "main")[-1]
        await choose(pilot, source.id)
        await pilot.press("2")
        await settle(pilot)
        draft = next(c for c in screen.query(TaskCard) if c.task_info.name == "draft")
        draft.query_one(TextArea).text = "Draft [bold]with brackets[/bold] ["
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.press("f")
        await pilot.pause()
        fork_screen = pilot.app.screen
        assert isinstance(fork_screen, ForkScreen)
        assert fork_screen.plan.rerun == [3]
        branch = fork_screen.query_one("#fork-branch", Input)
        assert branch.value.startswith("fork-")
        branch.value = "what-if"
        await pilot.press("y")
        await pilot.pause()
        assert pilot.app.screen is screen
        await wait_until(pilot, lambda: not screen.run_panel.running and screen.run_panel.has_class("-ok"))
        await settle(pilot)
        forked = sorted_metas(screen, "what-if")
        assert len(forked) == 1 and forked[0].parent_id == source.id and forked[0].tasks_done == 4
        assert screen.ckpt_tree.chosen_id == forked[0].id  # the new checkpoint is shown
        assert SegmentRef(screen.index.segment_of[forked[0].id]) in screen.ckpt_tree._by_ref
        assert screen.detail.info is not None
        assert screen.detail.info.tasks[2].output == "Draft [bold]with brackets[/bold] ["


async def test_fork_cancel_runs_nothing(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        before = len(screen.metas)
        await choose(pilot, sorted_metas(screen, "main")[1].id)
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ForkScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.screen is screen
        assert not screen.run_panel.has_class("-shown") and screen.run_panel.process is None
        await pilot.press("r")
        await settle(pilot)
        assert len(screen.metas) == before


async def test_resume_continues_the_run(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        second = sorted_metas(screen, "main")[1]
        await choose(pilot, second.id)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ResumeScreen)
        await settle(pilot)  # the program field is checked
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.run_panel.has_class("-ok") and not screen.run_panel.running)
        await settle(pilot)
        main = sorted_metas(screen, "main")
        assert len(main) == 6  # tasks 3 and 4 ran again from the second checkpoint
        resumed = [m for m in main if m.parent_id == second.id and m.sequence == 3]
        assert len(resumed) == 2
        assert any(key for key in screen.index.forks.get(second.id, []))  # shown nested under its source


async def test_cancelling_a_running_run(slow_template: Path, tmp_path: Path) -> None:
    store = tmp_path / "slow"
    shutil.copytree(slow_template, store)
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        first = sorted_metas(screen, "main")[0]
        await choose(pilot, first.id)
        await pilot.press("f")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ForkScreen)
        pilot.app.screen.query_one("#fork-branch", Input).value = "stopped"
        script = tmp_path / "slow_program.py"  # the program runs the fork: its model takes a minute per call, so
        # the run is still going when x cancels it, however slow the machine
        script.write_text("from crewpoint.demo import demo_crew\ncrew = demo_crew(delay=60)\n", encoding="utf-8")
        pilot.app.screen.query_one("#fork-app Input", Input).value = f"{script}:crew"
        await settle(pilot)
        note = pilot.app.screen.query_one("#fork-app #app-file", Static)
        assert text_of(note) == f"runs {script}"  # the file it will execute, shown before it runs
        await pilot.press("y")
        log = screen.run_panel.query_one(RichLog)
        await wait_until(pilot, lambda: "outline started" in log_text(log), timeout=20)
        assert screen.run_panel.running
        await pilot.press("x")
        await wait_until(pilot, lambda: not screen.run_panel.running, timeout=20)
        await settle(pilot)
        assert screen.run_panel.has_class("-failed")
        assert "cancelled" in text_of(screen.run_panel.query_one("#run-title", Label))
        assert len(sorted_metas(screen, "stopped")) < 3  # it stopped before finishing its three tasks


# -- live --------------------------------------------------------------------------------------------------


async def test_live_refresh_while_another_process_writes(store: Path) -> None:
    app = make_app(str(store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=10)
        screen = browser(pilot)
        await pilot.press("up")  # the user moves: the cursor is theirs
        await pilot.pause()
        selected = screen.ckpt_tree.chosen_id
        before = len(screen.metas)
        writer = subprocess.Popen(  # held after its first task until the test says go on
            gated_demo(store), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            await wait_until(pilot, lambda: len(screen.metas) > before, timeout=30)
            await wait_until(pilot, lambda: bool(screen.index.live_branches()) and "● live" in screen_text(pilot))
            assert writer.poll() is None  # nodes and the live mark appear while the other process still runs
            assert writer.stdin is not None
            writer.stdin.write(b"go\n")
            writer.stdin.close()
            assert await asyncio.to_thread(writer.wait, 60) == 0
            await wait_until(pilot, lambda: len(screen.metas) == before + 7, timeout=15)  # crew 4, flow 3
        finally:
            if writer.poll() is None:
                writer.kill()
                writer.wait()
        assert screen.ckpt_tree.chosen_id == selected  # the selection stays put


async def test_live_refresh_of_a_sqlite_store(tmp_path: Path) -> None:
    from crewpoint.demo import run_demo

    database = tmp_path / "runs.db"
    run_demo(location=str(database), provider="sqlite")
    app = make_app(str(database), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: len(browser(pilot).metas) == 7, timeout=10)  # 4 of the crew, 3 of the flow
        screen = browser(pilot)
        writer = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "crewpoint.tui.cli",
            "demo",
            "--location",
            str(database),
            "--provider",
            "sqlite",
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        assert await writer.wait() == 0
        await wait_until(pilot, lambda: len(screen.metas) == 14, timeout=15)
        assert len(screen.index.entities[("crew", "research-crew")]) == 2  # two runs of the crew, side by side


SLOW_RUN = (
    "import sys\n"
    "from crewpoint.checkpoint.config import CheckpointConfig\n"
    "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
    "demo_crew(delay=1.0, checkpoint=CheckpointConfig(location=sys.argv[1])).kickoff(inputs=DEMO_INPUTS)\n"
)
"""The demo crew at a second a model call: a checkpoint every few seconds."""
HELD_RUN = (
    "import sys\n"
    "from crewpoint.checkpoint.config import CheckpointConfig\n"
    "from crewpoint.demo import DEMO_INPUTS, LIVE_EVENTS, demo_crew\n"
    "config = CheckpointConfig(location=sys.argv[1], on_events=LIVE_EVENTS)\n"
    "demo_crew(delay=600.0, checkpoint=config).kickoff(inputs=DEMO_INPUTS)\n"
)
"""A run that checkpoints as it starts, then waits ten minutes on its model's first call: live for as long as a test
looks, until the test stops it."""


def segment_line(pilot: Pilot[None], lineage: str) -> str:
    """The tree line of the run with this lineage (its label names the run when its branch has several)."""
    return next((line for line in screen_text(pilot).splitlines() if f"run {lineage[:6]}" in line), "")


async def test_run_records_tell_live_crashed_and_interrupted_runs(store: Path) -> None:
    from crewpoint.providers.runs import read_runs

    app = make_app(str(store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=10)
        screen = browser(pilot)
        before = len(screen.metas)
        killed, stopped = (
            subprocess.Popen([sys.executable, "-c", HELD_RUN, str(store)], stderr=subprocess.DEVNULL) for _ in range(2)
        )
        try:
            lineages: dict[int, str] = {}

            def both_started() -> bool:
                lineages.update({r.pid: r.lineage for r in read_runs(str(store)) if r.pid in (killed.pid, stopped.pid)})
                return len(lineages) == 2

            await wait_until(pilot, both_started, timeout=20)
            # each run shows live once its first checkpoint is in the tree
            await wait_until(
                pilot,
                lambda: all("● live" in segment_line(pilot, lineages[p.pid]) for p in (killed, stopped)),
                timeout=20,
            )
            assert killed.poll() is None and stopped.poll() is None
            killed.kill()  # SIGKILL: no status is written; its record still says running, from a dead pid
            stopped.send_signal(signal.SIGINT)  # the run checkpoints and records that it was interrupted
            await asyncio.to_thread(killed.wait, 10)
            await asyncio.to_thread(stopped.wait, 10)
            await wait_until(pilot, lambda: "✗ crashed" in segment_line(pilot, lineages[killed.pid]), timeout=8)
            await wait_until(pilot, lambda: "■ interrupted" in segment_line(pilot, lineages[stopped.pid]), timeout=8)
        finally:
            for process in (killed, stopped):
                if process.poll() is None:
                    process.kill()
        assert len(screen.metas) > before
        # by the clock alone the crashed run would look live a second after its newest checkpoint; its record wins
        crashed = next(s for s in screen.index.segments.values() if s.lineage == lineages[killed.pid])
        soon_after = crashed.head.created_at + 1
        assert crashed.is_live(soon_after)
        assert screen.index.state_of(crashed, soon_after) == "crashed"
        assert "● live" not in screen_text(pilot)


async def test_a_run_record_alone_changes_the_branch_mark(store: Path) -> None:
    import os

    from crewpoint.providers.runs import RunInfo, this_host, write_run

    app = make_app(str(store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=10)
        screen = browser(pilot)
        main = sorted_metas(screen, "main")
        lineage = main[-1].lineage
        checkpoints = len(screen.metas)

        def line() -> str:  # the tree's line of main (the detail's title, right of the tree, may name main too)
            return next(part for ln in screen_text(pilot).splitlines() if "⎇ main" in (part := ln.split("▕")[0]))

        await wait_until(pilot, lambda: "✓ done" in line(), timeout=10)  # (its run record is read after the tree)
        now = time.time()
        beat = RunInfo(
            "resumer", os.getpid(), this_host(), now, now, "running", "main", lineage, "crew", "x", main[-1].id
        )
        write_run(str(store), beat)  # a run resuming main beats: no checkpoint yet
        await wait_until(pilot, lambda: "● live" in line(), timeout=10)
        write_run(str(store), beat.beat(status="failed"))
        await wait_until(pilot, lambda: "✗ failed" in line(), timeout=10)
        assert len(screen.metas) == checkpoints


async def test_branch_marks_follow_run_records() -> None:
    import os

    from textual.app import App, ComposeResult

    from crewpoint.providers.runs import RunInfo, this_host

    now = time.time()

    def chain(lineage: str, count: int, start: float) -> list[CheckpointMeta]:
        metas, parent = [], None
        for n in range(1, count + 1):
            ident = f"{lineage}-{n}"
            metas.append(
                CheckpointMeta(ident, parent, "main", lineage, n, start + n, "task_completed", "crew", "c", n, 4)
            )
            parent = ident
        return metas

    def run(lineage: str, status: str, started: float, checkpoint: str, pid: int = os.getpid()) -> RunInfo:
        return RunInfo(
            f"{lineage}{started}", pid, this_host(), started, now, status, "main", lineage, "crew", "c", checkpoint
        )

    going = chain("going", 2, now - 60)  # an older finished run and a newer one still going share the branch
    dead = chain("dead", 2, now - 5)  # recent, but its process is gone
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    failed = chain("failed", 2, now - 5)
    quiet = chain("quiet", 2, now - 600)  # no record, long silent: no mark
    resumed = chain("resumed", 3, now - 60)  # stopped after 3, then resumed from 2 by a run still going
    again = [CheckpointMeta("resumed-3b", "resumed-2", "main", "resumed", 3, now - 2, "task_completed", "crew", "c")]
    runs = [
        run("going", "finished", now - 100, "going-2"),
        run("going", "running", now - 10, "going-2"),
        run("failed", "failed", now - 10, "failed-2"),
        run("dead", "running", now - 10, "dead-2", pid=int(ended.stdout)),
        run("resumed", "interrupted", now - 60, "resumed-3"),
        run("resumed", "running", now - 4, "resumed-3b"),
    ]
    index = StoreIndex.build([*going, *dead, *failed, *quiet, *resumed, *again], runs=runs)

    class TreeApp(App[None]):
        def compose(self) -> ComposeResult:
            yield CheckpointTree()

    async with TreeApp().run_test(size=SIZE) as pilot:
        tree = pilot.app.query_one(CheckpointTree)
        tree.load(index)
        await pilot.pause()

        def mark(checkpoint_id: str) -> str:
            return tree._label_for(SegmentRef(index.segment_of[checkpoint_id])).plain

        assert "● live" in mark("going-1")
        assert "✗ failed" in mark("failed-1")
        assert "✗ crashed" in mark("dead-1")
        assert not any(word in mark("quiet-1") for word in ("live", "done", "interrupted", "crashed", "failed"))
        assert "■ interrupted" in mark("resumed-1")  # the first run's own segment keeps its record
        assert "● live" in mark("resumed-3b")  # the resume's segment has the newer run


# -- robustness ------------------------------------------------------------------------------------------


async def test_a_damaged_checkpoint_is_marked_and_explained(store: Path) -> None:
    victim = sorted((store / "main").glob("*.json"))[1]
    victim.write_text('{"meta": {"id": "broken", ', encoding="utf-8")
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        damaged = [m for m in screen.metas if m.damaged]
        assert len(damaged) == 1
        await choose(pilot, damaged[0].id)
        assert screen.detail.problem
        text = screen_text(pilot)
        assert "✗" in text and "cannot be opened" in text
        await pilot.press("f")  # a fork from it is refused with a message, not a crash
        await pilot.pause()
        assert pilot.app.screen is screen


async def test_a_newer_schema_checkpoint_is_refused_with_its_reason(store: Path) -> None:
    import json

    victim = sorted((store / "main").glob("*.json"))[0]
    data = json.loads(victim.read_text(encoding="utf-8"))
    data["meta"]["schema_version"] = 99
    data["body"]["schema_version"] = 99
    del data["meta"]["digest"]  # an edited body with its digest kept is altered; without one, it is read
    victim.write_text(json.dumps(data), encoding="utf-8")
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        newer = next(m for m in screen.metas if m.schema_version == 99 or (m.damaged and "newer" in m.damaged))
        await choose(pilot, newer.id)
        assert screen.detail.problem and "newer" in screen.detail.problem


async def test_markup_in_checkpoint_text_renders_literally(tmp_path: Path) -> None:
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.demo import demo_crew

    store = tmp_path / "markup"
    crew = demo_crew(checkpoint=CheckpointConfig(location=str(store)), name="[bold]crew[/bold] [x")
    crew.kickoff(inputs={"topic": "[red]topic[/red] [", "audience": "[link=x]people"})
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[-1].id)
        assert "[bold]crew[/bold] [x" in screen_text(pilot)
        for number, tab in enumerate(TABS, 1):  # every tab renders the checkpoint's text without reading markup
            await pilot.press(str(number))
            await settle(pilot)
            assert screen.detail.active_tab == tab.pane_id
            text = screen_text(pilot)
            for read_as_markup in ("crew [x", "topic ["):  # what the name and the topic would show as markup
                assert read_as_markup not in text, (tab.name, read_as_markup)
        await pilot.press("3")
        await settle(pilot)
        assert "[red]topic[/red] [" in screen_text(pilot)
        await pilot.press("1")
        await settle(pilot)
        assert "[link=x]people" in screen_text(pilot)


# -- keys, palette, graph ------------------------------------------------------------------------------------


async def test_help_palette_graph_and_mark(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        assert "Mark for diff" in screen_text(pilot)
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.screen is screen

        await pilot.press("g")
        await settle(pilot)
        text = screen_text(pilot)
        assert "|\\" in text and "(experiment)" in text and "(main)" in text

        await pilot.press("g")
        main = sorted_metas(screen, "main")
        await choose(pilot, main[0].id)
        await pilot.press("m")
        await choose(pilot, main[-1].id)
        await pilot.press("5")  # Diff
        await settle(pilot)
        assert f"marked {main[0].id[:8]}" in screen_text(pilot)

        await choose(pilot, main[1].id)  # a checkpoint with work left to fork
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"Fork")
        await wait_until(pilot, lambda: "Fork" in palette_choice(pilot))  # the palette has found the command
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen), timeout=5)
        await pilot.press("n")


async def test_ten_thousand_checkpoints_open_quickly() -> None:
    from textual.app import App, ComposeResult

    metas = []
    for lineage in range(10):
        parent = None
        for n in range(1000):
            ident = f"{lineage:02d}{n:030d}"
            metas.append(
                CheckpointMeta(ident, parent, "main", f"run{lineage}", n + 1, 1_700_000_000 + n, "task_completed")
            )
            parent = ident

    class TreeApp(App[None]):
        def compose(self) -> ComposeResult:
            yield CheckpointTree()

    # How long this takes is measured in bench/ (the app on 10,000 checkpoints); here, that the work stays lazy.
    index = StoreIndex.build(metas)
    async with TreeApp().run_test(size=SIZE) as pilot:
        tree = pilot.app.query_one(CheckpointTree)
        tree.load(index)
        await pilot.pause()
        assert len(tree._by_ref) < 1_100  # only the newest branch is filled; the others wait to be opened
        assert tree.reveal(metas[-1].id)
        await pilot.pause()
        assert tree.chosen_id == metas[-1].id
        assert len(tree._by_ref) < 2_200  # revealing one checkpoint fills its own branch, not all ten
