"""The parts the browser screen composes, each tested without a screen: the edits model, the store feed, the run
controller, the tab registry and the tab views (each redraws from the reactive it is handed); and the app, which
starts no thread until it runs."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest
from support.waiting import settle, wait_until
from textual.app import App, ComposeResult
from textual.widget import Widget
from textual.widgets import TextArea

from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointRecord
from crewpoint.providers.runs import RunInfo, this_host
from crewpoint.screens.browser import BrowserScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.edits import Edits, EditsModel
from crewpoint.tui.feed import read_runs_of, read_store
from crewpoint.tui.messages import RunsRead, StoreListed
from crewpoint.tui.run_controller import RunController
from crewpoint.tui.store_feed import StoreFeed
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.detail_panel import SOURCES, DetailPanel, sources_of
from crewpoint.tui.widgets.detail_state import Detail, EditedDetail, Rerun
from crewpoint.tui.widgets.events_view import EventsView
from crewpoint.tui.widgets.tabs import TABS, tab_of
from crewpoint.tui.widgets.task_card import TaskCard
from crewpoint.tui.widgets.tasks_view import TasksView


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One demo run: four checkpoints of a crew on main."""
    from crewpoint.demo import run_demo

    location = tmp_path_factory.mktemp("parts") / "store"
    run_demo(location=str(location))
    return location


def crew_records(store: Path) -> list[CheckpointRecord]:
    metas = sorted((m for m in ops.list_checkpoints(str(store)) if m.entity_kind == "crew"), key=lambda m: m.sequence)
    return [ops.load(m.location or m.id, str(store)) for m in metas]


def loaded(record: CheckpointRecord) -> Detail:
    return Detail(record.meta, record, ops.describe(record))


# -- the edits model ---------------------------------------------------------------------------------------------


def test_edits_are_kept_per_checkpoint_and_an_empty_edit_forgets_the_checkpoint() -> None:
    edits = EditsModel()
    assert not edits and edits.quit_worry() is None and edits.discard_question("a") is None
    edits.keep("a", inputs={"topic": "x"})
    edits.keep("a", outputs={0: "new text"})
    edits.keep("b", outputs={1: "y"})
    assert edits.ids == {"a", "b"} and "a" in edits
    assert edits.of("a").inputs == {"topic": "x"} and edits.of("a").outputs == {0: "new text"}
    edits.of("a").inputs["topic"] = "changed from outside"
    assert edits.of("a").inputs == {"topic": "x"}, "what the model hands out is a copy"
    assert edits.quit_worry() == "2 checkpoints with unsaved edits (they are lost)"
    assert edits.discard_question("a") == "Forget 1 changed input(s) and 1 edited output(s) of a?"
    edits.keep("b", outputs={})
    assert edits.ids == {"a"}, "a checkpoint whose last edit is undone has no edits"
    assert edits.quit_worry() == "1 checkpoint with unsaved edits (they are lost)"
    assert edits.discard("a") and not edits.discard("a") and not edits


def test_a_fork_runs_with_the_original_inputs_and_the_changed_ones() -> None:
    edits = EditsModel()
    original = {"topic": "checkpoints", "audience": "engineers"}
    assert edits.fork_inputs("a", original) is None, "nothing changed: the fork keeps the checkpoint's own"
    edits.keep("a", inputs={"audience": "testers"})
    assert edits.fork_inputs("a", original) == {"topic": "checkpoints", "audience": "testers"}


# -- the store feed ----------------------------------------------------------------------------------------------


def test_the_feed_takes_the_newest_listing_and_drops_an_older_one(store: Path) -> None:
    feed = StoreFeed(str(store))
    first = read_store(str(store))
    second = read_store(str(store))
    assert feed.take_listed(second)
    assert len(feed.metas) == len(second.metas) >= 4 and feed.index is second.index and feed.error is None
    assert not feed.take_listed(first), "a read that began before the one shown is dropped"
    assert feed.index is second.index
    assert feed.notice(showing_detail=False) == "Choose a checkpoint on the left."
    assert feed.notice(showing_detail=True) is None
    assert "main" in feed.branches


def test_the_feed_keeps_what_it_showed_when_a_later_read_fails(store: Path, tmp_path: Path) -> None:
    feed = StoreFeed(str(store))
    assert feed.take_listed(read_store(str(store)))
    shown = feed.metas
    failed = StoreListed(str(store), error="the store went away", read_at=time.monotonic())
    assert feed.take_listed(failed)
    assert feed.metas is shown and feed.error == "the store went away"
    assert feed.notice(showing_detail=False) is None, "the checkpoints shown stay; the error is not a notice"
    empty = StoreFeed(str(tmp_path / "none"))
    assert empty.take_listed(StoreListed(empty.location, error="no store here", read_at=1.0))
    assert empty.notice(showing_detail=False) == "✗ no store here"


def test_the_feed_shows_a_big_stores_newest_part_only_until_the_whole_arrives(store: Path) -> None:
    feed = StoreFeed(str(store))
    whole = read_store(str(store))
    part = StoreListed(str(store), whole.metas[:1], whole.index, None, read_at=whole.read_at, partial=True)
    assert feed.take_listed(part) and feed.subtitle.endswith("(reading the rest of the store…)")
    assert feed.take_listed(whole) and feed.subtitle == str(store)
    late_part = StoreListed(str(store), whole.metas[:1], whole.index, None, read_at=time.monotonic(), partial=True)
    assert not feed.take_listed(late_part), "the newest part of a store already shown whole is dropped"


def test_the_feed_filters_and_says_when_nothing_matches(store: Path) -> None:
    feed = StoreFeed(str(store))
    assert feed.take_listed(read_store(str(store), "no-such-word-anywhere"))
    assert feed.notice(showing_detail=True) == "No checkpoint matches 'no-such-word-anywhere': Escape clears the filter"
    assert feed.stale_for("") and not feed.stale_for("no-such-word-anywhere")


def test_a_live_run_record_makes_its_segment_live_and_is_the_one_to_stop(store: Path) -> None:
    feed = StoreFeed(str(store))
    assert feed.take_listed(read_store(str(store)))
    assert feed.take_runs(read_runs_of(str(store), time.monotonic()))
    head = max(feed.metas, key=lambda m: m.sequence)
    segment = feed.index.segments[feed.index.segment_of[head.id]]
    assert feed.live_segment_of(head.id, lambda s: False) is None, "the demo run has ended"
    assert feed.live_segment_of(head.id, lambda s: s is segment) is segment, "a run started here is live"
    now = time.time()
    run = RunInfo("r1", os.getpid(), this_host(), now, now, branch=segment.branch, lineage=segment.lineage)
    assert not feed.take_runs(RunsRead([run], read_at=-5.0)), "records read before the listing are dropped"
    assert feed.take_runs(RunsRead([run], read_at=time.monotonic()))
    assert feed.live_segment_of(head.id, lambda s: False) is segment
    assert segment in feed.live_segments(lambda s: False)
    assert feed.live_run_elsewhere(head.id) == run
    assert feed.live_run_elsewhere(None) == run, "the only live run of the store"


# -- the run controller ------------------------------------------------------------------------------------------


def test_a_run_cannot_start_while_one_goes_or_before_the_checkpoint_loaded(store: Path) -> None:
    record = crew_records(store)[1]
    assert RunController.refusal(True, loaded(record)) == "A run is going: wait for it or cancel it with x."
    assert RunController.refusal(False, None) == "Cannot run from here: choose a checkpoint and wait for it to load"
    assert RunController.refusal(False, Detail(record.meta)) is not None, "still loading"
    damaged = Detail(record.meta, problem="its body is cut short")
    assert RunController.refusal(False, damaged) == "Cannot run from here: its body is cut short"
    assert RunController.refusal(False, loaded(record)) is None


def test_a_fork_takes_the_kept_edits_and_leaves_them_to_the_new_branch(store: Path) -> None:
    record = crew_records(store)[-1]
    shown = loaded(record)
    edits = EditsModel()
    controller = RunController(str(store), edits)
    with pytest.raises(ValueError, match="nothing to run"):
        controller.plan_fork(shown)  # every task is done and nothing is edited
    edits.keep(record.meta.id, outputs={0: "An edited first output."})
    plan = controller.plan_fork(shown)
    assert 0 in plan.edited_outputs and plan.rerun, "an edited output reruns the tasks after it"
    request = controller.fork_request(record.meta.id, "what-if", {}, plan.edited_outputs, "", len(plan.rerun))
    assert request.argv[request.argv.index("--branch") + 1] == "what-if"
    assert "1=An edited first output." in request.argv and request.total == len(plan.rerun)
    assert request.title == f"fork {record.meta.id[:8]} → what-if"
    assert record.meta.id not in edits, "the edits live on in the fork"


def test_a_fork_that_names_an_input_the_crew_lacks_is_refused(store: Path) -> None:
    record = crew_records(store)[1]
    edits = EditsModel()
    edits.keep(record.meta.id, inputs={"no_such_input": "x"})
    with pytest.raises(ValueError):
        RunController(str(store), edits).plan_fork(loaded(record))


def test_a_resume_runs_the_tasks_left_and_is_remembered_until_it_ends(store: Path) -> None:
    record = crew_records(store)[1]
    shown = loaded(record)
    assert shown.info is not None
    left = [t for t in shown.info.tasks if not t.done]
    controller = RunController(str(store), EditsModel())
    assert f"{len(left)} task(s) left to run" in controller.resume_question(record.meta, shown.info).plain
    request = controller.resume_request(record.meta, shown.info, "")
    assert request.argv[request.argv.index("resume") + 1] == record.meta.id and "--app" not in request.argv
    assert request.total == len(left) and request.source_id == record.meta.id
    controller.started(request)
    assert controller.running[record.meta.id][1] == record.meta.branch
    assert controller.finished(request, 0, False, "") == (f"{request.title}: finished", "information")
    assert controller.running == {}
    assert controller.finished(request, int(ExitCode.INTERRUPTED), False, "")[1] == "warning"
    assert controller.finished(request, 1, True, "")[1] == "warning", "cancelled here"
    assert controller.finished(request, 1, False, "boom") == (f"{request.title}: boom", "error")


def test_a_run_of_another_machine_is_not_signalled() -> None:
    now = time.time()
    run = RunInfo("r1", os.getpid(), "another-" + this_host(), now, now, lineage="abcdef123", entity_name="writers")
    plan = RunController.stop_plan(run)
    assert plan.refusal is not None and plan.refusal.endswith("runs on another machine: stop it there.")
    assert plan.severity == "information" and "abcdef" in plan.who


def test_this_process_is_not_a_run_and_is_never_signalled() -> None:
    now = time.time()
    run = RunInfo("forged", os.getpid(), this_host(), now, now, lineage="abcdef123")
    plan = RunController.stop_plan(run)
    assert plan.refusal is not None and plan.severity == "error", "a forged record names a process it does not own"


# -- the tab registry --------------------------------------------------------------------------------------------


def test_each_tab_is_one_entry_that_gives_its_pane_its_key_and_its_command() -> None:
    names = [tab.name for tab in TABS]
    assert len(set(names)) == len(names) and len({tab.pane_id for tab in TABS}) == len(TABS)
    assert len(TABS) <= 9, "each tab has a number key, 1 to 9"
    keys = {b.key: b.action for b in BrowserScreen.BINDINGS if not isinstance(b, tuple)}
    for n, tab in enumerate(TABS, 1):
        assert keys[str(n)] == f"show_tab('{tab.name}')"
        assert tab_of(tab.pane_id) is tab
    assert tab_of("tab-nothing") is None


def test_every_tab_view_reads_what_the_panel_holds() -> None:
    for tab in TABS:
        read = sources_of(tab.view())
        assert read, f"the {tab.name} view declares no reactive the panel binds: it would never show anything"
        assert set(read) <= set(SOURCES)


# -- the tab views: data comes down by reactives, nothing calls a view -------------------------------------------


class Holder(App[None]):
    """A bare app holding one widget, so a view is tested without the browser screen."""

    def __init__(self, widget: Widget) -> None:
        super().__init__()
        self.held = widget

    def compose(self) -> ComposeResult:
        yield self.held


def event_nodes(view: EventsView) -> int:
    """How many events the tree holds, nested or not (a message shown instead is no event)."""
    count, todo = 0, list(view.root.children)
    while todo:
        node = todo.pop()
        count += node.data is not None
        todo.extend(node.children)
    return count


def rerun_marks(view: TasksView) -> set[int]:
    return {card.task_info.index for card in view.query(TaskCard) if card.has_class("-rerun")}


async def test_a_view_redraws_from_its_reactive_alone(store: Path) -> None:
    first, last = crew_records(store)[0], crew_records(store)[-1]
    first_events, last_events = len(ops.describe(first).events), len(ops.describe(last).events)
    assert 0 < first_events < last_events
    view = EventsView(id="events")
    async with Holder(view).run_test(size=(100, 30)) as pilot:
        view.detail = loaded(last)
        await wait_until(pilot, lambda: event_nodes(view) == last_events)
        view.detail = loaded(first)
        await wait_until(pilot, lambda: event_nodes(view) == first_events)
        view.detail = Detail(first.meta, problem="its body is cut short")
        await wait_until(pilot, lambda: event_nodes(view) == 0)
        assert [str(node.label) for node in view.root.children] == [
            "This checkpoint cannot be opened: its body is cut short"
        ]


async def test_the_tasks_view_draws_the_edits_and_the_reruns_it_is_handed(store: Path) -> None:
    record = crew_records(store)[-1]
    detail = loaded(record)
    assert detail.info is not None and len(detail.info.tasks) == 4
    view = TasksView(id="tasks")
    async with Holder(view).run_test(size=(100, 40)) as pilot:
        view.rerun = Rerun(record.meta.id, (2, 3))  # the plan can come before the cards are drawn
        view.edited = EditedDetail(detail, Edits(outputs={1: "A tighter outline."}))
        await wait_until(pilot, lambda: len(view.query(TaskCard)) == 4 and bool(rerun_marks(view)))
        cards = {card.task_info.index: card for card in view.query(TaskCard)}
        assert cards[1].query_one(TextArea).text == "A tighter outline." and cards[1].edited
        assert not cards[0].edited
        assert rerun_marks(view) == {2, 3}
        view.rerun = Rerun("another-checkpoint", (0,))
        assert rerun_marks(view) == {2, 3}, "a plan of another checkpoint marks nothing here"
        view.rerun = Rerun(record.meta.id, (3,))
        assert rerun_marks(view) == {3}


async def test_the_panel_hands_each_open_tab_the_chosen_checkpoint_its_edits_and_the_store(store: Path) -> None:
    records = crew_records(store)
    first, last = records[0], records[-1]
    panel = DetailPanel(id="detail")
    panel.edits.keep(last.meta.id, outputs={0: "An edited research note."})
    async with Holder(panel).run_test(size=(120, 40)) as pilot:
        panel.build_tabs("tab-tasks")
        panel.detail = loaded(last)
        await wait_until(pilot, lambda: [card.edited for card in panel.query(TaskCard)] == [True, False, False, False])
        view = panel.query_one(TasksView)
        assert view.checkpoint_id == last.meta.id, "the kept edit of the chosen checkpoint is shown"
        panel.mark_rerun(last.meta.id, [1, 2, 3])
        assert rerun_marks(view) == {1, 2, 3}
        panel.detail = loaded(first)  # what the screen does: nothing calls the view
        await wait_until(pilot, lambda: view.checkpoint_id == first.meta.id and not rerun_marks(view))
        assert not any(card.edited for card in view.query(TaskCard)), "the edits are the other checkpoint's"
        assert panel.query_one(TasksView) is view, "the view is built once and redraws"
        metas = [r.meta for r in records]
        panel.show_graph(metas, first.meta.id)  # before the graph's tab was ever open
        panel.activate("tab-graph")
        await wait_until(pilot, lambda: len(panel.query(BranchGraph)) == 1)
        graph = panel.query_one(BranchGraph)
        await wait_until(pilot, lambda: graph.option_count >= len(metas))
        highlighted = graph.highlighted
        assert highlighted is not None and graph.get_option_at_index(highlighted).id == first.meta.id
        panel.show_graph(metas[:2], metas[1].id)
        assert graph.option_count == 2


# -- the app -----------------------------------------------------------------------------------------------------


def reading_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "crewpoint-read-store"]


async def test_make_app_starts_no_thread_and_the_reader_it_injects_reads_once_the_app_runs(store: Path) -> None:
    before = len(reading_threads())
    app = make_app(str(store), watch=False)
    assert len(reading_threads()) == before, "making the app starts nothing"
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        await wait_until(pilot, lambda: len(screen.feed.metas) >= 4)


async def test_the_chosen_checkpoint_goes_down_to_the_detail_panel(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        await wait_until(pilot, lambda: screen.selected is not None and screen.selected.ready)
        panel = screen.query_one(DetailPanel)
        assert panel.detail is screen.selected and panel.edits is screen.edits
        other = next(m for m in screen.feed.metas if m.id != screen.selected.meta.id)
        screen.open_detail(other)
        assert panel.detail is screen.selected and panel.meta == other, "the panel follows at once"
        await settle(pilot)


async def test_the_panel_the_number_keys_and_the_palette_show_the_registrys_tabs(store: Path) -> None:
    from textual.widgets import TabPane

    app = make_app(str(store), watch=False)
    async with app.run_test(size=(120, 36)) as pilot:
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        await wait_until(pilot, lambda: screen.selected is not None and screen.selected.ready)
        await wait_until(pilot, lambda: len(screen.query(TabPane)) == len(TABS))
        assert [pane.id for pane in screen.query(TabPane)] == [tab.pane_id for tab in TABS]
        actions = {action for _, _, action in screen.palette_commands()}
        assert {f"show_tab('{tab.name}')" for tab in TABS} <= actions
        await pilot.press(str(TABS.index(tab_of("tab-raw") or TABS[0]) + 1))
        await settle(pilot)
        assert screen.detail.active_tab == "tab-raw"
