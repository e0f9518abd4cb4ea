"""The command line on CrewAI's own stores: list, info, diff, --json, fork with edits in CrewAI's format, resume
through the user's CrewAI, and copy; never a key in any output."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest
from click.testing import Result
from crewai_fixtures import FAKE_KEY
from crewai_fixtures import json_store as copy_json_store
from crewai_fixtures import sqlite_store as copy_sqlite_store
from support.cli import cli as run_cli

from crewpoint.providers import provider_for

CREW_LAST_JSON = "20261130T150415_1a8435d1"  # crew, main, 3/3
CREW_FIRST_JSON = "20261130T150415_34a58f9a"  # crew, main, 1/3
EDITED_LAST_JSON = "20261130T150417_bec4a307"
CREW_LAST_DB = "20261130T150420_08a9f6c2"


def cli(*args: str, env: dict[str, str] | None = None) -> Result:
    """``crewpoint ARGS`` in this process, failing the test if any of the key shows."""
    result = run_cli(*args, env=env)
    assert FAKE_KEY not in result.output and FAKE_KEY[:10] not in result.output
    return result


@pytest.fixture(autouse=True)
def no_crewai(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CrewAI unless a test brings one."""
    monkeypatch.setenv("CREWPOINT_CREWAI_PYTHON", "/nonexistent/python-with-crewai")


@pytest.fixture
def json_store(tmp_path: Path) -> Path:
    return copy_json_store(tmp_path / "crewai-json")


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Path:
    return copy_sqlite_store(tmp_path / "crewai.db")


def digest(path: Path) -> str:
    files = sorted(path.rglob("*")) if path.is_dir() else [path]
    h = hashlib.sha256()
    for f in files:
        if f.is_file():
            h.update(str(f.relative_to(path) if path.is_dir() else f.name).encode())
            h.update(f.read_bytes())
    return h.hexdigest()


# -- reading ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_list_shows_every_checkpoint_with_whole_ids(kind: str, json_store: Path, sqlite_store: Path) -> None:
    store = json_store if kind == "json" else sqlite_store
    result = cli("checkpoint", "list", str(store))
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 14  # header + 13
    assert "crew research crew" in result.output and "flow TriageFlow" in result.output
    assert "agent Summarizer" in result.output and "edited" in result.output and "fork/" in result.output
    ids = [line.split()[0] for line in lines[1:]]
    assert all(len(i) == 24 and "_" in i for i in ids) and len(set(ids)) == 13


def test_list_json_is_data(json_store: Path) -> None:
    result = cli("checkpoint", "list", "--json", str(json_store))
    data = json.loads(result.output)
    assert len(data) == 13
    assert {d["entity_kind"] for d in data} == {"crew", "flow", "agent"}
    crew_last = next(d for d in data if d["id"] == CREW_LAST_JSON)
    assert (crew_last["tasks_done"], crew_last["tasks_total"], crew_last["branch"]) == (3, 3, "main")


def test_info_shows_tasks_inputs_and_ancestry(json_store: Path) -> None:
    result = cli("checkpoint", "info", "--location", str(json_store), EDITED_LAST_JSON)
    assert result.exit_code == 0, result.output
    out = result.output
    assert "topic = tide pools" in out
    assert "Edited facts: anemones, sea stars, hermit crabs." in out
    assert "[done]    3. article (Writer)" in out
    assert CREW_FIRST_JSON in out  # ancestry reaches main's first checkpoint
    assert "crewai 1.15.30" in out


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_info_json_of_every_kind(kind: str, json_store: Path, sqlite_store: Path) -> None:
    store = json_store if kind == "json" else sqlite_store
    metas = provider_for(str(store)).list(str(store))
    for wanted in ("crew", "flow", "agent"):
        meta = max((m for m in metas if m.entity_kind == wanted), key=lambda m: (m.tasks_done, m.sequence))
        result = cli("checkpoint", "info", "--json", "--location", str(store), meta.id)
        assert result.exit_code == 0, result.output
        data = json.loads(result.output)
        assert data["kind"] == wanted and data["meta"]["id"] == meta.id
        if wanted == "crew":
            assert data["inputs"] == {"topic": "tide pools"} and len(data["tasks"]) == 3
        if wanted == "flow":
            assert data["flow_state"]["id"] and data["method_outputs"]
        if wanted == "agent":
            assert data["tasks"][0]["output"].startswith("Notes on Summarize")


def test_info_of_a_database_ref(sqlite_store: Path) -> None:
    result = cli("checkpoint", "info", f"{sqlite_store}#{CREW_LAST_DB}")
    assert result.exit_code == 0, result.output
    assert CREW_LAST_DB in result.output and "3/3" in result.output


def test_diff_between_the_original_and_the_edited_branch(json_store: Path) -> None:
    result = cli("checkpoint", "diff", "--json", "--location", str(json_store), CREW_LAST_JSON, EDITED_LAST_JSON)
    assert result.exit_code == 0, result.output
    changes = json.loads(result.output)["changes"]
    keys = {(c["section"], c["key"]) for c in changes}
    assert ("checkpoint", "branch") in keys
    edited = next(c for c in changes if c["section"] == "outputs" and c["key"] == "1. research")
    assert edited["after"] == "Edited facts: anemones, sea stars, hermit crabs."
    text = cli("checkpoint", "diff", "--location", str(json_store), CREW_LAST_JSON, EDITED_LAST_JSON).output
    assert "Edited facts" in text and "main → edited" in text


def test_prune_on_a_crewai_store_is_refused_and_deletes_nothing(json_store: Path) -> None:
    before = digest(json_store)
    result = cli("checkpoint", "prune", "--keep", "1", str(json_store))
    assert result.exit_code == 2
    assert "read-only" in result.output
    assert digest(json_store) == before


# -- fork with edits -------------------------------------------------------------------------------------------


def test_fork_with_an_edited_output_writes_crewai_format_and_resets_the_dependent_task(json_store: Path) -> None:
    before = digest(json_store)
    result = cli(
        "checkpoint", "fork", CREW_LAST_JSON, "--location", str(json_store), "--set-output", "2=NEW OUTLINE",
        "--branch", "try-1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    new_file = Path(result.stdout.strip().splitlines()[0])
    assert new_file.parent == json_store / "try-1"
    assert new_file.name.endswith(f"_p-{CREW_LAST_JSON}.json")
    assert "reset 3. article" in result.output and "CrewAI is not installed" in result.output
    dump = json.loads(new_file.read_text())
    assert dump["branch"] == "try-1" and dump["parent_id"] == CREW_LAST_JSON
    tasks = dump["entities"][0]["tasks"]
    assert tasks[0]["output"]["raw"].startswith("Notes on Research")  # kept
    assert tasks[1]["output"]["raw"] == "NEW OUTLINE"  # edited
    assert tasks[2]["output"] is None  # reset: it reads task 2
    # the model is kept; its key and endpoint are not: CrewAI takes them from the user's environment
    assert dump["entities"][0]["agents"][1]["llm"]["model"] == "gpt-4o-mini"
    assert FAKE_KEY not in new_file.read_text() and "base_url" not in dump["entities"][0]["agents"][1]["llm"]
    assert new_file.stat().st_mode & 0o777 == 0o600
    # the source and every other file are untouched; the new one lists on its branch
    new_file_bytes = new_file.read_bytes()
    new_file.unlink()
    assert digest(json_store) == before
    new_file.write_bytes(new_file_bytes)
    listed = json.loads(cli("checkpoint", "list", "--json", "--branch", "try-1", str(json_store)).output)
    assert [(d["parent_id"], d["tasks_done"], d["trigger"]) for d in listed] == [(CREW_LAST_JSON, 2, "crewpoint_fork")]
    assert listed[0]["status"] != "live", "a fork that nothing runs is not a live run, however new"


def test_fork_with_a_changed_input_in_sqlite(sqlite_store: Path) -> None:
    result = cli(
        "checkpoint", "fork", CREW_LAST_DB, "--location", str(sqlite_store), "--input", "topic=whales",
        "--set-output", "outline=KEPT", "--branch", "whales",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    ref = result.stdout.strip().splitlines()[0]
    assert ref.startswith(f"{sqlite_store}#")
    record = provider_for(ref).read(ref)
    assert record.meta.branch == "whales" and record.meta.parent_id == CREW_LAST_DB
    body = record.body
    assert body["inputs"] == {"topic": "whales"}
    assert [t["output"] is not None for t in body["entity"]["tasks"]] == [False, True, False]
    assert body["entity"]["tasks"][1]["output"]["raw"] == "KEPT"
    assert "CrewAI runs 1, 2, 3" in result.output  # CrewAI resumes from the first task without an output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--set-output", "9=x"), "task 9 does not exist"),
        (("--set-output", "nosuch=x"), "no task 'nosuch'"),
        (("--branch", "main"), "already exists"),
        (("--branch", "../out"), "invalid branch name"),
    ],
)
def test_fork_refuses_bad_edits_in_one_line_and_writes_nothing(
    json_store: Path, args: tuple[str, ...], message: str
) -> None:
    before = digest(json_store)
    result = cli("checkpoint", "fork", CREW_LAST_JSON, "--location", str(json_store), *args)
    assert result.exit_code == 2
    assert message in result.output and len(result.output.strip().splitlines()) == 1
    assert digest(json_store) == before


def test_fork_of_an_unfinished_task_output_is_refused(json_store: Path) -> None:
    result = cli("checkpoint", "fork", CREW_FIRST_JSON, "--location", str(json_store), "--set-output", "3=x")
    assert result.exit_code == 2 and "has no output yet" in result.output


def test_resume_without_crewai_says_so(json_store: Path) -> None:
    result = cli("checkpoint", "resume", CREW_FIRST_JSON, "--location", str(json_store))
    assert result.exit_code == 1
    assert "CrewAI is not installed here" in result.output


def test_fork_hands_the_run_to_the_users_crewai(json_store: Path, tmp_path: Path) -> None:
    """A stand-in for CrewAI's Python records what it is asked to run."""
    record = tmp_path / "ran.json"
    fake = tmp_path / "fake-python"
    fake.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"json.dump(sys.argv[1:], open({str(record)!r}, 'w'))\nprint('resumed by CrewAI')\n"
    )
    fake.chmod(0o755)
    result = cli(
        "checkpoint", "fork", CREW_LAST_JSON, "--location", str(json_store), "--set-output", "2=X",
        env={"CREWPOINT_CREWAI_PYTHON": str(fake)},
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    argv = json.loads(record.read_text())
    assert argv[0] == "-c" and "Crew.from_checkpoint" in argv[1]
    # CrewAI resumes a copy of the fork whose endpoints come from the environment
    # (tests/providers/test_crewai_endpoints.py)
    assert Path(argv[2]).name == Path(result.stdout.strip().splitlines()[0]).name and argv[3] == "crew"


# -- copy ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("source_kind", "target_name"), [("json", "copy"), ("sqlite", "copy.db")])
def test_copy_a_crewai_store_into_crewpoint(
    source_kind: str, target_name: str, json_store: Path, sqlite_store: Path, tmp_path: Path
) -> None:
    source = json_store if source_kind == "json" else sqlite_store
    target = tmp_path / target_name
    result = cli("checkpoint", "copy", str(source), str(target))
    assert result.exit_code == 0, result.output
    assert "copied 13 checkpoints" in result.output
    copied = json.loads(cli("checkpoint", "list", "--json", str(target)).output)
    original = json.loads(cli("checkpoint", "list", "--json", str(source)).output)
    assert len(copied) == 13
    assert {(d["id"], d["parent_id"], d["branch"]) for d in copied} == {
        (o["id"].replace("_", "-"), o["parent_id"] and o["parent_id"].replace("_", "-"), o["branch"]) for o in original
    }
    for path in target.rglob("*") if target.is_dir() else [target]:
        if path.is_file():
            assert FAKE_KEY[:10].encode() not in path.read_bytes()
    again = cli("checkpoint", "copy", str(source), str(target))
    assert "copied 0 checkpoints" in again.output and "13 already there" in again.output
    # and on to crewpoint's other kind
    onward = tmp_path / ("onward.db" if target.is_dir() else "onward")
    assert cli("checkpoint", "copy", str(target), str(onward)).exit_code == 0
    assert len(json.loads(cli("checkpoint", "list", "--json", str(onward)).output)) == 13


def test_copy_into_a_crewai_store_is_refused(json_store: Path, sqlite_store: Path) -> None:
    before = digest(sqlite_store)
    result = cli("checkpoint", "copy", str(json_store), str(sqlite_store))
    assert result.exit_code == 2 and "CrewAI store" in result.output
    assert digest(sqlite_store) == before


@pytest.mark.parametrize("kind", ["flow", "agent"])
def test_a_flow_or_agent_forks_as_it_is_and_refuses_edits(kind: str, sqlite_store: Path) -> None:
    meta = next(m for m in provider_for(str(sqlite_store)).list(str(sqlite_store)) if m.entity_kind == kind)
    refused = cli("checkpoint", "fork", meta.id, "--location", str(sqlite_store), "--input", "topic=x")
    assert refused.exit_code == 2 and f"holds a {kind}" in refused.output
    result = cli("checkpoint", "fork", meta.id, "--location", str(sqlite_store), "--branch", f"{kind}-copy")
    assert result.exit_code == 0, result.output
    forked = provider_for(str(sqlite_store)).list(str(sqlite_store), branch=f"{kind}-copy")
    assert [(m.parent_id, m.entity_kind, m.tasks_done) for m in forked] == [(meta.id, kind, meta.tasks_done)]
