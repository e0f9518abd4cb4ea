"""What the detail panel hands down to its tab views: one value per chosen checkpoint (the edits kept per
checkpoint live in :mod:`crewpoint.tui.edits`).

The panel holds these in reactives; a tab view declares a reactive of the same name for each one it reads, and the
panel binds it (``data_bind``): ``detail`` (:class:`Detail`), ``edited`` (:class:`EditedDetail`: the detail with its
unsaved edits), ``rerun`` (:class:`Rerun`); the branch graph's ``graph`` is
:class:`crewpoint.tui.widgets.branch_graph.Graph`. A view redraws itself when its reactive changes: nothing calls
it."""

from __future__ import annotations

from dataclasses import dataclass

from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.tui.edits import Edits

__all__ = ["Detail", "EditedDetail", "Edits", "Rerun"]


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

    @property
    def status(self) -> str:
        """What a view says while it has nothing of the checkpoint to show: why it cannot open, or that it loads."""
        return self.problem_message or ("loading…" if self.loading else "")


@dataclass(frozen=True, slots=True)
class EditedDetail:
    """A detail with the unsaved edits of its checkpoint as they were when it was shown: what the editing tabs
    (Tasks, Inputs) start from. What is typed afterwards goes up as messages, not back into this value."""

    detail: Detail
    edits: Edits


@dataclass(frozen=True, slots=True)
class Rerun:
    """The tasks a fork of ``checkpoint_id`` would run again (0-based), as the newest fork plan says."""

    checkpoint_id: str
    tasks: tuple[int, ...] = ()
