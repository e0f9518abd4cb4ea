"""Fixtures of the provider conformance suite: ``store`` (every kind) and ``shared_store`` (kinds several
processes can write)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_kinds import KINDS, Kind, Store

from crewpoint.providers import MemoryProvider, PostgresProvider, SqliteProvider


@pytest.fixture(params=KINDS, ids=[k.name for k in KINDS])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    kind: Kind = request.param
    provider, location = kind.make(tmp_path)
    yield Store(kind, provider, location)
    if isinstance(provider, SqliteProvider | PostgresProvider):
        provider.close()
    if isinstance(provider, MemoryProvider):
        provider.drop(location)


@pytest.fixture(params=[k for k in KINDS if k.processes], ids=[k.name for k in KINDS if k.processes])
def shared_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A store several processes write to (the kinds that declare ``processes``)."""
    kind: Kind = request.param
    provider, location = kind.make(tmp_path)
    yield Store(kind, provider, location)
    if isinstance(provider, SqliteProvider | PostgresProvider):
        provider.close()
