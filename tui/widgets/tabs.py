"""The detail panel's tabs, in one place: a tab is one entry here (its name, title and view). The panel builds its
panes from this list, the browser its number keys and palette commands; adding a tab touches this file only
(its view module aside).

A view is any widget that declares a reactive named after one of the panel's sources
(:data:`crewpoint.tui.widgets.detail_panel.SOURCES`: ``detail``, ``edited``, ``rerun``, ``graph``); the panel binds
it there (``data_bind``) when the tab first opens, and the view redraws itself from it in a ``watch_`` method."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.widget import Widget

from crewpoint.tui.widgets.branch_graph import BranchGraph
from crewpoint.tui.widgets.cost_view import CostView
from crewpoint.tui.widgets.diff_view import DiffView
from crewpoint.tui.widgets.events_view import EventsView
from crewpoint.tui.widgets.inputs_view import InputsView
from crewpoint.tui.widgets.overview_view import OverviewView
from crewpoint.tui.widgets.raw_view import RawView
from crewpoint.tui.widgets.tasks_view import TasksView


@dataclass(frozen=True, slots=True)
class Tab:
    """One tab of the detail panel. Its view is built the first time the tab opens, then bound to the panel."""

    name: str
    """The word in its key's action (``show_tab('tasks')``) and its pane's id (``tab-tasks``)."""
    title: str
    view: Callable[[], Widget]

    @property
    def pane_id(self) -> str:
        return f"tab-{self.name}"


TABS: tuple[Tab, ...] = (
    Tab("overview", "Overview", lambda: OverviewView(id="overview")),
    Tab("tasks", "Tasks", lambda: TasksView(id="tasks")),
    Tab("inputs", "Inputs", lambda: InputsView(id="inputs")),
    Tab("events", "Events", lambda: EventsView(id="events")),
    Tab("diff", "Diff", lambda: DiffView(id="diff")),
    Tab("raw", "Raw", lambda: RawView(id="raw")),
    Tab("graph", "Graph", lambda: BranchGraph(id="graph")),
    Tab("cost", "Cost", lambda: CostView(id="cost")),
)
"""The tabs in their order; the number keys 1… open them in this order."""

FIRST = TABS[0].pane_id


def tab_of(pane_id: str) -> Tab | None:
    """The tab whose pane has this id."""
    return next((tab for tab in TABS if tab.pane_id == pane_id), None)
