"""``crewpoint checkpoint``: the headless commands, their output, exit codes and one-line errors."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

from click.testing import Result
from support.cli import CREWPOINT, cli, one_line_error
from support.stores import make_store
from support.waiting import wait_for

from crewpoint.checkpoint import ops
from crewpoint.demo import DEMO_INPUTS
from crewpoint.flow import Flow, start
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointRecord


def assert_one_line_error(result: Result, *fragments: str, code: int = 2) -> None:
    line = one_line_error(result, code)
    for fragment in fragments:
        assert fragment in line, line


def json_lines(text: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_help_documents_the_commands_and_exit_codes() -> None:
    result = cli("--help")
    assert result.exit_code == 0
    assert "0 ok, 1 the run failed, 2 bad input, 130 interrupted" in result.stdout
    result = cli("checkpoint", "--help")
    for command in ("list", "info", "resume", "fork", "diff", "prune", "130 interrupted"):
        assert command in result.stdout
    assert "--set-output" in cli("checkpoint", "fork", "--help").stdout


def test_list_prints_a_table_newest_first_and_json_metadata() -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    result = cli("checkpoint", "list", store)
    assert result.exit_code == 0
    header, *rows = result.stdout.splitlines()
    assert header.split() == [
        "ID",
        "TIME",
        "BRANCH",
        "PARENT",
        "TRIGGER",
        "ENTITY",
        "PROGRESS",
        "SIZE",
        "COST",
        "STATUS",
    ]
    assert [row.split()[0] for row in rows] == [m.id[:12] for m in metas]
    assert "crew research-crew" in rows[0] and "4/4" in rows[0] and "1/4" in rows[-1]
    assert rows[0].split()[4] == metas[1].id[:12]
    data = json.loads(cli("checkpoint", "list", "--json", "--limit", "2").stdout)
    assert [d["id"] for d in data] == [m.id for m in metas[:2]]
    assert {"id", "parent_id", "branch", "created_at", "trigger", "tasks_done", "tasks_total", "size"} <= set(data[0])
    empty = cli("checkpoint", "--location", store, "list", "--branch", "nope")
    assert empty.exit_code == 0 and empty.stdout == "" and "no checkpoints" in empty.stderr


def test_info_shows_the_latest_or_the_named_checkpoint() -> None:
    store = make_store(stop_after=2)
    result = cli("checkpoint", "info")
    assert result.exit_code == 0
    text = result.stdout
    assert "entity      crew research-crew" in text
    assert "2/4" in text and "[done]    1. research (Researcher)" in text
    assert "[pending] 3. draft (Writer)" in text and "topic = durable AI agent pipelines" in text
    first = ops.list_checkpoints(store)[-1]
    by_file = cli("checkpoint", "info", first.location)
    assert by_file.exit_code == 0 and first.id in by_file.stdout and "[pending] 2. outline" in by_file.stdout
    data = json.loads(cli("checkpoint", "info", first.id[:7], "--json").stdout)
    assert data["meta"]["id"] == first.id and data["kind"] == "crew"
    assert data["progress"] == {"done": 1, "total": 4}
    assert [t["done"] for t in data["tasks"]] == [True, False, False, False]
    assert data["tasks"][3]["context"] == [0, 2]
    assert data["inputs"] == DEMO_INPUTS and data["placeholders"] == ["topic", "audience"]


def test_sqlite_store_list_info_and_db_hash_id() -> None:
    store = make_store("runs.db")
    metas = ops.list_checkpoints(store)
    assert len(json.loads(cli("checkpoint", "list", store, "--json").stdout)) == 4
    latest = cli("checkpoint", "info", store)
    assert latest.exit_code == 0 and metas[0].id in latest.stdout
    named = cli("checkpoint", "info", f"{store}#{metas[-1].id[:8]}")
    assert named.exit_code == 0 and metas[-1].id in named.stdout and "1/4" in named.stdout


def test_errors_a_user_can_meet_are_one_line_with_exit_2(tmp_path: Path) -> None:
    assert_one_line_error(cli("checkpoint", "list"), "no checkpoint store here")
    assert_one_line_error(cli("checkpoint", "--location", "missing"), "missing: no such file or folder")
    store = make_store()
    assert_one_line_error(cli("checkpoint", "list", "nowhere/x"), "no such file or folder")
    (tmp_path / "notes.txt").write_text("not a store")
    assert_one_line_error(cli("checkpoint", "info", "notes.txt"), "not a checkpoint store")
    assert_one_line_error(cli("checkpoint", "info", "ffffffffff"), "no checkpoint 'ffffffffff'")
    latest = ops.list_checkpoints(store)[0]
    record = ops.load(latest.id, store)
    provider = JsonProvider(fsync=False)
    for new_id in ("abc1000", "abc2000"):
        provider.write(store, CheckpointRecord(meta=record.meta.with_(id=new_id, branch="copies"), body=record.body))
    assert_one_line_error(cli("checkpoint", "resume", "abc"), "ambiguous", "abc1000", "abc2000")
    future = record.meta.with_(id="future1", branch="future", schema_version=99)
    provider.write(store, CheckpointRecord(meta=future, body={**record.body, "schema_version": 99}))
    assert_one_line_error(cli("checkpoint", "info", "future1"), "newer crewpoint", "upgrade")
    path = Path(latest.location)
    path.write_bytes(path.read_bytes()[:2000])
    listed = cli("checkpoint", "list")
    assert listed.exit_code == 0 and latest.id[:12] in listed.stdout
    assert_one_line_error(cli("checkpoint", "info", latest.id), "damaged")
    assert_one_line_error(cli("checkpoint", "fork", "abc1", "--input", "novalue"), "NAME=VALUE")
    assert_one_line_error(cli("checkpoint", "fork", "abc1", "--set-output", "7=x"), "tasks 1 to 4")
    assert_one_line_error(cli("checkpoint", "fork", "abc1", "--branch", "main"), "already exists")
    assert_one_line_error(cli("checkpoint", "prune"), "--keep")
    assert_one_line_error(cli("checkpoint", "prune", "--older-than", "soon"), "like 7d")
    debug = cli("--debug", "checkpoint", "info", "ffffffffff")  # the traceback, and still exit 2
    assert debug.exit_code == 2 and "Traceback" in debug.stderr and "ffffffffff" in debug.stderr


def test_fork_with_input_and_set_output_reruns_only_the_dependent_tasks(llm_calls: list[str]) -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    tasks = ops.describe(ops.load(metas[0].id, store)).tasks
    llm_calls.clear()
    result = cli("checkpoint", "fork", metas[0].id[:10], "--set-output", "draft=Short draft.", "--branch", "edit")
    assert result.exit_code == 0, result.stderr
    assert set(llm_calls) == {tasks[3].id}
    assert "forking crew research-crew" in result.stderr and "4. review" in result.stderr
    assert result.stdout.strip() == ops.describe(ops.load(store)).tasks[3].output

    llm_calls.clear()
    result = cli("checkpoint", "fork", metas[0].id, "--input", "audience=CTOs", "--progress", "json")
    assert result.exit_code == 0, result.stderr
    assert set(llm_calls) == {t.id for t in tasks[1:]}
    events = json_lines(result.stdout)
    started, finished = events[0], events[-1]
    assert started["event"] == "started" and started["fork"] is True and started["rerun"] == [1, 2, 3]
    assert started["source"] == metas[0].id and started["branch"].startswith("fork-")
    completed = [e for e in events if e["event"] == "task_completed"]
    assert [(e["task_index"], e["task_name"]) for e in completed] == [(1, "outline"), (2, "draft"), (3, "review")]
    assert all(e["branch"] == started["branch"] and e["output"] for e in completed)
    written = {e["checkpoint_id"] for e in events if e["event"] == "checkpoint_completed"}
    assert {e["checkpoint_id"] for e in completed} == written
    assert finished["event"] == "finished" and finished["result"] == completed[-1]["output"]
    assert finished["checkpoint_id"] == ops.list_checkpoints(store, branch=started["branch"])[0].id
    assert len(ops.list_checkpoints(store, branch="main")) == 4


HELD_PROGRAM = """
import os
import time

from crewpoint import CheckpointConfig
from crewpoint.demo import demo_crew
from crewpoint.events import event_bus

crew = demo_crew(checkpoint=CheckpointConfig(on_events=["task_completed", "SIGINT"]))

if os.environ.get("HOLD_AT"):  # the run waits at the start of this task for the Ctrl+C that stops it

    def hold(source, event):
        if event.task_name == os.environ["HOLD_AT"]:
            open(os.environ["HOLD_AT"] + ".held", "w").close()  # the test's cue: the run waits here now
            while True:  # (not signal.pause(): a signal landing just before it starts is missed, and it waits forever)
                time.sleep(0.05)

    event_bus.register("task_started", hold)
"""


def test_sigint_during_resume_exits_130_and_the_printed_id_resumes_to_the_end(tmp_path: Path) -> None:
    store = make_store(stop_after=1, on_events=["task_completed", "SIGINT"])
    source = ops.list_checkpoints(store)[0]
    (tmp_path / "held.py").write_text(HELD_PROGRAM)
    env = {**os.environ, "NO_COLOR": "1", "HOLD_AT": "draft"}
    command = [CREWPOINT, "checkpoint", "resume", source.id[:8], "--progress", "json", "--app", "held.py:crew"]
    proc = subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        seen: list[dict[str, Any]] = []
        for line in proc.stdout:  # Ctrl+C once the outline is done: the run is between it and the draft
            seen.append(json.loads(line))
            if seen[-1]["event"] == "task_completed":
                wait_for(lambda: (tmp_path / "draft.held").exists() or proc.poll() is not None, "the run to wait")
                proc.send_signal(signal.SIGINT)
                break
        rest, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    seen += json_lines(rest)
    assert proc.returncode == 130, err
    assert [line["task_name"] for line in seen if line["event"] == "task_completed"] == ["outline"]
    assert seen[-1]["event"] == "interrupted"
    latest = seen[-1]["checkpoint_id"]
    printed = f"interrupted; resume with: crewpoint checkpoint resume {latest} --app held.py:crew"
    assert err.strip().endswith(printed), err
    newest = ops.list_checkpoints(store)[0]
    assert (newest.id, newest.trigger, newest.tasks_done) == (latest, "SIGINT", 2)
    assert newest.parent_id == ops.list_checkpoints(store)[1].id  # the outline's checkpoint, written before it

    result = cli(*shlex.split(printed.split(": ", 1)[1])[1:])  # the printed command, run as printed
    assert result.exit_code == 0, result.stderr
    final = ops.list_checkpoints(store)[0]
    assert (final.tasks_done, final.tasks_total, final.branch) == (4, 4, "main")
    assert [t.done for t in ops.describe(ops.load(final.id, store)).tasks] == [True] * 4


def test_diff_shows_a_changed_output_plain_and_as_json() -> None:
    store = make_store()
    latest = ops.list_checkpoints(store)[0]
    assert (
        cli("checkpoint", "fork", latest.id, "--set-output", "3=A much shorter draft.", "--branch", "b").exit_code == 0
    )
    fork = ops.list_checkpoints(store, branch="b")[0]
    result = cli("checkpoint", "diff", latest.id[:8], fork.id[:8])
    assert result.exit_code == 0
    text = result.stdout
    assert "\x1b[" not in text
    assert f"--- {latest.id[:12]}" in text and f"+++ {fork.id[:12]}" in text
    assert "3. draft" in text and "+ A much shorter draft." in text
    assert "4. review" in text and "1. research" not in text
    data = json.loads(cli("checkpoint", "diff", latest.id, fork.id, "--json").stdout)
    assert data["from"] == latest.id and data["to"] == fork.id
    draft = next(c for c in data["changes"] if c["section"] == "outputs" and c["key"] == "3. draft")
    assert draft["after"] == "A much shorter draft." and draft["before"]
    same = cli("checkpoint", "diff", latest.id, latest.id)
    assert "no differences" in same.stdout


def test_prune_dry_run_deletes_nothing_and_fork_points_survive_unless_forced() -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    fork_point = metas[2]
    assert cli("checkpoint", "fork", fork_point.id, "--branch", "side").exit_code == 0
    before = {m.id for m in ops.list_checkpoints(store)}
    dry = cli("checkpoint", "prune", "--keep", "1", "--branch", "main", "--dry-run")
    assert dry.exit_code == 0
    assert {m.id for m in ops.list_checkpoints(store)} == before
    assert [line.split()[2] for line in dry.stdout.splitlines()] == [metas[1].id[:12], metas[3].id[:12]]
    assert dry.stdout.startswith("would delete") and "kept 1 fork point" in dry.stderr
    data = json.loads(cli("checkpoint", "prune", store, "--keep", "1", "--branch", "main", "--json").stdout)
    assert {d["id"] for d in data["deleted"]} == {metas[1].id, metas[3].id}
    assert data["kept_fork_points"] == [fork_point.id]
    assert {m.id for m in ops.list_checkpoints(store, branch="main")} == {metas[0].id, fork_point.id}
    forced = cli("checkpoint", "prune", "--keep", "1", "--branch", "main", "--force")
    assert forced.exit_code == 0 and forced.stdout.startswith("deleted") and fork_point.id[:12] in forced.stdout
    assert [m.id for m in ops.list_checkpoints(store, branch="main")] == [metas[0].id]
    assert cli("checkpoint", "prune", "--older-than", "7d").stderr.startswith("0 checkpoints deleted")


class PlainFlow(Flow[dict[str, Any]]):
    @start()
    def only(self) -> str:
        return "ran"


def test_the_installed_command_runs_headless_without_textual(tmp_path: Path) -> None:
    store = make_store(stop_after=3)
    latest = ops.list_checkpoints(store)[0].id
    code = (
        "import sys\n"
        "from crewpoint.tui.cli import main\n"
        f"for args in (['checkpoint', 'list'], ['checkpoint', 'info'], ['checkpoint', 'diff', {latest!r}, {latest!r}],"
        f" ['checkpoint', 'resume', {latest!r}]):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit as exc:\n"
        "        assert exc.code == 0, (args, exc.code)\n"
        "print('textual loaded:', 'textual' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().endswith("textual loaded: False")
    missing = subprocess.run(
        [CREWPOINT, "checkpoint", "info", "nothing/here"], cwd=tmp_path, capture_output=True, text=True
    )
    assert missing.returncode == 2 and missing.stderr == "crewpoint: nothing/here: no such file or folder\n"
    module = subprocess.run(
        [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert module.returncode == 0 and len(json.loads(module.stdout)) == 4


def test_resuming_a_checkpoint_that_already_continues_says_so(llm_calls: list[str]) -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    tasks = ops.describe(ops.load(metas[0].id, store)).tasks
    llm_calls.clear()
    result = cli("checkpoint", "resume", metas[1].id)
    assert result.exit_code == 0
    assert f"note: {metas[1].id[:12]} already continues on branch main" in result.stderr
    assert set(llm_calls) == {tasks[3].id}
    assert cli("checkpoint", "resume", metas[0].id).stderr.count("note:") == 0


def test_a_big_listing_streams_in_chunks_and_limit_asks_for_the_newest_only() -> None:
    from crewpoint.providers import MemoryProvider
    from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
    from crewpoint.tui.cli import listing as cli_module

    store = "memory://big-listing"
    provider = MemoryProvider()
    total = cli_module.LIST_CHUNK * 2 + 7
    parent = None
    for n in range(1, total + 1):
        checkpoint_id = f"{n:032x}"
        meta = CheckpointMeta(
            id=checkpoint_id,
            parent_id=parent,
            branch="main",
            lineage="run",
            sequence=n,
            created_at=1_700_000_000.0 + n,
            trigger="task_completed",
            entity_kind="crew",
            entity_name="c",
            tasks_done=1,
            tasks_total=2,
        )
        provider.write(store, CheckpointRecord(meta, {}))
        parent = checkpoint_id
    try:
        full = cli("checkpoint", "list", store)
        assert full.exit_code == 0, full.stderr
        rows = full.stdout.splitlines()
        assert rows[0].split()[0] == "ID" and len(rows) == total + 1
        assert [r.split()[0] for r in rows[1:4]] == [f"{n:032x}"[:12] for n in (total, total - 1, total - 2)]
        assert rows[-1].split()[0] == f"{1:032x}"[:12]
        assert len({len(r.split()) for r in rows[1:]}) == 1  # every chunk keeps the same columns
        newest = cli("checkpoint", "list", store, "--limit", "3")
        assert [r.split()[0] for r in newest.stdout.splitlines()[1:]] == [r.split()[0] for r in rows[1:4]]
    finally:
        MemoryProvider.drop(store)
