"""The app at 80x24, as a newcomer meets it: what a run's end says, a resume beside a live run, what the tree,
the fork dialog, the graph and the toasts show at that size, the filter, the stop dialog, the counts and the
glyphs. Real stores written by real runs; live runs are real child processes. Widget state is read, not the
wrapped screen."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.reading import browser, choose, text_of
from support.stores import make_forked_store
from support.waiting import settle, wait_until
from textual.pilot import Pilot
from textual.widgets import Input, Static, TextArea

from crewpoint.providers.base import CheckpointMeta
from crewpoint.screens.browser import HEADER_ICON, BrowserScreen
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.help import LEGEND
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.cli.demo import live_run_command
from crewpoint.tui.render import STATE_MARKS
from crewpoint.tui.store_index import EntityRef, Segment, SegmentRef, run_label
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.task_card import TaskCard

SIZE = (80, 24)


# -- stores --------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def two_runs_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two runs of the demo crew on ``main`` (and the flow twice), and a fork of the first run's second
    checkpoint onto ``shorter-outline``."""
    store = tmp_path_factory.mktemp("two-runs") / "store"
    make_forked_store(str(store), branch="shorter-outline", runs_after=1)
    return store


@pytest.fixture
def store(two_runs_template: Path, tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(two_runs_template, target)
    return target


@pytest.fixture
def live_run(store: Path) -> Iterator[subprocess.Popen[bytes]]:
    """A run of the demo crew writing into ``store`` now: it checkpoints as it starts, then waits ten minutes on
    its model's first call, so it is live for as long as a test looks at it. Stopped afterwards."""
    process = subprocess.Popen(
        live_run_command(str(store), None, 600.0), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    yield process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


# -- helpers -------------------------------------------------------------------------------------------------


def crew_metas(screen: BrowserScreen, branch: str) -> list[CheckpointMeta]:
    """The crew's checkpoints on ``branch``, oldest first."""
    return sorted(
        (m for m in screen.metas if m.branch == branch and m.entity_kind == "crew"),
        key=lambda m: (m.created_at, m.sequence),
    )


def notifications(pilot: Pilot[None]) -> list[tuple[str, str]]:
    """(severity, message) of every notification the app has given."""
    return [(n.severity, n.message) for n in pilot.app._notifications]


def live_segment(screen: BrowserScreen, pid: int) -> Segment | None:
    """The segment the process ``pid`` is writing, by its run record."""
    for segment in screen.index.segments.values():
        run = screen.index.run_of(segment)
        if run is not None and run.pid == pid and screen.index.state_of(segment) == "running":
            return segment
    return None


# -- 1. one notification per run ------------------------------------------------------------------------------


async def test_a_finished_resume_says_finished_once_and_a_failed_one_says_failed_once(
    store: Path, tmp_path: Path
) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        second = crew_metas(screen, "main")[1]
        await choose(pilot, second.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        await settle(pilot)
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.run_panel.has_class("-ok") and not screen.run_panel.running, 120)
        await settle(pilot)
        assert [severity for severity, _ in notifications(pilot)] == ["information"]
        assert notifications(pilot)[0][1].endswith(": finished")

        broken = tmp_path / "broken_program.py"  # names a crew, but stops with an error when it is loaded
        broken.write_text("raise RuntimeError('the program is broken')\ncrew = None\n", encoding="utf-8")
        await choose(pilot, second.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        pilot.app.screen.query_one("#resume-app Input", Input).value = f"{broken}:crew"
        await settle(pilot)
        await pilot.press("y")
        await wait_until(pilot, lambda: screen.run_panel.has_class("-failed") and not screen.run_panel.running, 120)
        await settle(pilot)
        after = notifications(pilot)[1:]
        assert [severity for severity, _ in after] == ["error"], after
        assert after[0][1].endswith("the program is broken")  # the run's own error, once


# -- 2 and 5. a live run: resume warns, x names it as the tree does ------------------------------------------


async def test_resume_on_a_live_run_offers_a_fork_and_stop_names_the_run_as_the_tree_does(
    store: Path, live_run: subprocess.Popen[bytes]
) -> None:
    app = make_app(str(store), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: live_segment(screen, live_run.pid) is not None, timeout=120)
        segment = live_segment(screen, live_run.pid)
        assert segment is not None
        assert screen.ckpt_tree.reveal(segment.head.id)  # the app follows the store: its watcher never ends
        await wait_until(pilot, lambda: screen.detail.ready and screen.detail.meta.id == segment.head.id)
        runs_before = len(screen.runs)

        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
        warning = pilot.app.screen
        assert isinstance(warning, ConfirmScreen) and warning.title_text == "This run is live"
        assert "second time" in warning.question.plain
        assert not isinstance(warning, ResumeScreen) and screen.run_panel.process is None
        await pilot.press("y")  # fork instead
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        fork = pilot.app.screen
        assert isinstance(fork, ForkScreen) and fork.meta.id == segment.head.id
        assert fork.plan.rerun == [0, 1, 2, 3]  # the live run is at its start: the fork runs every task
        await pilot.press("n")
        await wait_until(pilot, lambda: pilot.app.screen is screen)
        assert screen.run_panel.process is None and len(screen.runs) == runs_before  # nothing was started

        label = screen.ckpt_tree._label_for(SegmentRef(segment.key)).plain
        named = f"run {run_label(segment.lineage)}"
        assert named in label  # two runs share main: the tree names each
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
        stop = pilot.app.screen
        assert isinstance(stop, ConfirmScreen)
        question = stop.question.plain
        assert named in question
        assert "writes a checkpoint" not in question  # SIGINT writes none unless the run's configuration asks
        await pilot.press("n")
        await wait_until(pilot, lambda: pilot.app.screen is screen)
        assert live_run.poll() is None


# -- 3. 80x24 ---------------------------------------------------------------------------------------------------


async def test_at_80x24_every_branch_line_shows_its_name_and_its_run_state(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        tree = screen.ckpt_tree
        for meta in screen.metas:  # open everything, forks too
            tree.expand_to(meta.id)
        await settle(pilot)
        width = tree.scrollable_content_region.width
        shown = 0
        for line in range(tree.last_line + 1):
            node = tree.get_node_at_line(line)
            if node is None or not isinstance(node.data, SegmentRef):
                continue
            segment = tree.index.segments[node.data.key]
            label = tree._label_for(node.data).plain
            state = tree.index.state_of(segment)
            assert state in STATE_MARKS
            mark = STATE_MARKS[state][0]
            guides = tree._tree_lines[line]._get_guide_width(tree.guide_depth, tree.show_root)
            indent = guides + len(tree.ICON_NODE)
            needed = label.index(mark) + len(mark)
            assert label.index(segment.branch) < label.index(mark)
            assert indent + needed <= width, (label, indent, width)
            shown += 1
        assert shown == 5  # main twice, shorter-outline, the flow twice


async def test_at_80x24_the_fork_dialog_shows_what_will_run_and_page_down_scrolls_the_rest(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        source = crew_metas(screen, "main")[-1]  # every task done: each edited output is a row of changes
        await choose(pilot, source.id)
        await pilot.press("2")
        await settle(pilot)
        for card in screen.query(TaskCard):
            if card.task_info.index < 3:
                card.query_one(TextArea).text = f"An edited output of {card.task_info.name}. " * 6
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        await settle(pilot)
        dialog = pilot.app.screen
        assert isinstance(dialog, ForkScreen)
        body = dialog.query_one("#fork-body")
        rerun = dialog.query_one("#fork-rerun", Static)
        assert text_of(rerun).startswith("Will run: ")
        assert body.max_scroll_y > 0  # the dialog holds more than 24 lines show
        assert body.region.contains_region(rerun.region)  # what will run is in view as the dialog opens
        app_field = dialog.query_one("#fork-app")
        assert not body.region.contains_region(app_field.region)
        await pilot.press("pagedown")
        await settle(pilot)
        assert body.scroll_y > 0
        while body.scroll_y < body.max_scroll_y:
            before = body.scroll_y
            await pilot.press("pagedown")
            await settle(pilot)
            assert body.scroll_y > before
        assert body.region.contains_region(app_field.region)
        await pilot.press("pageup")
        await settle(pilot)
        assert body.scroll_y < body.max_scroll_y


async def test_at_80x24_the_graph_draws_one_line_per_row(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        graph = browser(pilot).query_one(BranchGraph)
        assert graph.option_count > 20
        lines = graph.virtual_size.height
        assert lines == graph.option_count  # a wrapped row would take two lines and break the lanes
        widest = max(len(graph.get_option_at_index(i).prompt.plain) for i in range(graph.option_count))
        assert widest > graph.scrollable_content_region.width  # the rows are longer than the panel is wide


# -- 4. the filter ------------------------------------------------------------------------------------------


async def test_clearing_the_filter_keeps_what_was_open_and_the_cursor_and_detail_agree(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        tree = screen.ckpt_tree
        first_main = crew_metas(screen, "main")[0]
        await choose(pilot, first_main.id)  # opens the first run's main
        opened = {ref for ref, node in tree._by_ref.items() if isinstance(ref, SegmentRef) and node.is_expanded}
        assert len(opened) >= 2

        await pilot.press("slash", *"branch:shorter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        forked = crew_metas(screen, "shorter-outline")
        target = forked[0]
        await choose(pilot, target.id)

        await pilot.press("escape")  # in the tree: clears the filter
        await settle(pilot)
        assert not screen.query_one("#filter", Input).value
        assert len(tree.index.metas) == len(screen.metas)
        assert tree.chosen_id == target.id
        assert screen.detail.meta is not None and screen.detail.meta.id == target.id
        still_open = {ref for ref, node in tree._by_ref.items() if isinstance(ref, SegmentRef) and node.is_expanded}
        assert opened <= still_open

        await pilot.press("down")  # the cursor moves on from there, and the detail with it
        await settle(pilot)
        assert tree.chosen_id == forked[1].id
        assert screen.detail.meta is not None and screen.detail.meta.id == forked[1].id


# -- 6. counts ------------------------------------------------------------------------------------------------


async def test_the_entity_line_counts_runs_as_runs_and_branches_as_branches(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = browser(pilot).ckpt_tree
        crew = tree._label_for(EntityRef("crew", "research-crew")).plain
        assert "2 runs · 2 branches · " in crew  # main twice and shorter-outline
        flow = tree._label_for(EntityRef("flow", "TriageFlow")).plain
        assert "2 runs · 1 branch · 6 ckpt" in flow


# -- 7. toasts ------------------------------------------------------------------------------------------------


async def test_a_toast_at_80_columns_reaches_the_right_edge(store: Path) -> None:
    from textual.widgets._toast import Toast, ToastRack

    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("m")  # mark: says so in a toast
        rack = pilot.app.screen.get_child_by_type(ToastRack)
        await wait_until(pilot, lambda: bool(rack.query(Toast)))
        await settle(pilot)
        toast = rack.query(Toast).first()
        assert toast.region.width > 0
        assert toast.region.right == SIZE[0]  # no column of the screen below shows beside it


# -- 8. glyphs --------------------------------------------------------------------------------------------------

SAFE_BLOCKS = [
    (0x20, 0x7E),  # ASCII
    (0x2010, 0x2027),  # general punctuation: dashes, …
    (0x2190, 0x21FF),  # arrows
    (0x2200, 0x22FF),  # mathematical operators (≡)
    (0x2500, 0x257F),  # box drawing
    (0x2580, 0x259F),  # block elements
    (0x25A0, 0x25FF),  # geometric shapes
    (0x2713, 0x2717),  # the check and cross marks (✓ ✗) and ✎'s neighbours, in every monospace font with marks
    (0x270E, 0x270E),  # ✎
]


def _safe(text: str) -> bool:
    return all(any(low <= ord(c) <= high for low, high in SAFE_BLOCKS) for c in text)


async def test_marks_and_the_header_icon_use_glyphs_common_monospace_fonts_have(store: Path) -> None:
    for mark, _style in STATE_MARKS.values():
        assert _safe(mark), mark
    for mark, _meaning in LEGEND:
        assert _safe(mark), mark
    assert _safe(HEADER_ICON)
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        from textual.widgets._header import HeaderIcon

        assert browser(pilot).query_one(HeaderIcon).icon == HEADER_ICON


async def test_an_interrupted_branch_is_marked_with_a_square(tmp_path: Path) -> None:
    from support.stores import make_store

    make_store(str(tmp_path / "stopped"), stop_after=2)
    app = make_app(str(tmp_path / "stopped"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = browser(pilot).ckpt_tree
        (segment,) = tree.index.segments.values()
        assert tree.index.state_of(segment) == "interrupted"
        label = tree._label_for(SegmentRef(segment.key)).plain
        assert "■ interrupted" in label and _safe("■ interrupted")
