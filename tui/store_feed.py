"""The store feed: what the app knows of its store (checkpoints, their grouping, run records) and which reads it
takes. Reads happen in the screen's workers (:mod:`crewpoint.tui.feed`); each answer comes here, and a read that
began before the one shown, or the newest part of a store already shown whole, is dropped. No widget here: the
screen asks the feed and draws."""

from __future__ import annotations

import time
from collections.abc import Callable

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.runs import RunInfo, classify
from crewpoint.tui.diagnostics import no_checkpoints
from crewpoint.tui.feed import StoreReader
from crewpoint.tui.messages import RunsRead, StoreListed
from crewpoint.tui.widgets.store_index import Segment, StoreIndex

RunsHere = Callable[[Segment], bool]
"""Whether a run this app started writes a segment now (the screen's run controller knows)."""


class StoreFeed:
    """The newest store listing and run records taken, and what they say about live runs."""

    def __init__(self, location: str, first_read: StoreReader | None = None) -> None:
        self.location = location
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
        """The segment holding ``checkpoint_id`` when a run is writing it now (started here or elsewhere)."""
        key = self.index.segment_of.get(checkpoint_id)
        segment = self.index.segments.get(key) if key is not None else None
        if segment is None:
            return None
        if runs_here(segment) or self.index.state_of(segment) == "running":
            return segment
        return None

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
