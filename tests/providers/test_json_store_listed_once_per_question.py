"""A question answered with one look at a store (``info``, ``diff``: :func:`looking_once`) lists a JSON store once:
its latest checkpoint and its ancestry come from the same listing, and a look is never used for another question."""

from __future__ import annotations

import shutil
from pathlib import Path

from support.stores import fill_store

from crewpoint.providers import JsonProvider
from crewpoint.providers.files import looking_once


def test_one_question_lists_a_json_store_once_and_the_next_question_looks_again(tmp_path: Path) -> None:
    store = str(tmp_path / "store")
    provider = JsonProvider(fsync=False)
    fill_store(provider, store, 8)
    spare = str(tmp_path / "spare")
    fill_store(provider, spare, 1)
    newest = provider.latest(store)
    assert newest is not None
    with looking_once():
        first = provider.list(store)
        extra = next(Path(spare).rglob("*.json"))
        shutil.copy(extra, Path(newest.location).parent / extra.name)  # written while the question is answered
        assert [m.id for m in provider.list(store)] == [m.id for m in first]  # the same look
        chain = provider.ancestors(store, newest.id)
        assert chain and chain[0].id == newest.id and all(m.id in {f.id for f in first} for m in chain)
    assert len(provider.list(store)) == len(first) + 1  # outside the question the store is looked at again
    with looking_once():
        assert len(provider.list(store)) == len(first) + 1  # and a new question takes a new look
