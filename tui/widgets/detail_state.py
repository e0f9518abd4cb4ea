"""What the detail panel shows: one value per chosen checkpoint (the edits kept per checkpoint live in
:mod:`crewpoint.tui.edits`)."""

from __future__ import annotations

from dataclasses import dataclass

from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.tui.edits import Edits

__all__ = ["Detail", "Edits"]


@dataclass(frozen=True, slots=True)
class Detail:
    """The checkpoint the panel is about. While its body loads, ``record`` and ``info`` are None: nothing can be
    forked, resumed or edited from it until it has loaded."""

    meta: CheckpointMeta
    record: CheckpointRecord | None = None
    info: CheckpointInfo | None = None
    problem: str | None = None
    """Why it cannot be opened, if it cannot."""
    diff_title: str = ""
    diff: list[DiffEntry] | None = None
    diff_note: str = ""
    request: int = 0
    """The load this detail answers (a newer request makes an older answer stale)."""

    def answers(self, meta: CheckpointMeta, request: int) -> bool:
        """Is this ``meta`` as it is now, shown or loading by ``request``?"""
        return self.meta.id == meta.id and self.meta.size == meta.size and self.request == request

    @property
    def loading(self) -> bool:
        return self.info is None and self.problem is None

    @property
    def ready(self) -> bool:
        return self.record is not None and self.info is not None and self.problem is None

    @property
    def problem_message(self) -> str:
        return f"This checkpoint cannot be opened: {self.problem}" if self.problem else ""
