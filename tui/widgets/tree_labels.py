"""What each line of the checkpoint tree says: an entity's counts, a branch's state and progress, a checkpoint's
marks, progress, time and trigger. The tree (:mod:`crewpoint.tui.widgets.checkpoint_tree`) decides which lines
exist and when they are drawn again; this module only words them, from what the tree shows (:class:`Labelled`).
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from rich.style import Style
from rich.text import Text

from crewpoint.cost import PricesError
from crewpoint.entities import kind_of
from crewpoint.estimate import cost_text, summary_cost
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.refs import short_id
from crewpoint.tui.diagnostics import plural
from crewpoint.tui.fleet_view import FleetView, fleet_mark
from crewpoint.tui.render import STATE_MARKS, attach_gaps, format_time, problem_of
from crewpoint.tui.store_index import (
    CheckpointRef,
    EntityKey,
    EntityRef,
    NodeRef,
    OlderRef,
    Segment,
    SegmentRef,
    StoreIndex,
    progress_text,
    run_label,
)
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.cost_view import prices_now

WAITING_TRIGGER = "human_feedback_requested"
"""The trigger of the checkpoint a run writes when it stops to wait for a person."""

VISIBLE_RUNS = 100
"""Top-level runs shown per entity; older ones fold into one node that fills in when expanded, so a store of
thousands of runs paints at once."""


def hidden_runs(keys: list[str]) -> int:
    """How many of an entity's runs (oldest first) start folded."""
    return max(0, len(keys) - VISIBLE_RUNS)


class Labelled(Protocol):
    """What a label is worded from: the store's index, the clock, the marks, and the runs this app started."""

    index: StoreIndex
    now: float
    marked: str | None
    edited: set[str]
    fleet: FleetView | None

    def runs_here(self, segment: Segment) -> bool: ...

    def label_style(self, name: str) -> Style: ...


class TreeLabels:
    """The label of each node of a :class:`Labelled` tree."""

    def __init__(self, tree: Labelled) -> None:
        self._tree = tree
        self._branch_runs: Counter[tuple[EntityKey, str]] = Counter()
        self._branch_runs_of: StoreIndex | None = None
        self._run_costs: dict[str, str] = {}  # a run's usage summary -> its cost as shown

    def label(self, data: NodeRef | None) -> Text:
        return attach_gaps(self._make_label(data))

    def _style(self, name: str) -> Style:
        return self._tree.label_style(name)

    def _make_label(self, data: NodeRef | None) -> Text:
        if isinstance(data, EntityRef):
            return self._entity_label(data)
        if isinstance(data, OlderRef):
            keys = self._tree.index.entities.get((data.kind, data.name), [])
            return Text(f"… {hidden_runs(keys):,} older runs", self._style("muted"))
        if isinstance(data, SegmentRef):
            segment = self._tree.index.segments.get(data.key)
            return self._segment_label(segment) if segment is not None else Text("")
        if isinstance(data, CheckpointRef):
            meta = self._tree.index.metas.get(data.id)
            return self._checkpoint_label(meta) if meta is not None else Text(short_id(data.id))
        return Text("checkpoints")  # the root, drawn while the tree is still being made

    def _runs_on_branch(self, segment: Segment) -> int:
        """How many top-level runs of the segment's entity share its branch (counted once per index)."""
        index = self._tree.index
        if self._branch_runs_of is not index:
            counts: Counter[tuple[EntityKey, str]] = Counter()
            for entity, keys in index.entities.items():
                for key in keys:
                    counts[(entity, index.segments[key].branch)] += 1
            self._branch_runs, self._branch_runs_of = counts, index
        return self._branch_runs[(segment.entity, segment.branch)]

    def _entity_label(self, data: EntityRef) -> Text:
        """``crew research-crew  2 runs · 3 branches · 11 ckpt``: runs counted as runs (lineages), branches as
        branch names."""
        segments = [s for s in self._tree.index.segments.values() if s.entity == (data.kind, data.name)]
        count = sum(len(s.metas) for s in segments)
        runs = len({s.lineage for s in segments})
        branches = len({s.branch for s in segments})
        return Text.assemble(
            (visible(data.kind, one_line=True), self._style("muted")),
            " ",
            (visible(data.name, one_line=True), "bold"),
            (
                f"  {plural(runs, 'run')} · {plural(branches, 'branch', 'branches')} · {count:,} ckpt",
                self._style("muted"),
            ),
        )

    def _segment_label(self, segment: Segment) -> Text:
        """What matters most first, since a narrow tree cuts the end: the branch, how its run stands, its
        progress; then which run it is (when its branch has several) and its checkpoint count."""
        text = Text.assemble(
            ("⎇ ", self._style("branch")), (visible(segment.branch, one_line=True), self._style("branch"))
        )
        here = self._tree.runs_here(segment)
        state = "running" if here else self._tree.index.state_of(segment, self._tree.now)
        fleet = self._tree.fleet
        word = fleet.state_over(segment.lineage, state) if fleet is not None and not here else None
        if word is not None:  # queued, running on HOST or recovering: the fleet's word, as list says it
            mark, style = fleet_mark(word)
            text.append(" ")
            text.append(visible(mark, one_line=True), self._style(style))
        elif state in STATE_MARKS:
            mark, style = STATE_MARKS[state]
            text.append(" ")
            text.append(mark, self._style(style))
        head = segment.head
        if head.tasks_total:
            done, kind = head.tasks_done, kind_of(head.entity_kind)
            text.append(f" {kind.count(done)}" if kind.open_ended else f" {done}/{head.tasks_total}")
        if segment.source_id is None and self._runs_on_branch(segment) > 1 and segment.lineage:
            text.append(f" run {run_label(segment.lineage)}", self._style("muted"))
        text.append(f" {len(segment.metas)} ckpt", self._style("muted"))
        return text

    def _waits_at(self, meta: CheckpointMeta) -> bool:
        """Is ``meta`` the checkpoint its run waits at for a person's answer (its segment's newest, its run
        waiting)?"""
        index = self._tree.index
        segment = index.segments.get(index.segment_of.get(meta.id, ""))
        return (
            segment is not None and segment.head.id == meta.id and index.state_of(segment, self._tree.now) == "waiting"
        )

    def _checkpoint_label(self, meta: CheckpointMeta) -> Text:
        text = Text()
        if meta.id == self._tree.marked:
            text.append("◆ ", self._style("marked"))
        if meta.id in self._tree.edited:
            text.append("✎ ", self._style("marked"))
        if meta.trigger == WAITING_TRIGGER and self._waits_at(meta):
            text.append(f"{STATE_MARKS['waiting'][0].split()[0]} ", self._style("marked"))  # a answers it here
        problem = problem_of(meta)
        if problem is not None:
            text.append("✗ ", self._style("damaged"))
            text.append(short_id(meta.id), self._style("damaged"))
            text.append(visible(f"  {problem}", one_line=True), self._style("damaged"))
            return text
        if meta.tasks_total:  # what matters most first: a narrow tree cuts the end of a label
            text.append(f"{progress_text(meta)}  ")
        text.append(format_time(meta.created_at, self._tree.now), self._style("muted"))
        text.append(f"  {short_id(meta.id)}  ", self._style("muted"))
        text.append(visible(meta.trigger or "?", one_line=True))
        cost = self._run_cost(meta)
        if cost:
            text.append(f"  {cost}", self._style("muted"))
        return text

    def _run_cost(self, meta: CheckpointMeta) -> str:
        """What the run cost, beside its newest checkpoint only (from the metadata's usage summary, priced now);
        "" elsewhere, for a run that recorded nothing or cost nothing, or when the prices cannot be read."""
        if not meta.usage:
            return ""
        index = self._tree.index
        segment = index.segments.get(index.segment_of.get(meta.id, ""))
        if segment is None or segment.head.id != meta.id:
            return ""
        shown = self._run_costs.get(meta.usage)
        if shown is None:
            try:
                summary = summary_cost(meta.usage, "run", prices_now())
            except PricesError:
                summary = None
            free = summary is not None and summary.complete and not summary.usd
            shown = self._run_costs[meta.usage] = "" if summary is None or free else cost_text(summary)
        return shown
