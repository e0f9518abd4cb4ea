"""The ``store`` fixture: a store of every provider kind (see ``provider_kinds.KINDS``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from provider_kinds import KINDS, Kind

from crewpoint.providers.conformance import Store


@pytest.fixture(params=KINDS, ids=[k.name for k in KINDS])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    kind: Kind = request.param
    made = kind.store(tmp_path)
    yield made
    kind.drop(made)
