"""The store faults of issue 8, each tried as a user would: real files, real processes, the real CLI."""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import LLMServer, llm_server
from support.cli import CREWPOINT, cli, one_line_error
from support.stores import make_store

from crewpoint import CheckpointConfig, Crew
from crewpoint.checkpoint import ops
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.events import CheckpointCompletedEvent, CheckpointFailedEvent, event_bus
from crewpoint.providers import CheckpointError, JsonProvider, MemoryProvider, SqliteProvider
from crewpoint.providers.json_provider import file_name
from crewpoint.providers.prune import PruneStrategy

__all__ = ["llm_server"]


def crew_metas(location: str) -> list:
    return [m for m in ops.list_checkpoints(location) if m.entity_kind == "crew"]


def header_edit(path: Path, **changes: object) -> None:
    """Rewrite a checkpoint file's metadata line, keeping its name and body."""
    head, rest = path.read_text().split("\n", 1)
    meta = json.loads(head[len('{"meta":') : -1])
    meta.update(changes)
    path.write_text('{"meta":' + json.dumps(meta) + ",\n" + rest)


# -- 1. prune and a damaged file --------------------------------------------------------------------------------


def test_1_prune_keep_1_never_deletes_good_checkpoints_because_of_an_empty_newer_file() -> None:
    store = make_store()
    good = crew_metas(store)
    newest = good[0]
    fake = newest.with_(
        id="broken-1", parent_id=newest.id, sequence=newest.sequence + 1, created_at=newest.created_at + 60
    )
    empty = Path(store, "main", file_name(fake))
    empty.write_bytes(b"")
    result = cli("checkpoint", "prune", store, "--keep", "1")
    assert result.exit_code == 0, result.stderr
    left = {m.id: m for m in ops.list_checkpoints(store)}
    assert newest.id in left and left[newest.id].damaged is None
    assert "broken-1" in left and left["broken-1"].damaged  # shown as damaged, never deleted by a prune
    assert len([m for m in left.values() if m.damaged is None]) == 1
    listed = cli("checkpoint", "list", store)
    assert listed.exit_code == 0 and "DAMAGED" in listed.stdout


# -- 2. max_checkpoints keeps the newest of each entity per branch ------------------------------------------------


def test_2_max_checkpoints_bounds_repeated_runs_of_a_crew_and_never_touches_another_crew() -> None:
    demo_crew(checkpoint=CheckpointConfig(location="shared"), name="another crew").kickoff(inputs=DEMO_INPUTS)
    theirs = {m.id for m in ops.list_checkpoints("shared") if m.entity_name == "another crew"}
    assert len(theirs) == 4
    config = CheckpointConfig(location="shared", max_checkpoints=2)
    demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)
    first = {m.id for m in crew_metas("shared")} - theirs
    assert len(first) == 2
    demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)
    after = {m.id for m in crew_metas("shared")}
    assert len(after - theirs) == 2 and not first & after  # the second run's newest two: the seed's bound
    assert theirs <= after  # another crew's checkpoints are never counted or deleted


RUN = (
    "import sys\n"
    "from crewpoint import CheckpointConfig\n"
    "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
    "from crewpoint.providers import provider_for\n"
    "loc = sys.argv[1]\n"
    "demo_crew(delay=0.02, checkpoint=CheckpointConfig(location=loc, provider=provider_for(loc), max_checkpoints=1))"
    ".kickoff(inputs=DEMO_INPUTS)\n"
)


@pytest.mark.parametrize("location", ["together", "together.db"])
def test_2_concurrent_runs_never_delete_each_others_latest_checkpoint(location: str) -> None:
    procs = [subprocess.Popen([sys.executable, "-c", RUN, location]) for _ in range(3)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    metas = ops.list_checkpoints(location)
    by_run: dict[str, list] = {}
    for meta in metas:
        by_run.setdefault(meta.lineage, []).append(meta)
    assert by_run  # a run still live is never pruned by another, so each run ends with its final checkpoint,
    for own in by_run.values():  # unless a run that finished later pruned it as beyond the newest one
        assert [m.tasks_done for m in own] == [4]
    assert metas[0].tasks_done == 4


# -- 3. a fork keeps its link ------------------------------------------------------------------------------------


def test_3_pruning_a_fork_keeps_its_first_checkpoint_and_so_its_source() -> None:
    store = make_store()
    source = crew_metas(store)[-2]
    crew = Crew.fork(CheckpointConfig(restore_from=source.location), branch="what-if")
    crew.override_output(0, "changed")
    crew.kickoff()
    result = cli("checkpoint", "prune", store, "--keep", "1", "--branch", "what-if")
    assert result.exit_code == 0, result.stderr
    fork = ops.list_checkpoints(store, branch="what-if")
    assert any(m.parent_id == source.id for m in fork)  # the fork still comes from the source
    assert len(fork) == 2  # its first checkpoint and its newest


# -- 4. one bad record never stops the store ----------------------------------------------------------------------


def _commands_still_work(store: str, good_id: str) -> None:
    listed = cli("checkpoint", "list", store)
    assert listed.exit_code == 0, listed.stderr
    assert "DAMAGED" in listed.stdout
    info = cli("checkpoint", "info", store)
    assert info.exit_code == 0, info.stderr
    assert cli("checkpoint", "info", good_id, "--location", store).exit_code == 0
    assert cli("checkpoint", "prune", store, "--keep", "10").exit_code == 0


@pytest.mark.parametrize("damage", ["list-typed lineage", "1,900-deep metadata"])
def test_4_a_bad_json_metadata_line_is_one_damaged_record(damage: str) -> None:
    store = make_store()
    oldest = crew_metas(store)[-1]
    path = Path(oldest.location)
    if damage == "list-typed lineage":
        header_edit(path, lineage=["not", "text"])
    else:
        rest = path.read_text().split("\n", 1)[1]
        path.write_text('{"meta":' + "[" * 1900 + "]" * 1900 + ",\n" + rest)
    bad = next(m for m in ops.list_checkpoints(store) if m.id == oldest.id)
    assert bad.damaged
    _commands_still_work(store, crew_metas(store)[0].id)
    resumed = cli("checkpoint", "resume", crew_metas(store)[1].id, "--location", store)
    assert resumed.exit_code == 0, resumed.stderr


def test_4_a_text_created_at_in_one_sqlite_row_is_one_damaged_record() -> None:
    store = make_store("s.db")
    oldest = crew_metas(store)[-1]
    con = sqlite3.connect(store)
    con.execute("UPDATE checkpoints SET created_at = 'yesterday' WHERE id = ?", [oldest.id])
    con.commit()
    con.close()
    _commands_still_work(store, crew_metas(store)[0].id)


def test_4_resume_never_copies_a_wrong_typed_lineage_and_damaged_state_is_one_line() -> None:
    store = make_store()
    metas = crew_metas(store)
    path = Path(metas[1].location)
    data = json.loads(path.read_text())
    data["body"]["lineage"]["lineage"] = ["a", "list"]
    del data["meta"]["digest"]  # an edited body with its digest kept is "altered"; without one, it is checked
    path.write_text(json.dumps(data))
    line = one_line_error(cli("checkpoint", "resume", metas[1].id, "--location", store))
    assert "lineage" in line and "'lineage'" not in line
    del data["body"]["lineage"]
    path.write_text(json.dumps(data))
    line = one_line_error(cli("checkpoint", "resume", metas[1].id, "--location", store))
    assert line.endswith("lineage: missing")
    assert len(ops.list_checkpoints(store)) == len(metas) + 0  # nothing was written


# -- 5. failed writes are reported ---------------------------------------------------------------------------------


def test_5_a_failed_write_is_an_event_and_the_next_parent_is_the_last_written() -> None:
    location = "memory://fault-5"
    failed: list[CheckpointFailedEvent] = []

    def on_completed(source: object, event: CheckpointCompletedEvent) -> None:
        if not failed:
            MemoryProvider.set_read_only(location, "the disk is full")  # the next write fails

    def on_failed(source: object, event: CheckpointFailedEvent) -> None:
        failed.append(event)
        MemoryProvider.set_read_only(location, None)

    event_bus.register(CheckpointCompletedEvent, on_completed)
    event_bus.register(CheckpointFailedEvent, on_failed)
    crew = demo_crew(checkpoint=CheckpointConfig(location=location, provider=MemoryProvider()))
    result = crew.kickoff(inputs=DEMO_INPUTS)
    assert len(result.tasks_output) == 4
    state = crew._runtime
    assert state is not None and state.failed == 1 and len(failed) == 1
    assert "the disk is full" in failed[0].error
    metas = MemoryProvider().list(location)
    ids = {m.id for m in metas}
    assert failed[0].checkpoint_id not in ids
    assert all(m.parent_id is None or m.parent_id in ids for m in metas)  # no checkpoint names a missing parent
    for meta in metas:  # the checkpoint after the lost one names the last written in its body as in its metadata
        lineage = MemoryProvider().read(location, meta.id).body["lineage"]
        assert (lineage["id"], lineage["parent_id"], lineage["sequence"]) == (meta.id, meta.parent_id, meta.sequence)
    assert state.checkpoint_id == metas[0].id  # the run's latest is one that was written
    summary = state.failure_summary()
    assert summary is not None and "1 checkpoint was not written" in summary
    MemoryProvider.drop(location)


def _file_size_limit(limit: int) -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG, as on a full disk
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def test_5_the_cli_reports_checkpoints_a_full_disk_refused_and_exits_1(tmp_path: Path) -> None:
    store = make_store(stop_after=1)
    source = crew_metas(store)[0]
    proc = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", source.id, "--location", store],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: _file_size_limit(2048),
    )
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.strip()  # the run itself finished and printed its result
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("crewpoint: 3 checkpoints were not written") and "too large" in last
    assert f"latest written: {source.id[:12]}" in last
    assert [m.id for m in crew_metas(store)] == [source.id]  # nothing half-written, nothing invented


# -- 7. links and special files ------------------------------------------------------------------------------------


def test_7_the_json_index_and_run_records_never_follow_a_link_out_of_the_store(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me")
    Path("cp").mkdir()
    os.symlink(outside / "victim.txt", "cp/.index.jsonl")
    os.symlink(outside, "cp/.runs")
    demo_crew(checkpoint=CheckpointConfig(location="cp")).kickoff(inputs=DEMO_INPUTS)
    assert (outside / "victim.txt").read_text() == "keep me"
    assert os.listdir(outside) == ["victim.txt"]
    assert len(crew_metas("cp")) == 4


def test_7_a_fifo_named_like_a_checkpoint_is_skipped_never_read() -> None:
    store = make_store()
    newest = crew_metas(store)[0]
    fake = newest.with_(
        id="fifo-1", parent_id=newest.id, sequence=newest.sequence + 1, created_at=newest.created_at + 9
    )
    os.mkfifo(Path(store, "main", file_name(fake)))
    for args in (["info", store], ["list", store], ["resume", newest.id, "--location", store]):
        proc = subprocess.run([CREWPOINT, "checkpoint", *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, (args, proc.stderr)
    proc = subprocess.run(
        [CREWPOINT, "checkpoint", "info", "fifo-1", "--location", store], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 2 and "no checkpoint 'fifo-1'" in proc.stderr  # skipped, never opened


# -- 8. a foreign SQLite database ----------------------------------------------------------------------------------


def test_8_another_applications_database_is_never_changed(tmp_path: Path) -> None:
    con = sqlite3.connect("app.db")
    con.execute("CREATE TABLE users (name TEXT)")
    con.execute("INSERT INTO users VALUES ('ada')")
    con.commit()
    con.close()
    before = hashlib.sha256(Path("app.db").read_bytes()).hexdigest()
    assert "not a crewpoint" in one_line_error(cli("checkpoint", "list", "app.db"))
    assert one_line_error(cli("checkpoint", "info", "app.db"))
    with pytest.raises(CheckpointError, match="not a crewpoint"):
        SqliteProvider().write("app.db", ops_record())
    with pytest.raises(CheckpointError, match="not a crewpoint"):  # refused before the run, not after it
        demo_crew(checkpoint=CheckpointConfig(location="app.db", provider=SqliteProvider())).kickoff(inputs=DEMO_INPUTS)
    assert hashlib.sha256(Path("app.db").read_bytes()).hexdigest() == before
    assert sorted(os.listdir(".")) == ["app.db", "home"]  # no -wal, -shm or journal left beside it
    con = sqlite3.connect("app.db")
    assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    assert [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["users"]
    con.close()


def ops_record():  # a valid record to try writing
    from crewpoint.providers import CheckpointMeta, CheckpointRecord

    return CheckpointRecord(CheckpointMeta("a1", None, "main", "l", 1, 1.0, "t"), {})


# -- 9. locations and branch names ----------------------------------------------------------------------------------


def test_9_a_hash_in_a_folder_location_is_part_of_its_name() -> None:
    demo_crew(checkpoint=CheckpointConfig(location="run#1")).kickoff(inputs=DEMO_INPUTS)
    assert not Path("run").exists()
    assert len(crew_metas("run#1")) == 4
    assert cli("checkpoint", "list", "run#1").exit_code == 0


def test_9_a_bad_branch_is_refused_when_the_fork_is_made_before_any_work(llm_calls: list[str]) -> None:
    store = make_store()
    source = crew_metas(store)[1]
    files = sorted(p for p in Path(store).rglob("*.json"))
    llm_calls.clear()
    for branch in ("../x", "a b", ".hidden", "x/../../y"):
        with pytest.raises(CheckpointError, match="invalid branch name"):
            Crew.fork(CheckpointConfig(restore_from=source.location), branch=branch)
        line = one_line_error(cli("checkpoint", "fork", source.id, "--branch", branch, "--location", store))
        assert "invalid branch name" in line
    assert llm_calls == []
    assert sorted(p for p in Path(store).rglob("*.json")) == files


# -- 10. permissions, leftovers, interrupted prunes ---------------------------------------------------------------


def test_10_store_folders_are_private_whatever_the_umask() -> None:
    old = os.umask(0o022)
    try:
        demo_crew(checkpoint=CheckpointConfig(location="deep/er/cp")).kickoff(inputs=DEMO_INPUTS)
        demo_crew(checkpoint=CheckpointConfig(location="db/s.db", provider=SqliteProvider())).kickoff(
            inputs=DEMO_INPUTS
        )
    finally:
        os.umask(old)
    for folder in ("deep", "deep/er", "deep/er/cp", "deep/er/cp/main", "deep/er/cp/.runs", "db"):
        assert os.stat(folder).st_mode & 0o777 == 0o700, folder
    for path in Path("deep/er/cp").rglob("*"):
        if path.is_file():
            assert path.stat().st_mode & 0o777 == 0o600, path


def test_10_a_temp_file_left_by_a_killed_writer_is_cleaned() -> None:
    store = make_store()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    leftover = Path(store, "main", f".00000009_x.json.{dead.pid}-0badcafe.tmp")
    leftover.write_bytes(b"x" * 1_000_000)
    live = Path(store, "main", f".00000009_y.json.{os.getpid()}-0badcafe.tmp")
    live.write_bytes(b"y")  # a writer still running: kept
    assert cli("checkpoint", "prune", store, "--keep", "10").exit_code == 0
    assert not leftover.exists() and live.exists()


def test_10_an_interrupted_json_prune_leaves_no_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store()
    metas = crew_metas(store)
    real_unlink = os.unlink
    calls: list[str] = []

    def failing_unlink(path: str, *args: object, **kwargs: object) -> None:
        if str(path).endswith(".json"):
            calls.append(str(path))
            if len(calls) == 2:
                raise OSError(28, "No space left on device")
        real_unlink(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", failing_unlink)
    with pytest.raises(CheckpointError):
        JsonProvider().prune(store, PruneStrategy(keep=1))
    monkeypatch.setattr(os, "unlink", real_unlink)
    left = [m.sequence for m in crew_metas(store)]
    assert left == list(range(max(left), max(left) - len(left), -1))  # what is left is the newest, unbroken
    assert len(left) == len(metas) - 1


SYSTEM_PYTHON = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"


@pytest.mark.skipif(
    os.geteuid() != 0 or not Path("/usr/bin/setpriv").exists() or not Path(SYSTEM_PYTHON).exists(),
    reason="needs root to run a reader as another user (root itself ignores folder permissions)",
)
def test_10_a_sqlite_store_in_a_read_only_folder_can_be_listed_and_read() -> None:
    import shutil
    import tempfile

    import crewpoint.providers

    folder = Path(tempfile.mkdtemp(prefix="crewpoint-ro-"))
    try:
        folder.chmod(0o755)
        demo_crew(checkpoint=CheckpointConfig(location=str(folder / "s.db"), provider=SqliteProvider())).kickoff(
            inputs=DEMO_INPUTS
        )
        SqliteProvider().close()
        for name in os.listdir(folder):
            (folder / name).chmod(0o644)  # readable by everyone, writable by nobody but root: no -shm can be made
        # the reader gets its own world-readable copy of the package: the checkout may sit in a private folder
        package_root = tempfile.mkdtemp(prefix="crewpoint-lib-")
        os.chmod(package_root, 0o755)
        shutil.copytree(
            Path(crewpoint.providers.__file__).parents[1],
            Path(package_root) / "crewpoint",
            ignore=shutil.ignore_patterns("__pycache__"),
        )
        for path in Path(package_root).rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        code = (
            "import sys\n"
            "from crewpoint.providers import SqliteProvider, CheckpointError\n"
            "p = SqliteProvider()\n"
            "metas = p.list(sys.argv[1])\n"
            "print(len(metas), p.read(sys.argv[1]).meta.id == metas[0].id)\n"
            "try:\n"
            "    p.write(sys.argv[1], p.read(sys.argv[1]))\n"
            "except CheckpointError as exc:\n"
            "    print('refused:', exc)\n"
        )
        proc = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                SYSTEM_PYTHON,
                "-c",
                code,
                str(folder / "s.db"),
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env={"PYTHONPATH": package_root, "HOME": "/tmp"},
        )
        assert proc.returncode == 0, proc.stderr
        first, second = proc.stdout.splitlines()
        assert first == "4 True"
        assert second.startswith("refused: cannot write to") and "read-only" in second
    finally:
        shutil.rmtree(folder)
        if package_root:
            shutil.rmtree(package_root, ignore_errors=True)


def test_10_prune_frees_a_json_store_when_no_file_can_grow() -> None:
    """A full disk: no file may grow (RLIMIT_FSIZE 0); pruning a JSON store still deletes, and a SQLite store
    that cannot record its delete says so in one line instead of a bare I/O error."""
    for _ in range(3):
        make_store("full")
        make_store("full.db")
    for store, code in (("full", 0), ("full.db", 2)):
        proc = subprocess.run(
            [CREWPOINT, "checkpoint", "prune", store, "--keep", "1"],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=lambda: _file_size_limit(0),
        )
        assert proc.returncode == code, proc.stderr
        if code == 0:
            assert len(crew_metas(store)) == 1  # the newest of the crew on main, the others deleted
        else:
            assert "free some and retry" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_10_a_server_error_echoing_the_key_never_shows_any_of_it(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint.llm import LLM, LLMError

    key = "-".join(["sk", "test", "0123456789abcdefghijklmnop"])  # key-shaped, assembled at run time
    monkeypatch.setenv("OPENAI_API_KEY", key)
    llm_server.mode = "unauthorized"
    llm_server.error_message = "x" * 180 + f" key {key} revoked"  # the key straddles the clipping point
    with pytest.raises(LLMError) as info:
        LLM(model="m", base_url=llm_server.base_url).invoke([{"role": "user", "content": "hi"}])
    shown = str(info.value)
    assert "sk-test-01234" not in shown and key[:8] not in shown


def test_5_the_demo_command_reports_checkpoints_it_could_not_write() -> None:
    Path("blocked").write_text("a file where the store folder should be")
    result = cli("demo", "--location", "blocked/store")
    assert result.exit_code == 1
    assert "== triage flow" not in result.stdout  # refused before any run: nothing is done for checkpoints lost
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("crewpoint: ") and "cannot write checkpoints to blocked/store" in last
    assert "is not a folder" in last


def test_10_a_huge_sequence_never_hides_newer_checkpoints() -> None:
    """A file named and marked with sequence 10**30 is listed, as damaged; it is never the latest."""
    store = make_store()
    newest = crew_metas(store)[0]
    huge = newest.with_(id="huge-1", parent_id=newest.id, sequence=10**30)
    path = Path(store, "main", file_name(huge))
    text = Path(newest.location).read_text().split("\n", 1)[1]
    meta = {k: v for k, v in huge.to_dict().items() if k not in ("size", "location", "damaged")}
    path.write_text('{"meta":' + json.dumps(meta) + ",\n" + text)
    listed = {m.id: m for m in ops.list_checkpoints(store)}
    assert "huge-1" in listed and "sequence" in (listed["huge-1"].damaged or "")
    info = cli("checkpoint", "info", store, "--json")
    assert info.exit_code == 0 and json.loads(info.stdout)["meta"]["id"] == newest.id
    with pytest.raises(CheckpointError, match="sequence"):
        JsonProvider().write(store, ops_record().__class__(huge.with_(id="huge-2"), {}))
