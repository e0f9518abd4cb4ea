"""``find`` (what ``info ID`` and every command taking an id prefix use) answers as a listing would, in every
provider: the one id a prefix names, ambiguity and absence said, and a damaged record found damaged."""

from __future__ import annotations

import pytest

from crewpoint.providers.base import AmbiguousCheckpoint, CheckpointNotFound, CheckpointRecord
from crewpoint.providers.conformance import Store, meta


def test_find_answers_as_the_listing_does(store: Store) -> None:
    provider, location = store.provider, store.location
    for n, parent in ((1, None), (2, 1), (12, 2), (13, 12)):
        provider.write(location, CheckpointRecord(meta(n, parent), {"n": n}))
    listed = {m.id: m for m in provider.list(location)}
    assert provider.find(location, "cp0002") == listed["cp0002"]  # a whole id, though "cp00" starts others
    assert provider.find(location, "cp0013") == listed["cp0013"]
    with pytest.raises(AmbiguousCheckpoint) as ambiguous:
        provider.find(location, "cp001")
    assert ambiguous.value.matches == ["cp0012", "cp0013"]
    with pytest.raises(AmbiguousCheckpoint):
        provider.find(location, "cp")
    for missing in ("cp0099", "zz", "cp*", "cp%", "cp_0"):
        with pytest.raises(CheckpointNotFound):
            provider.find(location, missing)
    with pytest.raises(CheckpointNotFound):
        provider.find(location, "")


def test_find_gives_a_damaged_record_damaged(store: Store) -> None:
    provider, location = store.provider, store.location
    provider.write(location, CheckpointRecord(meta(1), {"n": 1}))
    store.inject(meta(2, 1), tasks_done=-3)
    found = provider.find(location, "cp0002")
    assert found.damaged is not None
    assert found == next(m for m in provider.list(location) if m.id == "cp0002")
