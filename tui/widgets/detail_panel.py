"""The detail panel: tabs about the chosen checkpoint, plus the store's branch graph."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Static, TabbedContent, TabPane

from crewpoint.checkpoint.ops import CheckpointInfo
from crewpoint.entities import kind_of
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.providers.refs import short_id
from crewpoint.tui.edits import Edits, EditsModel
from crewpoint.tui.render import attach_gaps
from crewpoint.tui.store_index import progress_text
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.tabs import FIRST, TABS, tab_of
from crewpoint.tui.widgets.tasks_view import TasksView

ViewT = TypeVar("ViewT", bound=Widget)

GraphSource = Callable[[], tuple[list[CheckpointMeta], str | None]]
"""The store's checkpoints and the chosen one, as the graph draws them."""

GRAPH = "tab-graph"


class DetailPanel(Vertical):
    """Overview, Tasks, Inputs, Events, Diff, Raw and Graph tabs about one checkpoint.

    ``detail`` is the one source every tab reads, bound to the screen's chosen checkpoint (``data_bind``): a
    checkpoint loading, loaded or unreadable redraws the tabs built so far. A tab's view is built the first time
    the tab opens, so the app starts with one view, not seven. The tabs are the registry's
    (:mod:`crewpoint.tui.widgets.tabs`). ``edits`` is the screen's edits model, read here, changed by the screen.
    """

    DEFAULT_CSS = """
    DetailPanel > #detail-title { height: auto; max-height: 3; padding: 0 1; background: $boost; text-style: bold; }
    DetailPanel > TabbedContent { height: 1fr; }
    DetailPanel TabPane { padding: 0; }
    DetailPanel Tab { padding: 0 0 0 1; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)

    def __init__(self, edits: EditsModel | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.edits = edits if edits is not None else EditsModel()
        self._rerun: tuple[str, list[int]] | None = None
        self._graph: tuple[list[CheckpointMeta], str | None] | None = None
        self._graph_source: GraphSource | None = None
        self._graph_stale = True
        self._before_graph = FIRST
        self._ready: list[Widget] = []
        self._tabs: TabbedContent | None = None
        self._panes: dict[str, TabPane] = {}
        self._active = FIRST
        self._filling = asyncio.Lock()

    def compose(self) -> ComposeResult:
        yield Static("Choose a checkpoint on the left.", id="detail-title", markup=False)

    def build_tabs(self, active: str | None = None) -> None:
        """Add the tabs (once). The screen does this after the store's first read: the tree comes first."""
        if self._tabs is not None or not self.is_attached:
            return
        self._active = active or self._active
        tabs = TabbedContent(id="detail-tabs")
        for tab in TABS:
            self._panes[tab.pane_id] = TabPane(tab.title, id=tab.pane_id)
            tabs.compose_add_child(self._panes[tab.pane_id])
        self._tabs = tabs
        self.mount(tabs)
        if self._active != FIRST:
            self.activate(self._active)

    @on(TabbedContent.TabActivated)
    def _activated(self, message: TabbedContent.TabActivated) -> None:
        if message.pane.id is not None:
            self._active = message.pane.id
            self._build(message.pane.id)
        if message.pane.id == GRAPH:
            self._draw_graph()

    # -- what the rest of the screen reads ----------------------------------------------------------------
    @property
    def meta(self) -> CheckpointMeta | None:
        return self.detail.meta if self.detail is not None else None

    @property
    def record(self) -> CheckpointRecord | None:
        return self.detail.record if self.detail is not None else None

    @property
    def info(self) -> CheckpointInfo | None:
        return self.detail.info if self.detail is not None else None

    @property
    def problem(self) -> str | None:
        return self.detail.problem if self.detail is not None else None

    @property
    def ready(self) -> bool:
        return self.detail is not None and self.detail.ready

    def edits_of(self, checkpoint_id: str) -> Edits:
        return self.edits.of(checkpoint_id)

    @property
    def current_edits(self) -> Edits:
        return self.edits_of(self.meta.id) if self.meta is not None else Edits()

    @property
    def inputs(self) -> dict[str, Any]:
        """The shown checkpoint's inputs with its edits applied."""
        original = dict(self.info.inputs) if self.info is not None else {}
        return {**original, **self.current_edits.inputs}

    @property
    def changed_inputs(self) -> dict[str, str]:
        return dict(self.current_edits.inputs)

    @property
    def edited_outputs(self) -> dict[int, str]:
        return dict(self.current_edits.outputs)

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

    def edit(self) -> None:
        """Into the loaded checkpoint's first editor: an output on the Tasks tab, else an input."""
        info = self.info if self.ready else None
        if info is None:
            return
        tab = self.active_tab
        if tab not in ("tab-tasks", "tab-inputs"):
            has_tasks = kind_of(info.kind).has_tasks
            tab = "tab-tasks" if has_tasks and any(t.done for t in info.tasks) else "tab-inputs"
        self.activate(tab)
        self.focus_editor(tab)

    def focus_editor(self, tab: str) -> None:
        """Focus the first editor (an output or an input field) of ``tab`` once it is built and filled."""
        if self._tabs is None:
            self.build_tabs(tab)
        pane = self._panes.get(tab)
        if pane is None:
            return
        editors = [w for w in pane.query("TextArea, Input") if w.focusable]
        if editors:
            editors[0].focus()
        else:
            self._build(tab)
            self.call_after_refresh(self._focus_editor_later, tab)

    def _focus_editor_later(self, tab: str) -> None:
        pane = self._panes.get(tab)
        if pane is not None:
            editors = [w for w in pane.query("TextArea, Input") if w.focusable]
            if editors:
                editors[0].focus()

    def focus_view(self, tab: str) -> None:
        """Focus the view of ``tab`` (built first if need be)."""
        if self._tabs is None:
            self.build_tabs(tab)
        self._build(tab, focus=True)

    # -- showing ------------------------------------------------------------------------------------------
    def watch_detail(self, detail: Detail | None) -> None:
        if detail is None:
            return
        self._title(detail.meta, "loading…" if detail.loading else "cannot be opened" if detail.problem else "")
        self.call_later(self._fill_all)

    async def _fill_all(self) -> None:
        for view in list(self._views()):
            await self._fill(view)

    def show_notice(self, notice: str) -> None:
        self.query_one("#detail-title", Static).update(Text(visible(notice, one_line=True)))

    def mark_rerun(self, checkpoint_id: str, rerun: list[int]) -> None:
        self._rerun = (checkpoint_id, list(rerun))
        view = self._view(TasksView)
        if view is not None and self.meta is not None and self.meta.id == checkpoint_id:
            view.mark_rerun(rerun)

    def store_changed(self, source: GraphSource) -> None:
        """The store was read anew: the graph is drawn from ``source`` when it next shows (now, if it shows).
        Drawing a big store's graph is costly, so it is not drawn while its tab is closed."""
        self._graph_source, self._graph_stale = source, True
        if self._active == GRAPH:
            self._draw_graph()

    def toggle_graph(self) -> bool:
        """Open the graph tab, focused; or, when it is open, go back to the tab before it. Whether it opened."""
        if self._active == GRAPH:
            self.activate(self._before_graph)
            return False
        self._before_graph = self._active or FIRST
        self.activate(GRAPH)
        self._draw_graph()
        self.focus_view(GRAPH)
        return True

    def _draw_graph(self) -> None:
        if self._graph_stale and self._graph_source is not None:
            self._graph_stale = False
            self.show_graph(*self._graph_source())

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
        entry = tab_of(tab)
        if entry is None:
            return
        view = entry.view()
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
        """Show the current detail in one view (the graph shows the store instead)."""
        if isinstance(view, BranchGraph):
            if self._graph is not None:
                view.show(*self._graph)
            return
        detail = self.detail
        if detail is None or not isinstance(view, DetailView):
            return
        await view.show_detail(detail, self.edits_of(detail.meta.id))
        if isinstance(view, TasksView) and self._rerun is not None and self._rerun[0] == detail.meta.id:
            view.mark_rerun(self._rerun[1])

    def _title(self, meta: CheckpointMeta, note: str = "") -> None:
        text = Text()
        text.append(visible(f"{meta.entity_kind} {meta.entity_name}".strip() or "checkpoint", one_line=True))
        text.append(visible(f"  ⎇ {meta.branch}  ", one_line=True), style="bold")
        text.append(short_id(meta.id, 12))
        if meta.tasks_total:
            text.append(f"  {progress_text(meta)}")
        if meta.id in self.edits:
            text.append("  ✎ edited", style="bold")
        if note:
            text.append(f"  ({note})", style="italic")
        self.query_one("#detail-title", Static).update(attach_gaps(text))

    def retitle(self) -> None:
        """Draw the title again (after edits came or went)."""
        detail = self.detail
        if detail is not None:
            self._title(detail.meta, "loading…" if detail.loading else "cannot be opened" if detail.problem else "")


@runtime_checkable
class DetailView(Protocol):
    """A tab that shows the panel's detail."""

    async def show_detail(self, detail: Detail, edits: Edits) -> None: ...
