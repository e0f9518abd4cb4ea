"""The SQL stores are one store with a dialect per engine: what they share is written once, and a store that
does not exist answers alike in every kind (nothing to delete, no run records, no claims)."""

from __future__ import annotations

from typing import Any

import pytest

from crewpoint.providers import PostgresProvider, SqliteProvider
from crewpoint.providers.conformance import Store
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
