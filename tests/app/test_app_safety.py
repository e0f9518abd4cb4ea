"""The app never shows or acts on the wrong checkpoint, and never loses an edit without asking."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest
from support.reading import text_of
from test_app import (
    browser,
    choose,
    screen_text,
    settle,
    slow_template,
    sorted_metas,
    store,
    template_store,
    wait_until,
)
from textual.widgets import Input, Static, TextArea

from crewpoint.checkpoint import ops
from crewpoint.providers.runs import RunInfo, write_run
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.store_index import CheckpointRef, SegmentRef
from crewpoint.tui.widgets.app_field import AppField
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.tabs import TABS
from crewpoint.tui.widgets.task_card import TaskCard

__all__ = ["slow_template", "store", "template_store"]  # fixtures shared with test_app

SIZE = (140, 40)


def _title(screen: Any) -> str:
    return str(screen.query_one("#detail-title").render())


async def test_a_burst_of_keys_while_loads_are_slow_never_shows_a_stale_detail(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    real_load = ops.load

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        gate.wait(timeout=30)
        return real_load(*args, **kwargs)

    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        main = sorted_metas(screen, "main")
        await choose(pilot, main[-1].id)
        monkeypatch.setattr(ops, "load", slow_load)
        screen.ckpt_tree.focus()
        try:
            await pilot.press("up", "up", "up", "down")  # across main's 3/4 into the fork and back, loads held
            await pilot.pause()
            assert screen.detail.detail is not None and screen.detail.detail.loading
            assert screen.detail.detail.meta.id == screen.ckpt_tree.chosen_id
            await pilot.press("f")  # while it loads, nothing can be forked from it
            await pilot.pause()
            assert not isinstance(pilot.app.screen, ForkScreen)
            await pilot.press("up", "up", "down", "down", "down")
        finally:
            gate.set()
        await settle(pilot)
        detail = screen.detail.detail
        assert detail is not None and not detail.loading
        assert detail.record is not None and detail.record.meta.id == detail.meta.id
        assert detail.meta.id == screen.ckpt_tree.chosen_id
        assert "loading" not in _title(screen)
        assert detail.meta.id[:12] in _title(screen)

        # onto the checkpoint with the fork: the dialog and the fork are about it and nothing else
        await choose(pilot, main[1].id)
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        fork_screen = pilot.app.screen
        assert isinstance(fork_screen, ForkScreen)
        assert fork_screen.meta.id == main[1].id and fork_screen.plan.rerun == [2, 3]
        await pilot.press("n")


async def test_the_detail_never_stays_loading_after_the_cursor_leaves_and_returns(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate = threading.Event()
    real_load = ops.load

    def slow_load(*args: Any, **kwargs: Any) -> Any:
        gate.wait(timeout=30)
        return real_load(*args, **kwargs)

    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        main = sorted_metas(screen, "main")
        await choose(pilot, main[-1].id)
        monkeypatch.setattr(ops, "load", slow_load)
        tree = screen.ckpt_tree
        tree.focus()
        try:
            await pilot.press("up")  # onto 3/4: it starts loading
            await pilot.pause()
            assert tree.chosen_id == main[2].id
            tree.move_cursor(tree._by_ref[SegmentRef(screen.index.segment_of[main[0].id])])  # onto a branch node
            await pilot.pause()
            assert tree.chosen_id is None
        finally:
            gate.set()
        await settle(pilot)
        tree.move_cursor(tree._by_ref[CheckpointRef(main[2].id)])  # and back onto 3/4
        await settle(pilot)
        detail = screen.detail.detail
        assert detail is not None and detail.meta.id == main[2].id and not detail.loading
        assert detail.info is not None and sum(t.done for t in detail.info.tasks) == 3
        assert "loading" not in _title(screen)


async def test_unsaved_edits_stay_with_their_checkpoint_until_discarded(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        main = sorted_metas(screen, "main")
        await choose(pilot, main[1].id)
        await pilot.press("2")
        await settle(pilot)
        card = next(c for c in screen.query(TaskCard) if c.task_info.index == 0)
        card.query_one(TextArea).text = "my better research"
        await pilot.press("3")
        await settle(pilot)
        field = screen.query_one(InputsView).query(Input).first()
        field.value = "a new audience"
        await settle(pilot)
        assert main[1].id in screen.ckpt_tree.edited
        assert "✎" in screen_text(pilot)

        await choose(pilot, main[3].id)  # away: the other checkpoint shows its own text
        await pilot.press("2")
        await settle(pilot)
        assert all(
            c.query_one(TextArea).text != "my better research" for c in screen.query(TaskCard) if c.task_info.done
        )
        assert screen.detail.edited_outputs == {}

        await choose(pilot, main[1].id)  # and back: the edits are there
        await settle(pilot)
        card = next(c for c in screen.query(TaskCard) if c.task_info.index == 0)
        assert card.query_one(TextArea).text == "my better research" and card.edited
        assert screen.detail.edited_outputs == {0: "my better research"}
        assert list(screen.detail.changed_inputs.values()) == ["a new audience"]
        await pilot.press("3")
        await settle(pilot)
        assert "a new audience" in [f.value for f in screen.query_one(InputsView).query(Input)]

        screen.ckpt_tree.focus()
        await pilot.press("d")  # discarding asks first
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConfirmScreen)
        await pilot.press("n")
        await pilot.pause()
        assert screen.detail.edited_outputs
        await pilot.press("d")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert screen.detail.edited_outputs == {} and screen.detail.changed_inputs == {}
        assert main[1].id not in screen.ckpt_tree.edited


async def test_quitting_with_unsaved_edits_asks_first(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[1].id)
        await pilot.press("2")
        await settle(pilot)
        next(c for c in screen.query(TaskCard) if c.task_info.done).query_one(TextArea).text = "edited"
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConfirmScreen)
        assert "unsaved" in screen_text(pilot)
        await pilot.press("n")
        await pilot.pause()
        assert pilot.app.screen is screen and pilot.app.is_running


async def test_a_fork_with_nothing_to_run_is_refused(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        said: list[str] = []
        monkeypatch.setattr(screen, "notify", lambda message, **_: said.append(message))
        await choose(pilot, sorted_metas(screen, "main")[-1].id)
        await pilot.press("f")
        await pilot.pause()
        assert pilot.app.screen is screen
        assert len(said) == 1 and said[0].startswith("nothing to run: every task is done")


async def test_a_cancelled_resume_from_an_earlier_checkpoint_does_not_mark_the_finished_run(store: Path) -> None:
    main = sorted(
        (m for m in ops.list_checkpoints(str(store)) if m.branch == "main" and m.entity_kind == "crew"),
        key=lambda m: m.sequence,
    )
    now = time.time()
    finished = RunInfo(
        "run-a",
        1,
        "elsewhere",
        main[0].created_at - 1,
        main[-1].created_at,
        "finished",
        "main",
        main[0].lineage,
        "crew",
        "research-crew",
        main[-1].id,
    )
    # a resume from the second checkpoint, cancelled before it wrote anything: its latest is where it started
    cancelled = RunInfo(
        "run-b", 2, "elsewhere", now, now, "interrupted", "main", main[0].lineage, "crew", "research-crew", main[1].id
    )
    write_run(str(store), finished)
    write_run(str(store), cancelled)
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        segment = screen.index.segments[screen.index.segment_of[main[-1].id]]
        assert screen.index.state_of(segment) == "finished"
        text = screen_text(pilot)
        assert "✓ done" in text and "interrupted" not in text


async def test_no_control_character_from_a_checkpoint_reaches_the_screen(tmp_path: Path) -> None:
    import re

    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.demo import demo_crew

    evil = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m"
    location = tmp_path / "evil"
    crew = demo_crew(checkpoint=CheckpointConfig(location=str(location)), name=f"crew{evil}")
    crew.kickoff(inputs={"topic": f"topic{evil}", "audience": f"people{evil}"})
    control = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
    app = make_app(str(location), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[-1].id)
        for tab in (str(n) for n in range(1, len(TABS) + 1)):
            await pilot.press(tab)
            await settle(pilot)
            text = screen_text(pilot)
            assert not control.search(text), (tab, repr(text[:300]))
        await pilot.press("3")
        await settle(pilot)
        assert "topic\\x1b]0;owned\\x07" in screen_text(pilot)
        await pilot.press("m", "g")
        await settle(pilot)
        assert not control.search(screen_text(pilot))


async def test_the_fork_dialog_shows_the_program_it_runs_and_refuses_a_bad_one(store: Path, tmp_path: Path) -> None:
    from crewpoint.tui.edits import EditsModel
    from crewpoint.tui.run_controller import RunController

    app = make_app(str(store), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[1].id)
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        dialog = pilot.app.screen
        field = dialog.query_one("#fork-app Input", Input)
        assert field.value == ""  # crewpoint's own demo module is never suggested as the program to run
        program = tmp_path / "prog.py"
        program.write_text("crew = None\n")
        field.value = f"{program}:crew"
        app_field = dialog.query_one(AppField)
        note = app_field.query_one("#app-file", Static)
        await wait_until(pilot, lambda: app_field.file == str(program))  # shown before it runs
        assert text_of(note) == f"runs {program}"
        field.value = ""
        await wait_until(pilot, lambda: app_field.checked_spec == "")
        assert "rebuilt from the checkpoint" in text_of(note)
        field.value = "missing.py:crew"
        await wait_until(pilot, lambda: app_field.checked_spec == "missing.py:crew")
        assert app_field.error is not None and "no such file" in app_field.error
        assert text_of(note) == f"✗ {app_field.error}" and app_field.has_class("-bad")
        await pilot.press("y")
        await pilot.pause()
        assert pilot.app.screen is dialog  # refused: nothing runs
        assert not screen.run_panel.has_class("-shown")
        await pilot.press("escape")
    controller = RunController("store", EditsModel())
    argv = controller.fork_request("abc", "b", {"topic": "x"}, {1: "text"}, "prog.py:crew", 1).argv
    assert argv[-2:] == ["--app", "prog.py:crew"] and "--set-output" in argv and "2=text" in argv
    assert "--app" not in controller.fork_request("abc", "b", {}, {}, "", 0).argv


# -- layout and keys -------------------------------------------------------------------------------------------


async def test_at_80x24_every_tab_the_essential_keys_and_the_fork_buttons_show(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[1].id)
        text = screen_text(pilot)
        assert TABS[0].title in text
        footer = text.splitlines()[-1]
        for key in ("Resume", "Fork", "Quit", "Help"):
            assert key in footer, footer
        tree_width = screen.ckpt_tree.size.width
        assert 20 <= tree_width <= 40  # a share of the width, not a fixed 56 columns
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert screen.ckpt_tree.size.width > tree_width
        await pilot.press("t")  # the tree hides; the detail takes the width
        await pilot.pause()
        assert screen.detail.size.width == 80
        for number, tab in enumerate(TABS, 1):  # each tab's title shows, scrolled into view by its key if need be
            if tab.title not in screen_text(pilot):
                await pilot.press(str(number))
                await settle(pilot)
                assert screen.detail.active_tab == tab.pane_id and tab.title in screen_text(pilot), tab.title
        await pilot.press("t")
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        await settle(pilot)
        text = screen_text(pilot)
        assert "Fork (y)" in text and "Cancel (n)" in text
        assert "y Fork" in text.splitlines()[-1]  # the dialog's own keys, not the browser's
        assert "Resume" not in text.splitlines()[-1]


async def test_every_key_shown_works(store: Path) -> None:
    from crewpoint.screens.help import HelpScreen

    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        tree = screen.ckpt_tree
        main = sorted_metas(screen, "main")
        await choose(pilot, main[1].id)  # it holds the fork, open under it
        node = tree.cursor_node
        assert node is not None and node.is_expanded
        await pilot.press("left")  # closes the open node
        assert not node.is_expanded
        await pilot.press("left")  # then goes to the parent
        assert isinstance(tree.cursor_node.data, SegmentRef)
        await pilot.press("right")  # into the open branch
        assert tree.chosen_id == main[0].id
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(pilot.app.screen, HelpScreen)
        help_screen = pilot.app.screen
        assert isinstance(help_screen, HelpScreen)
        listed = [key for key, _ in help_screen.keys]
        assert listed.count("ctrl+p") == 1 and "← →" in listed and "shift+space" in listed
        for key in ("e", "f", "/", "escape", "m", "d", "g", "x", "r", "[", "]", "t", "1", "7", "q", "?"):
            assert key in listed, key
        await pilot.press("escape")
        await pilot.pause()
        assert pilot.app.screen is screen

        await choose(pilot, main[1].id)
        tree.focus()
        await pilot.press("enter")  # Enter on a checkpoint edits it
        await settle(pilot)
        focused = pilot.app.focused
        assert isinstance(focused, TextArea)
        await pilot.press("escape")  # and Escape leaves the editor for the tree
        assert pilot.app.focused is tree

        await pilot.press("3")
        await settle(pilot)
        field = screen.query_one(InputsView).query(Input).first()
        before = field.value
        field.focus()
        await pilot.press("!")  # focusing a field does not select its text: the first key adds, not replaces
        assert field.value.startswith(before[:5]) and "!" in field.value and len(field.value) == len(before) + 1


# -- runs and empty stores ---------------------------------------------------------------------------------------


async def test_x_offers_to_stop_a_live_run_started_elsewhere(store: Path) -> None:
    import asyncio
    import signal
    import subprocess
    import sys

    from test_app import HELD_RUN

    from crewpoint.providers.runs import read_runs

    app = make_app(str(store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=10)
        screen = browser(pilot)
        process = subprocess.Popen([sys.executable, "-c", HELD_RUN, str(store)], stderr=subprocess.DEVNULL)
        try:
            await wait_until(pilot, lambda: "● live" in screen_text(pilot), timeout=20)
            # the cursor has followed the live run: x is about it (before, x says no run is going here)
            await wait_until(pilot, lambda: screen.feed.live_run_elsewhere(screen.ckpt_tree.chosen_id) is not None)
            screen.ckpt_tree.focus()
            await pilot.press("x")
            await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
            assert f"pid {process.pid}" in screen_text(pilot)
            await pilot.press("y")
            assert await asyncio.to_thread(process.wait, 20) in (130, -signal.SIGINT)
        finally:
            if process.poll() is None:
                process.kill()
        assert next(r for r in read_runs(str(store)) if r.pid == process.pid).status == "interrupted"
        await wait_until(pilot, lambda: "■ interrupted" in screen_text(pilot), timeout=10)


async def test_a_status_word_filters_the_tree(store: Path) -> None:
    main = sorted(
        (m for m in ops.list_checkpoints(str(store)) if m.branch == "main" and m.entity_kind == "crew"),
        key=lambda m: m.sequence,
    )
    now = time.time()
    write_run(
        str(store),
        RunInfo("run-x", 1, "elsewhere", now, now, "interrupted", "main", main[0].lineage, "crew", "c", main[-1].id),
    )
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await pilot.press("slash", *"interrupted")
        await settle(pilot)
        assert set(screen.index.metas) == {m.id for m in main}
        await pilot.press(*" nothing-like-this")
        await settle(pilot)
        assert not screen.index.metas
        assert "No checkpoint matches" in screen_text(pilot)


async def test_an_empty_folder_says_what_is_there_and_how_to_go_on(tmp_path: Path) -> None:
    folder = tmp_path / "empty"
    folder.mkdir()
    app = make_app(str(folder), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        title = " ".join(_title(browser(pilot)).split())
        assert "is an empty folder" in title and "crewpoint demo" in title


async def test_a_live_run_is_opened_and_followed_until_the_user_moves(store: Path) -> None:
    import asyncio
    import subprocess
    import sys

    from test_app import SLOW_RUN

    app = make_app(str(store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: bool(browser(pilot).metas), timeout=10)
        screen = browser(pilot)
        tree = screen.ckpt_tree
        before = {m.id for m in screen.metas}
        process = subprocess.Popen([sys.executable, "-c", SLOW_RUN, str(store)], stderr=subprocess.DEVNULL)
        try:

            def new_ones() -> list[str]:
                return [m.id for m in sorted(screen.metas, key=lambda m: m.created_at) if m.id not in before]

            await wait_until(pilot, lambda: len(new_ones()) >= 1, timeout=30)
            await wait_until(pilot, lambda: tree.chosen_id == new_ones()[-1], timeout=10)
            await wait_until(pilot, lambda: len(new_ones()) >= 2, timeout=30)
            await wait_until(pilot, lambda: tree.chosen_id == new_ones()[-1], timeout=10)  # followed
            tree.focus()
            await pilot.press("up")  # the user moves: the cursor stays with them
            mine = tree.chosen_id
            await wait_until(pilot, lambda: len(new_ones()) >= 3, timeout=30)
            assert tree.chosen_id == mine
            await wait_until(pilot, lambda: len(new_ones()) >= 4, timeout=30)  # the run's last checkpoint arrived:
            assert tree.chosen_id == mine  # the app had every chance to follow it, and left the cursor alone
        finally:
            process.kill()
            await asyncio.to_thread(process.wait, 10)


async def test_quitting_while_a_run_started_here_goes_asks_first(slow_template: Path, tmp_path: Path) -> None:
    import shutil

    store = tmp_path / "slow"
    shutil.copytree(slow_template, store)
    script = tmp_path / "slow_program.py"
    # a minute per model call: the run is still going after the dialog, however slow the machine; x stops it
    script.write_text("from crewpoint.demo import demo_crew\ncrew = demo_crew(delay=60)\n", encoding="utf-8")
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[0].id)
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        pilot.app.screen.query_one("#fork-app Input", Input).value = f"{script}:crew"
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.run_panel.running, timeout=20)
        screen.ckpt_tree.focus()
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(pilot.app.screen, ConfirmScreen)
        assert "a run started here is going" in screen_text(pilot)
        await pilot.press("n")
        await pilot.pause()
        assert pilot.app.is_running and screen.run_panel.running
        await pilot.press("x")
        await wait_until(pilot, lambda: not screen.run_panel.running, timeout=20)


def test_the_branch_graph_breaks_between_runs_and_marks_every_fork() -> None:
    from crewpoint.providers.base import CheckpointMeta
    from crewpoint.tui.widgets.branch_graph import graph_rows

    def meta(ident: str, parent: str | None, branch: str, at: int) -> CheckpointMeta:
        return CheckpointMeta(ident, parent, branch, "L", at, 1_700_000_000 + at, "task_completed")

    metas = [
        meta("a1", None, "main", 1),
        meta("a2", "a1", "main", 2),
        meta("f1", "a2", "from-head", 3),  # a fork taken from the head of main
        meta("f2", "f1", "from-head", 4),
        meta("b1", None, "main", 5),  # a separate run
        meta("b2", "b1", "main", 6),
    ]
    rows = graph_rows(metas)
    lines = [(row.graph, row.meta.id if row.meta else None) for row in rows]
    at = [ident for _, ident in lines]
    fork_mark = at.index("f1") - 1
    assert lines[fork_mark][1] is None and "\\" in lines[fork_mark][0]
    gap = at.index("b1") - 1
    assert lines[gap] == ("", None)


async def test_the_events_tab_nests_events_under_their_parent_when_they_carry_one() -> None:
    from textual.app import App, ComposeResult

    from crewpoint.tui.widgets.events_view import EventsView

    class EventsApp(App[None]):
        def compose(self) -> ComposeResult:
            yield EventsView()

    nested = [
        {"type": "crew_kickoff_started", "event_id": "a", "timestamp": 1.0},
        {"type": "task_started", "event_id": "b", "parent_id": "a", "timestamp": 2.0, "task_name": "research"},
        {"type": "llm_call_started", "event_id": "c", "parent_id": "b", "timestamp": 3.0},
        {"type": "task_completed", "event_id": "d", "parent_id": "a", "timestamp": 4.0},
    ]
    async with EventsApp().run_test(size=SIZE) as pilot:
        view = pilot.app.query_one(EventsView)
        view.show(nested)
        await pilot.pause()
        top = view.root.children
        assert [n.data["type"] for n in top if n.data] == ["crew_kickoff_started"]
        kids = top[0].children
        assert [n.data["type"] for n in kids if n.data] == ["task_started", "task_completed"]
        assert [n.data["type"] for n in kids[0].children if n.data] == ["llm_call_started"]
        view.show([{k: v for k, v in e.items() if k != "parent_id"} for e in nested])  # no edges: flat, in order
        await pilot.pause()
        assert len([n for n in view.root.children if n.data]) == 4
