"""A big store shows its newest checkpoints first, says it is reading the rest, then shows the whole store."""

from __future__ import annotations

import pytest
from support.stores import make_store
from test_app import browser, settle, wait_until
from textual.message import Message

from crewpoint.tui import feed
from crewpoint.tui.app import make_app
from crewpoint.tui.messages import StoreListed


async def test_the_newest_checkpoints_show_first_then_the_whole_store(monkeypatch: pytest.MonkeyPatch) -> None:
    store = make_store(location="big.db")
    make_store(location="big.db")  # a second run: 8 checkpoints in all
    monkeypatch.setattr(feed, "EARLY_ROWS", 3)
    seen: list[StoreListed] = []
    app = make_app(store, watch=False)
    async with app.run_test(size=(120, 30), message_hook=lambda m: _keep(m, seen)) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await wait_until(pilot, lambda: len(screen.metas) == 8)
        await settle(pilot)
        listed = [m for m in seen if m.error is None]
        assert [m.partial for m in listed][:2] == [True, False]
        assert len(listed[0].metas) == 3 and listed[0].metas == listed[1].metas[:3]
        assert screen.sub_title == store  # no longer "reading the rest"
        assert sum(len(s.metas) for s in screen.index.segments.values()) == 8


def _keep(message: Message, seen: list[StoreListed]) -> None:
    # the hook sees a message at each node it reaches (the screen, then the app): keep each one once
    if isinstance(message, StoreListed) and all(message is not kept for kept in seen):
        seen.append(message)
