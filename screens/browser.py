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
from concurrent.futures import Future
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Header, Input, TabbedContent
from textual.worker import Worker, WorkerState, get_current_worker

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.program import suggested_app
from crewpoint.entities import kind_of
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord
from crewpoint.providers.runs import RunInfo
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkRequest, ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui.edits import EditsModel
from crewpoint.tui.feed import StoreReader, read_runs_of, read_store
from crewpoint.tui.messages import DetailFailed, DetailLoaded, PlanReady, RunsRead, StoreChanged, StoreListed
from crewpoint.tui.read_only import allows
from crewpoint.tui.run_controller import RunController, RunRequest
from crewpoint.tui.run_protocol import WRITTEN
from crewpoint.tui.store_feed import StoreFeed
from crewpoint.tui.visible import visible
from crewpoint.tui.watcher import follow_store
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.checkpoint_tree import CheckpointTree, problem_of
from crewpoint.tui.widgets.detail_panel import DetailPanel
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.key_footer import KeyFooter
from crewpoint.tui.widgets.run_panel import RunPanel
from crewpoint.tui.widgets.store_index import CheckpointRef, Segment, StoreIndex
from crewpoint.tui.widgets.tabs import FIRST, TABS
from crewpoint.tui.widgets.tasks_view import TasksView

HEADER_ICON = "≡"
"""The header's menu mark (it opens the command palette): a glyph every common monospace font has, where
textual's own ⭘ shows as an empty box in many (the browser's font under ``serve`` among them)."""


class BrowserScreen(Screen[None]):
    CSS_PATH = "browser.tcss"
    AUTO_FOCUS = "#checkpoints"

    BINDINGS = [
        Binding("e", "resume", "Resume"),
        Binding("f", "fork", "Fork"),
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

    TREE_WIDTHS = (25, 40, 55, 70)
    """Shares of the width the tree can take (percent), switched with [ and ]."""

    selected: reactive[Detail | None] = reactive(None, init=False, always_update=True)
    """The chosen checkpoint: loading, loaded or unreadable. The detail panel is bound to it; its tabs read it."""

    def __init__(self, location: str, *, follow: bool = True, first_read: StoreReader | None = None) -> None:
        super().__init__()
        self.location = location
        self.follow = follow
        self.feed = StoreFeed(location, first_read)
        self.edits = EditsModel()
        self.controller = RunController(location, self.edits)
        self._reveal: str | None = None
        self._graph_stale = True
        self._previous_tab = FIRST
        self._was_live = False
        self._detail_request = 0
        self._tree_width = 1
        self._auto_cursor: str | None = None
        """Where the app last put the cursor itself; while it is there, the cursor follows live runs."""

    def compose(self) -> ComposeResult:
        yield Header(icon=HEADER_ICON)
        with Horizontal(id="browser-main"):
            with Vertical(id="browser-left"):
                yield Input(placeholder="filter: words, branch:NAME, trigger:NAME", id="filter")
                tree = CheckpointTree(id="checkpoints")
                tree.running = self.controller.running  # the runs started here mark their branches live
                yield tree
            yield DetailPanel(self.edits, id="detail").data_bind(detail=BrowserScreen.selected)
        yield RunPanel(id="run")
        yield KeyFooter()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return allows(self, action)  # read-only hides resume, fork and cancel from the footer

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
        first = self.feed.first_read
        if first is not None:

            def post_early(done: Future[StoreListed | None]) -> None:
                early = done.result()
                if early is not None:
                    self.post_message(early)

            first.early.add_done_callback(post_early)
            first.listed.add_done_callback(lambda done: self.post_message(done.result()))
            first.runs.add_done_callback(lambda done: self.post_message(done.result()))
        else:
            self.refresh_store()
        if self.follow:
            self._follow()
        self.set_interval(2.0, self._tick)

    # -- reading the store (the feed keeps what was read) -------------------------------------------------
    def refresh_store(self) -> None:
        self._list_store(self.location, self.query_one("#filter", Input).value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="list")
    def _list_store(self, location: str, query: str) -> None:
        listed = read_store(location, query)
        if get_current_worker().is_cancelled:
            return
        self.post_message(listed)
        if listed.error is None:
            runs = read_runs_of(location, listed.read_at)
            if not get_current_worker().is_cancelled:
                self.post_message(runs)

    @work(thread=True, exclusive=True, exit_on_error=False, group="index")
    def _reindex(self, metas: list[CheckpointMeta], runs: list[RunInfo], query: str, read_at: float) -> None:
        index = StoreIndex.build(metas, query, runs)
        if not get_current_worker().is_cancelled:
            self.post_message(StoreListed(self.location, metas, index, runs, read_at=read_at))

    @work(exclusive=True, exit_on_error=False, group="watcher")
    async def _follow(self) -> None:
        await follow_store(self.location, self)

    @on(StoreChanged)
    def _store_changed(self, message: StoreChanged) -> None:
        if message.runs_only:
            self._read_runs(self.location)
        else:
            self.refresh_store()

    @work(thread=True, exclusive=True, exit_on_error=False, group="runs")
    def _read_runs(self, location: str) -> None:
        runs = read_runs_of(location, time.monotonic())
        if not get_current_worker().is_cancelled:
            self.post_message(runs)

    @on(RunsRead)
    def _runs_read(self, message: RunsRead) -> None:
        if self.feed.take_runs(message):
            self.ckpt_tree.tick()
            self._follow_live_runs()  # a run's record can show it live before its next checkpoint does

    @on(StoreListed)
    def _listed(self, message: StoreListed) -> None:
        feed = self.feed
        if not feed.take_listed(message):
            return
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
        self._graph_stale = True
        if self.detail.active_tab == "tab-graph":
            self._show_graph()
        if self._reveal is not None and self.ckpt_tree.reveal(self._reveal):
            self._reveal = None
        self._follow_live_runs()
        query = self.query_one("#filter", Input).value.strip()
        if feed.stale_for(query):  # the filter changed while this read went on
            self._reindex(feed.metas, feed.runs, query, feed.read_at)

    def _follow_live_runs(self) -> None:
        """Open every live run's branch; while the cursor stays where the app put it, move it onto the newest
        checkpoint of a live run as checkpoints arrive."""
        tree = self.ckpt_tree
        live = self.feed.live_segments(tree.runs_here)
        for segment in live:
            tree.expand_to(segment.head.id)
        if self._auto_cursor is None:
            self._auto_cursor = tree.chosen_id
        if not live or tree.chosen_id != self._auto_cursor:
            return  # the user moved: leave the cursor with them
        newest = max(live, key=lambda s: (s.head.created_at, s.head.sequence)).head
        if newest.id != tree.chosen_id and tree.reveal(newest.id):
            self._auto_cursor = newest.id

    def _tick(self) -> None:
        live = bool(self.ckpt_tree.running) or bool(self.feed.index.live_branches())
        if live or self._was_live:
            self.ckpt_tree.tick()
        self._was_live = live

    # -- details ----------------------------------------------------------------------------------------
    @on(CheckpointTree.Chosen)
    def _chosen(self, message: CheckpointTree.Chosen) -> None:
        current = self.selected
        if (
            current is not None
            and current.meta.id == message.meta.id
            and current.meta.size == message.meta.size
            and current.request == self._detail_request
        ):
            return  # already shown, or loading by the newest request
        self.open_detail(message.meta)

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
        self._load_detail(meta, against or parent, against is not None, request)

    @work(thread=True, exclusive=True, exit_on_error=False, group="detail")
    def _load_detail(self, meta: CheckpointMeta, base: CheckpointMeta | None, marked: bool, request: int) -> None:
        try:
            record = ops.load(meta.location or meta.id, self.location)
            info = ops.describe(record)
        except CheckpointError as exc:
            self.post_message(DetailFailed(meta, str(exc), request))
            return
        except Exception as exc:  # a body the describer does not understand is shown as damaged, not raised
            self.post_message(DetailFailed(meta, f"cannot read this checkpoint: {exc}", request))
            return
        title, entries, note = "", None, ""
        if base is None:
            note = "the first checkpoint of its run: press m on another checkpoint to compare with it"
        else:
            title = f"{'marked' if marked else 'parent'} {base.id[:8]} (⎇ {base.branch}) → this checkpoint"
            try:
                entries = ops.diff(ops.load(base.location or base.id, self.location), record)
            except (CheckpointError, ValueError) as exc:
                note = f"cannot compare with {base.id[:8]}: {exc}"
        if not get_current_worker().is_cancelled:
            self.post_message(DetailLoaded(meta, record, info, title, entries, note, request))

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

    @on(DetailFailed)
    def _detail_failed(self, message: DetailFailed) -> None:
        if message.request == self._detail_request:
            self.selected = Detail(message.meta, problem=message.reason, request=message.request)

    # -- edits (the edits model keeps them) and the fork plan -------------------------------------------
    @on(TasksView.OutputsEdited)
    def _outputs_edited(self, message: TasksView.OutputsEdited) -> None:
        self.edits.keep(message.checkpoint_id, outputs=message.outputs)
        self._edits_changed(message.checkpoint_id)

    @on(InputsView.InputsEdited)
    def _inputs_edited(self, message: InputsView.InputsEdited) -> None:
        self.edits.keep(message.checkpoint_id, inputs=message.changed)
        self._edits_changed(message.checkpoint_id)

    def _edits_changed(self, checkpoint_id: str, redraw: bool = False) -> None:
        self.ckpt_tree.set_edited(self.edits.ids)
        shown = self.selected
        if redraw and shown is not None and shown.meta.id == checkpoint_id:
            self.selected = shown  # its tabs show it as saved again
        self.detail.retitle()
        if shown is not None and shown.meta.id == checkpoint_id:
            self._replan()

    def _replan(self) -> None:
        shown = self.selected
        if shown is not None and shown.record is not None and shown.info is not None and shown.ready:
            edits = self.edits.of(shown.meta.id)
            inputs = self.edits.fork_inputs(shown.meta.id, shown.info.inputs)
            self._plan(shown.record, inputs, edits.outputs or None)

    @work(thread=True, exclusive=True, exit_on_error=False, group="plan")
    def _plan(self, record: CheckpointRecord, inputs: dict[str, Any] | None, outputs: dict[int, str] | None) -> None:
        try:
            plan = ops.plan_fork(record, inputs, outputs)
        except (CheckpointError, ValueError) as exc:
            self.post_message(PlanReady(record.meta.id, [], str(exc)))
            return
        if not get_current_worker().is_cancelled:
            self.post_message(PlanReady(record.meta.id, plan.rerun))

    @on(PlanReady)
    def _planned(self, message: PlanReady) -> None:
        self.detail.mark_rerun(message.checkpoint_id, message.rerun)

    def action_discard_edits(self) -> None:
        meta = self.selected.meta if self.selected is not None else None
        question = self.edits.discard_question(meta.id) if meta is not None else None
        if meta is None or question is None:
            self.notify("No unsaved edits on this checkpoint.")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.edits.discard(meta.id)
                self._edits_changed(meta.id, redraw=True)

        self.app.push_screen(ConfirmScreen("Discard edits", Text(question), yes="Discard"), answered)

    # -- runs (the run controller decides; the screen asks and shows) -----------------------------------
    def _can_start(self) -> bool:
        refusal = self.controller.refusal(self.run_panel.running, self.selected)
        if refusal is not None:
            self.notify(refusal, severity="warning", markup=False)
        return refusal is None

    def action_fork(self) -> None:
        if not self._can_start():
            return
        shown = self.selected  # the dialog and the fork are about this checkpoint, whatever loads next
        assert shown is not None and shown.record is not None and shown.info is not None
        try:
            plan = self.controller.plan_fork(shown)
        except (CheckpointError, ValueError) as exc:
            self.notify(visible(str(exc)), severity="error", markup=False)
            return
        screen = ForkScreen(shown.meta, shown.info, plan, taken=self.feed.branches, app=suggested_app(shown.record))
        self.app.push_screen(screen, self._fork_confirmed)

    def _fork_confirmed(self, request: ForkRequest | None) -> None:
        if request is None:
            return
        r = request
        self._start(self.controller.fork_request(r.source_id, r.branch, r.inputs, r.outputs, r.app, len(r.rerun)))
        self._edits_changed(r.source_id, redraw=True)  # the edits live on in the new branch

    def action_resume(self) -> None:
        if not self._can_start():
            return
        shown = self.selected
        assert shown is not None and shown.record is not None and shown.info is not None
        meta, info = shown.meta, shown.info
        live = self._live_segment_of(meta.id)
        if live is not None:  # a resume beside a live run would run the same tasks a second time: offer a fork

            def fork_instead(fork: bool | None) -> None:
                if fork:
                    self.action_fork()

            question = self.controller.live_question(meta, live, self.feed.index.run_of(live))
            self.app.push_screen(ConfirmScreen("This run is live", question, yes="Fork instead"), fork_instead)
            return

        def answered(app: str | None) -> None:
            if app is not None:
                self._start(self.controller.resume_request(meta, info, app))

        question = self.controller.resume_question(meta, info)
        self.app.push_screen(ResumeScreen(question, suggested_app(shown.record)), answered)

    def _live_segment_of(self, checkpoint_id: str) -> Segment | None:
        return self.feed.live_segment_of(checkpoint_id, self.ckpt_tree.runs_here)

    def _start(self, request: RunRequest) -> None:
        self.controller.started(request)
        self.run_panel.start(request)

    def action_cancel_run(self) -> None:
        """Stop the run this app started; else offer to stop a live run started elsewhere (on this machine)."""
        if self.run_panel.cancel():
            return
        run = self._live_run_elsewhere()
        if run is None:
            self.notify("No run is going.", severity="information")
            return
        plan = self.controller.stop_plan(run)
        if plan.refusal is not None:
            self.notify(plan.refusal, severity=plan.severity, markup=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                said, failed = self.controller.stop(plan)
                self.notify(said, severity="error" if failed else "information", markup=False)

        self.app.push_screen(ConfirmScreen("Stop a run started elsewhere", plan.question, yes="Stop it"), answered)

    def _live_run_elsewhere(self) -> RunInfo | None:
        return self.feed.live_run_elsewhere(self.ckpt_tree.chosen_id)

    @on(RunPanel.Progress)
    def _run_progress(self, message: RunPanel.Progress) -> None:
        if message.record.event == WRITTEN:  # on disk now: read it into the tree
            self.refresh_store()

    @on(RunPanel.Finished)
    def _run_finished(self, message: RunPanel.Finished) -> None:
        """One notification per run: success, cancelled or failed, by how it ended."""
        said, severity = self.controller.finished(
            message.request, message.returncode, self.run_panel.cancelled, message.error
        )
        if message.checkpoints:
            self._reveal = message.checkpoints[-1]
        self.notify(said, severity=severity, markup=False)
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
        detail = self.detail
        if detail.active_tab == "tab-graph":
            detail.activate(self._previous_tab)
            self.ckpt_tree.focus()
        else:
            self._previous_tab = detail.active_tab or FIRST
            detail.activate("tab-graph")
            self._show_graph()
            detail.focus_view("tab-graph")

    def action_show_tab(self, tab: str) -> None:
        self.detail.activate(f"tab-{tab}")

    @on(TabbedContent.TabActivated)
    def _tab_activated(self, message: TabbedContent.TabActivated) -> None:
        if message.pane.id == "tab-graph":
            self._show_graph()

    def _show_graph(self) -> None:
        if self._graph_stale:
            self._graph_stale = False
            self.detail.show_graph(list(self.feed.index.metas.values()), self.ckpt_tree.chosen_id)

    @on(BranchGraph.Chosen)
    def _graph_chosen(self, message: BranchGraph.Chosen) -> None:
        self.ckpt_tree.reveal(message.checkpoint_id)

    def action_refresh(self) -> None:
        self.refresh_store()

    def action_filter(self) -> None:
        field = self.query_one("#filter", Input)
        field.add_class("-shown")
        field.focus()

    def action_back(self) -> None:
        """Escape: from an editor or a tab back to the tree; in the tree, clear the filter."""
        field = self.query_one("#filter", Input)
        if self.focused is not self.ckpt_tree and self.focused is not field:
            self._show_tree()
            self.ckpt_tree.focus()
            return
        if field.value or field.has_class("-shown"):
            field.value = ""
            field.remove_class("-shown")
        self.ckpt_tree.focus()

    def action_tree_width(self, step: int) -> None:
        self._tree_width = max(0, min(len(self.TREE_WIDTHS) - 1, self._tree_width + step))
        self._show_tree()
        left = self.query_one("#browser-left")
        for n, share in enumerate(self.TREE_WIDTHS):
            left.set_class(n == self._tree_width, f"-w{share}")

    def action_toggle_tree(self) -> None:
        left = self.query_one("#browser-left")
        left.toggle_class("-hidden")
        if left.has_class("-hidden") and self.ckpt_tree.has_focus:
            self.detail.focus_view(self.detail.active_tab)

    def _show_tree(self) -> None:
        self.query_one("#browser-left").remove_class("-hidden")

    @on(CheckpointTree.NodeSelected)
    def _node_selected(self, event: CheckpointTree.NodeSelected[Any]) -> None:
        if isinstance(event.node.data, CheckpointRef) and event.node.data.id == self.ckpt_tree.chosen_id:
            self.action_edit()

    def action_edit(self) -> None:
        """Enter on a checkpoint: into its first editor (an output on the Tasks tab, else an input)."""
        shown = self.selected
        if shown is None or not shown.ready or shown.info is None:
            return
        info = shown.info
        tab = self.detail.active_tab
        if tab not in ("tab-tasks", "tab-inputs"):
            has_tasks = kind_of(info.kind).has_tasks
            tab = "tab-tasks" if has_tasks and any(t.done for t in info.tasks) else "tab-inputs"
        self.detail.activate(tab)
        self.detail.focus_editor(tab)

    def action_hide_run(self) -> None:
        self.run_panel.hide()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        self._reindex(self.feed.metas, self.feed.runs, message.value, self.feed.read_at)

    @on(Input.Submitted, "#filter")
    def _filter_submitted(self) -> None:
        self.ckpt_tree.focus()

    @on(Worker.StateChanged)
    def _worker_state(self, event: Worker.StateChanged) -> None:
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify(
                visible(f"{event.worker.group}: {event.worker.error}"), severity="error", timeout=8, markup=False
            )

    # -- the command palette ----------------------------------------------------------------------------
    def palette_commands(self) -> list[tuple[str, str, str]]:
        """(title, help, action) of what can be done now, for the command palette."""
        chosen = self.ckpt_tree.chosen_id
        commands: list[tuple[str, str, str]] = []
        if chosen is not None and self.detail.ready:
            commands += [
                (f"Fork {chosen[:8]}", "Start a new branch from this checkpoint, with the edits made", "fork"),
                (f"Resume {chosen[:8]}", "Continue the run from this checkpoint", "resume"),
            ]
        if chosen is not None:
            label = "Clear the diff mark" if self.ckpt_tree.marked == chosen else f"Mark {chosen[:8]} for diff"
            commands.append((label, "The Diff tab compares other checkpoints with the marked one", "mark"))
        if self.run_panel.running:
            commands.append(("Cancel the run", "Send SIGINT: the run stops; its checkpoints stay", "cancel_run"))
        elif self.run_panel.has_class("-shown"):
            commands.append(("Hide the run panel", "Close the finished run's log", "hide_run"))
        commands += [
            ("Branch graph", "Show every checkpoint as a lane graph (g)", "graph"),
            ("Filter checkpoints", "By text, branch:NAME or trigger:NAME (/)", "filter"),
            ("Refresh", "Read the store again (r)", "refresh"),
        ]
        commands += [
            (f"Show the {t.title} tab", f"Switch the detail panel to {t.name}", f"show_tab('{t.name}')") for t in TABS
        ]
        return commands
