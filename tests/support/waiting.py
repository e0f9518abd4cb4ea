"""Waiting on events, never on the clock: a timeout here only stops a hang, it is never how long a test waits."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerCancelled


def wait_for(condition: Callable[[], object], what: str = "the condition", timeout: float = 60.0) -> None:
    """Wait for something to happen (a file to appear, a process to stop); the timeout only guards a hang.

    The condition is looked at again after a pause that grows with the wait (a tenth of it, at most a quarter of a
    second) and with what one look costs (four times it): a look that lists a store or queries a server leaves the
    cores to the processes it waits on, and a wait still ends soon after its event."""
    start = time.monotonic()
    while True:
        looked = time.monotonic()
        if condition():
            return
        now = time.monotonic()
        if now - start > timeout:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(min(0.25, max(0.01, (now - start) / 10, 4 * (now - looked))))


async def settle(pilot: Pilot[Any]) -> None:
    """Let every worker finish and every message land."""
    for _ in range(3):
        for _attempt in range(20):
            try:
                await pilot.app.workers.wait_for_complete()
                break
            except WorkerCancelled:  # a newer request replaced it: what it would have shown is stale
                await pilot.pause()
        await pilot.pause()


async def wait_until(pilot: Pilot[Any], condition: Callable[[], bool], timeout: float = 30.0) -> None:
    """Let the app run until ``condition()`` holds; the timeout only guards a hang."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for the app")
        await pilot.pause(0.05)
