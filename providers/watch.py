"""Change notification for stores kept in files: one ``watchfiles.awatch`` loop per watch.

A provider describes what to watch (:class:`WatchSpec`); :func:`watch_files` turns file-system events into
:class:`~crewpoint.providers.base.StoreChange` items. A store that does not exist yet is waited for in the
nearest folder that does, then watched itself. watchfiles is imported only when a watch starts.

A folder made inside a folder watched recursively is watched only once the watcher has seen it made, so a file
written in it at once (CrewAI makes a branch folder and writes its checkpoint right away), or a folder moved in
whole, may never be reported. A new folder therefore counts as a change, and that change is reported only once the
watch is made anew over the whole tree: a read begun after it sees what the old watch missed. Likewise a folder
moved out of the store, or deleted whole, brings no event for the files it held: the deletion of a folder the watch
knew counts as a change, whatever the store's own filter says.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from crewpoint.providers.base import StoreChange
from crewpoint.providers.refs import split_ref

if TYPE_CHECKING:
    import asyncio

_T = TypeVar("_T")


def _never(_path: str) -> bool:
    return False


@dataclass(frozen=True)
class WatchSpec:
    """What to watch for one store: ``folder`` (recursively or not), the changed paths that count (``keep``),
    and which of those are run records only (``runs_only``)."""

    location: str
    exists: bool
    folder: str
    recursive: bool
    keep: Callable[[str], bool]
    runs_only: Callable[[str], bool] = field(default=_never)


def existing_parent(path: str) -> str:
    """The nearest folder above ``path`` that exists."""
    current = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    return current


def waiting_spec(location: str, path: str) -> WatchSpec:
    """Watch for a store at ``path`` to appear."""
    prefix = os.path.abspath(path)
    return WatchSpec(location, False, existing_parent(path), False, lambda changed: changed.startswith(prefix))


def database_spec(location: str) -> WatchSpec:
    """A SQLite database file and its WAL or journal; while there is none, the folder it will appear in."""
    path = os.path.abspath(split_ref(location)[0])
    if not os.path.exists(path):
        return waiting_spec(location, path)
    names = {path, f"{path}-wal", f"{path}-journal"}
    return WatchSpec(location, True, os.path.dirname(path), False, lambda changed: changed in names)


def _folders_under(top: str) -> frozenset[str]:
    """The folders below ``top`` (links not followed), as the watch names them."""
    found: list[str] = []
    for folder, names, _files in os.walk(top):
        found.extend(os.path.join(folder, name) for name in names)
    return frozenset(found)


async def next_burst(
    queue: asyncio.Queue[_T], stopped: asyncio.Future[Any], gather: Callable[[], float | None]
) -> list[_T] | None:
    """The next burst of notes a store's listeners put in ``queue``: the first, then all that come while the
    ``gather()`` seconds asked after it pass (None: only those already there); None when ``stopped`` ends first."""
    import asyncio  # a watch runs in an event loop; a store's listing or reading never loads asyncio

    got = asyncio.ensure_future(queue.get())
    done, _ = await asyncio.wait({got, stopped}, return_when=asyncio.FIRST_COMPLETED)
    if got not in done:
        got.cancel()
        return None
    notes = [got.result()]
    seconds = gather()
    if seconds is not None:
        await asyncio.sleep(seconds)
    while not queue.empty():
        notes.append(queue.get_nowait())
    return notes


async def watch_files(
    spec_of: Callable[[], WatchSpec], stop: Any, debounce_ms: int = 200, ready: Callable[[], None] | None = None
) -> AsyncIterator[StoreChange]:
    """Yield one :class:`StoreChange` per burst of changes that ``spec_of()`` says count, until ``stop``.
    ``ready`` is called once the first watch is in place."""
    import asyncio  # a watch runs in an event loop; a store's listing or reading never loads asyncio

    from watchfiles import Change, awatch

    owed: StoreChange | None = None  # a change seen by the last watch, reported once this one is in place
    while not stop.is_set():
        spec = spec_of()
        grown: list[str] = []
        folders = _folders_under(spec.folder) if spec.recursive else frozenset()

        def keep(
            change: Any,
            changed: str,
            spec: WatchSpec = spec,
            grown: list[str] = grown,
            folders: frozenset[str] = folders,
        ) -> bool:
            if spec.recursive and change == Change.added and os.path.isdir(changed):
                grown.append(changed)  # what was written in it before its own watch may never be reported
                return True
            if change == Change.deleted and changed in folders:
                return True  # a folder moved out or deleted whole: no event comes for the files it held
            return spec.keep(changed)

        batches = awatch(
            spec.folder,
            watch_filter=keep,
            recursive=spec.recursive,
            debounce=debounce_ms,
            step=50,
            stop_event=stop,
            ignore_permission_denied=True,
        )
        # awatch puts its watch in place before it first waits: once the step that asks for the first batch has
        # run (one turn of the loop), every later change is seen
        pending = asyncio.ensure_future(anext(batches))
        await asyncio.sleep(0)
        if ready is not None:
            ready()
            ready = None
        try:
            if owed is not None:
                change, owed = owed, None
                yield change
            while True:
                try:
                    changes = await pending
                except StopAsyncIteration:
                    return  # stopped
                paths = [changed for _change, changed in changes]
                change = StoreChange(spec.location, runs_only=bool(paths) and all(spec.runs_only(p) for p in paths))
                if grown:
                    owed = change
                    break  # a new folder: watch the whole tree anew, then report
                yield change
                if not spec.exists and spec_of().exists:
                    break  # the store appeared: watch the store itself from now on
                pending = asyncio.ensure_future(anext(batches))
        finally:
            if not pending.done():  # left while waiting (cancelled): stop the step that waits, then close
                pending.cancel()
                await asyncio.wait({pending})
            await batches.aclose()
