"""What a tab view of the detail panel sends up; what it reads comes down (see `detail_state`)."""

from __future__ import annotations

from textual.message import Message
from textual.widget import Widget

from crewpoint.tui.widgets.detail_state import EditedDetail


class ViewFilled(Message):
    """A tab view has drawn ``edited`` (its fields, if it has any, are mounted): sent up to the panel, which may
    focus the first of them."""

    def __init__(self, view: Widget, edited: EditedDetail) -> None:
        super().__init__()
        self.view = view
        self.edited = edited

    @property
    def control(self) -> Widget:
        return self.view
