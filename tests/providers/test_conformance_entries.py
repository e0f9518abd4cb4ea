"""Every kind of store the resolver can write to runs the conformance suite: a provider registered in
``crewpoint.providers`` without a :class:`Kind` in ``provider_kinds.KINDS`` fails here, by name."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from provider_kinds import KINDS

import crewpoint.providers as providers
from crewpoint.providers import ProviderEntry, register_provider, registered_providers


def untested(entries: Iterable[ProviderEntry]) -> list[str]:
    """The writable registered kinds that no conformance entry names."""
    names = {k.name for k in KINDS}
    return sorted(e.name for e in entries if not e.read_only and e.name not in names)


def test_every_writable_provider_runs_the_conformance_suite() -> None:
    assert [e.name for e in registered_providers() if not e.read_only], "no writable provider is registered"
    assert untested(registered_providers()) == []


def test_a_writable_provider_without_an_entry_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "_registry", dict(providers._registry))
    register_provider("unlisted", "crewpoint.providers.memory_provider:MemoryProvider", lambda _: False)
    assert untested(registered_providers()) == ["unlisted"]


def test_a_read_only_provider_needs_no_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(providers, "_registry", dict(providers._registry))
    register_provider("unlisted", "crewpoint.providers.memory_provider:MemoryProvider", lambda _: False, read_only=True)
    assert untested(registered_providers()) == []
