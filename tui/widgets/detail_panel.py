"""The detail panel: tabs about the chosen checkpoint, plus the store's branch graph."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import Reactive, reactive
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
from crewpoint.tui.widgets.branch_graph import Graph
from crewpoint.tui.widgets.detail_state import Detail, EditedDetail, Rerun
from crewpoint.tui.widgets.tab_view import ViewFilled
from crewpoint.tui.widgets.tabs import FIRST, TABS, tab_of

GraphSource = Callable[[], tuple[list[CheckpointMeta], str | None]]
"""The store's checkpoints and the chosen one, as the graph draws them."""

GRAPH = "tab-graph"
STORE_TABS = (GRAPH, "tab-cost")
"""The tabs that read the store's checkpoints (``graph``): drawn only while one of them shows."""

SOURCES = ("detail", "edited", "rerun", "graph")
"""The panel's reactives a tab view may read: a view declaring a reactive of one of these names is bound to it."""


class DetailPanel(Vertical):
    """Overview, Tasks, Inputs, Events, Diff, Raw and Graph tabs about one checkpoint.

    Data goes down by reactives: ``detail`` is bound to the screen's chosen checkpoint (``data_bind``), and the panel
    derives ``edited`` (the detail with its unsaved edits), ``rerun`` (what a fork would run again) and ``graph``
    (the store, drawn only while its tab shows). A tab's view is built the first time the tab opens, so the app
    starts with one view, not seven; it is bound then to each of these :data:`SOURCES` it declares a reactive for,
    and redraws itself when one changes: a checkpoint loading, loaded or unreadable redraws the tabs built so far.
    The tabs are the registry's (:mod:`crewpoint.tui.widgets.tabs`). ``edits`` is the screen's edits model, read
    here, changed by the screen.
    """

    DEFAULT_CSS = """
    DetailPanel > #detail-title { height: auto; max-height: 3; padding: 0 1; background: $boost; text-style: bold; }
    DetailPanel > TabbedContent { height: 1fr; }
    DetailPanel TabPane { padding: 0; }
    DetailPanel Tab { padding: 0 0 0 1; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)
    edited: reactive[EditedDetail | None] = reactive(None, init=False, always_update=True)
    rerun: reactive[Rerun | None] = reactive(None, init=False, always_update=True)
    graph: reactive[Graph | None] = reactive(None, init=False, always_update=True)

    def __init__(self, edits: EditsModel | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.edits = edits if edits is not None else EditsModel()
        self._graph_source: GraphSource | None = None
        self._graph_stale = True
        self._before_graph = FIRST
        self._tabs: TabbedContent | None = None
        self._panes: dict[str, TabPane] = {}
        self._active = FIRST
        self._editor_wanted: tuple[str, EditedDetail] | None = None

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
        if message.pane.id in STORE_TABS:
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
        if not self._focus_first_editor(tab) and self.edited is not None:
            self._editor_wanted = (tab, self.edited)  # its editors come when it has drawn this (ViewFilled)
            self._build(tab)

    def _focus_first_editor(self, tab: str) -> bool:
        pane = self._panes.get(tab)
        editors = [w for w in pane.query("TextArea, Input") if w.focusable] if pane is not None else []
        if editors:
            editors[0].focus()
        return bool(editors)

    @on(ViewFilled)
    def _view_filled(self, message: ViewFilled) -> None:
        message.stop()
        if self._editor_wanted is None:
            return
        tab, edited = self._editor_wanted
        pane = self._panes.get(tab)
        if pane is not None and message.view in pane.children:
            self._editor_wanted = None  # a later checkpoint shown there never takes the focus
            if message.edited is edited:
                self._focus_first_editor(tab)

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
        self.edited = EditedDetail(detail, self.edits_of(detail.meta.id))

    def show_notice(self, notice: str) -> None:
        self.query_one("#detail-title", Static).update(Text(visible(notice, one_line=True)))

    def mark_rerun(self, checkpoint_id: str, rerun: list[int]) -> None:
        """The newest fork plan of ``checkpoint_id`` runs these tasks again (the Tasks tab marks them)."""
        self.rerun = Rerun(checkpoint_id, tuple(rerun))

    def store_changed(self, source: GraphSource) -> None:
        """The store was read anew: the graph is drawn from ``source`` when it next shows (now, if it shows).
        Drawing a big store's graph is costly, so it is not drawn while its tab is closed."""
        self._graph_source, self._graph_stale = source, True
        if self._active in STORE_TABS:
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
        self.graph = Graph(tuple(metas), chosen)

    # -- the views ----------------------------------------------------------------------------------------
    def _build(self, tab: str, focus: bool = False) -> None:
        """Build the view of ``tab`` unless it is there; once mounted it is bound to the sources it reads."""
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

        async def bind() -> None:  # a callback of the panel's own: data_bind binds to the panel running it
            await mounted
            view.data_bind(**sources_of(view))
            if focus:
                view.focus()

        self.call_later(bind)

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


def sources_of(view: Widget) -> dict[str, Reactive[Any]]:
    """The panel's reactives ``view`` reads: each of :data:`SOURCES` it declares a reactive of the same name for."""
    return {
        name: getattr(DetailPanel, name) for name in SOURCES if isinstance(getattr(type(view), name, None), Reactive)
    }
