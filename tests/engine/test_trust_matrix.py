"""Issue 16's attacks, each a crafted file or store tried through the command line (a real subprocess) and the API,
with the victim's files, servers and processes checked afterwards; and a dry run refuses what the run refuses.

The per-part files go deeper on each item (test_program_trust, test_locality, test_prune_rules, test_state_declared,
test_crewai_endpoints, test_integrity, test_secrets_terminals, test_schema_fuzz); this file is the matrix that tries
each item end to end, also through the commands and options added since (``--dry-run``, ``--app``, ``info``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.cli import CREWPOINT
from support.cli import one_line_error as refused
from support.stores import make_store
from test_locality import set_branch
from test_program_trust import project  # noqa: F401  (a fixture: a project whose package logs its imports)
from test_state_declared import _crafted, _crew, env  # noqa: F401  (env: a fixture, two model servers)

from crewpoint.checkpoint import ops
from crewpoint.providers import CheckpointError, JsonProvider, SqliteProvider

SECRET_A, SECRET_B = "hunter2piece", "otherpiece7"


def run_cli(*args: str, cwd: Path, **extra: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CREWPOINT_")}
    return subprocess.run(
        [CREWPOINT, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**clean, "NO_COLOR": "1", **extra},
        stdin=subprocess.DEVNULL,
        timeout=300,
    )


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones included) with its content: what a victim must keep."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def checkpoint_files(store: Path) -> list[Path]:
    return sorted(p for p in store.rglob("*.json") if ".runs" not in p.parts)


def rewrite(path: Path, change_meta: Any = None, change_body: Any = None) -> None:
    """Rewrite a JSON checkpoint file's metadata or body (as an attacker with a text editor would)."""
    data = json.loads(path.read_bytes())
    if change_meta is not None:
        change_meta(data["meta"])
    if change_body is not None:
        change_body(data["body"])
        data["meta"].pop("digest", None)  # an edited body with no digest to fail: the schema is what stops it
        data["meta"].pop("body_length", None)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``work/victim`` (a JSON store with a stopped run and a finished one, a user's other project beside it)
    and ``work/project`` where commands run. Returns ``tmp_path``."""
    work = tmp_path / "work"
    (work / "project").mkdir(parents=True)
    (work / "other").mkdir()
    (work / "other" / "notes.txt").write_text("keep me", encoding="utf-8")
    monkeypatch.chdir(work)
    make_store("victim", stop_after=2)
    make_store("victim")
    return tmp_path


def dry_and_real(*args: str) -> list[tuple[str, ...]]:
    return [(*args, "--dry-run"), args]


# -- 1. the program to run is the user's, and nothing the checkpoint names is imported ------------------------------


@pytest.mark.parametrize("module", ["evilpkg.crew", "antigravity.crew"])
def test_1_a_recorded_module_is_neither_imported_nor_run_by_resume_or_its_dry_run(
    project: Path,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    module: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The app's side (the dialog suggests, imports nothing) is in test_program_trust; here the command line and
    the API, in a project whose package ``evilpkg`` logs every import of it."""

    from crewpoint.providers.base import CheckpointRecord

    started = sorted(ops.list_checkpoints(str(project / "store")), key=lambda m: m.sequence)[0]
    record = ops.load(started.id, str(project / "store"))
    body = {**record.body, "origin": {"file": None, "module": module, "attr": "crew"}}
    JsonProvider().write(str(project / "crafted"), CheckpointRecord(meta=record.meta, body=body))
    browsed = tmp_path / "browsed"
    browser = {"BROWSER": f"{sys.executable} -c 'open({str(browsed)!r}, \"w\")'"}
    dry = run_cli("checkpoint", "resume", started.id, "--location", "crafted", "--dry-run", cwd=project, **browser)
    assert dry.returncode == 0, dry.stderr
    assert "program: rebuilt from the checkpoint" in dry.stdout and module not in dry.stdout
    ran = run_cli("checkpoint", "resume", started.id, "--location", "crafted", cwd=project, **browser)
    assert ran.returncode == 0, ran.stderr
    newest = ops.list_checkpoints(str(project / "crafted"))[0]
    origin = ops.load(newest.id, str(project / "crafted")).body["origin"] or {}
    assert newest.id != started.id and origin.get("module") != module  # the run records no program it did not run
    monkeypatch.chdir(project)
    monkeypatch.setenv("BROWSER", browser["BROWSER"])
    ops.prepare_run(started.id, location="crafted")
    assert "evilpkg" not in sys.modules and "antigravity" not in sys.modules
    assert not (project / "imported.log").exists() and not browsed.exists()


# -- 4. reach by field name: a checkpoint's URL, delay or model never applies ---------------------------------------


def _cli_env() -> dict[str, str]:
    """The test's environment as the fixture set it (a paid endpoint and its key), no trust variable."""
    return {k: v for k, v in os.environ.items() if k != "CREWPOINT_DESERIALIZE_CALLBACKS"} | {"NO_COLOR": "1"}


@pytest.mark.parametrize(
    "change",
    [
        {"fields": {"model": "offline", "temperature": None, "delay": 1e9}},
        {"class": "crewpoint.llm.LLM", "fields": {"model": "gpt-4o"}},
        {"class": "crewpoint.llm.LLM", "fields": {"model": "gpt-4o", "base_url": "HOSTILE"}},
    ],
    ids=["delay", "model", "endpoint"],
)
def test_4_a_checkpoints_llm_fields_never_reach_a_server_or_hang_a_resume_from_the_command_line(
    env: Any,  # noqa: F811  (the fixture imported above)
    tmp_path: Path,
    change: dict[str, Any],
) -> None:
    from crewpoint import Agent

    program, hostile = env
    crew = _crew(tmp_path, Agent(role="Writer", goal="write"))  # the offline model

    def craft(agent: dict[str, Any]) -> None:
        llm = {**agent["llm"], **change}
        if llm["fields"].get("base_url") == "HOSTILE":
            llm["fields"]["base_url"] = hostile.base_url
        agent["llm"] = llm

    ref = _crafted(tmp_path, crew, craft)
    names_a_model = change["fields"].get("model") != "offline"
    for argv in (("checkpoint", "resume", ref, "--dry-run"), ("checkpoint", "resume", ref)):
        done = subprocess.run(
            [CREWPOINT, *argv], cwd=tmp_path, env=_cli_env(), capture_output=True, text=True, timeout=300
        )  # the timeout only stops a hang
        if names_a_model:  # a run the checkpoint says was a model's goes on only on a model someone names
            assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, (argv, done.stderr)
            assert "CREWPOINT_LLM" in done.stderr and "--app" in done.stderr
        else:
            assert done.returncode == 0, (argv, done.stderr)
    assert program.requests == [] and hostile.requests == []  # an offline crew made no call, paid or hostile


# -- 2. writes outside the store ----------------------------------------------------------------------------------


def test_2_a_record_claiming_a_deeper_branch_writes_nothing_anywhere_by_cli_or_api(world: Path) -> None:
    work = world / "work"
    crafted = next(p for p in checkpoint_files(work / "victim") if p.parent.name == "main")
    set_branch(crafted, "x/y/z")
    program = work / "project" / "crew1.py"
    program.write_text(
        "from crewpoint.demo import demo_crew\ncrew = demo_crew()\n",
        encoding="utf-8",
    )
    before = snapshot(world)
    attempts = [
        *dry_and_real("checkpoint", "resume", str(crafted)),
        *dry_and_real("checkpoint", "resume", str(crafted), "--app", f"{program}:crew"),
        *dry_and_real("checkpoint", "fork", str(crafted), "--input", "topic=x"),
    ]
    for argv in attempts:
        line = refused(run_cli(*argv, cwd=work / "project"))
        assert "damaged" in line and "x/y/z" in line, (argv, line)
    with pytest.raises(CheckpointError, match="x/y/z"):
        ops.prepare_run(str(crafted))
    assert snapshot(world) == before


def test_2_a_lone_file_is_shown_by_info_and_never_resumed_beside_it(world: Path) -> None:
    downloads = world / "home2" / "Downloads"
    downloads.mkdir(parents=True)
    lone = downloads / "x.json"
    lone.write_bytes(checkpoint_files(world / "work" / "victim")[0].read_bytes())
    before = snapshot(world)
    shown = run_cli("checkpoint", "info", str(lone), cwd=downloads)
    assert shown.returncode == 0, shown.stderr
    assert "lone file, in no checkpoint store" in shown.stdout and "ancestry (newest" not in shown.stdout
    for argv in [
        *dry_and_real("checkpoint", "resume", str(lone)),
        *dry_and_real("checkpoint", "fork", str(lone), "--input", "topic=x"),
        ("checkpoint", "resume", str(lone), "--location", str(world / "work" / "victim")),
    ]:
        line = refused(run_cli(*argv, cwd=downloads))
        assert "write only into the store a checkpoint lies in" in line, (argv, line)
    assert ops.load(str(lone)).meta.id  # the API reads it too
    with pytest.raises(CheckpointError, match="no store is found"):
        ops.prepare_run(str(lone))
    assert snapshot(world) == before


def test_2_a_crewai_file_claiming_a_deeper_branch_lists_nothing_above_its_store(tmp_path: Path) -> None:
    from crewai_fixtures import json_store

    from crewpoint.providers.crewai.json_store import CrewAIJsonProvider

    outside = tmp_path / "projects" / "other"
    outside.mkdir(parents=True)
    store = json_store(tmp_path / "projects" / "crewai")
    crafted = sorted((store / "main").glob("*.json"))[0]
    data = json.loads(crafted.read_text(encoding="utf-8"))
    data["branch"] = "x/y/z"  # one folder up per part would be tmp_path's parent
    crafted.write_text(json.dumps(data), encoding="utf-8")
    honest = sorted((store / "main").glob("*.json"))[-1]
    before = snapshot(tmp_path / "projects")
    for argv in (("checkpoint", "list", str(crafted)), ("checkpoint", "info", str(crafted))):
        line = refused(run_cli(*argv, cwd=outside))
        assert "is not the folder it lies in" in line, (argv, line)
    with pytest.raises(CheckpointError, match="is not the folder it lies in"):
        CrewAIJsonProvider().list(str(crafted))
    listed = CrewAIJsonProvider().list(str(honest))  # an honest file lists, from the store its folders name
    assert [m.location for m in listed] == [str(honest)]
    assert CrewAIJsonProvider().store_of(listed[0]) == str(store)
    assert snapshot(tmp_path / "projects") == before


# -- 3. a file that is not a checkpoint is never a store ----------------------------------------------------------


def test_3_a_json_that_is_no_checkpoint_is_refused_by_every_command_and_deletes_nothing(world: Path) -> None:
    work = world / "work"
    notes = work / "victim" / "main" / "notes.json"  # the folder two levels up is a real store
    notes.write_text('{"todo": ["buy milk"]}', encoding="utf-8")
    before = snapshot(world)
    attempts = [
        ("checkpoint", "--location", str(notes)),  # the app, refused before it opens
        ("checkpoint", "list", str(notes)),
        ("checkpoint", "info", str(notes)),
        ("checkpoint", "copy", str(notes), str(work / "copied")),
        *dry_and_real("checkpoint", "prune", str(notes), "--keep", "1"),
        *dry_and_real("checkpoint", "resume", str(notes)),
        *dry_and_real("checkpoint", "fork", str(notes), "--input", "topic=x"),
    ]
    for argv in attempts:
        line = refused(run_cli(*argv, cwd=work / "project"))
        assert "not a crewpoint checkpoint" in line, (argv, line)
    with pytest.raises(CheckpointError):
        ops.prune(str(notes), ops.PruneStrategy(keep=1))
    with pytest.raises(CheckpointError):
        ops.prepare_run(str(notes))
    assert snapshot(world) == before


# -- 5. CrewAI resume: a dry run of another tool's checkpoint runs and writes nothing ------------------------------


def test_5_a_dry_run_of_a_crewai_checkpoint_is_refused_before_anything_is_handed_to_crewai(tmp_path: Path) -> None:
    """What CrewAI is handed (endpoints from the user's environment) is tested in test_crewai_endpoints; a dry run
    has nothing to print for CrewAI's own run, so it says so and hands nothing over."""
    from crewai_fixtures import json_store

    store = json_store(tmp_path / "crewai")
    first = sorted((store / "main").glob("*.json"))[0]
    before = snapshot(store)
    for argv in (("checkpoint", "resume", str(first), "--dry-run"), ("checkpoint", "fork", str(first), "--dry-run")):
        line = refused(run_cli(*argv, cwd=tmp_path))
        assert "--dry-run is for crewpoint's own checkpoints" in line, (argv, line)
    assert snapshot(store) == before


# -- 6. deletion power ---------------------------------------------------------------------------------------------


def test_6_a_crafted_claim_on_another_runs_lineage_deletes_none_of_it(world: Path) -> None:
    """A checkpoint claiming the newest victim run's lineage and parent, asking for ``max_checkpoints=1``."""
    import time

    from crewpoint.providers.base import CheckpointRecord

    work = world / "work"
    store = work / "victim"
    victims = {m.id for m in ops.list_checkpoints(str(store))}
    head = max((m for m in ops.list_checkpoints(str(store)) if m.entity_kind == "crew"), key=lambda m: m.created_at)
    source = ops.load(head.id, str(store))
    body = json.loads(json.dumps(source.body))
    body["lineage"].update(lineage=head.lineage, parent_id=head.id, sequence=head.sequence + 1)
    body["entity"]["checkpoint"] = {"location": str(store), "provider": "json", "max_checkpoints": 1}
    for task in body["entity"]["tasks"][2:]:
        task["output"] = None  # work left to do, so the resume runs and writes
    meta = source.meta.with_(
        id="c" * 32, parent_id=head.id, sequence=head.sequence + 1, created_at=time.time(), location=""
    )
    crafted = JsonProvider().write(str(store), CheckpointRecord(meta=meta, body=body))
    for argv in dry_and_real("checkpoint", "resume", crafted):
        result = run_cli(*argv, cwd=work / "project")
        assert result.returncode == 0, result.stderr
        assert victims <= {m.id for m in ops.list_checkpoints(str(store))}, argv  # none of the victim's went
    assert len(ops.list_checkpoints(str(store))) > len(victims) + 1  # the resume ran and wrote its own


# -- 7. integrity --------------------------------------------------------------------------------------------------


def cut_after_meta_line(path: Path) -> None:
    path.write_bytes(path.read_bytes().split(b"\n", 1)[0] + b"\n")


def test_7_a_cut_json_record_lists_damaged_and_no_prune_or_dry_run_keeps_it_instead_of_good_ones(world: Path) -> None:
    work = world / "work"
    store = work / "victim"
    newest = ops.list_checkpoints(str(store))[0]
    cut_after_meta_line(Path(newest.location))
    listed = json.loads(run_cli("checkpoint", "list", str(store), "--json", cwd=work).stdout)
    damaged = [row for row in listed if row["damaged"]]
    assert [row["id"] for row in damaged] == [newest.id]
    dry = run_cli("checkpoint", "prune", str(store), "--keep", "1", "--dry-run", "--json", cwd=work)
    assert dry.returncode == 0, dry.stderr
    would = {m["id"] for m in json.loads(dry.stdout)["would_delete"]}
    real = run_cli("checkpoint", "prune", str(store), "--keep", "1", "--json", cwd=work)
    assert real.returncode == 0, real.stderr
    deleted = {m["id"] for m in json.loads(real.stdout)["deleted"]}
    assert would == deleted and newest.id not in deleted  # the dry run answered as the prune did
    left = ops.list_checkpoints(str(store))
    assert any(m.damaged is None for m in left) and Path(newest.location).exists()


def _sqlite_store_without_a_body(path: Path) -> str:
    make_store(str(path))
    with sqlite3.connect(path) as db:
        oldest = db.execute("SELECT id FROM checkpoints ORDER BY created_at LIMIT 1").fetchone()[0]
        db.execute("DELETE FROM bodies WHERE id = ?", [oldest])
    return str(oldest)


def test_7_a_sqlite_record_without_its_body_lists_damaged_by_cli_and_api(world: Path) -> None:
    db = world / "work" / "s.db"
    gone = _sqlite_store_without_a_body(db)
    rows = json.loads(run_cli("checkpoint", "list", str(db), "--json", cwd=world).stdout)
    assert {row["id"]: row["damaged"] for row in rows}[gone] == "its body is missing"
    table = run_cli("checkpoint", "list", str(db), cwd=world).stdout
    assert "its body is missing" in table
    for listing in (SqliteProvider().list(str(db)), ops.list_checkpoints(str(db), limit=50)):
        assert {m.id: m.damaged for m in listing}[gone] == "its body is missing"
    by_branch = SqliteProvider().list(str(db), "main")
    assert {m.id: m.damaged for m in by_branch}[gone] == "its body is missing"


def test_7_a_postgresql_record_without_its_body_lists_damaged(pg_location: str, tmp_path: Path) -> None:
    import psycopg

    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.providers import PostgresProvider
    from crewpoint.providers.pg_location import parse

    provider = PostgresProvider()
    try:
        demo_crew(checkpoint=CheckpointConfig(location=pg_location, provider=provider)).kickoff(inputs=DEMO_INPUTS)
        oldest = provider.list(pg_location)[-1]
        where = parse(pg_location)
        with psycopg.connect(where.conninfo, autocommit=True) as conn:
            conn.execute(f'DELETE FROM "{where.schema}".bodies WHERE id = %s', [oldest.id])
        for listing in (provider.list(pg_location), provider.list_newest(pg_location, 50)):
            assert {m.id: m.damaged for m in listing}[oldest.id] == "its body is missing"
        by_branch = provider.list_newest(pg_location, 50, "main")
        assert {m.id: m.damaged for m in by_branch}[oldest.id] == "its body is missing"
    finally:
        provider.close()
    rows = json.loads(run_cli("checkpoint", "list", pg_location, "--json", cwd=tmp_path).stdout)
    assert {row["id"]: row["damaged"] for row in rows}[oldest.id] == "its body is missing"


# -- 8. secrets: a location that does not parse, in the new commands too -------------------------------------------


@pytest.mark.parametrize("mark", ["/", "#", "?"])
def test_8_a_password_that_breaks_the_url_never_shows_in_a_dry_run_or_prune(mark: str, tmp_path: Path) -> None:
    url = f"postgresql://alice:{SECRET_A}{mark}{SECRET_B}@127.0.0.1:1/db"
    attempts = [
        ("checkpoint", "prune", url, "--keep", "1", "--dry-run"),
        ("checkpoint", "resume", "abc123", "--dry-run", "--location", url),
        ("--debug", "checkpoint", "fork", "abc123", "--dry-run", "--location", url),
    ]
    for argv in attempts:
        result = run_cli(*argv, cwd=tmp_path)
        said = result.stdout + result.stderr
        assert result.returncode == 2, (argv, said)
        assert SECRET_A not in said and SECRET_B not in said, (argv, said)


# -- 9. validation --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", None), ("tasks", "not a list"), ("agents", 7)],
)
def test_9_a_body_field_of_the_wrong_type_is_refused_naming_it_before_anything_runs(
    world: Path, field: str, value: Any
) -> None:
    work = world / "work"
    store = work / "victim"
    crafted = next(p for p in checkpoint_files(store) if p.parent.name == "main")
    rewrite(crafted, change_body=lambda body: body["entity"].__setitem__(field, value))
    before = snapshot(store)
    for argv in [
        *dry_and_real("checkpoint", "resume", str(crafted)),
        *dry_and_real("checkpoint", "fork", str(crafted), "--input", "topic=x"),
        ("checkpoint", "info", str(crafted)),
    ]:
        line = refused(run_cli(*argv, cwd=work / "project"))
        assert f"entity.{field}" in line, (argv, line)
    with pytest.raises(CheckpointError, match=f"entity.{field}"):
        ops.prepare_run(str(crafted))
    after = snapshot(store)
    assert {k: v for k, v in after.items() if not k.startswith(".runs")} == {
        k: v for k, v in before.items() if not k.startswith(".runs")
    }


# -- d. a dry run refuses what the run refuses ----------------------------------------------------------------------


@pytest.mark.parametrize("branch", ["../up", "a b", "main"])
def test_a_fork_dry_run_refuses_a_bad_or_taken_branch_name_as_the_fork_does(world: Path, branch: str) -> None:
    work = world / "work"
    first = next(p for p in checkpoint_files(work / "victim") if p.parent.name == "main")
    before = snapshot(work)
    lines = [
        refused(run_cli(*argv, cwd=work / "project"))
        for argv in dry_and_real("checkpoint", "fork", str(first), "--input", "topic=x", "--branch", branch)
    ]
    assert lines[0] == lines[1]
    assert snapshot(work) == before


def test_a_resume_dry_run_prints_the_plan_and_runs_and_writes_nothing(world: Path) -> None:
    work = world / "work"
    store = work / "victim"
    stopped = next(m for m in ops.list_checkpoints(str(store)) if m.entity_kind == "crew" and m.tasks_done == 2)
    before = snapshot(work)
    result = run_cli("checkpoint", "resume", stopped.id, "--dry-run", "--location", str(store), cwd=work)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"dry run: would resume {stopped.id[:12]}")
    assert lines[1] == f"store:   {store} (branch main)"
    assert lines[2].startswith("program: rebuilt from the checkpoint")
    assert lines[3] == "tasks to run: 3. draft, 4. review"
    assert snapshot(work) == before  # no checkpoint, no run record, no index change
    count = len(ops.list_checkpoints(str(store)))
    ran = run_cli("checkpoint", "resume", stopped.id, "--location", str(store), cwd=work)
    assert ran.returncode == 0, ran.stderr
    assert len(ops.list_checkpoints(str(store))) == count + 2  # the run did what the dry run said: two tasks


def test_a_prune_dry_run_refuses_a_store_it_may_not_write_as_the_prune_does(tmp_path: Path) -> None:
    from crewai_fixtures import json_store

    store = json_store(tmp_path / "crewai")  # another tool's store: read-only here, for both
    before = snapshot(store)
    attempts = dry_and_real("checkpoint", "prune", str(store), "--keep", "1")
    lines = [refused(run_cli(*argv, cwd=tmp_path)) for argv in attempts]
    assert lines[0] == lines[1] and "read-only" in lines[0]
    assert snapshot(store) == before


async def test_7_the_app_marks_a_sqlite_record_without_its_body_damaged_and_runs_nothing_from_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from support.reading import browser
    from support.waiting import settle
    from test_app import choose

    from crewpoint.tui.app import make_app

    monkeypatch.chdir(tmp_path)
    db = tmp_path / "s.db"
    gone = _sqlite_store_without_a_body(db)
    count = len(ops.list_checkpoints(str(db)))
    app = make_app(str(db), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        assert {m.id: m.damaged for m in screen.metas}[gone] == "its body is missing"
        await choose(pilot, gone)
        assert screen.detail.problem
        for key in ("f", "e"):  # fork and resume from it are refused with a message, not run
            await pilot.press(key)
            await settle(pilot)
            assert pilot.app.screen is screen
    assert len(ops.list_checkpoints(str(db))) == count


async def test_2_the_app_marks_a_record_claiming_a_deeper_branch_damaged_and_runs_nothing_from_it(
    world: Path,
) -> None:
    from support.reading import browser
    from support.waiting import settle
    from test_app import choose

    from crewpoint.tui.app import make_app

    work = world / "work"
    crafted = next(p for p in checkpoint_files(work / "victim") if p.parent.name == "main")
    set_branch(crafted, "x/y/z")
    crafted_id = json.loads(crafted.read_bytes())["meta"]["id"]
    before = snapshot(world)
    app = make_app(str(work / "victim"), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        damaged = {m.id: m.damaged for m in screen.metas}[crafted_id]
        assert damaged and "x/y/z" in damaged
        await choose(pilot, crafted_id)
        assert screen.detail.problem
        for key in ("f", "e"):  # fork and resume from it are refused with a message, not run
            await pilot.press(key)
            await settle(pilot)
            assert pilot.app.screen is screen
    assert snapshot(world) == before
