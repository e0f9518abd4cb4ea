"""One answer wins: two processes claim the same requests of one store at once (JSON, SQLite, PostgreSQL), and a
claimer killed mid-write leaves no claim or a whole one, never a half-written one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from crewpoint.providers import (
    CheckpointError,
    CheckpointMeta,
    CheckpointRecord,
    JsonProvider,
    PostgresProvider,
    SqliteProvider,
    provider_for,
)
from crewpoint.providers.base import BaseProvider

KEYS = [f"req-{n}" for n in range(20)]

CLAIMER = r"""
import json, os, sys
from crewpoint.providers import provider_for
location, tag, barrier = sys.argv[1], sys.argv[2], int(sys.argv[3])
provider = provider_for(location)
provider.claims(location)  # the store is open before the race starts
print("ready", flush=True)
os.read(barrier, 1)  # end of file when the test closes the pipe: every claimer is released at once
won = {}
for n in range(20):
    key = f"req-{n}"
    won[key] = provider.claim(location, key, {"token": f"{tag}-{n}", "who": tag})
print(json.dumps(won), flush=True)
"""


def record(n: int) -> CheckpointRecord:
    return CheckpointRecord(CheckpointMeta(f"cp{n:04d}", None, "main", "run-a", n, time.time(), "t"), {"n": n})


def made(kind: str, tmp_path: Path, request: pytest.FixtureRequest) -> tuple[BaseProvider, str]:
    """A provider of ``kind`` and a location where no store is yet."""
    if kind == "json":
        return JsonProvider(), str(tmp_path / "store")
    if kind == "sqlite":
        return SqliteProvider(), str(tmp_path / "store.db")
    return PostgresProvider(), request.getfixturevalue("pg_location")


@pytest.fixture(params=["json", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[BaseProvider, str]]:
    """A store of each kind that holds one checkpoint (a claim never makes a store)."""
    provider, location = made(request.param, tmp_path, request)
    provider.write(location, record(1))
    yield provider, location
    provider.close()


def test_two_processes_claiming_at_once_have_one_winner_and_the_loser_gets_its_value(
    store: tuple[BaseProvider, str],
) -> None:
    provider, location = store
    release, barrier = os.pipe()[::-1]  # (write end, read end)
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, location, tag, str(barrier)],
            stdout=subprocess.PIPE,
            text=True,
            pass_fds=(barrier,),
        )
        for tag in ("a", "b")
    ]
    os.close(barrier)
    try:
        for proc in procs:
            assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    finally:
        os.close(release)  # both claimers go at once
    answers = [json.loads(proc.communicate(timeout=120)[0]) for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0]
    first, second = answers
    assert list(first) == KEYS and first == second  # each key: both got the same value, the winner's
    for n, key in enumerate(KEYS):
        assert first[key]["token"] in (f"a-{n}", f"b-{n}")
        assert first[key]["who"] == first[key]["token"][0]
    assert provider.claims(location) == first
    with provider_for(location) as fresh:  # what a reader that opens the store later sees
        assert fresh.read_claim(location, "req-7") == first["req-7"]


# -- a claimer killed mid-write -----------------------------------------------------------------------------------

KILLED = r"""
import os, sys
from crewpoint.providers import provider_for
location, stage = sys.argv[1], sys.argv[2]
provider = provider_for(location)
provider.claims(location)

def stop(what):
    print(what, flush=True)
    sys.stdin.readline()  # never answered: the test kills this process here

if stage == "half":  # JSON: half of the value's bytes are in the temp file
    real_write = os.write
    def write(fd, data):
        written = real_write(fd, bytes(data[: len(data) // 2]))
        stop("half")
        return written
    os.write = write
elif stage == "linked":  # JSON: the claim is linked into place, its folder not yet synced
    from crewpoint.providers import claims
    claims.fsync_dir = lambda folder: stop("linked")
elif stage == "inserted":  # SQLite, PostgreSQL: the row is inserted, the transaction not committed
    if location.startswith("postgresql"):
        import psycopg
        cls = psycopg.Connection
    else:
        from crewpoint.providers.sqlite_schema import Conn as cls
    real_execute = cls.execute
    def execute(self, sql, *args, **kwargs):
        result = real_execute(self, sql, *args, **kwargs)
        if str(sql).startswith("INSERT INTO") and "claims" in str(sql):
            stop("inserted")
        return result
    cls.execute = execute
provider.claim(location, "req-1", {"token": "killed", "pad": "x" * 4000})
print("claimed", flush=True)
"""


def kill_at(location: str, stage: str) -> None:
    """Start a claimer that stops at ``stage`` of its claim, and kill -9 it there."""
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, location, stage], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == stage
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL


def test_a_json_claimer_killed_mid_write_leaves_no_claim_and_its_temp_file_is_never_one(tmp_path: Path) -> None:
    location = str(tmp_path / "store")
    provider = JsonProvider()
    provider.write(location, record(1))
    kill_at(location, "half")
    folder = tmp_path / "store" / ".claims"
    left = [p.name for p in folder.iterdir()]
    assert len(left) == 1 and left[0].startswith(".req-1.json.") and left[0].endswith(".tmp")  # half-written
    assert provider.read_claim(location, "req-1") is None and provider.claims(location) == {}
    assert provider.claim(location, "req-1", {"token": "ours"}) == {"token": "ours"}  # the next claimer wins
    assert [p.name for p in folder.iterdir()] == ["req-1.json"]  # and the dead claimer's temp file is gone


def test_a_json_claimer_killed_after_its_link_leaves_a_whole_claim(tmp_path: Path) -> None:
    location = str(tmp_path / "store")
    provider = JsonProvider()
    provider.write(location, record(1))
    kill_at(location, "linked")
    theirs = {"token": "killed", "pad": "x" * 4000}
    assert provider.read_claim(location, "req-1") == theirs
    assert provider.claim(location, "req-1", {"token": "ours"}) == theirs  # the claim was made: it stays


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_a_database_claimer_killed_before_its_commit_leaves_no_claim(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    provider, location = made(kind, tmp_path, request)
    try:
        provider.write(location, record(1))
        kill_at(location, "inserted")
        assert provider.read_claim(location, "req-1") is None and provider.claims(location) == {}
        assert provider.claim(location, "req-1", {"token": "ours"}) == {"token": "ours"}
    finally:
        provider.close()


# -- damage, and stores made before claims ------------------------------------------------------------------------


def test_a_damaged_json_claim_reads_as_one_line_and_hides_no_other(tmp_path: Path) -> None:
    location = str(tmp_path / "store")
    provider = JsonProvider()
    provider.write(location, record(1))
    provider.claim(location, "req-2", {"token": "fine"})
    (tmp_path / "store" / ".claims" / "req-1.json").write_text('{"token": "cut sh')
    for attempt in (
        lambda: provider.read_claim(location, "req-1"),
        lambda: provider.claim(location, "req-1", {"token": "ours"}),
    ):
        with pytest.raises(CheckpointError, match="damaged claim") as raised:
            attempt()
        assert "\n" not in str(raised.value) and "req-1.json" in str(raised.value)
    assert provider.claims(location) == {"req-2": {"token": "fine"}}


def test_a_sqlite_store_made_before_claims_opens_and_its_first_claim_adds_them(tmp_path: Path) -> None:
    import sqlite3

    from sqlite_utils import Database

    from crewpoint.providers.sqlite_schema import MIGRATIONS, SCHEMA_VERSION, migrate

    location = str(tmp_path / "old.db")
    conn = sqlite3.connect(location)
    migrate(Database(conn), location, MIGRATIONS[:3])  # a store as crewpoint made it before claims
    conn.close()
    provider = SqliteProvider()
    assert provider.read_claim(location, "req-1") is None and provider.claims(location) == {}
    tables = {r[0] for r in sqlite3.connect(location).execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "claims" not in tables  # reading never migrates
    assert provider.claim(location, "req-1", {"token": "t"}) == {"token": "t"}
    check = sqlite3.connect(location)
    version = check.execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
    assert version == (str(SCHEMA_VERSION),) and check.execute("SELECT key FROM claims").fetchall() == [("req-1",)]
    check.close()
    provider.close()


def test_a_postgres_store_made_before_claims_opens_and_its_first_claim_adds_them(pg_location: str) -> None:
    import psycopg

    from crewpoint.providers.pg_location import parse
    from crewpoint.providers.pg_sql import CLAIMS_SINCE, MIGRATIONS, migrate

    where = parse(pg_location)
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        assert migrate(conn, where, MIGRATIONS[: CLAIMS_SINCE - 1]) == CLAIMS_SINCE - 1
    provider = PostgresProvider()
    try:
        assert provider.read_claim(pg_location, "req-1") is None and provider.claims(pg_location) == {}
        assert provider.claim(pg_location, "req-1", {"token": "t"}) == {"token": "t"}
        with PostgresProvider() as fresh:
            assert fresh.claims(pg_location) == {"req-1": {"token": "t"}}
    finally:
        provider.close()
