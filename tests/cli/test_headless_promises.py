"""The headless side of the app's promises: the live demo keeps a user's folder, diffs pair tasks, a fork that
would do nothing is refused, and no control character from a checkpoint reaches the terminal."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support.cli import cli
from support.stores import make_store

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.demo import DEMO_MARKER, demo_crew, is_demo_store, seed_demo_store
from crewpoint.tui.cli import diff as cli_diff
from crewpoint.tui.visible import visible

CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


# -- the live demo never deletes what is not its own -------------------------------------------------------


STARTED = "a process would start here"
"""What the live demo meets where it would start the slow run: the tests stop it there."""


@pytest.fixture
def no_app(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The live demo's store is made, but neither the app nor the slow run starts."""
    made: list[str] = []

    def seed(location: str, provider: str) -> None:
        made.append(location)

    monkeypatch.setattr("crewpoint.demo.seed_demo_store", seed)
    monkeypatch.setattr("subprocess.Popen", lambda *a, **k: (_ for _ in ()).throw(RuntimeError(STARTED)))
    return made


def test_the_live_demo_refuses_a_folder_holding_other_things(tmp_path: Path, no_app: list[str]) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "ideas.txt").write_text("my notes", encoding="utf-8")
    make_store(str(folder / "real-store"))
    result = cli("demo", "--live", "--location", str(folder))
    assert result.exit_code == 2
    assert "is not empty and is not a demo store" in result.stderr and "--force" in result.stderr
    assert (folder / "ideas.txt").read_text(encoding="utf-8") == "my notes"
    assert no_app == []


def test_the_live_demo_refuses_a_database_that_is_not_a_demo_store(tmp_path: Path, no_app: list[str]) -> None:
    database = tmp_path / "work.db"
    crew = demo_crew(checkpoint=CheckpointConfig(location=str(database), provider=_sqlite()), name="my-crew")
    crew.kickoff(inputs={"topic": "t", "audience": "a"})
    result = cli("demo", "--live", "--provider", "sqlite", "--location", str(database))
    assert result.exit_code == 2 and "not a demo store" in result.stderr
    assert ops.list_checkpoints(str(database))


def _sqlite() -> object:
    from crewpoint.providers import SqliteProvider

    return SqliteProvider()


def test_the_live_demo_replaces_its_own_store_an_empty_folder_or_anything_with_force(
    tmp_path: Path, no_app: list[str]
) -> None:
    own = tmp_path / "demo"
    seed_demo_store(str(own))
    assert (own / DEMO_MARKER).is_file() and is_demo_store(str(own))
    empty = tmp_path / "empty"
    empty.mkdir()
    other = tmp_path / "other"
    other.mkdir()
    (other / "file.txt").write_text("x", encoding="utf-8")
    for location, extra in ((own, ()), (empty, ()), (other, ("--force",))):
        result = cli("demo", "--live", "--location", str(location), *extra)
        assert result.exit_code == 1, result.stderr  # the store was made and the run was about to start
        assert result.stderr.splitlines()[-1].startswith(f"crewpoint: {STARTED} "), result.stderr
        assert not location.exists()  # cleared for a fresh demo store
    assert no_app == [str(own), str(empty), str(other)]


# -- diff pairs tasks by name, then position ----------------------------------------------------------------


def test_diff_of_two_runs_of_one_crew_pairs_their_tasks(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    make_store(store)
    make_store(store)
    heads = [m for m in ops.list_checkpoints(store) if m.tasks_done == 4]
    assert len(heads) == 2 and heads[0].lineage != heads[1].lineage
    result = cli("checkpoint", "diff", heads[0].id, heads[1].id, "--location", store, "--json")
    assert result.exit_code == 0, result.stderr
    changes = json.loads(result.stdout)["changes"]
    assert [c for c in changes if c["section"] in ("tasks", "outputs")] == []  # same crew, same outputs

    plain = cli("checkpoint", "diff", heads[0].id, heads[1].id, "--location", store)
    assert "outputs" not in plain.stdout and "(none)" not in plain.stdout


# -- a fork that would do nothing, or names an unknown input, is refused ------------------------------------


def test_a_fork_with_nothing_to_run_or_an_unknown_input_is_refused(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    make_store(store)
    head = max(ops.list_checkpoints(store), key=lambda m: m.sequence)
    nothing = cli("checkpoint", "fork", head.id, "--location", store, "--branch", "typo-test")
    assert nothing.exit_code == 2
    assert nothing.stderr.strip().startswith("crewpoint: nothing to run")
    typo = cli("checkpoint", "fork", head.id, "--location", store, "--input", "audiense=x")
    assert typo.exit_code == 2
    assert "unknown input 'audiense'" in typo.stderr and "topic, audience" in typo.stderr
    assert {m.branch for m in ops.list_checkpoints(store)} == {"main"}


# -- control characters ----------------------------------------------------------------------------------------

EVIL = "\x1b]0;owned\x07\x1b[2J\x1b[31mred\x9b1m"


def test_visible_shows_control_characters_as_escapes() -> None:
    assert visible(EVIL) == "\\x1b]0;owned\\x07\\x1b[2J\\x1b[31mred\\x9b1m"
    assert visible("two\nlines\ttab") == "two\nlines\ttab"
    assert visible("two\nlines", one_line=True) == "two\\x0alines"


def test_no_control_character_from_a_checkpoint_reaches_list_info_or_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = str(tmp_path / "store")
    crew = demo_crew(checkpoint=CheckpointConfig(location=store), name=f"crew{EVIL}")
    crew.kickoff(inputs={"topic": f"topic{EVIL}", "audience": f"people{EVIL}"})
    metas = sorted(ops.list_checkpoints(store), key=lambda m: m.sequence)
    monkeypatch.setattr(cli_diff, "_use_color", lambda: False)
    outputs = [
        cli("checkpoint", "list", store),
        cli("checkpoint", "list", store, "--json"),
        cli("checkpoint", "info", metas[-1].id, "--location", store),
        cli("checkpoint", "info", metas[-1].id, "--location", store, "--json"),
        cli("checkpoint", "diff", metas[0].id, metas[-1].id, "--location", store),
        cli("checkpoint", "diff", metas[0].id, metas[-1].id, "--location", store, "--json"),
    ]
    for result in outputs:
        assert result.exit_code == 0, result.stderr
        assert not CONTROL.search(result.stdout), repr(result.stdout[:400])
        assert not CONTROL.search(result.stderr)
    assert "crew\\x1b]0;owned\\x07" in outputs[0].stdout
    assert "topic\\x1b]0;owned" in outputs[2].stdout
    assert json.loads(outputs[3].stdout)["inputs"]["topic"] == f"topic{EVIL}"  # JSON keeps the data exact


# -- the run-progress protocol ---------------------------------------------------------------------------------


def test_a_checkpoint_record_follows_the_step_that_took_it(tmp_path: Path) -> None:
    from crewpoint.tui.run_protocol import CHECKPOINT, ProgressRecord

    store = str(tmp_path / "store")
    make_store(store, stop_after=1)
    source = max(ops.list_checkpoints(store), key=lambda m: m.sequence)
    result = cli("checkpoint", "resume", source.id, "--location", store, "--progress", "json")
    assert result.exit_code == 0, result.stderr
    records = [ProgressRecord.parse(line) for line in result.stdout.splitlines()]
    events = [r.event for r in records if not r.event.startswith(("llm_", "tool_", "crew_"))]
    steps = [e for e in events if e in ("task_started", "task_completed", CHECKPOINT)]
    assert steps == ["task_started", "task_completed", CHECKPOINT] * 3
    taken = [r.checkpoint_id for r in records if r.event == CHECKPOINT]
    assert len(set(taken)) == 3 and source.id not in taken
    written = {r.checkpoint_id for r in records if r.event == "checkpoint_completed"}
    assert written == set(taken)


def test_a_reader_that_goes_away_ends_the_progress_stream_quietly(tmp_path: Path) -> None:
    import subprocess
    import sys

    store = str(tmp_path / "store")
    make_store(store, stop_after=1)
    source = max(ops.list_checkpoints(store), key=lambda m: m.sequence)
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "resume", source.id]
    process = subprocess.Popen(
        [*command, "--location", store, "--progress", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.readline()
    assert json.loads(first)["event"] == "started"
    process.stdout.close()  # like `| head -1`
    errors = process.stderr.read()
    assert process.wait(timeout=60) == 0
    assert "Traceback" not in errors and "BrokenPipe" not in errors, errors
    assert max(ops.list_checkpoints(store), key=lambda m: m.sequence).tasks_done == 4  # the run went on


# -- list: status, empty folders, wording -----------------------------------------------------------------------


def test_list_has_a_status_column_and_json_carries_it(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    make_store(store)
    make_store(store, stop_after=2)
    table = cli("checkpoint", "list", store)
    assert table.exit_code == 0
    header, *rows = table.stdout.splitlines()
    assert header.split()[-1] == "STATUS"
    assert {row.split()[-1] for row in rows} == {"done", "interrupted"}
    assert "KiB" in table.stdout and " KB" not in table.stdout
    data = json.loads(cli("checkpoint", "list", store, "--json").stdout)
    assert sorted({d["status"] for d in data}) == ["done", "interrupted"]


def test_a_folder_without_checkpoints_says_what_it_holds(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = cli("checkpoint", "list", str(empty))
    assert "is an empty folder" in result.stderr and "crewpoint demo" in result.stderr
    files = tmp_path / "files"
    files.mkdir()
    for n in range(7):
        (files / f"f{n}.json").write_text("{}", encoding="utf-8")
    result = cli("checkpoint", "list", str(files))
    assert result.exit_code == 2
    assert "7 .json files, none of them crewpoint checkpoints" in result.stderr
    opened = cli("checkpoint", "--location", str(files))
    assert opened.exit_code == 2 and "7 .json files" in opened.stderr


def test_prune_dry_run_says_would_be_deleted(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    make_store(store)
    result = cli("checkpoint", "prune", store, "--keep", "1", "--dry-run")
    assert result.exit_code == 0
    assert "3 checkpoints would be deleted" in result.stderr


def test_flows_checkpoint_at_each_finished_method_by_default(tmp_path: Path) -> None:
    from crewpoint.demo import TriageFlow

    store = str(tmp_path / "flows")
    TriageFlow(checkpoint=CheckpointConfig(location=store)).kickoff()
    metas = sorted(ops.list_checkpoints(store), key=lambda m: m.sequence)
    assert [m.trigger for m in metas] == ["method_execution_finished"] * 3  # classify, route, page_oncall
    assert metas[-1].entity_kind == "flow"
