"""`make demo` (``crewpoint demo --live``): the app opens on a store where ``f`` and ``e`` do something, the live
run shows as the app opens and goes on for about a minute, and a finished flow's progress reads right."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.reading import browser
from support.waiting import settle, wait_until

from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.cli.demo import start_live_demo
from crewpoint.tui.render import STATE_MARKS
from crewpoint.tui.store_index import SegmentRef

SIZE = (80, 24)


@pytest.fixture
def live_demo(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The live demo's store and its slow run, started as ``crewpoint demo --live`` starts them (the model waits
    ten minutes per call here, so the run is still at its start whenever the test looks). Stopped afterwards."""
    location = str(tmp_path / ".demo" / ".checkpoints")
    process = start_live_demo(location, None, 600.0)
    yield location, process
    if process.poll() is None:
        process.kill()
    process.wait(timeout=30)


def test_the_live_run_lasts_about_a_minute(llm_calls: list[str], tmp_path: Path) -> None:
    from crewpoint.demo import LIVE_DELAY, run_demo

    run_demo(location=str(tmp_path / "store"), from_start=True)
    assert 45 <= len(llm_calls) * LIVE_DELAY <= 90  # each call waits LIVE_DELAY seconds in the live demo


async def test_the_demo_opens_on_a_checkpoint_to_resume_or_fork(tmp_path: Path) -> None:
    from crewpoint.demo import seed_demo_store

    location = str(tmp_path / "seeded")
    seed_demo_store(location)  # what the app shows before the live run's first checkpoint lands
    app = make_app(location, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        chosen = screen.detail.meta
        assert chosen is not None and chosen.id == screen.ckpt_tree.chosen_id
        assert chosen.branch == "what-if" and chosen.tasks_done < chosen.tasks_total
        segment = screen.index.segments[screen.index.segment_of[chosen.id]]
        assert screen.index.state_of(segment) == "interrupted"

        tree = screen.ckpt_tree  # at 80x24 every branch line shows its name and its run's state whole
        for line in range(tree.last_line + 1):
            node = tree.get_node_at_line(line)
            if node is not None and isinstance(node.data, SegmentRef):
                label = tree._label_for(node.data).plain
                mark = STATE_MARKS[tree.index.state_of(tree.index.segments[node.data.key]) or ""][0]
                guides = tree._tree_lines[line]._get_guide_width(tree.guide_depth, tree.show_root)
                needed = guides + len(tree.ICON_NODE) + label.index(mark) + len(mark)
                assert needed <= tree.scrollable_content_region.width, label

        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        fork = pilot.app.screen
        assert isinstance(fork, ForkScreen) and fork.plan.rerun == [3]  # the review is left to run
        await pilot.press("n")
        await wait_until(pilot, lambda: pilot.app.screen is screen)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        await pilot.press("n")


async def test_the_live_run_shows_as_the_app_opens_and_the_cursor_follows_it(
    live_demo: tuple[str, subprocess.Popen[bytes]],
) -> None:
    location, process = live_demo
    app = make_app(location, watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)

        def live_head() -> str | None:
            for segment in screen.index.segments.values():
                run = screen.index.run_of(segment)  # by the run's own record: the live demo's process
                if run is not None and run.pid == process.pid and screen.index.state_of(segment) == "running":
                    return segment.head.id
            return None

        await wait_until(pilot, lambda: live_head() is not None, timeout=120)
        head = screen.index.metas[live_head() or ""]
        # its first checkpoint is taken as the crew starts, before any model call: it is there at once
        assert head.trigger == "crew_kickoff_started" and head.tasks_done == 0
        assert process.poll() is None
        await wait_until(pilot, lambda: screen.ckpt_tree.chosen_id == head.id)  # the cursor follows the live run
        # the chosen checkpoint is the one shown, loaded (until its Chosen message lands the panel still shows the
        # checkpoint chosen before, ready, and f would be about that one or refused while the head loads)
        await wait_until(pilot, lambda: screen.detail.ready and getattr(screen.detail.meta, "id", None) == head.id)

        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        fork = pilot.app.screen
        assert isinstance(fork, ForkScreen) and fork.plan.rerun == [0, 1, 2, 3]
        await pilot.press("n")
        await wait_until(pilot, lambda: pilot.app.screen is screen)
        await pilot.press("e")  # a resume beside the live run: warned, and offered a fork
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ConfirmScreen))
        await pilot.press("n")


async def test_a_finished_flow_reads_its_steps_not_a_count_of_its_methods(tmp_path: Path) -> None:
    from crewpoint.demo import run_demo

    location = str(tmp_path / "store")
    run_demo(location=location)
    app = make_app(location, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tree = browser(pilot).ckpt_tree
        (key,) = tree.index.entities[("flow", "TriageFlow")]
        segment = tree.index.segments[key]
        assert segment.head.tasks_done == 3 and segment.head.tasks_total == 4  # a router skipped one method
        label = tree._label_for(SegmentRef(key)).plain
        assert "✓ done" in label and "3 steps" in label
        assert "3/4" not in label
