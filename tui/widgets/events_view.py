"""The Events tab: the event history as a tree, nested by parent event; fields appear when a node opens."""

from __future__ import annotations

import time
from typing import Any

from rich.text import Text
from textual import on
from textual.reactive import reactive
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from crewpoint.text import clip
from crewpoint.tui.render import attach_gaps
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.overview_view import plain

EventData = dict[str, Any]

_SKIP = {"type", "timestamp", "event_id", "id", "parent_id", "parent_event_id", "sequence"}


def event_time(event: EventData) -> str:
    stamp = event.get("timestamp")
    if not isinstance(stamp, int | float):
        return "--:--:--"
    return time.strftime("%H:%M:%S", time.localtime(stamp)) + f".{int(stamp * 1000) % 1000:03d}"


def summary_of(event: EventData) -> str:
    """A few identifying fields of an event, for its one-line label."""
    for key in ("task_name", "method_name", "agent_role", "tool_name", "model", "signal_number", "branch", "error"):
        value = event.get(key)
        if value not in (None, ""):
            return clip(visible(" ".join(plain(value).split()), one_line=True), 60)
    return ""


class EventsView(Tree[EventData]):
    """The events of ``detail``, nested under the event that started them, in order; redrawn when it changes."""

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("events", id=id)
        self.show_root = False
        self.guide_depth = 3

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is not None:
            self.show(detail.info.events if detail.info is not None else [], detail.status)

    def show(self, events: list[EventData], message: str = "") -> None:
        """The events, nested under their parent (``parent_id``, else the event that started them) when the
        parent is among them; in order, flat, when the events carry no such links."""
        self.clear()
        nodes: dict[str, TreeNode[EventData]] = {}
        for event in events:
            parent_id = event.get("parent_id") or event.get("parent_event_id") or event.get("started_event_id")
            parent = nodes.get(str(parent_id)) if parent_id else None
            label = Text.assemble(
                (event_time(event), "dim"), "  ", (visible(event.get("type", "event"), one_line=True), "bold")
            )
            summary = summary_of(event)
            if summary:
                label.append(f"  {summary}")
            attach_gaps(label)
            node = (parent or self.root).add(label, event, allow_expand=True)
            if parent is not None:
                parent.allow_expand = True
            event_id = event.get("event_id") or event.get("id")
            if event_id:
                nodes[str(event_id)] = node
        if not events:
            self.root.add_leaf(Text(message or "no events recorded", style="dim"))

    @on(Tree.NodeExpanded)
    def _fields(self, event: Tree.NodeExpanded[EventData]) -> None:
        event.stop()
        node = event.node
        data = node.data
        if data is None or any(child.data is None for child in node.children):
            return
        first = node.children[0] if node.children else None
        for key, value in data.items():
            if key in _SKIP:
                continue
            leaf = Text.assemble(
                (f"{visible(key, one_line=True)}: ", "italic"),
                visible(" ".join(plain(value).split()), one_line=True)[:200],
            )
            if first is not None:
                node.add_leaf(leaf, before=first)
            else:
                node.add_leaf(leaf)
