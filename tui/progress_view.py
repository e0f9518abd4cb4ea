"""One table from a run-progress record to the part of a display that draws it, shared by every display.

The command line's Rich display (:mod:`crewpoint.tui.progress`) and the app's run panel
(:mod:`crewpoint.tui.widgets.run_panel`) both subclass :class:`ProgressView` and write one ``draw_<part>`` method
per part they show; :meth:`ProgressView.draw` looks the record's ``event`` up in :data:`PART_OF`. A new record
kind is one line in the table, and every display either draws it or, by the base class, ignores it.

Headless: the standard library only.
"""

from __future__ import annotations

from typing import Literal

from crewpoint.tui import run_protocol as protocol
from crewpoint.tui.run_protocol import ProgressRecord

Part = Literal[
    "started",
    "step_started",
    "step_done",
    "step_failed",
    "checkpoint",
    "write_failed",
    "finished",
    "waiting",
    "stopped",
    "queued",
    "cut_short",
    "log",
    "quiet",
    "other",
]
"""What a display draws; each is a ``draw_<part>`` method of :class:`ProgressView`."""

PART_OF: dict[str, Part] = {
    protocol.STARTED: "started",
    **dict.fromkeys(protocol.STEP_STARTED, "step_started"),
    **dict.fromkeys(protocol.STEP_DONE, "step_done"),
    **dict.fromkeys(protocol.STEP_FAILED, "step_failed"),
    protocol.CHECKPOINT: "checkpoint",
    protocol.WRITE_FAILED: "write_failed",
    protocol.FINISHED: "finished",
    protocol.WAITING: "waiting",
    protocol.STOPPED_AT_BUDGET: "stopped",
    protocol.QUEUED: "queued",
    protocol.FAILED: "cut_short",
    protocol.INTERRUPTED: "cut_short",
    protocol.LOG: "log",
    protocol.WRITTEN: "quiet",
}
"""Record ``event`` → the part that draws it."""

QUIET_PREFIXES = ("llm_", "tool_", "memory_", "knowledge_")
"""Events of these families are too many to draw one line each: their part is ``"quiet"``."""


def part_of(kind: str) -> Part:
    """The part that draws a record of ``kind``: from :data:`PART_OF`, else ``"quiet"`` or ``"other"``."""
    part = PART_OF.get(kind)
    if part is not None:
        return part
    return "quiet" if kind.startswith(QUIET_PREFIXES) else "other"


class ProgressView:
    """A display of run progress. Every part draws nothing unless a subclass says how."""

    def draw(self, record: ProgressRecord) -> None:
        """Draw ``record`` with the method its part names."""
        getattr(self, f"draw_{part_of(record.event)}")(record)

    def draw_started(self, record: ProgressRecord) -> None:
        """The run began (its source, branch and the steps it will run)."""

    def draw_step_started(self, record: ProgressRecord) -> None:
        """A task, method or agent step began."""

    def draw_step_done(self, record: ProgressRecord) -> None:
        """A step finished, with its shortened output."""

    def draw_step_failed(self, record: ProgressRecord) -> None:
        """A step failed, with its error."""

    def draw_checkpoint(self, record: ProgressRecord) -> None:
        """A checkpoint was taken."""

    def draw_write_failed(self, record: ProgressRecord) -> None:
        """A checkpoint could not be written."""

    def draw_finished(self, record: ProgressRecord) -> None:
        """The run finished."""

    def draw_waiting(self, record: ProgressRecord) -> None:
        """The run stopped to wait for a person (``text``: the command that answers it)."""

    def draw_stopped(self, record: ProgressRecord) -> None:
        """The run stopped at its budget (``text``: what it spent of it): not a failure, it goes on from there."""

    def draw_queued(self, record: ProgressRecord) -> None:
        """Nothing ran here: the answered run goes on as a job of the fleet (``text`` names it)."""

    def draw_cut_short(self, record: ProgressRecord) -> None:
        """The run failed or was interrupted."""

    def draw_log(self, record: ProgressRecord) -> None:
        """A line the run printed."""

    def draw_quiet(self, record: ProgressRecord) -> None:
        """A record no display draws (a checkpoint written, an LLM or tool call)."""

    def draw_other(self, record: ProgressRecord) -> None:
        """A record of any other kind."""
