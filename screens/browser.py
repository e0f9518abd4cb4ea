"""The browser: the checkpoint tree on the left, the detail panel on the right, runs streaming below.

The screen composes three helpers that own the state, each tested without a screen: the store feed
(:mod:`crewpoint.tui.store_feed`: what was read and which reads to take), the edits model
(:mod:`crewpoint.tui.edits`) and the run controller (:mod:`crewpoint.tui.run_controller`: what resume, fork and stop
do). Data goes down: the chosen checkpoint's detail is the reactive ``selected``, bound to the detail panel whose tabs
read it; the tabs are the registry's (:mod:`crewpoint.tui.widgets.tabs`). Messages come up from the widgets and the
workers, and the handlers here ask the helpers and draw.
"""

from __future__ import annotations

import time
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Header, Input
from textual.worker import Worker, WorkerState

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.runs import RunInfo
from crewpoint.screens.browser_dialogs import BrowserDialogs
from crewpoint.tui.edits import EditsModel
from crewpoint.tui.feed import StoreReader
from crewpoint.tui.fleet_view import Fleet
from crewpoint.tui.messages import (
    DetailFailed,
    DetailLoaded,
    FleetRead,
    PlanReady,
    RunsRead,
    StoreChanged,
    StoreListed,
)
from crewpoint.tui.read_only import allows
from crewpoint.tui.render import problem_of
from crewpoint.tui.run_controller import RunController
from crewpoint.tui.run_protocol import WRITTEN
from crewpoint.tui.store_feed import StoreFeed
from crewpoint.tui.store_index import STATUS_WORDS, CheckpointRef, StoreIndex, pending_request
from crewpoint.tui.visible import visible
from crewpoint.tui.watcher import follow_store
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.checkpoint_tree import CheckpointTree
from crewpoint.tui.widgets.detail_panel import DetailPanel
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.key_footer import KeyFooter
from crewpoint.tui.widgets.palette import Command, browser_commands
from crewpoint.tui.widgets.run_panel import RunPanel
from crewpoint.tui.widgets.tabs import TABS
from crewpoint.tui.widgets.tasks_view import TasksView
from crewpoint.tui.widgets.tree_pane import TreePane

HEADER_ICON = "≡"
"""The header's menu mark (it opens the command palette): a glyph every common monospace font has, where
textual's own ⭘ shows as an empty box in many (the browser's font under ``serve`` among them)."""

FLEET_EVERY = 3.0
"""Seconds between reads of the fleet: a worker that dies sends nothing, its runs turn ``recovering`` by the clock."""


class BrowserScreen(Screen[None]):
    CSS_PATH = "browser.tcss"
    AUTO_FOCUS = "#checkpoints"

    BINDINGS = [
        Binding("e", "resume", "Resume"),
        Binding("f", "fork", "Fork"),
        Binding("a", "answer", "Answer"),
        Binding("slash", "filter", "Filter", key_display="/"),
        Binding("escape", "back", "Back to the tree; clear the filter", show=False),
        Binding("m", "mark", "Mark for diff", show=False),
        Binding("d", "discard_edits", "Discard this checkpoint's edits", show=False),
        Binding("g", "graph", "Graph", show=False),
        Binding("x", "cancel_run", "Stop the run", show=False),
        Binding("r", "refresh", "Refresh", show=False),
        Binding("left_square_bracket", "tree_width(-1)", "Narrower tree", key_display="[", show=False),
        Binding("right_square_bracket", "tree_width(1)", "Wider tree", key_display="]", show=False),
        Binding("t", "toggle_tree", "Hide or show the tree", show=False),
        *(Binding(str(n), f"show_tab('{t.name}')", f"{t.title} tab", show=False) for n, t in enumerate(TABS, 1)),
    ]

    selected: reactive[Detail | None] = reactive(None, init=False, always_update=True)
    """The chosen checkpoint: loading, loaded or unreadable. The detail panel is bound to it; its tabs read it."""

    def __init__(
        self, location: str, *, follow: bool = True, first_read: StoreReader | None = None, fleet: Fleet | None = None
    ) -> None:
        """``fleet``: the store's fleet, on a PostgreSQL store (its runs' states in the tree, its counts in the
        header, "run on the fleet" in the dialogs)."""
        super().__init__()
        self.location = location
        self.follow = follow
        self.feed = StoreFeed(location, first_read, fleet)
        self.edits = EditsModel()
        self.controller = RunController(location, self.edits)
        self.dialogs = BrowserDialogs(self)
        self._reveal: str | None = None
        self._was_live = False
        self._detail_request = 0
        self._watch_ready_at: float | None = None  # set when the watch is in place, until the catch-up read
        self._whole_read_at = -1.0  # when the newest whole listing shown began

    def compose(self) -> ComposeResult:
        yield Header(icon=HEADER_ICON)
        with Horizontal(id="browser-main"):
            tree = CheckpointTree(id="checkpoints")
            tree.running = self.controller.running  # the runs started here mark their branches live
            yield TreePane(tree, id="browser-left")
            yield DetailPanel(self.edits, id="detail").data_bind(detail=BrowserScreen.selected)
        yield RunPanel(id="run")
        yield KeyFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answer" and not self.chosen_waits() and not self._chosen_holds_request():
            return False  # offered on the checkpoint a run waits at; on an answered request it says who answered
        return allows(self, action)  # read-only hides resume, fork, answer and cancel from the footer

    @property
    def ckpt_tree(self) -> CheckpointTree:
        return self.query_one(CheckpointTree)

    @property
    def detail(self) -> DetailPanel:
        return self.query_one(DetailPanel)

    @property
    def run_panel(self) -> RunPanel:
        return self.query_one(RunPanel)

    @property
    def metas(self) -> list[CheckpointMeta]:
        return self.feed.metas

    @property
    def runs(self) -> list[RunInfo]:
        return self.feed.runs

    @property
    def index(self) -> StoreIndex:
        return self.feed.index

    @property
    def has_unsaved_edits(self) -> bool:
        return bool(self.edits)

    def on_mount(self) -> None:
        self.sub_title = self.location
        self.ckpt_tree.focus()
        self.feed.start(self, self.query_one("#filter", Input).value)
        self.detail.store_changed(self._graph_of_store)
        if self.follow:
            self._follow()
        self.set_interval(2.0, self._tick)
        if self.feed.fleet is not None:
            self.feed.read_fleet(self)
            self.set_interval(FLEET_EVERY, self._read_fleet)

    # -- reading the store (the feed keeps what was read) -------------------------------------------------
    def refresh_store(self) -> None:
        self.feed.read(self, self.query_one("#filter", Input).value)

    @work(exclusive=True, exit_on_error=False, group="watcher")
    async def _follow(self) -> None:
        await follow_store(self.location, self, ready=self._watching)

    def _watching(self) -> None:
        """The watch is in place. The first read began before it, so what was written in between is seen by
        nobody: once that read is shown, the store is read once more."""
        self._watch_ready_at = time.monotonic()
        self._catch_up()

    def _catch_up(self) -> None:
        ready_at = self._watch_ready_at
        if ready_at is not None and 0 <= self._whole_read_at < ready_at:
            self._watch_ready_at = None
            self.refresh_store()

    @on(StoreChanged)
    def _store_changed(self, message: StoreChanged) -> None:
        if message.runs_only:
            self.feed.read_runs(self)
        else:
            self.refresh_store()

    def _read_fleet(self) -> None:
        self.feed.read_fleet(self)

    @on(FleetRead)
    def _fleet_read(self, message: FleetRead) -> None:
        if message.error is not None:
            return  # what was read stands until a read succeeds
        self.feed.fleet_view = message.view
        self.ckpt_tree.set_fleet(message.view)
        self._retitle()

    @on(RunsRead)
    def _runs_read(self, message: RunsRead) -> None:
        self.feed.read_fleet(self)  # a run's record changed: its job may have too
        if self.feed.take_runs(message):
            self.ckpt_tree.tick()
            self._count_waiting()
            self._follow_live_runs()  # a run's record can show it live before its next checkpoint does

    @on(StoreListed)
    def _listed(self, message: StoreListed) -> None:
        feed = self.feed
        if not feed.take_listed(message):
            return
        if not message.partial and message.error is None:
            self._whole_read_at = message.read_at
            self._catch_up()
        self.sub_title = feed.subtitle
        self.call_after_refresh(self.detail.build_tabs)
        if feed.first_read is not None:  # once the tree is drawn, the first read goes on to the run records
            self.ckpt_tree.after_drawn(feed.first_read.shown.set)
            feed.first_read = None
        notice = feed.notice(showing_detail=self.selected is not None)
        if notice is not None:
            self.detail.show_notice(notice)
        elif message.error is None:
            self.detail.retitle()
        if message.error is not None:
            return
        self.ckpt_tree.load(feed.index)
        self._count_waiting()
        self.detail.store_changed(self._graph_of_store)
        if self._reveal is not None and self.ckpt_tree.reveal(self._reveal):
            self._reveal = None
        self._follow_live_runs()
        query = self.query_one("#filter", Input).value.strip()
        if feed.stale_for(query):  # the filter changed while this read went on
            feed.regroup(self, query)

    def _graph_of_store(self) -> tuple[list[CheckpointMeta], str | None]:
        return list(self.feed.index.metas.values()), self.ckpt_tree.chosen_id

    def _follow_live_runs(self) -> None:
        self.query_one(TreePane).follow_live(self.feed.live_segments(self.ckpt_tree.runs_here))

    # -- runs waiting for a person ----------------------------------------------------------------------
    def waiting_runs(self) -> int:
        """How many runs of the store wait for a person's answer (by their run records)."""
        index = self.feed.index
        return sum(1 for segment in index.segments.values() if index.state_of(segment) == "waiting")

    def _count_waiting(self) -> None:
        """The title counts the runs waiting for an answer (none: the app's own title); the footer offers
        Answer while the chosen checkpoint's run waits."""
        self._retitle()
        self.refresh_bindings()

    def _retitle(self) -> None:
        """The title: the app's, the runs waiting for an answer, and the fleet's workers and jobs (on a store with
        a fleet)."""
        waiting = self.waiting_runs()
        parts = [f"◷ {waiting} waiting"] if waiting else []
        fleet = self.feed.fleet_view
        if fleet is not None:
            parts.append(fleet.header())
        self.title = " · ".join([self.app.title, *parts]) if parts else None

    def waiting_refusal(self, checkpoint_id: str, holds_request: bool) -> str | None:
        """Why the checkpoint cannot be answered here (None: it can): it holds no request, its run went on past
        it, or its run's record says it is no longer waiting (answered, running, done ...)."""
        if not holds_request:
            return "This checkpoint waits for no answer."
        index = self.feed.index
        segment = index.segments.get(index.segment_of.get(checkpoint_id, ""))
        if segment is None:
            return None
        if segment.head.id != checkpoint_id:
            return "The run went on past this checkpoint: it waits for no answer here."
        state = index.state_of(segment)
        if state in (None, "waiting"):
            return None
        return f"The run of this checkpoint is {STATUS_WORDS.get(state, state)}: it waits for no answer."

    def _chosen_holds_request(self) -> bool:
        shown = self.selected
        if shown is None or not shown.ready or shown.record is None or shown.meta.id != self.ckpt_tree.chosen_id:
            return False
        return pending_request(shown.record.body) is not None

    def chosen_waits(self) -> bool:
        """Does the chosen checkpoint hold a request its run still waits on?"""
        shown = self.selected
        if shown is None or not shown.ready or shown.record is None or shown.meta.id != self.ckpt_tree.chosen_id:
            return False
        holds = pending_request(shown.record.body) is not None
        return holds and self.waiting_refusal(shown.meta.id, True) is None

    def _tick(self) -> None:
        live = bool(self.ckpt_tree.running) or bool(self.feed.index.live_branches())
        if live or self._was_live:
            self.ckpt_tree.tick()
        self._was_live = live

    # -- details ----------------------------------------------------------------------------------------
    @on(CheckpointTree.Chosen)
    def _chosen(self, message: CheckpointTree.Chosen) -> None:
        if self.selected is None or not self.selected.answers(message.meta, self._detail_request):
            self.open_detail(message.meta)  # unless it is shown, or loading by the newest request

    def open_detail(self, meta: CheckpointMeta) -> None:
        """Show ``meta`` in the detail panel: at once as loading, then as read by the detail worker. Only the
        answer to the newest request is shown."""
        self._detail_request += 1
        request = self._detail_request
        problem = problem_of(meta)
        if problem is not None:
            self.workers.cancel_group(self, "detail")
            self.selected = Detail(meta, problem=problem, request=request)
            return
        self.selected = Detail(meta, request=request)
        index, marked = self.feed.index, self.ckpt_tree.marked
        against = index.metas.get(marked or "") if marked != meta.id else None
        parent = index.metas.get(meta.parent_id or "")
        self.feed.load(self, meta, against or parent, against is not None, request)

    @on(DetailLoaded)
    def _detail_loaded(self, message: DetailLoaded) -> None:
        if message.request != self._detail_request:
            return  # a later choice is loading
        self.selected = Detail(
            message.meta,
            message.record,
            message.info,
            diff_title=message.diff_title,
            diff=message.diff,
            diff_note=message.diff_note,
            request=message.request,
        )
        self._replan()
        self.refresh_bindings()  # Answer shows on a checkpoint a run waits at

    @on(DetailFailed)
    def _detail_failed(self, message: DetailFailed) -> None:
        if message.request == self._detail_request:
            self.selected = Detail(message.meta, problem=message.reason, request=message.request)

    # -- edits (the edits model keeps them) and the fork plan -------------------------------------------
    @on(TasksView.OutputsEdited)
    def _outputs_edited(self, message: TasksView.OutputsEdited) -> None:
        self.edits.keep(message.checkpoint_id, outputs=message.outputs)
        self.edits_changed(message.checkpoint_id)

    @on(InputsView.InputsEdited)
    def _inputs_edited(self, message: InputsView.InputsEdited) -> None:
        self.edits.keep(message.checkpoint_id, inputs=message.changed)
        self.edits_changed(message.checkpoint_id)

    def edits_changed(self, checkpoint_id: str, redraw: bool = False) -> None:
        self.ckpt_tree.set_edited(self.edits.ids)
        shown = self.selected
        if redraw and shown is not None and shown.meta.id == checkpoint_id:
            self.selected = shown  # its tabs show it as saved again
        self.detail.retitle()
        if shown is not None and shown.meta.id == checkpoint_id:
            self._replan()

    def _replan(self) -> None:
        shown = self.selected
        if shown is not None and shown.ready:
            self.feed.plan(self, shown, self.edits)

    @on(PlanReady)
    def _planned(self, message: PlanReady) -> None:
        self.detail.mark_rerun(message.checkpoint_id, message.rerun)

    # -- runs and edits: the dialogs ask, the run controller decides -----------------------------------
    def action_fork(self) -> None:
        self.dialogs.fork()

    def action_resume(self) -> None:
        self.dialogs.resume()

    def action_answer(self) -> None:
        self.dialogs.answer()

    def action_cancel_run(self) -> None:
        self.dialogs.cancel_run()

    def action_discard_edits(self) -> None:
        self.dialogs.discard_edits()

    def _live_run_elsewhere(self) -> RunInfo | None:
        return self.feed.live_run_elsewhere(self.ckpt_tree.chosen_id)

    @on(RunPanel.Progress)
    def _run_progress(self, message: RunPanel.Progress) -> None:
        if message.record.event == WRITTEN:  # on disk now: read it into the tree
            self.refresh_store()

    @on(RunPanel.Finished)
    def _run_finished(self, message: RunPanel.Finished) -> None:
        self.dialogs.run_finished(message)
        if message.checkpoints:
            self._reveal = message.checkpoints[-1]
        focused = self.focused
        if focused is None or self.run_panel in focused.ancestors_with_self:
            self.ckpt_tree.focus()  # back to the tree after a run, unless the user is busy elsewhere
        self.refresh_store()

    # -- other actions ----------------------------------------------------------------------------------
    def action_mark(self) -> None:
        chosen = self.ckpt_tree.chosen_id
        if chosen is None:
            return
        marked = None if self.ckpt_tree.marked == chosen else chosen
        self.ckpt_tree.set_marked(marked)
        self.notify(f"Marked {chosen[:8]}: the Diff tab compares with it." if marked else "Mark cleared.")
        shown = self.selected
        if shown is not None and shown.meta.id in self.feed.index.metas:
            self.open_detail(self.feed.index.metas[shown.meta.id])

    def action_graph(self) -> None:
        if not self.detail.toggle_graph():
            self.ckpt_tree.focus()

    def action_show_tab(self, tab: str) -> None:
        self.detail.activate(f"tab-{tab}")

    @on(BranchGraph.Chosen)
    def _graph_chosen(self, message: BranchGraph.Chosen) -> None:
        self.ckpt_tree.reveal(message.checkpoint_id)

    def action_refresh(self) -> None:
        self.refresh_store()

    def action_filter(self) -> None:
        self.query_one(TreePane).open_filter()

    def action_back(self) -> None:
        """Escape: from an editor or a tab back to the tree; in the tree, clear the filter."""
        pane = self.query_one(TreePane)
        if self.focused is not self.ckpt_tree and self.focused is not pane.filter_field:
            pane.show()
        else:
            pane.clear_filter()
        self.ckpt_tree.focus()

    def action_tree_width(self, step: int) -> None:
        self.query_one(TreePane).widen(step)

    def action_toggle_tree(self) -> None:
        if self.query_one(TreePane).toggle() and self.ckpt_tree.has_focus:
            self.detail.focus_view(self.detail.active_tab)

    @on(CheckpointTree.NodeSelected)
    def _node_selected(self, event: CheckpointTree.NodeSelected[Any]) -> None:
        if isinstance(event.node.data, CheckpointRef) and event.node.data.id == self.ckpt_tree.chosen_id:
            self.action_edit()

    def action_edit(self) -> None:
        self.detail.edit()

    def action_hide_run(self) -> None:
        self.run_panel.hide()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        self.feed.regroup(self, message.value)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.ckpt_tree.focus()

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(
                visible(f"{event.worker.group}: {event.worker.error}"), severity="error", timeout=8, markup=False
            )

    def palette_commands(self) -> list[Command]:
        """What can be done now, for the command palette."""
        tree, panel = self.ckpt_tree, self.run_panel
        run = "going" if panel.running else "shown" if panel.has_class("-shown") else ""
        commands = browser_commands(tree.chosen_id, self.detail.ready, tree.marked, run)
        if self.chosen_waits() and tree.chosen_id is not None:
            answer = (f"Answer {tree.chosen_id[:8]}", "The run waits for a person here: answer it, and it runs on (a)")
            commands.insert(0, (*answer, "answer"))
        return commands
