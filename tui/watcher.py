"""Following a checkpoint store live: the store's provider tells what changed, this posts :class:`StoreChanged`.

The provider owns change notification (a folder or database file watched with watchfiles, an in-memory
store's own notifications, later a server's); a burst that only touched run records (heartbeats) says so, so
the app reads those records alone. A store that does not exist yet is waited for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from textual.message_pump import MessagePump

from crewpoint.providers import provider_for
from crewpoint.tui.messages import StoreChanged


async def follow_store(
    location: str,
    target: MessagePump,
    stop: asyncio.Event | None = None,
    debounce_ms: int = 200,
    ready: Callable[[], None] | None = None,
) -> None:
    """Post :class:`StoreChanged` to ``target`` whenever the store at ``location`` changes, until ``stop``;
    ``ready`` is called once the watch is in place (a change made before it is not reported)."""
    stop = stop or asyncio.Event()
    async for change in provider_for(location).watch(location, stop, debounce_ms, ready):
        target.post_message(StoreChanged(location, runs_only=change.runs_only))
