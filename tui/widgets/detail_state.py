"""What the detail panel shows: one value per chosen checkpoint, and the edits kept for each checkpoint."""

from __future__ import annotations

from dataclasses import dataclass, field

from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord


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

    @property
    def loading(self) -> bool:
        return self.info is None and self.problem is None

    @property
    def ready(self) -> bool:
        return self.record is not None and self.info is not None and self.problem is None

    @property
    def problem_message(self) -> str:
        return f"This checkpoint cannot be opened: {self.problem}" if self.problem else ""


@dataclass(slots=True)
class Edits:
    """Unsaved edits of one checkpoint: changed inputs (as typed) and edited task outputs (0-based index)."""

    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[int, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.inputs or self.outputs)
