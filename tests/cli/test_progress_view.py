"""One table from a run-progress record to the part of a display that draws it (tui/progress_view.py), used by
the command line's display and the app's run panel alike."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from crewpoint.tui import run_protocol as protocol
from crewpoint.tui.progress_view import PART_OF, Part, ProgressView, part_of
from crewpoint.tui.run_protocol import ProgressRecord


class Recorder(ProgressView):
    """Draws nothing but what it was asked to draw, by part."""

    def __init__(self) -> None:
        self.drawn: list[tuple[str, str]] = []

    def __getattribute__(self, name: str) -> typing.Any:
        if name.startswith("draw_"):
            return lambda record: self.drawn.append((name.removeprefix("draw_"), record.event))
        return super().__getattribute__(name)


@pytest.mark.parametrize(
    ("kind", "part"),
    [
        (protocol.STARTED, "started"),
        ("task_started", "step_started"),
        ("method_execution_started", "step_started"),
        ("lite_agent_execution_completed", "step_done"),
        ("task_completed", "step_done"),
        ("method_execution_failed", "step_failed"),
        (protocol.CHECKPOINT, "checkpoint"),
        (protocol.WRITE_FAILED, "write_failed"),
        (protocol.FINISHED, "finished"),
        (protocol.WAITING, "waiting"),
        (protocol.FAILED, "cut_short"),
        (protocol.INTERRUPTED, "cut_short"),
        (protocol.LOG, "log"),
        (protocol.WRITTEN, "quiet"),
        ("llm_call_started", "quiet"),
        ("tool_usage_started", "quiet"),
        ("crew_kickoff_started", "other"),
    ],
)
def test_a_record_is_drawn_by_the_part_the_table_names(kind: str, part: str) -> None:
    view = Recorder()
    view.draw(ProgressRecord(kind))
    assert view.drawn == [(part, kind)]
    assert part_of(kind) == part


def test_every_part_is_a_method_that_draws_nothing_by_default() -> None:
    parts = set(typing.get_args(Part))
    assert set(PART_OF.values()) | {"quiet", "other"} == parts
    for part in parts:
        assert callable(getattr(ProgressView, f"draw_{part}"))
    for kind in (*PART_OF, "llm_call_started", "anything_else"):
        ProgressView().draw(ProgressRecord(kind))  # the base draws nothing and fails on nothing
    assert {name for name in vars(ProgressView) if name.startswith("draw_")} == {f"draw_{p}" for p in parts}


def test_every_step_event_of_the_protocol_has_its_part() -> None:
    for kinds, part in (
        (protocol.STEP_STARTED, "step_started"),
        (protocol.STEP_DONE, "step_done"),
        (protocol.STEP_FAILED, "step_failed"),
    ):
        assert {part_of(kind) for kind in kinds} == {part}
    assert {part_of(kind) for kind in protocol.ENDS} == {"finished", "waiting", "stopped", "queued", "cut_short"}


def test_the_command_line_and_the_run_panel_both_draw_through_the_table() -> None:
    from crewpoint.tui.progress import RichProgress
    from crewpoint.tui.widgets.run_panel import RunPanel

    for display in (RichProgress, RunPanel):
        assert issubclass(display, ProgressView)
        assert display.draw is ProgressView.draw  # no display keeps a ladder of its own


def test_the_table_loads_without_textual_or_rich() -> None:
    code = "import sys, crewpoint.tui.progress_view; print(sorted({'textual', 'rich'} & set(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.strip() == "[]"
