"""The detail panel: tabs about the chosen checkpoint, plus the store's branch graph."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static, TabbedContent, TabPane

from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.diff_view import DiffView
from crewpoint.tui.widgets.events_view import EventsView
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.overview_view import OverviewView
from crewpoint.tui.widgets.raw_view import RawView
from crewpoint.tui.widgets.tasks_view import TasksView


class DetailPanel(Vertical):
    """Overview, Tasks, Inputs, Events, Diff, Raw and Graph tabs. Holds the loaded checkpoint and the edits."""

    DEFAULT_CSS = """
    DetailPanel > #detail-title { height: 1; padding: 0 1; background: $boost; text-style: bold; }
    DetailPanel > TabbedContent { height: 1fr; }
    DetailPanel TabPane { padding: 0; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.meta: CheckpointMeta | None = None
        self.record: CheckpointRecord | None = None
        self.info: CheckpointInfo | None = None
        self.problem: str | None = None

    def compose(self) -> ComposeResult:
        yield Static("Choose a checkpoint on the left.", id="detail-title", markup=False)
        with TabbedContent(id="detail-tabs"):
            with TabPane("Overview", id="tab-overview"):
                yield OverviewView(id="overview")
            with TabPane("Tasks", id="tab-tasks"):
                yield TasksView(id="tasks")
            with TabPane("Inputs", id="tab-inputs"):
                yield InputsView(id="inputs")
            with TabPane("Events", id="tab-events"):
                yield EventsView(id="events")
            with TabPane("Diff", id="tab-diff"):
                yield DiffView(id="diff")
            with TabPane("Raw", id="tab-raw"):
                yield RawView(id="raw")
            with TabPane("Graph", id="tab-graph"):
                yield BranchGraph(id="graph")

    # -- what the rest of the screen reads ----------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.record is not None and self.info is not None and self.problem is None

    @property
    def inputs(self) -> dict[str, Any]:
        return self.query_one(InputsView).current()

    @property
    def changed_inputs(self) -> dict[str, str]:
        return dict(self.query_one(InputsView).changed)

    @property
    def edited_outputs(self) -> dict[int, str]:
        return dict(self.query_one(TasksView).edits)

    @property
    def active_tab(self) -> str:
        return self.query_one(TabbedContent).active

    def activate(self, tab: str) -> None:
        self.query_one(TabbedContent).active = tab

    # -- showing ------------------------------------------------------------------------------------------
    def show_loading(self, meta: CheckpointMeta) -> None:
        self.meta = meta
        self._title(meta, "loading…")

    async def show(self, meta: CheckpointMeta, record: CheckpointRecord, info: CheckpointInfo) -> None:
        self.meta, self.record, self.info, self.problem = meta, record, info, None
        self._title(meta)
        self.query_one(OverviewView).show(meta, info)
        await self.query_one(TasksView).show(info)
        await self.query_one(InputsView).show(info)
        self.query_one(EventsView).show(info.events)
        self.query_one(RawView).show(record.body)

    async def show_problem(self, meta: CheckpointMeta, problem: str) -> None:
        self.meta, self.record, self.info, self.problem = meta, None, None, problem
        self._title(meta, "cannot be opened")
        self.query_one(OverviewView).show(meta, None, problem)
        message = f"This checkpoint cannot be opened: {problem}"
        await self.query_one(TasksView).show(None, message)
        await self.query_one(InputsView).show(None, message)
        self.query_one(EventsView).show([])
        self.query_one(RawView).show(None, message)
        self.query_one(DiffView).show("", None, message)

    def show_notice(self, notice: str) -> None:
        self.query_one("#detail-title", Static).update(Text(notice))

    def show_diff(self, title: str, entries: list[DiffEntry] | None, message: str = "") -> None:
        self.query_one(DiffView).show(title, entries, message)

    def mark_rerun(self, rerun: list[int]) -> None:
        self.query_one(TasksView).mark_rerun(rerun)

    def _title(self, meta: CheckpointMeta, note: str = "") -> None:
        text = Text()
        text.append(f"{meta.entity_kind} {meta.entity_name}".strip() or "checkpoint")
        text.append(f"  ⎇ {meta.branch}  ", style="bold")
        text.append(meta.id[:12])
        if meta.tasks_total:
            text.append(f"  {meta.tasks_done}/{meta.tasks_total}")
        if note:
            text.append(f"  ({note})", style="italic")
        self.query_one("#detail-title", Static).update(text)
