"""The checkpoint tree: entity → branch → checkpoints in sequence order, forks nested under their source.

Labels are drawn from the current :class:`StoreIndex` at render time, so a refresh swaps the index and adds or
removes only the nodes that changed; the cursor stays on the same checkpoint. A branch's checkpoints are added
when the branch is first expanded, so a store of any size opens at once. What each line says is worded by
:mod:`crewpoint.tui.widgets.tree_labels`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import on
from textual.binding import Binding
from textual.geometry import Region
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from crewpoint.providers.base import CheckpointMeta
from crewpoint.tui.fleet_view import FleetView
from crewpoint.tui.store_index import (
    CheckpointRef,
    EntityKey,
    EntityRef,
    NodeRef,
    OlderRef,
    Segment,
    SegmentRef,
    StoreIndex,
)
from crewpoint.tui.widgets.tree_labels import TreeLabels, hidden_runs

Node = TreeNode[NodeRef]

TOGGLE = Style.from_meta({"toggle": True})
"""Clicking the expand icon opens or closes the node (as in Textual's own tree)."""


class CheckpointTree(Tree[NodeRef]):
    """The store as a tree. Posts :class:`CheckpointTree.Chosen` when the cursor lands on a checkpoint."""

    COMPONENT_CLASSES = {
        "checkpoint-tree--muted",
        "checkpoint-tree--live",
        "checkpoint-tree--damaged",
        "checkpoint-tree--marked",
        "checkpoint-tree--branch",
        "checkpoint-tree--stopped",
    }

    DEFAULT_CSS = """
    CheckpointTree > .checkpoint-tree--muted { color: $text-muted; }
    CheckpointTree > .checkpoint-tree--live { color: $success; text-style: bold; }
    CheckpointTree > .checkpoint-tree--damaged { color: $error; }
    CheckpointTree > .checkpoint-tree--marked { color: $warning; text-style: bold; }
    CheckpointTree > .checkpoint-tree--branch { color: $accent; text-style: bold; }
    CheckpointTree > .checkpoint-tree--stopped { color: $warning; }
    """

    BINDINGS = [
        Binding("left", "close_or_parent", "Close the branch, or go to its parent", show=False),
        Binding("right", "open_or_child", "Open the branch, or go into it", show=False),
    ]

    @dataclass
    class Chosen(Message):
        """The cursor is on a checkpoint."""

        meta: CheckpointMeta

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        self._words = TreeLabels(self)  # before the tree's own set-up, which draws the root's label
        super().__init__("checkpoints", id=id, classes=classes)
        self.show_root = False
        self.guide_depth = 2
        self.index = StoreIndex()
        self.marked: str | None = None
        self.edited: set[str] = set()
        """Checkpoints with unsaved edits: marked ✎."""
        self.running: dict[str, tuple[float, str]] = {}
        """Runs this app started that are still going, as source checkpoint id → (start time, branch written):
        the segments they write are shown live."""
        self.fleet: FleetView | None = None
        """The store's fleet as last read: its runs show queued, running on HOST or recovering."""
        self._by_ref: dict[NodeRef, Node] = {}
        self._filled: set[str] = set()
        self._labels: dict[NodeRef, Text] = {}
        self.now = time.time()
        self._unfolded: set[OlderRef] = set()
        self._after_drawn: list[Callable[[], object]] = []
        self._before_filter: tuple[set[NodeRef], set[NodeRef]] | None = None
        """Which nodes were open and closed before a filter was typed: so they are again once it is cleared."""

    # -- the public surface ---------------------------------------------------------------------------
    @property
    def chosen_id(self) -> str | None:
        node = self.cursor_node
        return node.data.id if node is not None and isinstance(node.data, CheckpointRef) else None

    def load(self, index: StoreIndex) -> None:
        """Show ``index``: in place when the filter is unchanged, else rebuilt. The cursor keeps its checkpoint
        (the branches on its way are opened); what was open before a filter is open again once it is cleared;
        when the cursor's checkpoint is filtered out it goes to the newest one shown. The detail always hears
        where the cursor ends."""
        keep = self.cursor_node.data if self.cursor_node is not None else None
        rebuilt = index.query != self.index.query or not self._by_ref
        restore: tuple[set[NodeRef], set[NodeRef]] | None = None
        if rebuilt and self._by_ref:
            if not self.index.query:
                self._before_filter = self._expansion()  # the user's own layout, kept while a filter is on
            if not index.query and self._before_filter is not None:
                restore, self._before_filter = self._before_filter, None
        self.index = index
        self.now = time.time()
        self._labels.clear()
        if rebuilt:
            self._rebuild()
            if restore is not None:
                self._restore(*restore)
        else:
            self._sync()
        self._relabel()
        target = self._by_ref.get(keep) if keep is not None else None
        if rebuilt and isinstance(keep, CheckpointRef):
            target = self.expand_to(keep.id)
        if target is None and (keep is None or rebuilt) and index.metas:
            newest = max(index.metas.values(), key=lambda m: (m.created_at, m.sequence))
            target = self.expand_to(newest.id)
        if target is not None:
            _ = self.last_line  # lay the lines out so the node knows its line
            self.move_cursor(target)
        chosen = self.chosen_id
        if rebuilt and chosen is not None and chosen in index.metas:
            self.post_message(self.Chosen(index.metas[chosen]))  # the cursor may land on the line it was on

    def _expansion(self) -> tuple[set[NodeRef], set[NodeRef]]:
        """The refs of the open nodes, and of the closed ones that open by themselves (entities, fork points)."""
        opened = {ref for ref, node in self._by_ref.items() if node.is_expanded}
        closed = {ref for ref, node in self._by_ref.items() if not node.is_expanded and node.allow_expand}
        return opened, closed

    def _restore(self, opened: set[NodeRef], closed: set[NodeRef]) -> None:
        """Open and close nodes as they were (those still in the index)."""
        for ref in opened:
            if isinstance(ref, SegmentRef) and ref.key in self.index.segments:
                segment = self.index.segments[ref.key]
                self.expand_to(segment.metas[0].id)
            elif isinstance(ref, OlderRef):
                self._unfold((ref.kind, ref.name))
                node = self._by_ref.get(ref)
                if node is not None:
                    node.expand()
        for ref in closed:
            node = self._by_ref.get(ref)
            if node is not None and node.is_expanded:
                node.collapse()

    def reveal(self, checkpoint_id: str) -> bool:
        """Expand the way to a checkpoint and put the cursor on it."""
        node = self.expand_to(checkpoint_id)
        if node is None:
            return False
        _ = self.last_line  # lay the lines out so the node knows its line
        self.move_cursor(node)
        return True

    def expand_to(self, checkpoint_id: str) -> Node | None:
        """Expand every branch on the way to a checkpoint (the cursor stays on its node)."""
        segment_key = self.index.segment_of.get(checkpoint_id)
        if segment_key is None:
            return None
        cursor = self.cursor_node
        chain: list[str] = []
        key: str | None = segment_key
        while key is not None:
            chain.append(key)
            source = self.index.segments[key].source_id
            key = self.index.segment_of.get(source) if source else None
        top = self.index.segments[chain[-1]].entity
        if SegmentRef(chain[-1]) not in self._by_ref:
            self._unfold(top)
            older = self._by_ref.get(OlderRef(*top))
            if older is not None:
                older.expand()
        for key in reversed(chain):
            node = self._by_ref.get(SegmentRef(key))
            if node is None:
                return None
            if node.parent is not None:
                node.parent.expand()
            node.expand()
            self._fill(node, self.index.segments[key])
        if cursor is not None and cursor.data is not None and self._by_ref.get(cursor.data) is cursor:
            _ = self.last_line
            self.move_cursor(cursor)
        return self._by_ref.get(CheckpointRef(checkpoint_id))

    def tick(self) -> None:
        """Re-evaluate what is live (labels depend on the clock)."""
        self.now = time.time()
        self._labels.clear()
        self._relabel()

    def set_edited(self, checkpoint_ids: set[str]) -> None:
        if checkpoint_ids != self.edited:
            self.edited = set(checkpoint_ids)
            self._labels.clear()
            self._relabel()

    def set_fleet(self, fleet: FleetView | None) -> None:
        if fleet != self.fleet:
            self.fleet = fleet
            self._labels.clear()
            self._relabel()

    def set_marked(self, checkpoint_id: str | None) -> None:
        self.marked = checkpoint_id
        self._labels.clear()
        self._relabel()

    def _relabel(self) -> None:
        """Lay out and draw every line again, its label asked anew (labels depend on the index, the clock and the
        marks). Textual's own tree does this when its guide depth changes; forcing that watcher is its public way."""
        self.mutate_reactive(Tree.guide_depth)

    def action_close_or_parent(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded and node.children:
            node.collapse()
        elif node.parent is not None and node.parent is not self.root:
            self.move_cursor(node.parent)

    def action_open_or_child(self) -> None:
        node = self.cursor_node
        if node is None or not node.allow_expand:
            return
        if not node.is_expanded:
            node.expand()
        elif node.children:
            self.move_cursor(node.children[0])

    # -- building ---------------------------------------------------------------------------------------
    def _rebuild(self) -> None:
        self.clear()
        self._by_ref.clear()
        self._filled.clear()
        self._unfolded.clear()
        expand_all = bool(self.index.query)
        for entity, keys in self.index.entities.items():
            entity_node = self.root.add("", EntityRef(*entity), expand=True)
            self._by_ref[EntityRef(*entity)] = entity_node
            hidden = hidden_runs(keys)
            if hidden:
                older = OlderRef(*entity)
                self._by_ref[older] = entity_node.add("", older, expand=False, allow_expand=True)
            for key in keys[hidden:]:
                self._add_segment(entity_node, key, expand=expand_all or len(keys) == 1)
        if expand_all:
            for key, segment in self.index.segments.items():
                node = self._by_ref.get(SegmentRef(key))
                if node is not None:
                    node.expand()
                    self._fill(node, segment)

    def _unfold(self, entity: EntityKey) -> None:
        """Add the folded older runs of ``entity`` under their node."""
        older = OlderRef(*entity)
        node = self._by_ref.get(older)
        if node is None or older in self._unfolded:
            return
        self._unfolded.add(older)
        keys = self.index.entities.get(entity, [])
        for key in keys[: hidden_runs(keys)]:
            if SegmentRef(key) not in self._by_ref:
                self._add_segment(node, key)

    def _add_segment(self, parent: Node, key: str, *, expand: bool = False) -> Node:
        node = parent.add("", SegmentRef(key), expand=expand)
        self._by_ref[SegmentRef(key)] = node
        if expand:
            self._fill(node, self.index.segments[key])
        return node

    def _fill(self, node: Node, segment: Segment) -> None:
        if segment.key in self._filled:
            return
        self._filled.add(segment.key)
        for meta in segment.metas:
            self._add_checkpoint(node, meta)

    def _add_checkpoint(self, parent: Node, meta: CheckpointMeta, before: Node | None = None) -> Node:
        forks = self.index.forks.get(meta.id, [])
        ref = CheckpointRef(meta.id)
        node = parent.add("", ref, before=before, expand=bool(forks), allow_expand=bool(forks))
        self._by_ref[ref] = node
        for key in forks:
            self._add_segment(node, key)
        return node

    def _sync(self) -> None:
        """Bring the existing nodes in line with the new index without rebuilding."""
        index = self.index
        gone: list[NodeRef] = [r for r in self._by_ref if isinstance(r, CheckpointRef) and r.id not in index.metas]
        gone += [r for r in self._by_ref if isinstance(r, SegmentRef) and r.key not in index.segments]
        for ref in gone:
            self._drop(ref)
        for entity, keys in index.entities.items():
            entity_ref = EntityRef(*entity)
            entity_node = self._by_ref.get(entity_ref)
            if entity_node is None:
                entity_node = self._by_ref[entity_ref] = self.root.add("", entity_ref, expand=True)
            older = self._by_ref.get(OlderRef(*entity))
            hidden = (
                set(keys[: hidden_runs(keys)])
                if older is not None and OlderRef(*entity) not in self._unfolded
                else set()
            )
            for key in keys:
                node = self._by_ref.get(SegmentRef(key))
                if node is not None and node.parent in (entity_node, older):
                    continue
                if key not in hidden:
                    self._ensure_segment(entity_node, key)
        for source_id, keys in index.forks.items():
            source = self._by_ref.get(CheckpointRef(source_id))
            if source is None:
                continue
            if keys:
                source.allow_expand = True
            for key in keys:
                self._ensure_segment(source, key)
        for key in list(self._filled):
            node = self._by_ref.get(SegmentRef(key))
            if node is None:
                self._filled.discard(key)
                continue
            present = [c for c in node.children if isinstance(c.data, CheckpointRef)]
            have = {c.data.id for c in present if isinstance(c.data, CheckpointRef)}
            wanted = index.segments[key].metas
            for position, meta in enumerate(wanted):
                if meta.id in have:
                    continue
                later = {m.id for m in wanted[position + 1 :]}
                before = next((c for c in present if isinstance(c.data, CheckpointRef) and c.data.id in later), None)
                self._add_checkpoint(node, meta, before=before)
        for entity_ref in [
            r for r in self._by_ref if isinstance(r, EntityRef) and (r.kind, r.name) not in index.entities
        ]:
            self._drop(entity_ref)

    def _ensure_segment(self, parent: Node, key: str) -> None:
        node = self._by_ref.get(SegmentRef(key))
        if node is not None and node.parent is parent:
            return
        if node is not None:
            self._drop(SegmentRef(key))
        self._add_segment(parent, key)

    def _drop(self, ref: NodeRef) -> None:
        node = self._by_ref.pop(ref, None)
        if node is None:
            return
        stack = list(node.children)
        while stack:
            child = stack.pop()
            stack.extend(child.children)
            if child.data is not None:
                self._by_ref.pop(child.data, None)
                if isinstance(child.data, SegmentRef):
                    self._filled.discard(child.data.key)
        if isinstance(ref, SegmentRef):
            self._filled.discard(ref.key)
        if node.parent is not None:
            node.remove()

    @on(Tree.NodeExpanded)
    def _expanded(self, event: Tree.NodeExpanded[NodeRef]) -> None:
        data = event.node.data
        if isinstance(data, SegmentRef) and data.key in self.index.segments:
            self._fill(event.node, self.index.segments[data.key])
        elif isinstance(data, OlderRef):
            self._unfold((data.kind, data.name))

    @on(Tree.NodeHighlighted)
    def _highlighted(self, event: Tree.NodeHighlighted[NodeRef]) -> None:
        data = event.node.data
        if isinstance(data, CheckpointRef) and data.id in self.index.metas:
            self.post_message(self.Chosen(self.index.metas[data.id]))

    def after_drawn(self, callback: Callable[[], object]) -> None:
        """Call ``callback`` once the tree has next drawn its lines (on the app's thread; nothing is redrawn for
        it)."""
        self._after_drawn.append(callback)

    def render_lines(self, crop: Region) -> list[Strip]:
        lines = super().render_lines(crop)
        if self._after_drawn:
            callbacks, self._after_drawn = self._after_drawn, []
            for callback in callbacks:
                callback()
        return lines

    def runs_here(self, segment: Segment) -> bool:
        """Is a run this app started writing ``segment``? A run continues the segment of its source when the
        source is the head, or starts one forked from its source; what it writes is newer than its start."""
        for source, (started, branch) in self.running.items():
            if segment.branch != branch:
                continue
            if segment.source_id == source or any(meta.id == source for meta in segment.metas):
                if segment.head.id == source or segment.head.created_at >= started:
                    return True
        return False

    # -- labels -----------------------------------------------------------------------------------------
    def render_label(self, node: Node, base_style: Style, style: Style) -> Text:
        data = node.data
        label = self._labels.get(data) if data is not None else None
        if label is None:
            label = self._label_for(data)
            if data is not None:
                self._labels[data] = label
        shown = label.copy()
        shown.stylize(style)
        if not node.allow_expand:
            return shown
        icon = self.ICON_NODE_EXPANDED if node.is_expanded else self.ICON_NODE
        return Text.assemble((icon, base_style + TOGGLE), shown)

    def label_style(self, name: str) -> Style:
        """The style of one of the tree's component classes (``muted``, ``live``, ``marked`` ...)."""
        return self.get_component_rich_style(f"checkpoint-tree--{name}", partial=True)

    def _label_for(self, data: NodeRef | None) -> Text:
        return self._words.label(data)
