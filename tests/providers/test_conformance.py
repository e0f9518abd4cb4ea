"""The provider contract (:mod:`crewpoint.providers.conformance`), each check run against every provider kind
that has what the check needs (see ``provider_kinds.KINDS``), and the suite as a third party runs it."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest
from provider_kinds import KINDS, Kind

from crewpoint.providers import BaseProvider, CheckpointMeta, MemoryProvider
from crewpoint.providers.conformance import CHECKS, Capabilities, Check, ConformanceError, Store, check_provider

CASES = [
    (kind, each)
    for kind in KINDS
    for each in CHECKS
    if not each.missing(Store(MemoryProvider(), "", kind.can, kind.inject))
]


@pytest.mark.parametrize(("kind", "check"), CASES, ids=[f"{kind.name}-{each.name}" for kind, each in CASES])
def test_the_provider_keeps_the_contract(kind: Kind, check: Check, tmp_path: Path) -> None:
    store = kind.store(tmp_path)
    try:
        check(store)
    finally:
        kind.drop(store)


def test_every_kind_declares_what_it_can_do() -> None:
    declared = {k.name: k.can for k in KINDS}
    assert declared == {
        "json": Capabilities(),
        "sqlite": Capabilities(tells_runs_apart=False),
        "memory": Capabilities(processes=False),
        "postgres": Capabilities(),
    }
    not_run = {(kind.name, each.name) for kind in KINDS for each in CHECKS} - {(k.name, c.name) for k, c in CASES}
    assert not_run == {
        ("memory", "processes_write_one_store_at_once"),
        ("memory", "processes_claiming_one_key_at_once_have_one_winner"),
    }


def _memory(folder: Path) -> tuple[MemoryProvider, str]:
    return MemoryProvider(), f"memory://{folder.name}"


def test_a_third_party_provider_runs_the_suite_in_one_line() -> None:
    """Without a way to damage a record, the isolation checks are named as not run, with what they need."""
    not_run = check_provider(_memory, Capabilities(processes=False))
    assert "processes_write_one_store_at_once (needs processes)" in not_run
    assert all(name.startswith("one_damaged_record") or "processes" in name for name in not_run)
    assert "processes_claiming_one_key_at_once_have_one_winner (needs processes)" in not_run
    assert len(not_run) == 2 + sum(1 for c in CHECKS if c.needs == ("inject",))


def test_a_provider_without_claims_declares_it_and_the_claim_checks_are_named_as_not_run() -> None:
    not_run = check_provider(_memory, Capabilities(processes=False, claims=False))
    claim_checks = [c.name for c in CHECKS if "claims" in c.needs]
    assert len(claim_checks) >= 5
    for name in claim_checks:
        assert any(line.startswith(f"{name} (needs ") and "claims" in line for line in not_run), name


class _NoClaims(MemoryProvider):
    """A provider that keeps no claims but does not say so: it has only the base class's refusal."""

    claim = BaseProvider.claim
    read_claim = BaseProvider.read_claim
    claims = BaseProvider.claims


def test_a_provider_that_keeps_no_claims_fails_the_claim_checks_in_one_line() -> None:
    with pytest.raises(ConformanceError, match="_NoClaims fails a_claim_wins_once") as failed:
        can = Capabilities(processes=False, resolvable=False)  # a class of its own, not registered
        check_provider(lambda folder: (_NoClaims(), f"memory://{folder.name}"), can)
    assert "keeps no claims" in str(failed.value)


class _OldestFirst(MemoryProvider):
    """A provider that breaks the contract: it lists oldest first."""

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        return super().list(location, branch)[::-1]


def test_a_provider_that_breaks_the_contract_fails_the_suite_naming_the_check() -> None:
    with pytest.raises(ConformanceError, match="_OldestFirst fails write_then_read_gives_back_the_record"):
        check_provider(lambda folder: (_OldestFirst(), f"memory://{folder.name}"), Capabilities(processes=False))
