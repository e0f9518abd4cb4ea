"""The command line a newcomer meets: ids, tables, one-line errors, exit codes, Ctrl+C, broken pipes, run status.

Each test runs the real ``crewpoint`` command (a subprocess where a process, a signal or a pipe matters; click's
runner otherwise) and checks what a user sees. Waiting is on events (a file appears, a line arrives), never on
the clock.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import pytest
from crewai_fixtures import json_store
from support.cli import CREWPOINT, cli
from support.stores import make_store
from support.waiting import wait_for

from crewpoint import Agent, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointRecord
from crewpoint.providers.refs import short_id

STALLING_CREW = '''
import os
import time

from crewpoint import Agent, Crew, Task
from crewpoint.llm import OfflineLLM


class StallingLLM(OfflineLLM):
    """Answers at once, except that with STALL set it waits (until a signal) on the second task."""

    def call(self, messages, **kwargs):
        if os.environ.get("STALL") and any("step 2" in str(m.get("content", "")) for m in messages):
            while True:  # until a signal (one long sleep could start just after a signal landed, and miss it)
                time.sleep(0.05)
        return super().call(messages, **kwargs)


writer = Agent(role="writer", goal="write", backstory="writes", llm=StallingLLM())
crew = Crew(
    agents=[writer],
    tasks=[Task(description=f"step {i}", expected_output="a line", agent=writer) for i in (1, 2, 3)],
    checkpoint=True,
)

if __name__ == "__main__":
    crew.kickoff()
'''


def crewpoint(*args: str, cwd: Path, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CREWPOINT, *args], cwd=cwd, capture_output=True, text=True, timeout=120, **kwargs)  # type: ignore[call-overload, no-any-return]


def checkpoint_files(store: Path) -> list[Path]:
    return sorted((store / "main").glob("*.json")) if (store / "main").is_dir() else []


def table(stdout: str) -> tuple[str, list[str]]:
    header, *rows = stdout.splitlines()
    return header, rows


def column(header: str, rows: list[str], name: str) -> list[str]:
    """The cells of one column, cut where the header puts it (cells hold no double spaces)."""
    start = header.index(name)
    return [row[start:].split("  ")[0].strip() for row in rows]


def one_line_error(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crewpoint: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# -- 1. ids: distinct, typeable, the same rule in the app and on the command line -----------------------------


def test_a_copied_crewai_store_lists_distinct_ids_a_user_can_type_back(tmp_path: Path) -> None:
    json_store(tmp_path / "crewai")
    assert cli("checkpoint", "copy", "crewai", "copy").exit_code == 0
    listed = cli("checkpoint", "list", "copy")
    assert listed.exit_code == 0, listed.stderr
    header, rows = table(listed.stdout)
    ids = column(header, rows, "ID")
    parents = column(header, rows, "PARENT")
    assert len(set(ids)) == len(ids) == len(ops.list_checkpoints("copy")) > 1
    assert all(p == "-" or p in ids for p in parents)  # a parent reads as the id its own row shows
    for shown in ids[:3]:
        info = cli("checkpoint", "info", shown, "--location", "copy")
        assert info.exit_code == 0, info.stderr
        assert info.stdout.splitlines()[0].split()[1].startswith(shown)
    copied = ops.list_checkpoints("copy")[0].id
    original = copied.replace("-", "_", 1)
    assert short_id(copied) == short_id(original) == copied[-8:]  # the app shows the random part of either


def test_crewpoint_ids_list_by_their_first_twelve_characters(tmp_path: Path) -> None:
    store = make_store()
    header, rows = table(cli("checkpoint", "list", store).stdout)
    assert column(header, rows, "ID") == [m.id[:12] for m in ops.list_checkpoints(store)]


# -- 2. info's ancestry is aligned ------------------------------------------------------------------------------


def test_info_ancestry_columns_line_up_across_branch_names(tmp_path: Path) -> None:
    store = make_store()
    source = ops.list_checkpoints(store)[2]
    branch = "a-branch-with-a-rather-long-name"
    forked = cli("checkpoint", "fork", source.id, "--branch", branch, "--input", "topic=tidal power")
    assert forked.exit_code == 0, forked.stderr
    head = ops.list_checkpoints(store, branch=branch)[0]
    text = cli("checkpoint", "info", head.id).stdout
    ancestry = text.split("ancestry (newest first)\n")[1].split("\n\n")[0].splitlines()
    assert {line.split()[1] for line in ancestry} == {branch, "main"}
    assert len({line.index("task_completed") for line in ancestry}) == 1
    assert len({line.rindex(" ") for line in ancestry}) == 1  # progress starts in one column too


# -- 3. one clipper: no cell widens the table -----------------------------------------------------------------


def test_a_damaged_reason_or_a_huge_field_cannot_widen_the_table(tmp_path: Path) -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    record = ops.load(metas[0].id, store)
    huge = "x" * 300_000
    JsonProvider(fsync=False).write(
        store, CheckpointRecord(meta=record.meta.with_(id="b" * 32, entity_name=huge), body=record.body)
    )
    damaged = Path(metas[-1].location)
    first, rest = damaged.read_text(encoding="utf-8").split("\n", 1)
    first = first.replace('"tasks_done":1', '"tasks_done":"' + "y" * 400 + '"')
    damaged.write_text(first + "\n" + rest, encoding="utf-8")

    listed = crewpoint("checkpoint", "list", store, cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    header, rows = table(listed.stdout)
    assert len(rows) == len(metas) + 1
    assert max(len(line) for line in listed.stdout.splitlines()) < 250
    entities = column(header, rows, "ENTITY")
    assert any(cell.startswith("crew xxx") and cell.endswith("…") for cell in entities)
    assert column(header, rows, "TRIGGER")[-1] == "DAMAGED"
    assert entities[-1].startswith("bad metadata: tasks_done must be a count") and entities[-1].endswith("…")
    assert "crew research-crew" in entities


# -- 4 and 5. usage errors are one line; --debug keeps the exit code --------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (
            ["checkpoint", "list", "--since", "x"],
            "no such option '--since'",
        ),
        (["checkpoint", "lst"], "did you mean 'list'?"),
        (["checkpoint", "resume"], "missing argument 'ID'"),
        (["checkpoint", "list", "--limit", "many"], "'many' is not a valid integer"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(tmp_path: Path, args: list[str], fragment: str) -> None:
    done = crewpoint(*args, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert fragment in one_line_error(done.stderr)


def test_debug_adds_the_traceback_and_keeps_exit_2(tmp_path: Path) -> None:
    make_store()
    plain = crewpoint("checkpoint", "info", "ffffffffff", cwd=tmp_path)
    assert plain.returncode == 2
    line = one_line_error(plain.stderr)
    debug = crewpoint("--debug", "checkpoint", "info", "ffffffffff", cwd=tmp_path)
    assert debug.returncode == 2
    assert "Traceback" in debug.stderr and debug.stderr.strip().splitlines()[-1] == line


# -- 6. Ctrl+C says how to resume, with the program that ran ----------------------------------------------------


def _interrupt_when(proc: subprocess.Popen[str], condition: Callable[[], bool], what: str) -> tuple[str, str]:
    wait_for(lambda: condition() or proc.poll() is not None, what)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    return proc.communicate(timeout=60)


def test_ctrl_c_in_a_script_prints_a_resume_hint_that_names_its_app_and_works(tmp_path: Path) -> None:
    (tmp_path / "crew1.py").write_text(STALLING_CREW, encoding="utf-8")
    env = {**os.environ, "STALL": "1"}
    store = tmp_path / ".checkpoints"
    script = subprocess.Popen(
        [sys.executable, "crew1.py"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    _out, err = _interrupt_when(script, lambda: bool(checkpoint_files(store)), "the first checkpoint")
    assert script.returncode in (130, -signal.SIGINT)  # the interrupt still ends the program as Python's does
    assert "KeyboardInterrupt" in err  # not swallowed
    hint = err.strip().splitlines()[-1]
    first = ops.list_checkpoints(str(store))[0]
    assert hint.startswith(f"crewpoint: interrupted; resume with: crewpoint checkpoint resume {first.id} ")
    assert "--app crew1.py:crew" in hint and "crew.kickoff(from_checkpoint=" in hint
    command = hint.split("resume with: ", 1)[1].split(",", 1)[0].split()
    assert command[:3] == ["crewpoint", "checkpoint", "resume"]
    finished = crewpoint(*command[1:], cwd=tmp_path)  # the hint, as printed, finishes the run
    assert finished.returncode == 0, finished.stderr
    newest = ops.list_checkpoints(str(store))[0]
    assert newest.tasks_done == 3 and newest.parent_id is not None


def test_the_resume_hint_of_the_command_line_keeps_its_app(tmp_path: Path) -> None:
    (tmp_path / "crew1.py").write_text(STALLING_CREW, encoding="utf-8")
    store = tmp_path / ".checkpoints"
    assert subprocess.run([sys.executable, "crew1.py"], cwd=tmp_path, timeout=120).returncode == 0
    first = ops.list_checkpoints(str(store))[-1]
    env = {**os.environ, "STALL": "1"}
    resumed = subprocess.Popen(
        [CREWPOINT, "checkpoint", "resume", first.id, "--app", "crew1.py:crew", "--progress", "json"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert resumed.stdout is not None
    for line in resumed.stdout:
        if json.loads(line)["event"] == "task_started":
            break
    resumed.send_signal(signal.SIGINT)
    _rest, err = resumed.communicate(timeout=60)
    assert resumed.returncode == 130
    hint = err.strip().splitlines()[-1]
    assert hint.startswith("interrupted; resume with: crewpoint checkpoint resume ")
    assert hint.endswith("--app crew1.py:crew")
    args = hint.split("resume with: ", 1)[1].split()
    finished = crewpoint(*args[1:], cwd=tmp_path)
    assert finished.returncode == 0, finished.stderr
    assert ops.list_checkpoints(str(store))[0].tasks_done == 3


# -- 7, 8, 9: messages a user reads -----------------------------------------------------------------------------


def test_an_app_that_is_not_a_crew_is_named_with_the_right_article(tmp_path: Path) -> None:
    store = make_store()
    (tmp_path / "prog.py").write_text("crew = 5\n", encoding="utf-8")
    done = crewpoint("checkpoint", "resume", ops.list_checkpoints(store)[0].id, "--app", "prog.py:crew", cwd=tmp_path)
    assert done.returncode == 2
    assert "crew is an int, not a crew" in one_line_error(done.stderr)


def test_set_inputs_refuses_an_input_the_crew_does_not_have_as_the_command_line_does(tmp_path: Path) -> None:
    store = make_store()
    crew = demo_crew()
    crew.kickoff(inputs=DEMO_INPUTS)
    with pytest.raises(ValueError) as refused:
        crew.set_inputs({"tpoic": "tides"})
    forked = cli("checkpoint", "fork", ops.list_checkpoints(store)[0].id, "--input", "tpoic=tides")
    assert forked.exit_code == 2
    assert one_line_error(forked.stderr) == f"crewpoint: {refused.value}"
    assert str(refused.value).startswith("unknown input 'tpoic': this crew's inputs are ")
    assert crew.set_inputs({"topic": "tides"}) != []  # a known input is taken, and resets what used it


def test_an_unnamed_crew_lists_as_unnamed(tmp_path: Path) -> None:
    writer = Agent(role="writer", goal="write")
    Crew(agents=[writer], tasks=[Task(description="one line", agent=writer)], checkpoint=True).kickoff()
    listed = cli("checkpoint", "list")
    header, rows = table(listed.stdout)
    assert column(header, rows, "ENTITY") == ["crew (unnamed)"]
    assert "crew crew" not in listed.stdout
    assert "entity      crew (unnamed)" in cli("checkpoint", "info").stdout


# -- 10. STATUS reads the truth as soon as the process is gone --------------------------------------------------


AGENT_CHECKPOINTS = """
from crewpoint import Agent, Crew, Task

a = Agent(role="researcher", goal="find", checkpoint=True)
b = Agent(role="writer", goal="write")
Crew(agents=[a, b], tasks=[Task(description="find", agent=a), Task(description="write", agent=b)]).kickoff()
"""


def test_a_finished_run_reads_done_as_soon_as_its_process_exits(tmp_path: Path) -> None:
    (tmp_path / "run.py").write_text(AGENT_CHECKPOINTS, encoding="utf-8")
    assert subprocess.run([sys.executable, "run.py"], cwd=tmp_path, timeout=120).returncode == 0
    header, rows = table(crewpoint("checkpoint", "list", cwd=tmp_path).stdout)
    assert column(header, rows, "STATUS") == ["done"]  # its only checkpoint is at 1/2, written moments ago


def test_a_killed_run_reads_crashed_as_soon_as_its_process_is_gone(tmp_path: Path) -> None:
    (tmp_path / "crew1.py").write_text(STALLING_CREW, encoding="utf-8")
    store = tmp_path / ".checkpoints"
    proc = subprocess.Popen([sys.executable, "crew1.py"], cwd=tmp_path, env={**os.environ, "STALL": "1"})
    wait_for(lambda: bool(checkpoint_files(store)), "the first checkpoint")
    wait_for(lambda: any((store / ".runs").glob("*.json")), "the run's record")
    header, rows = table(crewpoint("checkpoint", "list", cwd=tmp_path).stdout)
    assert column(header, rows, "STATUS") == ["live"]
    proc.kill()
    proc.wait(timeout=60)
    header, rows = table(crewpoint("checkpoint", "list", cwd=tmp_path).stdout)
    assert column(header, rows, "STATUS") == ["crashed"]


# -- 11. one warning per agent ----------------------------------------------------------------------------------


def test_an_agents_ignored_setting_is_warned_about_once() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        writer = Agent(role="writer", goal="write", allow_delegation=False)
        task = Task(description="one line", agent=writer)
        Crew(agents=[writer], tasks=[task]).kickoff()
    said = [str(w.message) for w in caught if "ignores the setting" in str(w.message)]
    assert said == [
        "Agent 'writer' ignores the setting(s) allow_delegation: crewpoint does not use them and checkpoints do not "
        "save them"
    ]


# -- 12. a closed pipe ends any command quietly -----------------------------------------------------------------


@pytest.mark.parametrize("args", [["checkpoint", "list"], ["checkpoint", "info"], ["--help"]])
def test_a_reader_that_went_away_ends_the_command_quietly(tmp_path: Path, args: list[str]) -> None:
    make_store()
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line is written (``| head`` that has had enough)
    try:
        done = subprocess.run([CREWPOINT, *args], cwd=tmp_path, stdout=write, stderr=subprocess.PIPE, text=True)
    finally:
        os.close(write)
    assert done.stderr == ""
    assert done.returncode == 1


def test_the_ids_the_app_shows_follow_one_rule() -> None:
    assert short_id("0123456789abcdef0123456789abcdef") == "01234567"
    assert short_id("0123456789abcdef0123456789abcdef", 12, typeable=True) == "0123456789ab"
    assert short_id("20261130T150417_31ad02d6") == "31ad02d6"
    assert short_id("20261130T150417_31ad02d6", 12, typeable=True) == "20261130T150417_31ad02d6"
    assert re.fullmatch(r"[0-9a-f]{8}", short_id("20261130T150417-31ad02d6"))
