"""A stopping signal that lands while a run is closing (its last checkpoints being flushed) is not lost: the run
closes whole, its newest checkpoint is the signal's, and then the program stops as the signal asked.

Each run is a program of its own, in a session of its own, that signals itself at the moment the test names: the
signal is that program's alone, never the test process's."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from crewpoint.checkpoint import ops
from crewpoint.providers.runs import read_runs

PRELUDE = textwrap.dedent(
    """
    import json, signal, sys, threading

    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.providers import JsonProvider
    from crewpoint.runtime import current_state


    class SignalOnFlush(JsonProvider):
        # sends the signal to the main thread the first time the run's writes are flushed: at the run's end
        def __init__(self, signum):
            super().__init__(fsync=False)
            self.signum, self.sent = signum, False

        def flush(self):
            if not self.sent:
                self.sent = True
                signal.pthread_kill(threading.main_thread().ident, self.signum)
            super().flush()


    class SignalOnFirstRecord(JsonProvider):
        # sends SIGINT while the run is being set up: when its record is first written
        def __init__(self):
            super().__init__(fsync=False)
            self.sent = False

        def write_run(self, location, run):
            if not self.sent:
                self.sent = True
                signal.raise_signal(signal.SIGINT)
            return super().write_run(location, run)


    def run(config, provider=None, **seen):
        # the crew run until the signal stops it; what the program saw is printed as one JSON line, then the
        # signal's exception goes on as it would in a user's program
        handler = signal.getsignal(signal.SIGINT)
        try:
            demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)
        except BaseException as stopped:
            report = {
                "stopped": type(stopped).__name__,
                "notes": getattr(stopped, "__notes__", []),
                "sent": getattr(provider, "sent", None),
                "handler_back": signal.getsignal(signal.SIGINT) is handler,
                "state_gone": current_state() is None,
                **seen,
            }
            print(json.dumps(report), flush=True)
            raise
        print(json.dumps({"stopped": None}), flush=True)
    """
)


def run_alone(body: str, cwd: Path) -> tuple[int, dict[str, Any]]:
    """``body`` after :data:`PRELUDE` in a process of its own session: its exit code and the report it printed."""
    done = subprocess.run(
        [sys.executable, "-c", PRELUDE + textwrap.dedent(body)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,  # the signal it raises is its own; nothing reaches the test's process group
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines, (done.returncode, done.stderr)
    report: dict[str, Any] = json.loads(lines[-1])
    return done.returncode, report


@pytest.mark.parametrize(("signum", "exit_code"), [(signal.SIGINT, -signal.SIGINT), (signal.SIGTERM, 128 + 15)])
def test_a_signal_while_the_run_closes_gives_the_signal_checkpoint_then_stops(
    tmp_path: Path, signum: int, exit_code: int
) -> None:
    name = signal.Signals(signum).name
    code, report = run_alone(
        f"""
        provider = SignalOnFlush(signal.{name})
        config = CheckpointConfig(location=".checkpoints", provider=provider, on_events=["task_completed", "{name}"])
        run(config, provider)
        """,
        tmp_path,
    )
    assert report["sent"] and report["stopped"] == ("KeyboardInterrupt" if name == "SIGINT" else "SystemExit")
    assert code == exit_code  # Ctrl-C ends the program as Python's does; SIGTERM with 128 + 15
    newest, *older = ops.list_checkpoints(".checkpoints")
    assert (newest.trigger, newest.tasks_done, newest.tasks_total) == (name, 4, 4)
    assert newest.parent_id == older[0].id and older[0].trigger == "task_completed"
    assert len(older) == 4  # every task's checkpoint was written too
    (run,) = read_runs(".checkpoints")
    assert run.status == "interrupted"  # the run's record was closed, not left running


def test_ctrl_c_while_the_run_closes_prints_how_to_resume_from_the_signal_checkpoint(tmp_path: Path) -> None:
    code, report = run_alone(
        """
        provider = SignalOnFlush(signal.SIGINT)
        run(CheckpointConfig(location=".checkpoints", provider=provider, on_events=["task_completed", "SIGINT"]))
        """,
        tmp_path,
    )
    assert report["stopped"] == "KeyboardInterrupt" and code == -signal.SIGINT
    newest = ops.list_checkpoints(".checkpoints")[0]
    assert newest.trigger == "SIGINT"
    notes = report["notes"]
    assert any(f"crewpoint checkpoint resume {newest.id}" in note for note in notes), notes


def test_a_signal_on_the_first_instruction_of_the_closing_is_held_too(tmp_path: Path) -> None:
    """The signal lands inside the closing before it has marked the run as stopping (as on its first
    instruction): the handler sees the closing on the stack and holds the signal all the same."""
    code, report = run_alone(
        """
        from crewpoint.checkpoint.writer import writer
        from crewpoint.runtime import Running

        real_flush = writer.flush
        landed = []

        def flush(timeout=30.0):
            caller = sys._getframe(1)
            if caller.f_code is Running.__exit__.__code__ and not landed:
                landed.append("SIGINT")
                caller.f_locals["self"].state.stopping = False  # not marked yet
                signal.raise_signal(signal.SIGINT)
            real_flush(timeout)

        writer.flush = flush
        run(CheckpointConfig(location=".checkpoints", on_events=["task_completed", "SIGINT"]), landed=landed)
        """,
        tmp_path,
    )
    assert report["stopped"] == "KeyboardInterrupt" and code == -signal.SIGINT
    assert report["landed"] == ["SIGINT"]
    newest = ops.list_checkpoints(".checkpoints")[0]
    assert (newest.trigger, newest.tasks_done) == ("SIGINT", 4)
    (run,) = read_runs(".checkpoints")
    assert run.status == "interrupted"


def test_ctrl_c_while_a_run_is_set_up_stops_it_before_any_work_and_leaves_nothing_behind(tmp_path: Path) -> None:
    code, report = run_alone(
        """
        provider = SignalOnFirstRecord()
        run(CheckpointConfig(location=".checkpoints", provider=provider, on_events=["task_completed", "SIGINT"]),
            provider)
        """,
        tmp_path,
    )
    assert report["stopped"] == "KeyboardInterrupt" and report["sent"] and code == -signal.SIGINT
    (only,) = ops.list_checkpoints(".checkpoints")  # no task ran: only the signal's checkpoint
    assert (only.trigger, only.tasks_done) == ("SIGINT", 0)
    (run,) = read_runs(".checkpoints")
    assert run.status == "interrupted"
    assert report["handler_back"]  # the run's handlers are gone with it
    assert report["state_gone"]
