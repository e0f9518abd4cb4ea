"""The store feed: what the app knows of its store (checkpoints, their grouping, run records), the reads that
bring it (store listings, run records, a checkpoint's body) and which answers it takes.

Each read runs in a worker of the screen it is given (``@work`` semantics: exclusive per group, errors to the
screen's one ``Worker.StateChanged`` handler) and posts its answer as a message; the screen hands the answer back
to :meth:`StoreFeed.take_listed` or :meth:`StoreFeed.take_runs`, which drop a read that began before the one shown,
or the newest part of a store already shown whole. No widget is touched here: the screen asks the feed and draws.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import Any

from textual.dom import DOMNode
from textual.worker import get_current_worker

from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord
from crewpoint.providers.runs import RunInfo, classify
from crewpoint.tui.diagnostics import no_checkpoints
from crewpoint.tui.edits import EditsModel
from crewpoint.tui.feed import StoreReader, read_runs_of, read_store
from crewpoint.tui.fleet_view import Fleet, FleetView
from crewpoint.tui.messages import DetailFailed, DetailLoaded, FleetRead, PlanReady, RunsRead, StoreListed
from crewpoint.tui.store_index import Segment, StoreIndex
from crewpoint.tui.widgets.detail_state import Detail

RunsHere = Callable[[Segment], bool]
"""Whether a run this app started writes a segment now (the screen's run controller knows)."""


class StoreFeed:
    """The newest store listing and run records taken, and what they say about live runs."""

    def __init__(self, location: str, first_read: StoreReader | None = None, fleet: Fleet | None = None) -> None:
        self.location = location
        self.fleet = fleet
        """The store's fleet, on a PostgreSQL store (None elsewhere)."""
        self.fleet_view: FleetView | None = None
        """The fleet as last read (None: no fleet, or not read yet)."""
        self.first_read = first_read
        """The read started before the screen was up (``make_app``'s), until the screen takes its answers."""
        self.metas: list[CheckpointMeta] = []
        self.runs: list[RunInfo] = []
        self.index = StoreIndex()
        self.error: str | None = None
        self.read_at = -1.0
        self.partial = False
        self._awaiting_whole = True  # the first read may show a big store's newest part before the whole
        self._runs_read_at = -1.0

    # -- reading, in workers of ``node`` -----------------------------------------------------------------------
    def start(self, node: DOMNode, query: str = "") -> None:
        """The first read: the one begun before the screen was up, else a new one."""
        first = self.first_read
        if first is None:
            self.read(node, query)
            return

        def post_early(done: Future[StoreListed | None]) -> None:
            early = done.result()
            if early is not None:
                node.post_message(early)

        first.early.add_done_callback(post_early)
        first.listed.add_done_callback(lambda done: node.post_message(done.result()))
        first.runs.add_done_callback(lambda done: node.post_message(done.result()))

    def read(self, node: DOMNode, query: str) -> None:
        """Read the store's checkpoints (grouped by ``query``), then its run records."""
        node.run_worker(
            partial(self._read, node, query), group="list", exclusive=True, exit_on_error=False, thread=True
        )

    def _read(self, node: DOMNode, query: str) -> None:
        listed = read_store(self.location, query)
        if get_current_worker().is_cancelled:
            return
        node.post_message(listed)
        if listed.error is None:
            runs = read_runs_of(self.location, listed.read_at)
            if not get_current_worker().is_cancelled:
                node.post_message(runs)

    def read_runs(self, node: DOMNode) -> None:
        """Read the run records alone (a heartbeat changed only them)."""
        node.run_worker(partial(self._read_runs, node), group="runs", exclusive=True, exit_on_error=False, thread=True)

    def _read_runs(self, node: DOMNode) -> None:
        runs = read_runs_of(self.location, time.monotonic())
        if not get_current_worker().is_cancelled:
            node.post_message(runs)

    def read_fleet(self, node: DOMNode) -> None:
        """Read the fleet's states and counts (:class:`FleetRead`), when the store has a fleet."""
        if self.fleet is not None:
            node.run_worker(
                partial(self._read_fleet, node, self.fleet),
                group="fleet",
                exclusive=True,
                exit_on_error=False,
                thread=True,
            )

    @staticmethod
    def _read_fleet(node: DOMNode, fleet: Fleet) -> None:
        try:
            message = FleetRead(fleet.read())
        except Exception as exc:  # the fleet only adds marks and counts: the store's own reads go on
            message = FleetRead(None, " ".join(str(exc).split()) or type(exc).__name__)
        if not get_current_worker().is_cancelled:
            node.post_message(message)

    def regroup(self, node: DOMNode, query: str) -> None:
        """Group the checkpoints shown anew by ``query`` (the filter), without reading the store again."""
        work = partial(self._regroup, node, self.metas, self.runs, query, self.read_at)
        node.run_worker(work, group="index", exclusive=True, exit_on_error=False, thread=True)

    def _regroup(
        self, node: DOMNode, metas: list[CheckpointMeta], runs: list[RunInfo], query: str, read_at: float
    ) -> None:
        index = StoreIndex.build(metas, query, runs)
        if not get_current_worker().is_cancelled:
            node.post_message(StoreListed(self.location, metas, index, runs, read_at=read_at))

    def load(
        self, node: DOMNode, meta: CheckpointMeta, base: CheckpointMeta | None, marked: bool, request: int
    ) -> None:
        """Read and describe a checkpoint, with its diff against ``base`` (the marked one, else its parent)."""
        work = partial(self._load, node, meta, base, marked, request)
        node.run_worker(work, group="detail", exclusive=True, exit_on_error=False, thread=True)

    def _load(
        self, node: DOMNode, meta: CheckpointMeta, base: CheckpointMeta | None, marked: bool, request: int
    ) -> None:
        try:
            record, body = ops.load_checked(meta.location or meta.id, self.location)
            info = ops.describe(record, body)
        except CheckpointError as exc:
            node.post_message(DetailFailed(meta, str(exc), request))
            return
        except Exception as exc:  # a body the describer does not understand is shown as damaged, not raised
            node.post_message(DetailFailed(meta, f"cannot read this checkpoint: {exc}", request))
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
            node.post_message(DetailLoaded(meta, record, info, title, entries, note, request))

    def plan(self, node: DOMNode, shown: Detail, edits: EditsModel) -> None:
        """Which tasks a fork of the loaded ``shown`` with its kept edits would run (:class:`PlanReady`)."""
        assert shown.record is not None and shown.info is not None
        inputs = edits.fork_inputs(shown.meta.id, shown.info.inputs)
        work = partial(self._plan, node, shown.record, inputs, edits.of(shown.meta.id).outputs or None)
        node.run_worker(work, group="plan", exclusive=True, exit_on_error=False, thread=True)

    @staticmethod
    def _plan(
        node: DOMNode, record: CheckpointRecord, inputs: dict[str, Any] | None, outputs: dict[int, str] | None
    ) -> None:
        try:
            plan = ops.plan_fork(record, inputs, outputs)
        except (CheckpointError, ValueError) as exc:
            node.post_message(PlanReady(record.meta.id, [], str(exc)))
            return
        if not get_current_worker().is_cancelled:
            node.post_message(PlanReady(record.meta.id, plan.rerun))

    # -- taking reads ---------------------------------------------------------------------------------------
    def take_listed(self, message: StoreListed) -> bool:
        """Take a listing; False when it is dropped (stale). A listing that failed keeps what was shown."""
        if message.read_at < self.read_at or (message.partial and not self._awaiting_whole):
            return False
        self.read_at = message.read_at
        self._awaiting_whole = self.partial = message.partial
        if message.error is not None:
            self.error = message.error
            return True
        self.error = None
        self.metas = message.metas
        if message.runs is not None and message.read_at >= self._runs_read_at:
            self.runs = message.runs
        else:  # the records known stand until this read's own arrive
            message.index.set_runs(self.runs)
        self.index = message.index
        return True

    def take_runs(self, message: RunsRead) -> bool:
        """Take run records read on their own; False when a later listing or reading came in first."""
        if message.read_at < self.read_at or message.read_at < self._runs_read_at:
            return False
        self._runs_read_at = message.read_at
        self.runs = message.runs
        self.index.set_runs(message.runs)
        return True

    # -- what the reads say ---------------------------------------------------------------------------------
    @property
    def subtitle(self) -> str:
        return f"{self.location} (reading the rest of the store…)" if self.partial else self.location

    def notice(self, showing_detail: bool) -> str | None:
        """What the detail panel says about the store as a whole, or None when it shows its checkpoint."""
        if self.error is not None:
            return f"✗ {self.error}" if not self.metas else None
        if not self.metas:
            return f"No checkpoints yet. {no_checkpoints(self.location)}"
        if self.index.query and not self.index.metas:
            return f"No checkpoint matches {self.index.query!r}: Escape clears the filter"
        return None if showing_detail else "Choose a checkpoint on the left."

    def stale_for(self, query: str) -> bool:
        """The filter changed while the shown listing was read: it must be grouped again."""
        return self.index.query != query.strip()

    @property
    def branches(self) -> set[str]:
        """Every branch name taken in the store."""
        return {meta.branch for meta in self.metas}

    def live_segments(self, runs_here: RunsHere) -> list[Segment]:
        """Segments a run writes now: started here, or live by a run record (a heartbeat), not by the clock alone."""
        now = time.time()
        index = self.index
        return [
            s
            for s in index.segments.values()
            if runs_here(s) or (index.run_of(s) is not None and index.state_of(s, now) == "running")
        ]

    def live_segment_of(self, checkpoint_id: str, runs_here: RunsHere) -> Segment | None:
        """The segment holding ``checkpoint_id`` when a run is writing it now: started here, or live by a run
        record (as :meth:`live_segments` says), not by the clock alone."""
        key = self.index.segment_of.get(checkpoint_id)
        segment = self.index.segments.get(key) if key is not None else None
        if segment is None:
            return None
        return segment if segment in self.live_segments(runs_here) else None

    def live_run_elsewhere(self, chosen_id: str | None) -> RunInfo | None:
        """The live run of the chosen checkpoint's segment, else the only live run of the store."""
        now = time.time()
        live = [run for run in self.runs if classify(run, now) == "running"]
        key = self.index.segment_of.get(chosen_id or "")
        if key is not None:
            run = self.index.run_of(self.index.segments[key])
            if run is not None and run in live:
                return run
        return live[0] if len(live) == 1 else None
