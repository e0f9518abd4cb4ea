"""Checkpoint stores: the JSON folder and the SQLite file, on real files."""

from __future__ import annotations

import copy
import json
import os
import pickle
import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crewpoint.providers import (
    AmbiguousCheckpoint,
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    JsonProvider,
    SqliteProvider,
    UnsupportedSchema,
    chunks,
    is_sqlite_location,
    provider_for,
    split_ref,
)
from crewpoint.providers.json_provider import INDEX
from crewpoint.providers.prune import PruneStrategy, fork_points, newest_first
from crewpoint.providers.sqlite_provider import MIGRATIONS, SCHEMA_VERSION, migrate, read_schema_version

T0 = 1_760_000_000.0


def meta(
    n: int,
    parent: int | None = None,
    branch: str = "main",
    *,
    cid: str | None = None,
    created: float | None = None,
    lineage: str = "run-1",
    **extra: Any,
) -> CheckpointMeta:
    return CheckpointMeta(
        id=cid or f"cp{n:04d}",
        parent_id=None if parent is None else f"cp{parent:04d}",
        branch=branch,
        lineage=lineage,
        sequence=n,
        created_at=T0 + n if created is None else created,
        trigger="task_completed",
        entity_kind="crew",
        entity_name="Research crew",
        tasks_done=n % 4,
        tasks_total=4,
        version="0.1.0",
        **extra,
    )


def body(n: int = 0) -> dict[str, Any]:
    return {
        "entity": {"kind": "crew", "name": "Research crew", "agents": [{"role": "researcher [bold]"}]},
        "inputs": {"topic": "durable runs", "n": n},
        "events": [{"type": "task_completed", "i": i, "note": "ünïcødé ✓"} for i in range(n % 5)],
        "tasks": [{"id": f"t{i}", "output": None if i > n else f"out {i}", "score": i / 3} for i in range(4)],
        "empty": [],
        "flags": {"ok": True, "none": None, "big": 10**30, "neg": -1.5e-300},
    }


@pytest.fixture(params=["json", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[BaseProvider, str]]:
    if request.param == "json":
        yield JsonProvider(), str(tmp_path / "store")
    else:
        provider = SqliteProvider()
        yield provider, str(tmp_path / "store.db")
        provider.close()


def write_chain(provider: BaseProvider, location: str, count: int, branch: str = "main") -> list[str]:
    refs = []
    for n in range(1, count + 1):
        refs.append(provider.write(location, CheckpointRecord(meta(n, n - 1 if n > 1 else None, branch), body(n))))
    return refs


# -- both providers ----------------------------------------------------------------------------------------


def test_round_trip_gives_back_the_same_record(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    refs = write_chain(provider, location, 3)
    assert refs[-1].endswith(("cp0003_p-cp0002.json", "#cp0003"))

    latest = provider.read(location)
    assert latest.body == body(3)
    assert latest.meta.id == "cp0003" and latest.meta.parent_id == "cp0002"
    assert latest.meta.location == refs[-1]
    assert latest.meta.size > 0
    expected = meta(3, 2).to_dict()
    got = latest.meta.to_dict()
    for field in ("size", "location", "damaged", "body_length", "digest"):
        expected.pop(field)
        got.pop(field)
    assert got == expected

    first = provider.read(location, "cp0001")
    assert first.body == body(1) and first.meta.parent_id is None
    assert provider.read(refs[1]).meta.id == "cp0002"


def test_bodies_round_trip_exactly_including_awkward_values(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    awkward = {
        "\x00c": "a key that looks like an internal reference",
        "nested": {"\x00l": ["x"] * 40, "deep": [[[{"k": "v" * 300}]]]},
        "surrogate": "half a pair: \ud800",
        "long": "x" * 10_000,
        "many": {f"k{i}": i for i in range(200)},
        "floats": [0.1, 1e308, -0.0, 2.5],
        "order": {"z": 1, "a": 2, "m": 3},
    }
    provider.write(location, CheckpointRecord(meta(1), awkward))
    got = provider.read(location).body
    assert got == awkward
    assert list(got["order"]) == ["z", "a", "m"]
    assert json.dumps(got, sort_keys=False) == json.dumps(awkward, sort_keys=False)


def test_list_is_newest_first_by_sequence_even_with_equal_times(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    for n in (3, 1, 4, 2):
        provider.write(location, CheckpointRecord(meta(n, created=T0), body(n)))
    metas = provider.list(location)
    assert [m.sequence for m in metas] == [4, 3, 2, 1]
    top = metas[0]
    assert (top.trigger, top.entity_kind, top.entity_name, top.tasks_done, top.tasks_total, top.lineage) == (
        "task_completed",
        "crew",
        "Research crew",
        0,
        4,
        "run-1",
    )
    assert all(m.size > 0 and m.location and m.damaged is None for m in metas)
    assert provider.latest(location) == metas[0]


def test_a_clock_step_never_reorders_a_branch(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    provider.write(location, CheckpointRecord(meta(1, created=T0 + 100), {}))
    provider.write(location, CheckpointRecord(meta(2, 1, created=T0 + 50), {}))  # the clock went back
    provider.write(location, CheckpointRecord(meta(7, 1, "other", created=T0 + 75), {}))
    assert [m.id for m in provider.list(location)] == ["cp0007", "cp0002", "cp0001"]
    assert [m.id for m in provider.list(location, "main")] == ["cp0002", "cp0001"]


def test_branches_and_branch_filter(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    write_chain(provider, location, 3)
    provider.write(location, CheckpointRecord(meta(10, 2, "fork/2024-x"), body(10)))
    provider.write(location, CheckpointRecord(meta(11, 10, "fork/2024-x"), body(11)))
    assert [m.id for m in provider.list(location, "fork/2024-x")] == ["cp0011", "cp0010"]
    assert {m.branch for m in provider.list(location)} == {"main", "fork/2024-x"}
    assert provider.list(location, "nope") == []
    assert provider.read(location, "cp0010").meta.branch == "fork/2024-x"


def test_unique_prefix_ambiguous_prefix_and_unknown_id(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    for n, cid in enumerate(["abc-111", "abc-222", "abd-333"], start=1):
        provider.write(location, CheckpointRecord(meta(n, cid=cid), body(n)))
    assert provider.read(location, "abd").meta.id == "abd-333"
    assert provider.read(location, "abc-2").meta.id == "abc-222"
    with pytest.raises(AmbiguousCheckpoint) as ambiguous:
        provider.read(location, "abc")
    assert ambiguous.value.matches == ["abc-111", "abc-222"]
    assert "ambiguous" in str(ambiguous.value)
    with pytest.raises(CheckpointNotFound, match="no checkpoint 'zzz'"):
        provider.read(location, "zzz")


def test_missing_store_is_reported_not_created(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    for action in (lambda: provider.read(location), lambda: provider.list(location)):
        with pytest.raises(CheckpointNotFound, match="no checkpoint store at"):
            action()
    assert not os.path.exists(location)


def test_delete_removes_only_the_named_checkpoints(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    write_chain(provider, location, 4)
    assert provider.delete(location, ["cp0002", "cp0004", "missing"]) == 2
    assert [m.id for m in provider.list(location)] == ["cp0003", "cp0001"]
    assert provider.read(location, "cp0003").body == body(3)
    with pytest.raises(CheckpointNotFound):
        provider.read(location, "cp0002")
    assert provider.delete(location, []) == 0


def test_prune_keeps_the_newest_fork_points_and_protected(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    write_chain(provider, location, 6)
    provider.write(location, CheckpointRecord(meta(20, 2, "experiment-a"), body(20)))
    provider.write(location, CheckpointRecord(meta(21, 20, "experiment-a"), body(21)))

    planned = provider.prune(location, PruneStrategy(keep=2, protect=frozenset({"cp0001"})), dry_run=True).ids
    assert sorted(planned) == ["cp0003", "cp0004"]
    assert len(provider.list(location)) == 8

    assert sorted(provider.prune(location, PruneStrategy(keep=2, protect=frozenset({"cp0001"}))).ids) == [
        "cp0003",
        "cp0004",
    ]
    left = {m.id for m in provider.list(location)}
    assert left == {"cp0006", "cp0005", "cp0002", "cp0001", "cp0021", "cp0020"}
    assert provider.read(location, "cp0002").body == body(2)

    # the fork's first checkpoint keeps the fork linked to where it came from
    assert provider.prune(location, PruneStrategy(keep=1, branch="experiment-a")).ids == []
    assert "cp0005" in {m.id for m in provider.list(location)}


def test_bad_ids_and_branch_names_are_refused_with_one_line(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    for cid in ("has_underscore", "a/b", "", "../x", "x" * 200):
        with pytest.raises(CheckpointError, match="invalid checkpoint id") as bad:
            provider.write(location, CheckpointRecord(meta(1).with_(id=cid), {}))
        assert "\n" not in str(bad.value)
    for branch in ("", "..", "/abs", "a/../../x", "a\\b", "nul\x00", "a//b", ".hidden", "x.json", "a\nb"):
        with pytest.raises(CheckpointError, match="invalid branch name"):
            provider.write(location, CheckpointRecord(meta(1, branch=branch), {}))
    with pytest.raises(CheckpointError, match="sequence"):
        provider.write(location, CheckpointRecord(meta(1).with_(sequence=-1), {}))
    with pytest.raises(CheckpointError, match="not JSON-ready"):
        provider.write(location, CheckpointRecord(meta(1), {"when": object()}))
    assert not os.path.exists(location) or provider.list(location) == []


async def test_async_write_and_read(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    ref = await provider.awrite(location, CheckpointRecord(meta(1), body(1)))
    record = await provider.aread(ref)
    assert record.body == body(1)


# -- JSON folder -------------------------------------------------------------------------------------------


def test_json_file_names_tell_order_id_and_parent(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = tmp_path / "cp"
    write_chain(provider, str(root), 2)
    names = sorted(p.name for p in (root / "main").iterdir())
    assert names[0].startswith("00000001_") and names[0].endswith("_cp0001_root.json")
    assert names[1].startswith("00000002_") and names[1].endswith("_cp0002_p-cp0001.json")
    first_line = (root / "main" / names[1]).read_text().splitlines()[0]
    assert first_line.startswith('{"meta":{"id":"cp0002"') and first_line.endswith(",")


def test_json_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0)
    try:
        path = JsonProvider().write(str(tmp_path / "a" / "cp"), CheckpointRecord(meta(1, branch="fork/x"), {}))
    finally:
        os.umask(previous)
    assert os.stat(path).st_mode & 0o777 == 0o600
    for folder in ("a", "a/cp", "a/cp/fork", "a/cp/fork/x"):
        assert os.stat(tmp_path / folder).st_mode & 0o777 == 0o700, folder
    assert os.stat(tmp_path / "a" / "cp" / INDEX).st_mode & 0o777 == 0o600


def test_json_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    provider = JsonProvider()
    write_chain(provider, str(tmp_path / "cp"), 5)
    leftovers = [p for p in (tmp_path / "cp").rglob("*") if p.name.endswith(".tmp")]
    assert leftovers == []


def test_json_branch_escapes_are_refused_and_nothing_lands_outside(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = tmp_path / "cp"
    outside = tmp_path / "outside"
    outside.mkdir()
    write_chain(provider, str(root), 1)
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "inner").symlink_to(root / "main", target_is_directory=True)
    for branch in ("linked", "linked/deeper", "inner", "../outside", "a/../../outside", str(outside)):
        with pytest.raises(CheckpointError) as refused:
            provider.write(str(root), CheckpointRecord(meta(2, 1, branch), {}))
        assert "refused" in str(refused.value) or "invalid branch name" in str(refused.value)
    assert list(outside.iterdir()) == []
    assert [m.id for m in provider.list(str(root))] == ["cp0001"]
    with pytest.raises(CheckpointError, match="outside the checkpoint store"):
        provider.list(str(root), "linked")


def test_json_nested_branch_round_trips(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = str(tmp_path / "cp")
    provider.write(root, CheckpointRecord(meta(1, branch="fork"), {}))
    provider.write(root, CheckpointRecord(meta(2, 1, branch="fork/2024-x"), {}))
    by_id = {m.id: m.branch for m in provider.list(root)}
    assert by_id == {"cp0001": "fork", "cp0002": "fork/2024-x"}
    assert [m.id for m in provider.list(root, "fork")] == ["cp0001"]
    os.unlink(os.path.join(root, INDEX))
    assert {m.id: m.branch for m in provider.list(root)} == by_id


def test_json_list_reads_only_headers(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = tmp_path / "cp"
    refs = write_chain(provider, str(root), 3)
    target = Path(refs[1])
    header = target.read_bytes().split(b"\n", 1)[0]
    target.write_bytes(header + b'\n"body":{"tasks":[{"broken')

    # The header records the body's length: a cut body is told from the file's size, without parsing it.
    metas = provider.list(str(root))
    assert [m.id for m in metas] == ["cp0003", "cp0002", "cp0001"]
    assert metas[1].damaged is not None and "cut short" in metas[1].damaged
    assert metas[1].size == target.stat().st_size
    assert metas[0].damaged is None and metas[0].tasks_done == 3

    os.unlink(root / INDEX)
    assert [m.damaged is None for m in provider.list(str(root))] == [True, False, True]
    assert (root / INDEX).exists()

    with pytest.raises(DamagedCheckpoint, match="not valid JSON") as damaged:
        provider.read(str(root), "cp0002")
    assert str(target) in str(damaged.value) and "\n" not in str(damaged.value)
    assert provider.read(str(root), "cp0003").body == body(3)


def test_json_list_notices_files_edited_by_hand(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = tmp_path / "cp"
    ref = write_chain(provider, str(root), 2)[0]
    document = json.loads(Path(ref).read_text())
    document["meta"]["trigger"] = "edited"
    Path(ref).write_text(json.dumps(document, indent=2))
    # Its body's bytes changed (re-indented) while the digest stayed: the record is altered, so damaged.
    assert "altered" in (provider.list(str(root))[1].damaged or "")
    # An edit that drops the digest reads as a record written before digests.
    del document["meta"]["digest"], document["meta"]["body_length"]
    Path(ref).write_text(json.dumps(document, indent=2))
    assert {m.id: m.trigger for m in provider.list(str(root))} == {"cp0001": "edited", "cp0002": "task_completed"}
    assert provider.read(ref).body == body(1)


def test_json_damaged_files_are_listed_as_damaged_and_others_still_work(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = tmp_path / "cp"
    write_chain(provider, str(root), 2)
    main = root / "main"
    stamp = "20250101T000000.000000"
    torn = main / f"00000003_{stamp}_torn-1_p-cp0002.json"
    torn.write_bytes(b'{"meta":{"id":"torn-1","branch":"main","seq')
    binary = main / f"00000004_{stamp}_bin-1_root.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    foreign = main / f"00000005_{stamp}_foreign-1_root.json"
    foreign.write_text('{"hello": "world"}')
    empty = main / f"00000006_{stamp}_empty-1_root.json"
    empty.write_bytes(b"")
    (main / "notes.json").write_text("not a checkpoint name: ignored")

    metas = {m.id: m for m in provider.list(str(root))}
    assert set(metas) == {"cp0001", "cp0002", "torn-1", "bin-1", "foreign-1", "empty-1"}
    assert metas["cp0002"].damaged is None
    assert "not valid JSON" in (metas["torn-1"].damaged or "")
    assert metas["torn-1"].parent_id == "cp0002" and metas["torn-1"].sequence == 3
    assert "not UTF-8" in (metas["bin-1"].damaged or "")
    assert "not a crewpoint checkpoint" in (metas["foreign-1"].damaged or "")
    assert "empty" in (metas["empty-1"].damaged or "")

    for path, reason in ((torn, "not valid JSON"), (binary, "not UTF-8"), (foreign, "not a crewpoint checkpoint")):
        with pytest.raises(DamagedCheckpoint, match=reason) as damaged:
            provider.read(str(path))
        assert str(path) in str(damaged.value) and "\n" not in str(damaged.value)
    with pytest.raises(DamagedCheckpoint):
        provider.read(str(root), "bin")
    assert provider.read(str(root), "cp0001").body == body(1)
    # damaged records neither count nor get deleted by a prune: only the good surplus goes
    assert sorted(provider.prune(str(root), PruneStrategy(keep=1)).ids) == ["cp0001"]
    assert {m.id for m in provider.list(str(root))} == {"cp0002", "torn-1", "bin-1", "foreign-1", "empty-1"}


def test_json_store_ref_and_single_file(tmp_path: Path) -> None:
    provider = JsonProvider()
    root = str(tmp_path / "cp")
    refs = write_chain(provider, root, 2)
    assert provider.read(f"{root}#cp0001").meta.id == "cp0001"
    assert [m.id for m in provider.list(refs[0])] == ["cp0001"]
    assert provider.read(refs[0]).meta.location == refs[0]


def test_json_listing_many_checkpoints_opens_no_checkpoint_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing is served by the index; how fast it is, is measured in bench/."""
    from crewpoint.providers import json_provider

    provider = JsonProvider(fsync=False)
    root = str(tmp_path / "cp")
    for n in range(1, 2001):
        provider.write(root, CheckpointRecord(meta(n, n - 1 or None, "main" if n % 5 else "side"), {"n": n}))

    def no_file_read(*args: object, **kwargs: object) -> None:
        raise AssertionError("a checkpoint file was opened to list the store")

    monkeypatch.setattr(json_provider, "_file_meta", no_file_read)
    metas = provider.list(root)
    assert len(metas) == 2000 and metas[0].id == "cp2000"


# -- SQLite file -------------------------------------------------------------------------------------------


def test_sqlite_file_is_private_in_wal_mode(tmp_path: Path) -> None:
    provider = SqliteProvider()
    path = tmp_path / "deep" / "er" / "store.db"
    ref = provider.write(str(path), CheckpointRecord(meta(1), body(1)))
    assert ref == f"{path}#cp0001"
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "deep").st_mode & 0o777 == 0o700
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"checkpoints", "bodies", "chunks", "chunk_refs", "schema_meta"} <= tables
        indexed = {r[0] for r in con.execute("SELECT name FROM pragma_index_list('checkpoints')")}
        assert any("branch" in name for name in indexed)
    finally:
        con.close()
    provider.close()


def test_sqlite_one_connection_per_store(tmp_path: Path) -> None:
    provider = SqliteProvider()
    location = str(tmp_path / "store.db")
    write_chain(provider, location, 5)
    provider.list(location)
    assert len(provider._stores) == 1
    store = next(iter(provider._stores.values()))
    provider.read(location)
    assert next(iter(provider._stores.values())) is store
    provider.close()


def test_sqlite_notices_a_store_deleted_and_made_again(tmp_path: Path) -> None:
    provider = SqliteProvider()
    location = tmp_path / "store.db"
    write_chain(provider, str(location), 2)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{location}{suffix}").unlink(missing_ok=True)
    with pytest.raises(CheckpointNotFound, match="no checkpoint store at"):
        provider.list(str(location))
    other = SqliteProvider()
    other.write(str(location), CheckpointRecord(meta(9), {"fresh": True}))
    other.close()
    assert [m.id for m in provider.list(str(location))] == ["cp0009"]
    assert provider.read(str(location)).body == {"fresh": True}
    provider.close()


def test_sqlite_refs_and_prefixes(tmp_path: Path) -> None:
    provider = SqliteProvider()
    location = str(tmp_path / "store.db")
    write_chain(provider, location, 3)
    assert provider.read(f"{location}#cp0002").meta.id == "cp0002"
    assert provider.read(f"{location}#cp000", "cp0001").meta.id == "cp0001"
    with pytest.raises(AmbiguousCheckpoint):
        provider.read(f"{location}#cp")
    with pytest.raises(CheckpointNotFound):
        provider.read(f"{location}#CP0002")
    provider.close()


def test_sqlite_shares_what_checkpoints_have_in_common(tmp_path: Path) -> None:
    provider = SqliteProvider()
    location = str(tmp_path / "store.db")
    tasks = [{"id": f"task-{i}", "description": f"Research topic {i} in depth", "output": None} for i in range(1000)]
    run: dict[str, Any] = {"entity": {"kind": "crew", "name": "big"}, "inputs": {"topic": "x"}, "tasks": tasks}
    full = len(json.dumps(run, separators=(",", ":")))
    provider.write(location, CheckpointRecord(meta(0), run))
    start = provider.stats(location)
    for n in range(1, 201):
        tasks[n * 4]["output"] = f"result of task {n * 4}: " + "findings " * 10
        provider.write(location, CheckpointRecord(meta(n, n - 1), run))
    grown = provider.stats(location)
    added = (grown["chunk_bytes"] + grown["manifest_bytes"]) - (start["chunk_bytes"] + start["manifest_bytes"])
    assert added < 0.10 * 200 * full, f"200 checkpoints added {added} bytes for a {full}-byte body"
    provider.close()
    con = sqlite3.connect(location)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()
    assert os.path.getsize(location) < 0.10 * 200 * full

    fresh = SqliteProvider()
    assert fresh.read(location, "cp0200").body == run
    middle = fresh.read(location, "cp0100").body
    assert middle["tasks"][400]["output"].startswith("result of task 400")
    assert middle["tasks"][404]["output"] is None
    assert fresh.read(location, "cp0000").body["tasks"][4]["output"] is None
    fresh.close()


def test_sqlite_delete_and_prune_release_chunks(tmp_path: Path) -> None:
    provider = SqliteProvider()
    location = str(tmp_path / "store.db")
    events: list[dict[str, Any]] = []
    for n in range(1, 61):
        events.append({"type": "llm_call_completed", "n": n, "text": f"answer {n} " * 20})
        provider.write(location, CheckpointRecord(meta(n, n - 1 or None), {"events": events, "n": n}))
    before = provider.stats(location)
    provider.prune(location, PruneStrategy(keep=5))
    after = provider.stats(location)
    assert after["checkpoints"] == 5 and after["chunks"] < before["chunks"]
    assert provider.collect_garbage(location) == 0
    assert provider.read(location, "cp0056").body == {"events": events[:56], "n": 56}

    assert provider.delete(location, [m.id for m in provider.list(location)]) == 5
    emptied = provider.stats(location)
    assert emptied == {"checkpoints": 0, "chunks": 0, "chunk_bytes": 0, "manifest_bytes": 0}
    provider.close()


def test_sqlite_rewriting_an_id_replaces_it(tmp_path: Path) -> None:
    provider = SqliteProvider()
    location = str(tmp_path / "store.db")
    provider.write(location, CheckpointRecord(meta(1), {"v": ["old"] * 50}))
    provider.write(location, CheckpointRecord(meta(1), {"v": ["new"] * 50}))
    assert provider.read(location).body == {"v": ["new"] * 50}
    assert provider.stats(location)["checkpoints"] == 1
    assert provider.collect_garbage(location) == 0
    provider.close()


def test_sqlite_refuses_files_that_are_not_its_stores(tmp_path: Path) -> None:
    provider = SqliteProvider()
    text = tmp_path / "notes.db"
    text.write_text("just some notes")
    with pytest.raises(CheckpointError, match=r"notes\.db is not a crewpoint SQLite store"):
        provider.list(str(text))
    with pytest.raises(CheckpointError, match="is not a crewpoint SQLite store"):
        provider.write(str(text), CheckpointRecord(meta(1), {}))
    assert text.read_text() == "just some notes"

    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE people (name TEXT)")
    con.commit()
    con.close()
    with pytest.raises(CheckpointError, match="is not a crewpoint SQLite store"):
        provider.write(str(other), CheckpointRecord(meta(1), {}))

    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert provider.list(str(empty)) == []
    provider.write(str(empty), CheckpointRecord(meta(1), {"ok": 1}))
    assert provider.read(str(empty)).body == {"ok": 1}
    provider.close()


def test_sqlite_store_shared_with_run_heartbeats(tmp_path: Path) -> None:
    from crewpoint.providers.runs import RunInfo, read_runs, write_run

    location = str(tmp_path / "store.db")
    Path(location).write_bytes(b"")
    write_run(location, RunInfo("run-1", os.getpid(), "here", T0, T0))
    provider = SqliteProvider()
    provider.write(location, CheckpointRecord(meta(1), {"ok": True}))
    assert provider.read(location).body == {"ok": True}
    assert [r.run_id for r in read_runs(location)] == ["run-1"]
    provider.close()


def test_sqlite_store_from_a_newer_crewpoint_is_refused(tmp_path: Path) -> None:
    location = str(tmp_path / "store.db")
    writer = SqliteProvider()
    writer.write(location, CheckpointRecord(meta(1), {}))
    writer.close()
    con = sqlite3.connect(location)
    con.execute("UPDATE schema_meta SET value = '99' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    for action in ("list", "read", "write"):
        reader = SqliteProvider()
        with pytest.raises(UnsupportedSchema, match="schema v99") as refused:
            if action == "write":
                reader.write(location, CheckpointRecord(meta(2), {}))
            else:
                getattr(reader, action)(location)
        assert f"knows up to v{SCHEMA_VERSION}" in str(refused.value) and "upgrade crewpoint" in str(refused.value)


def test_sqlite_migrations_run_in_order(tmp_path: Path) -> None:
    from sqlite_utils import Database

    location = str(tmp_path / "store.db")
    provider = SqliteProvider()
    provider.write(location, CheckpointRecord(meta(1), {"kept": True}))
    provider.close()

    def add_note_column(db: Database) -> None:
        db.execute("ALTER TABLE checkpoints ADD COLUMN note TEXT NOT NULL DEFAULT ''")

    db = Database(sqlite3.connect(location))
    assert read_schema_version(db) == SCHEMA_VERSION
    assert migrate(db, location, (*MIGRATIONS, add_note_column)) == SCHEMA_VERSION + 1
    assert "note" in db.table("checkpoints").columns_dict
    assert migrate(db, location, (*MIGRATIONS, add_note_column)) == SCHEMA_VERSION + 1
    db.close()
    with pytest.raises(UnsupportedSchema):
        SqliteProvider().read(location)

    blank = Database(sqlite3.connect(tmp_path / "new.db"))
    assert read_schema_version(blank) == 0
    assert migrate(blank, "new.db") == SCHEMA_VERSION
    blank.close()
    fresh = SqliteProvider()
    assert fresh.list(str(tmp_path / "new.db")) == []
    fresh.close()


def test_sqlite_provider_copies_and_pickles_without_its_connections(tmp_path: Path) -> None:
    provider = SqliteProvider(busy_timeout=3)
    location = str(tmp_path / "store.db")
    provider.write(location, CheckpointRecord(meta(1), {}))
    for clone in (copy.deepcopy(provider), pickle.loads(pickle.dumps(provider))):
        assert clone == provider and clone.busy_timeout == 3
        assert clone.read(location).meta.id == "cp0001"
        clone.close()
    provider.close()


# -- choosing a provider, refs, import cost ----------------------------------------------------------------


def test_provider_for_and_split_ref(tmp_path: Path) -> None:
    folder = tmp_path / "cp"
    folder.mkdir()
    sqlite_file = tmp_path / "store.bin"
    SqliteProvider().write(str(sqlite_file), CheckpointRecord(meta(1), {}))
    assert isinstance(provider_for(str(tmp_path / "x.db")), SqliteProvider)
    assert isinstance(provider_for(str(tmp_path / "x.sqlite3")), SqliteProvider)
    assert isinstance(provider_for("somewhere/store.db#abc123"), SqliteProvider)
    assert isinstance(provider_for("somewhere/store#abc123"), JsonProvider)
    assert isinstance(provider_for(str(sqlite_file)), SqliteProvider)
    assert isinstance(provider_for(str(folder)), JsonProvider)
    assert isinstance(provider_for(f"{folder}#abc123"), JsonProvider)
    assert isinstance(provider_for("./.checkpoints"), JsonProvider)
    assert provider_for("a.db") is provider_for("b.db")
    assert not is_sqlite_location(str(folder))

    assert split_ref("store.db#abc-1") == ("store.db", "abc-1")
    assert split_ref("store.db") == ("store.db", None)
    assert split_ref("store.db#") == ("store.db", None)
    assert split_ref("/tmp/a#b/store") == ("/tmp/a#b/store", None)
    assert split_ref("#abc") == ("#abc", None)


def test_importing_providers_is_cheap() -> None:
    code = (
        "import sys, crewpoint.providers as p\n"
        "p.JsonProvider\n"
        "assert 'sqlite_utils' not in sys.modules, 'sqlite_utils imported'\n"
        "assert 'textual' not in sys.modules, 'textual imported'\n"
        "p.SqliteProvider\n"
        "assert 'sqlite_utils' not in sys.modules, 'sqlite_utils imported by the class'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- the codec and the pruning plans ----------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text(max_size=4)
    | st.integers(250, 400).map(lambda n: "é" * n),
    lambda inner: (
        st.lists(inner, max_size=24)
        | st.dictionaries(
            st.sampled_from(["a", "b", "\x00c", "\x00l", "\x00n", "\x00d", "é"]) | st.text(max_size=3), inner
        )
    ),
    max_leaves=80,
)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(max_size=8), json_values, max_size=6))
def test_chunked_bodies_reassemble_exactly(value: dict[str, Any]) -> None:
    parts = chunks.split(value)
    stored = {digest: chunk.payload for digest, chunk in parts.chunks.items()}
    back = chunks.join(parts.manifest, lambda wanted: {d: stored[d] for d in wanted if d in stored})
    assert back == value
    assert json.dumps(back) == json.dumps(value)
    assert parts.size == len(json.dumps(value, separators=(",", ":"), ensure_ascii=False))
    assert chunks.children_of(parts.manifest) == set(parts.roots)
    for chunk in parts.chunks.values():
        assert chunks.children_of(chunk.payload) == set(chunk.children)


def test_splitting_with_a_memo_gives_exactly_what_a_fresh_split_gives() -> None:
    rnd = random.Random(7)

    def event(n: int) -> dict[str, Any]:
        return {"type": rnd.choice(["a", "b"]), "n": n, "text": "t" * rnd.randint(0, 700), "ids": list(range(n % 30))}

    run: dict[str, Any] = {
        "events": [event(n) for n in range(300)],
        "entity": {"tasks": [{"id": n, "out": None} for n in range(100)], "agents": [{"msgs": ["hi"] * 40}]},
        "big": {f"k{n}": n for n in range(100)},
    }
    memo = None
    for _ in range(120):
        events = run["events"]
        edit = rnd.choice(["append", "drop-oldest", "insert", "edit", "retype", "message", "cut", "map"])
        if edit == "append":
            events.append(event(len(events)))
        elif edit == "drop-oldest":
            events.pop(0)
        elif edit == "insert":
            events.insert(rnd.randrange(len(events) + 1), event(-1))
        elif edit == "edit":
            events[rnd.randrange(len(events))]["text"] = "edited" * rnd.randint(0, 200)
        elif edit == "retype":  # 1, 1.0 and True are equal in Python but not in JSON
            run["entity"]["tasks"][rnd.randrange(100)]["out"] = rnd.choice([1, 1.0, True, "1", None])
        elif edit == "message":
            run["entity"]["agents"][0]["msgs"].append("new" * rnd.randint(1, 100))
        elif edit == "cut":
            del events[rnd.randrange(len(events)) :][:5]
        else:
            run["big"][f"k{rnd.randrange(100)}"] = rnd.choice([1, True, 1.0, "s" * 300])
        fresh = chunks.split(run)
        remembered = chunks.split(run, memo)
        assert remembered.manifest == fresh.manifest and remembered.size == fresh.size
        assert {d: (c.payload, c.children) for d, c in remembered.chunks.items()} == {
            d: (c.payload, c.children) for d, c in fresh.chunks.items()
        }
        memo = remembered.memo


def test_list_edits_add_only_a_few_chunks() -> None:
    def added(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
        old, new = chunks.split({"events": before}), chunks.split({"events": after})
        fresh = set(new.chunks) - set(old.chunks)
        assert len(fresh) <= 6, len(fresh)
        return sum(len(new.chunks[d].payload) for d in fresh)

    events = [{"type": "llm_call_completed", "n": n, "text": f"reply {n}"} for n in range(3000)]
    assert len(json.dumps(events)) > 190_000
    one = {"type": "tool_usage_finished", "n": -1}
    assert added(events, [*events, one]) < 8_000  # append
    assert added(events, events[1:]) < 8_000  # a sliding window drops the oldest
    assert added(events, [*events[:1500], one, *events[1500:]]) < 8_000  # insert in the middle
    changed = [dict(e) for e in events]
    changed[2000]["text"] = "edited"
    assert added(events, changed) < 8_000


def test_plans_keep_fork_points_protected_and_respect_age() -> None:
    metas = [meta(n, n - 1 or None) for n in range(1, 7)]
    metas += [meta(10, 2, "side"), meta(11, 10, "side")]
    assert fork_points(metas) == {"cp0002"}
    assert [m.id for m in newest_first(metas)][:3] == ["cp0011", "cp0010", "cp0006"]
    assert PruneStrategy(keep=2).plan(metas).ids == ["cp0004", "cp0003", "cp0001"]
    assert PruneStrategy(keep=2, protect=frozenset({"cp0001"})).plan(metas).ids == ["cp0004", "cp0003"]
    assert PruneStrategy(keep=0, branch="side").plan(metas).ids == ["cp0011"]  # cp0010 links the fork to cp0002
    with pytest.raises(ValueError):
        PruneStrategy(keep=-1)

    now = T0 + 100
    assert PruneStrategy(older_than=95.5, now=now).plan(metas).ids == ["cp0004", "cp0003", "cp0001"]
    assert PruneStrategy(older_than=95.5, now=now, force=True).plan(metas).ids == [
        "cp0004",
        "cp0003",
        "cp0002",
        "cp0001",
    ]
    assert PruneStrategy(older_than=95.5, now=now, force=True, protect=frozenset({"cp0002"})).plan(metas).ids == [
        "cp0004",
        "cp0003",
        "cp0001",
    ]
    assert PruneStrategy(older_than=1000, now=now).plan(metas).ids == []
