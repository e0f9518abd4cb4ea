"""The browser: the checkpoint tree on the left, the detail panel on the right, runs streaming below."""

from __future__ import annotations

import time
from concurrent.futures import Future
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import Screen
from textual.widgets import Header, Input, TabbedContent
from textual.worker import Worker, WorkerState, get_current_worker

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.plan import check_fork
from crewpoint.checkpoint.program import suggested_app
from crewpoint.entities import kind_of
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord
from crewpoint.providers.runs import RunInfo, classify, this_host
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.fork_confirm import ForkRequest, ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui import run_control
from crewpoint.tui.diagnostics import no_checkpoints
from crewpoint.tui.feed import StoreReader, read_runs_of, read_store
from crewpoint.tui.launcher import fork_command, resume_command
from crewpoint.tui.messages import DetailFailed, DetailLoaded, PlanReady, RunsRead, StoreChanged, StoreListed
from crewpoint.tui.read_only import allows
from crewpoint.tui.run_protocol import WRITTEN
from crewpoint.tui.visible import visible
from crewpoint.tui.watcher import follow_store
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.checkpoint_tree import CheckpointTree, problem_of
from crewpoint.tui.widgets.detail_panel import DetailPanel
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.key_footer import KeyFooter
from crewpoint.tui.widgets.run_panel import EXIT_INTERRUPTED, RunPanel, RunRequest
from crewpoint.tui.widgets.store_index import CheckpointRef, Segment, StoreIndex, run_label
from crewpoint.tui.widgets.tasks_view import TasksView

HEADER_ICON = "≡"
"""The header's menu mark (it opens the command palette): a glyph every common monospace font has, where
textual's own ⭘ shows as an empty box in many (the browser's font under ``serve`` among them)."""

STOP_PROMISE = (
    "Send it SIGINT? It stops where it is; the tasks it finished stay in its checkpoints. "
    "Resume it later from its last checkpoint with e."
)
"""What stopping a run does, and no more (a checkpoint at SIGINT is written only when the run's configuration
asks for one)."""

TABS = ("overview", "tasks", "inputs", "events", "diff", "raw", "graph")


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
        *(Binding(str(n), f"show_tab('{tab}')", f"{tab.title()} tab", show=False) for n, tab in enumerate(TABS, 1)),
    ]

    TREE_WIDTHS = (25, 40, 55, 70)
    """Shares of the width the tree can take (percent), switched with [ and ]."""

    def __init__(self, location: str, *, follow: bool = True, first_read: StoreReader | None = None) -> None:
        super().__init__()
        self.location = location
        self.follow = follow
        self._first_read = first_read
        self._read_at = -1.0
        self._awaiting_whole = True  # the first read may show a big store's newest part before the whole
        self._runs_read_at = -1.0
        self.metas: list[CheckpointMeta] = []
        self.runs: list[RunInfo] = []
        self.index = StoreIndex()
        self.error: str | None = None
        self._reveal: str | None = None
        self._graph_stale = True
        self._previous_tab = "tab-overview"
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
                yield CheckpointTree(id="checkpoints")
            yield DetailPanel(id="detail")
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

    def on_mount(self) -> None:
        self.sub_title = self.location
        self.ckpt_tree.focus()
        if self._first_read is not None:
            first = self._first_read

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

    # -- reading the store ------------------------------------------------------------------------------
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
        if message.read_at < self._read_at or message.read_at < self._runs_read_at:
            return  # a listing or a reading of the records that began later has come in
        self._runs_read_at = message.read_at
        self.runs = message.runs
        self.index.set_runs(message.runs)
        self.ckpt_tree.tick()
        self._follow_live_runs()  # a run's record can show it live before its next checkpoint does

    @on(StoreListed)
    def _listed(self, message: StoreListed) -> None:
        if message.read_at < self._read_at or (message.partial and not self._awaiting_whole):
            return  # a read that started before the one shown, or the newest part of one already shown whole
        self._read_at = message.read_at
        self._awaiting_whole = message.partial
        self.sub_title = f"{self.location} (reading the rest of the store…)" if message.partial else self.location
        self.call_after_refresh(self.detail.build_tabs)
        if self._first_read is not None:  # once the tree is drawn, the first read goes on to the run records
            self.ckpt_tree.after_drawn(self._first_read.shown.set)
            self._first_read = None
        if message.error is not None:
            self.error = message.error
            if not self.metas:
                self.detail.show_notice(f"✗ {message.error}")
            return
        self.error = None
        self.metas = message.metas
        if not message.metas:
            self.detail.show_notice(f"No checkpoints yet. {no_checkpoints(self.location)}")
        elif message.index.query and not message.index.metas:
            self.detail.show_notice(f"No checkpoint matches {message.index.query!r}: Escape clears the filter")
        elif self.detail.detail is None:
            self.detail.show_notice("Choose a checkpoint on the left.")
        else:
            self.detail.retitle()
        if message.runs is not None and message.read_at >= self._runs_read_at:
            self.runs = message.runs
        else:  # the records known stand until this read's own arrive
            message.index.set_runs(self.runs)
        self.index = message.index
        self.ckpt_tree.load(message.index)
        self._graph_stale = True
        if self.detail.active_tab == "tab-graph":
            self._show_graph()
        if self._reveal is not None and self.ckpt_tree.reveal(self._reveal):
            self._reveal = None
        self._follow_live_runs()
        query = self.query_one("#filter", Input).value.strip()
        if message.index.query != query:  # the filter changed while this read went on
            self._reindex(self.metas, self.runs, query, self._read_at)

    def _follow_live_runs(self) -> None:
        """Open every live run's branch; while the cursor stays where the app put it, move it onto the newest
        checkpoint of a live run as checkpoints arrive."""
        tree = self.ckpt_tree
        now = time.time()
        live = [  # live by a run record (a heartbeat), not by the clock alone
            s
            for s in self.index.segments.values()
            if tree.runs_here(s) or (self.index.run_of(s) is not None and self.index.state_of(s, now) == "running")
        ]
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
        live = bool(self.ckpt_tree.running) or bool(self.index.live_branches())
        if live or self._was_live:
            self.ckpt_tree.tick()
        self._was_live = live

    # -- details ----------------------------------------------------------------------------------------
    @on(CheckpointTree.Chosen)
    def _chosen(self, message: CheckpointTree.Chosen) -> None:
        current = self.detail.detail
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
            self.detail.detail = Detail(meta, problem=problem, request=request)
            return
        self.detail.detail = Detail(meta, request=request)
        against = self.index.metas.get(self.ckpt_tree.marked or "") if self.ckpt_tree.marked != meta.id else None
        parent = self.index.metas.get(meta.parent_id or "")
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
        self.detail.detail = Detail(
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
            self.detail.detail = Detail(message.meta, problem=message.reason, request=message.request)

    # -- edits and the fork plan ------------------------------------------------------------------------
    @on(TasksView.OutputsEdited)
    def _outputs_edited(self, message: TasksView.OutputsEdited) -> None:
        self.detail.set_edits(message.checkpoint_id, outputs=message.outputs)
        self._edits_changed(message.checkpoint_id)

    @on(InputsView.InputsEdited)
    def _inputs_edited(self, message: InputsView.InputsEdited) -> None:
        self.detail.set_edits(message.checkpoint_id, inputs=message.changed)
        self._edits_changed(message.checkpoint_id)

    def _edits_changed(self, checkpoint_id: str) -> None:
        self.ckpt_tree.set_edited(set(self.detail.edits))
        self.detail.retitle()
        if self.detail.meta is not None and self.detail.meta.id == checkpoint_id:
            self._replan()

    def _replan(self) -> None:
        detail = self.detail
        if detail.record is not None and detail.ready:
            self._plan(detail.record, detail.inputs if detail.changed_inputs else None, detail.edited_outputs or None)

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
        meta = self.detail.meta
        if meta is None or meta.id not in self.detail.edits:
            self.notify("No unsaved edits on this checkpoint.")
            return
        edits = self.detail.edits[meta.id]
        question = Text(
            f"Forget {len(edits.inputs)} changed input(s) and {len(edits.outputs)} edited output(s) of {meta.id[:12]}?"
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._forget_edits(meta.id)

        self.app.push_screen(ConfirmScreen("Discard edits", question, yes="Discard"), answered)

    def _forget_edits(self, checkpoint_id: str) -> None:
        self.detail.discard_edits(checkpoint_id)
        self._edits_changed(checkpoint_id)

    # -- runs -------------------------------------------------------------------------------------------
    def _can_start(self) -> bool:
        if self.run_panel.running:
            self.notify("A run is going: wait for it or cancel it with x.", severity="warning")
            return False
        if not self.detail.ready or self.detail.meta is None:
            reason = self.detail.problem or "choose a checkpoint and wait for it to load"
            self.notify(visible(f"Cannot run from here: {reason}"), severity="warning", markup=False)
            return False
        return True

    def action_fork(self) -> None:
        if not self._can_start():
            return
        shown = self.detail.detail  # the dialog and the fork are about this checkpoint, whatever loads next
        assert shown is not None and shown.record is not None and shown.info is not None
        edits = self.detail.edits_of(shown.meta.id)
        inputs = {**shown.info.inputs, **edits.inputs} if edits.inputs else None
        try:
            plan = ops.plan_fork(shown.record, inputs, edits.outputs or None)
            check_fork(shown.record, plan, edits.inputs)
        except (CheckpointError, ValueError) as exc:
            self.notify(visible(str(exc)), severity="error", markup=False)
            return
        taken = {m.branch for m in self.metas}
        screen = ForkScreen(shown.meta, shown.info, plan, taken=taken, app=suggested_app(shown.record))
        self.app.push_screen(screen, self._fork_confirmed)

    def _fork_confirmed(self, request: ForkRequest | None) -> None:
        if request is None:
            return
        argv = fork_command(
            request.source_id, self.location, request.branch, request.inputs, request.outputs, request.app
        )
        title = f"fork {request.source_id[:8]} → {request.branch}"
        self._start(RunRequest(argv, title, request.branch, len(request.rerun), request.source_id))
        self._forget_edits(request.source_id)  # they live on in the new branch

    def action_resume(self) -> None:
        if not self._can_start():
            return
        meta = self.detail.meta
        assert meta is not None
        live = self._live_segment_of(meta.id)
        if live is not None:
            self._offer_fork_instead(meta, live)
            return
        self._confirm_resume()

    def _live_segment_of(self, checkpoint_id: str) -> Segment | None:
        """The segment holding ``checkpoint_id`` when a run is writing it now (started here or elsewhere)."""
        key = self.index.segment_of.get(checkpoint_id)
        segment = self.index.segments.get(key) if key is not None else None
        if segment is None:
            return None
        if self.ckpt_tree.runs_here(segment) or self.index.state_of(segment) == "running":
            return segment
        return None

    def _offer_fork_instead(self, meta: CheckpointMeta, segment: Segment) -> None:
        """A resume beside a live run would run the same tasks a second time: say so, and offer a fork."""
        run = self.index.run_of(segment)
        who = f"run {run_label(segment.lineage)} of {meta.entity_kind} {meta.entity_name} on ⎇ {segment.branch}"
        if run is not None:
            who += f" (pid {run.pid} on {run.host})"
        question = Text(visible(f"The {who} is live: it is running its tasks now.", one_line=True) + "\n")
        question.append(
            f"Resuming from {meta.id[:12]} would start the same tasks a second time beside it, on the same branch.\n"
        )
        question.append("Fork instead: a new branch from this checkpoint, leaving the live run alone.")

        def answered(fork: bool | None) -> None:
            if fork:
                self.action_fork()

        self.app.push_screen(ConfirmScreen("This run is live", question, yes="Fork instead"), answered)

    def _confirm_resume(self) -> None:
        meta, info, record = self.detail.meta, self.detail.info, self.detail.record
        assert meta is not None and info is not None and record is not None
        pending = [t for t in info.tasks if not t.done]
        question = Text(
            visible(f"Continue {meta.entity_kind} {meta.entity_name} on ⎇ {meta.branch} from {meta.id[:12]}.") + "\n"
        )
        question.append(
            f"{len(pending)} task(s) left to run; finished tasks are not run again."
            if info.tasks
            else "Finished steps are not run again."
        )

        def answered(app: str | None) -> None:
            if app is not None:
                title = f"resume {meta.id[:8]} on {meta.branch}"
                request = RunRequest(resume_command(meta.id, self.location, app), title, meta.branch)
                request.total, request.source_id = len(pending), meta.id
                self._start(request)

        self.app.push_screen(ResumeScreen(question, suggested_app(record)), answered)

    def _start(self, request: RunRequest) -> None:
        self.ckpt_tree.running[request.source_id] = (time.time(), request.branch)
        self.run_panel.start(request)

    def action_cancel_run(self) -> None:
        """Stop the run this app started; else offer to stop a live run started elsewhere (on this machine)."""
        if self.run_panel.cancel():
            return
        run = self._live_run_elsewhere()
        if run is None:
            self.notify("No run is going.", severity="information")
            return
        who = visible(
            f"run {run_label(run.lineage)} of {run.entity_kind} {run.entity_name} on ⎇ {run.branch} "
            f"(pid {run.pid} on {run.host})",
            one_line=True,
        )
        if run.host != this_host():
            self.notify(f"The live {who} runs on another machine: stop it there.", markup=False)
            return
        reason = run_control.problem(run)  # a run record names a pid: signal only the run's own process
        if reason is not None:
            self.notify(f"Cannot stop the live {who}: {visible(reason)}", severity="error", markup=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                reason = run_control.interrupt(run)
                if reason is not None:
                    self.notify(f"Cannot stop the live {who}: {visible(reason)}", severity="error", markup=False)
                else:
                    self.notify(f"Sent SIGINT to pid {run.pid}: the run stops.", markup=False)

        question = Text(f"The live {who} was started outside this app.\n")
        question.append(STOP_PROMISE)
        self.app.push_screen(ConfirmScreen("Stop a run started elsewhere", question, yes="Stop it"), answered)

    def _live_run_elsewhere(self) -> RunInfo | None:
        """The live run of the chosen checkpoint's segment, else the only live run of the store."""
        now = time.time()
        live = [run for run in self.runs if classify(run, now) == "running"]
        chosen = self.ckpt_tree.chosen_id
        key = self.index.segment_of.get(chosen or "")
        if key is not None:
            run = self.index.run_of(self.index.segments[key])
            if run is not None and run in live:
                return run
        return live[0] if len(live) == 1 else None

    @on(RunPanel.Progress)
    def _run_progress(self, message: RunPanel.Progress) -> None:
        if message.record.event == WRITTEN:  # on disk now: read it into the tree
            self.refresh_store()

    @on(RunPanel.Finished)
    def _run_finished(self, message: RunPanel.Finished) -> None:
        """One notification per run: success, cancelled or failed, by how it ended."""
        self.ckpt_tree.running.pop(message.request.source_id, None)
        if message.checkpoints:
            self._reveal = message.checkpoints[-1]
        title = message.request.title
        if message.returncode == 0:
            self.notify(visible(f"{title}: finished"), markup=False)
        elif self.run_panel.cancelled or message.returncode == EXIT_INTERRUPTED:
            self.notify(visible(f"{title}: cancelled"), severity="warning", markup=False)
        else:
            self.notify(visible(f"{title}: {message.error or 'failed'}"), severity="error", markup=False)
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
        if self.detail.meta is not None and self.detail.meta.id in self.index.metas:
            self.open_detail(self.index.metas[self.detail.meta.id])

    def action_graph(self) -> None:
        detail = self.detail
        if detail.active_tab == "tab-graph":
            detail.activate(self._previous_tab)
            self.ckpt_tree.focus()
        else:
            self._previous_tab = detail.active_tab or "tab-overview"
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
            self.detail.show_graph(list(self.index.metas.values()), self.ckpt_tree.chosen_id)

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
        if not self.detail.ready or self.detail.info is None:
            return
        info = self.detail.info
        tab = self.detail.active_tab
        if tab not in ("tab-tasks", "tab-inputs"):
            has_tasks = kind_of(info.kind).has_tasks
            tab = "tab-tasks" if has_tasks and any(t.done for t in info.tasks) else "tab-inputs"
        self.detail.activate(tab)
        self.detail.focus_editor(tab)

    @property
    def has_unsaved_edits(self) -> bool:
        return bool(self.detail.edits)

    def action_hide_run(self) -> None:
        self.run_panel.hide()

    @on(Input.Changed, "#filter")
    def _filter_changed(self, message: Input.Changed) -> None:
        self._reindex(self.metas, self.runs, message.value, self._read_at)

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
            (f"Show the {tab.title()} tab", f"Switch the detail panel to {tab}", f"show_tab('{tab}')") for tab in TABS
        ]
        return commands
