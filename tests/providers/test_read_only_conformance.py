"""The read part of the provider contract, run against the read-only kinds: CrewAI's JSON folders and SQLite
files (fixtures written by crewai 1.15.30). Writing, deleting, pruning and run records are declared
unsupported (``read_only``) and refused in one line, never silently skipped.
"""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path

import pytest
from crewai_fixtures import json_store, sqlite_store

from crewpoint.providers import CheckpointError, provider_for, provider_kind, registered_providers
from crewpoint.providers.base import BaseProvider, CheckpointRecord
from crewpoint.providers.prune import PruneStrategy
from crewpoint.providers.runs import RunInfo, this_host


@pytest.fixture(params=["crewai-json", "crewai-sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[BaseProvider, str]:
    if request.param == "crewai-json":
        target = json_store(tmp_path / "crewai")
    else:
        target = sqlite_store(tmp_path / "crewai.db")
    location = str(target)
    assert provider_kind(location) == request.param
    return provider_for(location), location


def test_the_read_only_kinds_say_so() -> None:
    declared = {e.name: e.read_only for e in registered_providers()}
    assert declared["crewai-json"] and declared["crewai-sqlite"]
    assert not declared["json"] and not declared["sqlite"] and not declared["memory"]


def test_list_newest_and_iter_list_agree_with_list(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    everything = provider.list(location)
    assert len(everything) == 13 and all(m.damaged is None for m in everything)
    for limit in (0, 1, 5, 50):
        assert provider.list_newest(location, limit) == everything[:limit]
    assert list(provider.iter_list(location)) == everything
    latest = provider.latest(location)
    assert latest is not None and latest == everything[0]


def test_every_record_reads_back_as_listed_and_its_parents_are_in_the_store(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    metas = provider.list(location)
    ids = {m.id for m in metas}
    for meta in metas:
        record = provider.read(location, meta.id)
        assert record.meta.id == meta.id and isinstance(record.body.get("entity"), dict)
        assert provider.meta(location, meta.id) == meta
        chain = provider.ancestors(location, meta.id)
        assert chain[0] == meta and all(m.id in ids for m in chain)
        assert chain[-1].parent_id is None or chain[-1].parent_id not in ids


def test_writes_deletes_prunes_and_run_records_are_refused(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    before = provider.list(location)
    record = provider.read(location, before[0].id)
    with pytest.raises(CheckpointError, match="read-only"):
        provider.write(location, CheckpointRecord(record.meta.with_(id="f" * 32), record.body))
    with pytest.raises(CheckpointError, match="read-only"):
        provider.delete(location, [before[0].id])
    with pytest.raises(CheckpointError, match="read-only"):
        provider.prune(location, PruneStrategy(keep=1))
    assert provider.write_run(location, RunInfo("r", 1, this_host(), 0.0, 0.0)) is False
    assert provider.list(location) == before


def test_claims_are_refused_with_the_read_only_error_and_none_are_found(store: tuple[BaseProvider, str]) -> None:
    """An answer cannot be recorded in another tool's store: claiming says so in one line, and nothing is claimed."""
    provider, location = store
    with pytest.raises(CheckpointError, match="read-only") as refused:
        provider.claim(location, "req-1", {"token": "t"})
    assert "\n" not in str(refused.value)
    assert provider.read_claim(location, "req-1") is None and provider.claims(location) == {}


def test_a_change_is_seen_by_watch(store: tuple[BaseProvider, str]) -> None:
    provider, location = store

    async def first_change() -> bool:
        stop, ready = asyncio.Event(), asyncio.Event()
        changes = provider.watch(location, stop, debounce_ms=50, ready=ready.set)
        waiter = asyncio.ensure_future(anext(changes))
        await asyncio.wait({waiter, asyncio.ensure_future(ready.wait())}, return_when=asyncio.FIRST_COMPLETED)
        assert ready.is_set(), "the watch ended before it was in place"
        _touch(location)  # once: the watch is in place, so this change is seen
        await asyncio.wait({waiter}, timeout=30)
        stop.set()
        return waiter.done() and waiter.result().location == location

    assert asyncio.run(first_change())


def _touch(location: str) -> None:
    path = Path(location)
    if path.is_dir():
        newest = sorted(path.rglob("*.json"))[0]
        newest.write_bytes(newest.read_bytes())
    else:
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE IF NOT EXISTS touched(x)")
        con.commit()
        con.close()
