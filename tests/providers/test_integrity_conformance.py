"""The integrity contract, run against every provider: a read gives the body's length and digest and checks
them; a record whose body does not match is damaged on its own; a store is checked for writing before a run."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from crewpoint.providers import CheckpointMeta, CheckpointNotFound, CheckpointRecord, DamagedCheckpoint
from crewpoint.providers.conformance import Store

T0 = 1_760_000_000.0


def meta(n: int, parent: int | None = None) -> CheckpointMeta:
    return CheckpointMeta(
        id=f"cp{n:04d}",
        parent_id=None if parent is None else f"cp{parent:04d}",
        branch="main",
        lineage="run-a",
        sequence=n,
        created_at=T0 + n,
        trigger="task_completed",
        entity_kind="crew",
        entity_name="crew",
        version="0.1.0",
    )


def write_two(store: Store) -> None:
    store.provider.write(store.location, CheckpointRecord(meta(1), {"n": 1, "text": "ünïcødé"}))
    store.provider.write(store.location, CheckpointRecord(meta(2, 1), {"n": 2, "items": list(range(40))}))


def test_a_read_gives_the_body_length_and_digest_its_store_recorded(store: Store) -> None:
    write_two(store)
    for checkpoint_id in ("cp0001", "cp0002"):
        read = store.provider.read(store.location, checkpoint_id)
        assert read.meta.body_length > 0
        assert len(read.meta.digest) == 64 and int(read.meta.digest, 16) >= 0
        assert read.meta.damaged is None


def test_a_digest_that_does_not_match_makes_that_record_damaged_and_no_other(store: Store) -> None:
    write_two(store)
    wrong = hashlib.sha256(b"another body").hexdigest()
    store.inject(meta(3, 2), digest=wrong)
    with pytest.raises(DamagedCheckpoint) as damaged:
        store.provider.read(store.location, "cp0003")
    reason = str(damaged.value).replace(store.location, "")  # the reason, not the test's folder name
    assert ("digest" in reason or "altered" in reason) and "\n" not in reason
    assert store.provider.read(store.location, "cp0002").body["n"] == 2
    assert [m.id for m in store.provider.list(store.location)] == ["cp0003", "cp0002", "cp0001"]


def test_check_writable_accepts_a_new_store_and_makes_nothing(store: Store, tmp_path: Path) -> None:
    before = sorted(os.listdir(tmp_path))
    store.provider.check_writable(store.location)
    assert sorted(os.listdir(tmp_path)) == before  # no store made, no probe left
    with pytest.raises(CheckpointNotFound):
        store.provider.list(store.location)
    write_two(store)
    store.provider.check_writable(store.location)
    assert [m.id for m in store.provider.list(store.location)] == ["cp0002", "cp0001"]
