"""Integrity: a record carries its body's length and digest; a cut, altered or hostile body is a damaged record,
never one that a listing counts, a prune keeps in place of good ones, or a read follows into a crash.

Crafted files and rows per attack, tried through the real command line (a subprocess) and the API.
"""

from __future__ import annotations

import hashlib
import json
import os
import resource
import signal
import sqlite3
import subprocess
import zlib
from pathlib import Path

import pytest
from support.cli import CREWPOINT
from support.cli import one_line_error as refused
from support.stores import make_store

from crewpoint import CheckpointConfig
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers import CheckpointError, DamagedCheckpoint, JsonProvider, SqliteProvider
from crewpoint.providers.json_index import INDEX_VERSION


def run_cli(*args: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    def file_size_limit() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, as on a full disk
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run(
        [CREWPOINT, "checkpoint", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
        timeout=300,
        preexec_fn=file_size_limit,
    )


def listed(store: str) -> list[dict[str, object]]:
    result = run_cli("list", store, "--json")
    assert result.returncode == 0, result.stderr
    rows: list[dict[str, object]] = json.loads(result.stdout)
    return rows


def cut_after_meta_line(path: Path) -> None:
    path.write_bytes(path.read_bytes().split(b"\n", 1)[0] + b"\n")


# -- JSON ---------------------------------------------------------------------------------------------------------


def test_a_json_record_cut_after_its_metadata_lists_damaged_and_prune_keeps_the_readable_ones() -> None:
    store = make_store(".checkpoints")
    provider = JsonProvider()
    metas = [m for m in provider.list(store) if m.entity_kind == "crew"]
    newest, readable = metas[0], metas[1]
    cut_after_meta_line(Path(newest.location))

    rows = {row["id"]: row for row in listed(store)}
    assert rows[newest.id]["damaged"] and "cut short" in str(rows[newest.id]["damaged"])
    assert rows[readable.id]["damaged"] is None

    result = run_cli("prune", store, "--keep", "1")
    assert result.returncode == 0, result.stderr
    left = {m.id: m for m in provider.list(store)}
    assert newest.id in left and left[newest.id].damaged  # never deleted by a count, never counted
    assert readable.id in left and provider.read(store, readable.id).body  # the newest readable one is kept
    assert Path(readable.location).exists()


def test_a_json_read_checks_the_digest_and_an_old_record_without_one_still_reads(tmp_path: Path) -> None:
    store = make_store(".checkpoints")
    provider = JsonProvider()
    meta = next(m for m in provider.list(store) if m.entity_kind == "crew")
    path = Path(meta.location)
    data = path.read_bytes()
    head, rest = data.split(b"\n", 1)
    stored = json.loads(head[len(b'{"meta":') : -1])
    assert stored["body_length"] == len(rest) and stored["digest"] == hashlib.sha256(rest).hexdigest()

    # One byte of an output changed, the length kept: only the digest tells, and a read does.
    index = rest.index(b"Offline")
    path.write_bytes(head + b"\n" + rest[:index] + b"offline" + rest[index + 7 :])
    with pytest.raises(DamagedCheckpoint, match="digest"):
        provider.read(store, meta.id)
    line = refused(run_cli("info", str(path)))
    assert "digest" in line and "damaged" in line

    # A record written before digests (no body_length, no digest) reads as it did.
    del stored["body_length"], stored["digest"]
    old_head = b'{"meta":' + json.dumps(stored).encode() + b","
    path.write_bytes(old_head + b"\n" + rest)
    assert provider.read(store, meta.id).meta.digest == ""
    assert next(m for m in provider.list(store) if m.id == meta.id).damaged is None
    # ... and one cut short is still told from its end, without parsing its body.
    path.write_bytes(old_head + b"\n" + rest[: len(rest) // 2])
    assert "truncated" in (next(m for m in provider.list(store) if m.id == meta.id).damaged or "")


# -- SQLite ---------------------------------------------------------------------------------------------------------


def _chunk(db: sqlite3.Connection, payload: bytes, key: bytes | None = None) -> bytes:
    digest = key or hashlib.sha256(payload).digest()
    db.execute("INSERT OR REPLACE INTO chunks (hash, data) VALUES (?, ?)", [digest, zlib.compress(payload)])
    db.execute("INSERT OR REPLACE INTO chunk_refs (hash, refs) VALUES (?, 1)", [digest])
    return digest


def _ref(digest: bytes) -> str:
    return '{"\\u0000c":"' + digest.hex() + '"}'


def _set_manifest(db: sqlite3.Connection, checkpoint_id: str, manifest: bytes) -> None:
    db.execute("UPDATE bodies SET manifest = ? WHERE id = ?", [zlib.compress(manifest), checkpoint_id])
    db.execute(
        "UPDATE checkpoints SET body_length = ?, digest = ? WHERE id = ?",
        [len(manifest), hashlib.sha256(manifest).hexdigest(), checkpoint_id],
    )


@pytest.mark.parametrize("attack", ["self-reference", "fan-out", "deep chain"])
def test_a_hostile_sqlite_manifest_is_one_damaged_record(attack: str) -> None:
    store = make_store("s.db")
    provider = SqliteProvider()
    metas = [m for m in provider.list(store) if m.entity_kind == "crew"]
    victim, other = metas[0], metas[1]
    db = sqlite3.connect(store)
    if attack == "self-reference":
        key = hashlib.sha256(b"anything").digest()
        _chunk(db, ('{"a":' + _ref(key) + "}").encode(), key)  # a chunk naming itself: its hash cannot match
        manifest = ('{"entity":' + _ref(key) + "}").encode()
    elif attack == "fan-out":
        leaf = _chunk(db, json.dumps("x" * 4000).encode())
        wide = _chunk(db, ("[" + ",".join([_ref(leaf)] * 2000) + "]").encode())
        manifest = ('{"entity":[' + ",".join([_ref(wide)] * 2000) + "]}").encode()  # 16 GB once expanded
    else:
        below = _chunk(db, b'"end"')
        for _ in range(5000):
            below = _chunk(db, ("[" + _ref(below) + "]").encode())
        manifest = ('{"entity":' + _ref(below) + "}").encode()
    _set_manifest(db, victim.id, manifest)
    db.commit()
    db.close()

    with pytest.raises(DamagedCheckpoint) as damaged:
        SqliteProvider().read(store, victim.id)
    assert "\n" not in str(damaged.value)
    line = refused(run_cli("info", f"{store}#{victim.id}"))
    assert "damaged" in line or "corrupt" in line
    assert "recursion" not in line and "MemoryError" not in line
    assert SqliteProvider().read(store, other.id).body  # the others still read


def test_an_altered_sqlite_manifest_fails_its_digest_and_old_rows_still_read() -> None:
    store = make_store("s.db")
    metas = [m for m in SqliteProvider().list(store) if m.entity_kind == "crew"]
    db = sqlite3.connect(store)
    row = db.execute("SELECT body_length, digest FROM checkpoints WHERE id = ?", [metas[0].id]).fetchone()
    assert row[0] > 0 and len(row[1]) == 64
    db.execute("UPDATE checkpoints SET digest = ? WHERE id = ?", ["0" * 64, metas[0].id])
    db.execute("UPDATE checkpoints SET body_length = 0, digest = '' WHERE id = ?", [metas[1].id])  # as before v3
    db.commit()
    db.close()
    with pytest.raises(DamagedCheckpoint, match="digest"):
        SqliteProvider().read(store, metas[0].id)
    assert SqliteProvider().read(store, metas[1].id).body["entity"]


def test_a_v2_sqlite_store_is_migrated_by_its_first_write_and_reads_before(tmp_path: Path) -> None:
    from crewpoint.providers.sqlite_provider import MIGRATIONS, migrate

    store = str(tmp_path / "old.db")
    db = sqlite3.connect(store)
    from sqlite_utils import Database

    migrate(Database(db), store, MIGRATIONS[:2])  # a store as crewpoint made it before digests
    db.close()
    make_store(store)
    columns = [r[1] for r in sqlite3.connect(store).execute("PRAGMA table_info(checkpoints)")]
    assert "digest" in columns and "body_length" in columns


# -- before running ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("location", ["full", "full.db"])
def test_a_store_that_cannot_be_written_is_refused_before_any_llm_call(
    location: str, llm_calls: list[str], tmp_path: Path
) -> None:
    make_store(location, stop_after=1)
    llm_calls.clear()
    before = sorted(p.name for p in tmp_path.rglob("*"))
    provider = JsonProvider() if location == "full" else SqliteProvider()
    provider.check_writable(location)  # writable now

    # A full disk: no file may grow. The fork is refused in one line, and no task ran.
    result = run_cli("fork", "--location", location, _newest(location), limit=0)
    line = refused(result)
    assert "cannot write" in line
    assert "Task" not in result.stdout and not result.stdout.strip()
    assert sorted(p.name for p in tmp_path.rglob("*")) == before

    # The API refuses the same way: a folder in the way of the store's folder.
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where the store's folder would be")
    crew = demo_crew(checkpoint=CheckpointConfig(location=str(blocked / "store"), provider=JsonProvider()))
    with pytest.raises(CheckpointError, match="not a folder"):
        crew.kickoff(inputs=DEMO_INPUTS)
    assert llm_calls == []


def _newest(location: str) -> str:
    provider = JsonProvider() if location == "full" else SqliteProvider()
    return next(m.id for m in provider.list(location) if m.entity_kind == "crew")


def test_an_index_written_before_length_checks_never_vouches_for_a_cut_file() -> None:
    store = make_store(".checkpoints")
    provider = JsonProvider()
    newest = next(m for m in provider.list(store) if m.entity_kind == "crew")
    cut_after_meta_line(Path(newest.location))
    # The index as an earlier crewpoint left it: version 1, the cut file cached as whole at its new size.
    stat = Path(newest.location).stat()
    index = Path(store, ".index.jsonl")
    header, *lines = index.read_text().splitlines()
    fields = json.loads(header)["fields"]
    values = [getattr(newest, f) for f in fields]
    old = [
        json.dumps({"crewpoint_index": 1, "fields": fields}),
        *lines,
        json.dumps([stat.st_size, stat.st_mtime_ns, *values]),
    ]
    index.write_text("\n".join(old) + "\n")

    listed_again = {m.id: m for m in provider.list(store)}
    assert "cut short" in (listed_again[newest.id].damaged or "")
    assert json.loads(index.read_text().splitlines()[0])["crewpoint_index"] == INDEX_VERSION


def test_a_read_only_postgresql_session_is_refused_before_a_run(pg_location: str) -> None:
    from crewpoint.providers import PostgresProvider

    provider = PostgresProvider()
    try:
        provider.check_writable(pg_location)  # a store that can be made
        read_only = pg_location + "&options=-cdefault_transaction_read_only%3Don"
        with pytest.raises(CheckpointError, match="read-only"):
            provider.check_writable(read_only)
        crew = demo_crew(checkpoint=CheckpointConfig(location=read_only, provider=provider))
        with pytest.raises(CheckpointError, match="read-only"):
            crew.kickoff(inputs=DEMO_INPUTS)
    finally:
        provider.close()


def test_a_sqlite_record_without_its_body_is_never_kept_in_place_of_a_readable_one() -> None:
    store = make_store("s.db")
    metas = [m for m in SqliteProvider().list(store) if m.entity_kind == "crew"]
    newest, readable = metas[0], metas[1]
    db = sqlite3.connect(store)
    db.execute("DELETE FROM bodies WHERE id = ?", [newest.id])
    db.commit()
    db.close()
    dry = run_cli("prune", store, "--keep", "1", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert readable.id not in dry.stdout and newest.id not in dry.stdout
    result = run_cli("prune", store, "--keep", "1")
    assert result.returncode == 0, result.stderr
    left = {m.id for m in SqliteProvider().list(store)}
    assert {newest.id, readable.id} <= left
    assert SqliteProvider().read(store, readable.id).body["entity"]


def test_a_postgresql_record_without_its_body_is_never_kept_in_place_of_a_readable_one(pg_location: str) -> None:
    import psycopg

    from crewpoint.providers import PostgresProvider
    from crewpoint.providers.pg_location import parse
    from crewpoint.providers.prune import PruneStrategy

    provider = PostgresProvider()
    try:
        demo_crew(checkpoint=CheckpointConfig(location=pg_location, provider=provider)).kickoff(inputs=DEMO_INPUTS)
        metas = [m for m in provider.list(pg_location) if m.entity_kind == "crew"]
        newest, readable = metas[0], metas[1]
        where = parse(pg_location)
        with psycopg.connect(where.conninfo, autocommit=True) as conn:
            conn.execute(f'DELETE FROM "{where.schema}".bodies WHERE id = %s', [newest.id])
        plan = provider.prune(pg_location, PruneStrategy(keep=1))
        assert readable.id not in plan.ids and newest.id not in plan.ids
        assert provider.read(pg_location, readable.id).body["entity"]
    finally:
        provider.close()
