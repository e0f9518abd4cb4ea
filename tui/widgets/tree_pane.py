"""The browser's left column: the filter field over the checkpoint tree, which can be widened, narrowed and
hidden. Its looks are classes the browser's sheet styles (``-w25`` … ``-w70``, ``-hidden``; the field's ``-shown``)."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from crewpoint.tui.store_index import Segment
from crewpoint.tui.widgets.checkpoint_tree import CheckpointTree


class TreePane(Vertical):
    WIDTHS = (25, 40, 55, 70)
    """Shares of the width the tree can take (percent), switched with [ and ]."""

    def __init__(self, tree: CheckpointTree, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._tree = tree
        self._width = 1
        self._auto_cursor: str | None = None
        """Where the app last put the cursor itself; while it is there, the cursor follows live runs."""

    def compose(self) -> ComposeResult:
        yield Input(placeholder="filter: words, branch:NAME, trigger:NAME, status:waiting", id="filter")
        yield self._tree

    @property
    def filter_field(self) -> Input:
        return self.query_one("#filter", Input)

    def open_filter(self) -> None:
        self.filter_field.add_class("-shown")
        self.filter_field.focus()

    def clear_filter(self) -> None:
        """Empty and close the filter field, if it is open or holds words."""
        field = self.filter_field
        if field.value or field.has_class("-shown"):
            field.value = ""
            field.remove_class("-shown")

    def widen(self, step: int) -> None:
        """One share wider (or narrower, ``step`` -1); a hidden tree shows again."""
        self._width = max(0, min(len(self.WIDTHS) - 1, self._width + step))
        self.show()
        for n, share in enumerate(self.WIDTHS):
            self.set_class(n == self._width, f"-w{share}")

    def toggle(self) -> bool:
        """Hide or show the tree; whether it is hidden now."""
        self.toggle_class("-hidden")
        return self.has_class("-hidden")

    def show(self) -> None:
        self.remove_class("-hidden")

    def follow_live(self, live: list[Segment]) -> None:
        """Open every live run's branch; while the cursor stays where the app put it, move it onto the newest
        checkpoint of a live run as checkpoints arrive."""
        tree = self._tree
        for segment in live:
            tree.expand_to(segment.head.id)
        if self._auto_cursor is None:
            self._auto_cursor = tree.chosen_id
        if not live or tree.chosen_id != self._auto_cursor:
            return  # the user moved: leave the cursor with them
        newest = max(live, key=lambda s: (s.head.created_at, s.head.sequence)).head
        if newest.id != tree.chosen_id and tree.reveal(newest.id):
            self._auto_cursor = newest.id
