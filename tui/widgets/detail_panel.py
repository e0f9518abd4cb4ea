"""The detail panel: tabs about the chosen checkpoint, plus the store's branch graph."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.providers.refs import short_id
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.checkpoint_tree import attach_gaps
from crewpoint.tui.widgets.diff_view import DiffView
from crewpoint.tui.widgets.events_view import EventsView
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.overview_view import OverviewView
from crewpoint.tui.widgets.raw_view import RawView
from crewpoint.tui.widgets.tasks_view import TasksView

ViewT = TypeVar("ViewT", bound=Widget)


PANES = (
    ("tab-overview", "Overview"),
    ("tab-tasks", "Tasks"),
    ("tab-inputs", "Inputs"),
    ("tab-events", "Events"),
    ("tab-diff", "Diff"),
    ("tab-raw", "Raw"),
    ("tab-graph", "Graph"),
)


class DetailPanel(Vertical):
    """Overview, Tasks, Inputs, Events, Diff, Raw and Graph tabs. Holds the loaded checkpoint and the edits.

    A tab's view is built the first time the tab opens and then shows what the panel holds, so the app starts
    with one view, not seven.
    """

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
        self._diff: tuple[str, list[DiffEntry] | None, str] | None = None
        self._rerun: list[int] = []
        self._graph: tuple[list[CheckpointMeta], str | None] | None = None
        self._ready: list[Widget] = []
        self._tabs: TabbedContent | None = None
        self._panes: dict[str, TabPane] = {}
        self._active = PANES[0][0]
        self._filling = asyncio.Lock()

    def compose(self) -> ComposeResult:
        yield Static("Choose a checkpoint on the left.", id="detail-title", markup=False)

    def build_tabs(self, active: str | None = None) -> None:
        """Add the tabs (once). The screen does this after the store's first read: the tree comes first."""
        if self._tabs is not None or not self.is_attached:
            return
        self._active = active or self._active
        tabs = TabbedContent(id="detail-tabs")
        for pane_id, title in PANES:
            self._panes[pane_id] = TabPane(title, id=pane_id)
            tabs.compose_add_child(self._panes[pane_id])
        self._tabs = tabs
        self.mount(tabs)
        if self._active != PANES[0][0]:
            self.activate(self._active)

    @on(TabbedContent.TabActivated)
    def _activated(self, message: TabbedContent.TabActivated) -> None:
        if message.pane.id is not None:
            self._active = message.pane.id
            self._build(message.pane.id)

    # -- what the rest of the screen reads ----------------------------------------------------------------
    @property
    def ready(self) -> bool:
        return self.record is not None and self.info is not None and self.problem is None

    @property
    def inputs(self) -> dict[str, Any]:
        view = self._view(InputsView)
        return view.current() if view is not None else dict(self.info.inputs if self.info is not None else {})

    @property
    def changed_inputs(self) -> dict[str, str]:
        view = self._view(InputsView)
        return dict(view.changed) if view is not None else {}

    @property
    def edited_outputs(self) -> dict[int, str]:
        view = self._view(TasksView)
        return dict(view.edits) if view is not None else {}

    @property
    def active_tab(self) -> str:
        return self._active

    def activate(self, tab: str) -> None:
        self._active = tab
        if self._tabs is None:
            self.build_tabs(tab)
            return
        self._build(tab)
        if self._tabs.is_mounted:
            self._tabs.active = tab
        else:
            self.call_after_refresh(self.activate, tab)

    def focus_view(self, tab: str) -> None:
        """Focus the view of ``tab`` (built first if need be)."""
        if self._tabs is None:
            self.build_tabs(tab)
        self._build(tab, focus=True)

    # -- showing ------------------------------------------------------------------------------------------
    def show_loading(self, meta: CheckpointMeta) -> None:
        self.meta = meta
        self._title(meta, "loading…")

    async def show(self, meta: CheckpointMeta, record: CheckpointRecord, info: CheckpointInfo) -> None:
        self.meta, self.record, self.info, self.problem = meta, record, info, None
        self._diff, self._rerun = None, []
        self._title(meta)
        for view in list(self._views()):
            await self._fill(view)

    async def show_problem(self, meta: CheckpointMeta, problem: str) -> None:
        self.meta, self.record, self.info, self.problem = meta, None, None, problem
        self._diff, self._rerun = ("", None, f"This checkpoint cannot be opened: {problem}"), []
        self._title(meta, "cannot be opened")
        for view in list(self._views()):
            await self._fill(view)

    def show_notice(self, notice: str) -> None:
        self.query_one("#detail-title", Static).update(Text(notice))

    def show_diff(self, title: str, entries: list[DiffEntry] | None, message: str = "") -> None:
        self._diff = (title, entries, message)
        view = self._view(DiffView)
        if view is not None:
            view.show(title, entries, message)

    def mark_rerun(self, rerun: list[int]) -> None:
        self._rerun = list(rerun)
        view = self._view(TasksView)
        if view is not None:
            view.mark_rerun(rerun)

    def show_graph(self, metas: list[CheckpointMeta], chosen: str | None) -> None:
        self._graph = (metas, chosen)
        view = self._view(BranchGraph)
        if view is not None:
            view.show(metas, chosen)

    # -- the views ----------------------------------------------------------------------------------------
    def _view(self, kind: type[ViewT]) -> ViewT | None:
        """The view of this kind, once it is built and filled."""
        return next((view for view in self._ready if isinstance(view, kind)), None)

    def _views(self) -> list[Widget]:
        return [view for view in self._ready if view.is_attached]

    def _build(self, tab: str, focus: bool = False) -> None:
        """Build the view of ``tab`` unless it is there; it is filled once mounted."""
        pane = self._panes.get(tab)
        if pane is None:
            return
        if not pane.is_mounted:
            self.call_after_refresh(self._build, tab, focus)
            return
        if pane.children:
            if focus:
                pane.children[0].focus()
            return
        view = _new_view(tab)
        mounted = pane.mount(view)

        async def fill() -> None:
            await mounted
            async with self._filling:
                self._ready.append(view)
                await self._fill_view(view)
            if focus:
                view.focus()

        self.call_later(fill)

    async def _fill(self, view: Widget) -> None:
        async with self._filling:
            await self._fill_view(view)

    async def _fill_view(self, view: Widget) -> None:
        """Show what the panel holds in one view."""
        meta, info, problem = self.meta, self.info, self.problem
        message = f"This checkpoint cannot be opened: {problem}" if problem else ""
        loaded = info is not None or problem is not None
        if isinstance(view, OverviewView):
            if meta is not None and loaded:
                view.show(meta, info, problem)
        elif isinstance(view, TasksView):
            if loaded:
                await view.show(info, message)
                view.mark_rerun(self._rerun)
        elif isinstance(view, InputsView):
            if loaded:
                await view.show(info, message)
        elif isinstance(view, EventsView):
            if loaded:
                view.show(info.events if info is not None else [])
        elif isinstance(view, DiffView):
            if self._diff is not None:
                view.show(*self._diff)
        elif isinstance(view, RawView):
            if loaded:
                view.show(self.record.body if self.record is not None else None, message)
        elif isinstance(view, BranchGraph) and self._graph is not None:
            view.show(*self._graph)

    def _title(self, meta: CheckpointMeta, note: str = "") -> None:
        text = Text()
        text.append(f"{meta.entity_kind} {meta.entity_name}".strip() or "checkpoint")
        text.append(f"  ⎇ {meta.branch}  ", style="bold")
        text.append(short_id(meta.id, 12))
        if meta.tasks_total:
            text.append(f"  {meta.tasks_done}/{meta.tasks_total}")
        if note:
            text.append(f"  ({note})", style="italic")
        self.query_one("#detail-title", Static).update(attach_gaps(text))


def _new_view(tab: str) -> Widget:
    views: dict[str, Callable[[], Widget]] = {
        "tab-overview": lambda: OverviewView(id="overview"),
        "tab-tasks": lambda: TasksView(id="tasks"),
        "tab-inputs": lambda: InputsView(id="inputs"),
        "tab-events": lambda: EventsView(id="events"),
        "tab-diff": lambda: DiffView(id="diff"),
        "tab-raw": lambda: RawView(id="raw"),
        "tab-graph": lambda: BranchGraph(id="graph"),
    }
    return views[tab]()
