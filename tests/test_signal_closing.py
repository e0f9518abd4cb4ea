"""A stopping signal that lands while a run is closing (its last checkpoints being flushed) is not lost: the run
closes whole, its newest checkpoint is the signal's, and then the program stops as the signal asked."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path

import pytest

from crewpoint import CheckpointConfig
from crewpoint.checkpoint import ops
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers import JsonProvider
from crewpoint.providers.runs import RunInfo, read_runs
from crewpoint.runtime import current_state


class SignalOnFlush(JsonProvider):
    """Sends ``signum`` to the main thread the first time the run's writes are flushed: at the run's end."""

    def __init__(self, signum: int) -> None:
        super().__init__(fsync=False)
        self.signum = signum
        self.sent = False

    def flush(self) -> None:
        if not self.sent:
            self.sent = True
            main = threading.main_thread().ident
            assert main is not None
            signal.pthread_kill(main, self.signum)
        super().flush()


@pytest.mark.parametrize(("signum", "stop"), [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, SystemExit)])
def test_a_signal_while_the_run_closes_gives_the_signal_checkpoint_then_stops(
    tmp_path: Path, signum: int, stop: type[BaseException]
) -> None:
    provider = SignalOnFlush(signum)
    name = signal.Signals(signum).name
    config = CheckpointConfig(location=".checkpoints", provider=provider, on_events=["task_completed", name])
    crew = demo_crew(checkpoint=config)
    with pytest.raises(stop) as stopped:
        crew.kickoff(inputs=DEMO_INPUTS)
    assert provider.sent
    if stop is SystemExit:
        assert stopped.value.code == 128 + signum
    newest, *older = ops.list_checkpoints(".checkpoints")
    assert (newest.trigger, newest.tasks_done, newest.tasks_total) == (name, 4, 4)
    assert newest.parent_id == older[0].id and older[0].trigger == "task_completed"
    assert len(older) == 4  # every task's checkpoint was written too
    (run,) = read_runs(".checkpoints")
    assert run.status == "interrupted"  # the run's record was closed, not left running


def test_ctrl_c_while_the_run_closes_prints_how_to_resume_from_the_signal_checkpoint(tmp_path: Path) -> None:
    provider = SignalOnFlush(signal.SIGINT)
    config = CheckpointConfig(location=".checkpoints", provider=provider, on_events=["task_completed", "SIGINT"])
    with pytest.raises(KeyboardInterrupt) as stopped:
        demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)
    newest = ops.list_checkpoints(".checkpoints")[0]
    assert newest.trigger == "SIGINT"
    notes = getattr(stopped.value, "__notes__", [])
    assert any(f"crewpoint checkpoint resume {newest.id}" in note for note in notes), notes


def test_a_signal_on_the_first_instruction_of_the_closing_is_held_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The signal lands inside the closing before it has marked the run as stopping (as on its first
    instruction): the handler sees the closing on the stack and holds the signal all the same."""
    from crewpoint.checkpoint.writer import writer
    from crewpoint.runtime import Running

    real_flush = writer.flush
    landed: list[str] = []

    def flush(timeout: float | None = 30.0) -> None:
        caller = sys._getframe(1)
        if caller.f_code is Running.__exit__.__code__ and not landed:
            landed.append("SIGINT")
            caller.f_locals["self"].state.stopping = False  # not marked yet
            signal.raise_signal(signal.SIGINT)
        real_flush(timeout)

    monkeypatch.setattr(writer, "flush", flush)
    config = CheckpointConfig(location=".checkpoints", on_events=["task_completed", "SIGINT"])
    with pytest.raises(KeyboardInterrupt):
        demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)
    assert landed == ["SIGINT"]
    newest = ops.list_checkpoints(".checkpoints")[0]
    assert (newest.trigger, newest.tasks_done) == ("SIGINT", 4)
    (run,) = read_runs(".checkpoints")
    assert run.status == "interrupted"


class SignalOnFirstRecord(JsonProvider):
    """Sends SIGINT while the run is being set up: when its record is first written."""

    def __init__(self) -> None:
        super().__init__(fsync=False)
        self.sent = False

    def write_run(self, location: str, run: RunInfo) -> bool:
        if not self.sent:
            self.sent = True
            signal.raise_signal(signal.SIGINT)
        return super().write_run(location, run)


def test_ctrl_c_while_a_run_is_set_up_stops_it_before_any_work_and_leaves_nothing_behind(tmp_path: Path) -> None:
    before = signal.getsignal(signal.SIGINT)
    provider = SignalOnFirstRecord()
    config = CheckpointConfig(location=".checkpoints", provider=provider, on_events=["task_completed", "SIGINT"])
    crew = demo_crew(checkpoint=config)
    with pytest.raises(KeyboardInterrupt):
        crew.kickoff(inputs=DEMO_INPUTS)
    assert provider.sent
    (only,) = ops.list_checkpoints(".checkpoints")  # no task ran: only the signal's checkpoint
    assert (only.trigger, only.tasks_done) == ("SIGINT", 0)
    (run,) = read_runs(".checkpoints")
    assert run.status == "interrupted"
    assert signal.getsignal(signal.SIGINT) is before  # the run's handlers are gone with it
    assert current_state() is None
