"""The SQL stores are one store with a dialect per engine: what they share is written once, and a store that
does not exist answers alike in every kind (nothing to delete, no run records, no claims)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from provider_kinds import KINDS, Kind

from crewpoint.providers import CheckpointMeta, CheckpointRecord, PostgresProvider, SqliteProvider
from crewpoint.providers.conformance import Store
from crewpoint.providers.prune import PruneStrategy
from crewpoint.providers.runs import RunInfo, this_host
from crewpoint.providers.sql_provider import SqlProvider

SHARED = ("write", "read", "list", "meta", "find", "ancestors", "delete", "prune", "stats")
SHARED += ("write_run", "read_runs", "claim", "read_claim", "claims")


@pytest.mark.parametrize("engine", [SqliteProvider, PostgresProvider])
def test_each_engine_keeps_only_what_is_its_own(engine: type[SqlProvider[Any]]) -> None:
    assert issubclass(engine, SqlProvider)
    assert [name for name in SHARED if name in vars(engine)] == []


def test_a_store_that_does_not_exist_answers_alike(store: Store) -> None:
    provider, location = store.provider, store.location
    run = RunInfo("r1", 1, this_host(), 1.0, 1.0)
    assert provider.delete(location, ["abc"]) == 0
    assert provider.read_runs(location) == []
    assert provider.write_run(location, run) is False
    assert provider.claims(location) == {}
    assert provider.read_claim(location, "a-request") is None


SQL_KINDS = [k for k in KINDS if k.name in ("sqlite", "postgres")]


@pytest.mark.parametrize("kind", SQL_KINDS, ids=[k.name for k in SQL_KINDS])
def test_pruning_and_deleting_release_every_shared_chunk(kind: Kind, tmp_path: Path) -> None:
    """The chunks' reference counts, kept once for both engines: what a prune leaves still reads whole, and a
    store emptied by deletes keeps no chunk and no body."""
    made = kind.store(tmp_path)
    provider, location = made.provider, made.location
    try:
        events: list[dict[str, Any]] = []
        for n in range(1, 41):
            events.append({"type": "llm_call_completed", "n": n, "text": f"answer {n} " * 20})
            meta = CheckpointMeta(
                id=f"cp{n:04d}",
                parent_id=f"cp{n - 1:04d}" if n > 1 else None,
                branch="main",
                lineage="run-1",
                sequence=n,
                created_at=1_790_000_000.0 + n,
                trigger="task_completed",
                entity_kind="crew",
                entity_name="c",
            )
            provider.write(location, CheckpointRecord(meta, {"events": list(events), "n": n}))
        before = provider.stats(location)
        provider.prune(location, PruneStrategy(keep=5))
        after = provider.stats(location)
        assert after["checkpoints"] == 5 and 0 < after["chunks"] < before["chunks"]
        assert provider.read(location, "cp0036").body == {"events": events[:36], "n": 36}

        assert provider.delete(location, [m.id for m in provider.list(location)]) == 5
        assert provider.stats(location) == {"checkpoints": 0, "chunks": 0, "chunk_bytes": 0, "manifest_bytes": 0}
    finally:
        kind.drop(made)
