"""Following a checkpoint store on disk: one ``watchfiles.awatch`` loop that posts :class:`StoreChanged`.

A JSON store is a folder watched recursively. A SQLite store is one file: its folder is watched and changes
are kept to the database and its ``-wal`` / ``-journal`` files. A store that does not exist yet is waited for in
the nearest folder that does. In a JSON store, a burst that only touched run records (heartbeats) says so, so the
app reads those records alone.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path

from textual.message_pump import MessagePump
from watchfiles import Change, awatch

from crewpoint.tui.messages import StoreChanged

SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
RUNS_FOLDER = ".runs"
"""Where a JSON store keeps its run records."""

ChangeFilter = Callable[[Change, str], bool]


def is_sqlite_location(location: str) -> bool:
    path = Path(location.split("#", 1)[0])
    return path.is_file() or (not path.exists() and path.suffix in SQLITE_SUFFIXES)


def store_watch_target(location: str) -> tuple[Path, bool, ChangeFilter]:
    """The folder to watch, whether recursively, and which changes count."""
    path = Path(location.split("#", 1)[0]).absolute()
    if is_sqlite_location(location):
        names = {path.name, f"{path.name}-wal", f"{path.name}-journal"}
        return path.parent, False, lambda _change, changed: Path(changed).name in names
    if path.is_dir():
        return path, True, lambda _change, changed: not Path(changed).name.endswith(".tmp")
    prefix = str(path)
    return _existing_parent(path), False, lambda _change, changed: changed.startswith(prefix)


def _is_run_record(store: Path, changed: str) -> bool:
    """Is ``changed`` a run's record in a JSON store (``<store>/.runs/...``), which a heartbeat rewrites?"""
    return Path(changed).parent == store / RUNS_FOLDER


def _existing_parent(path: Path) -> Path:
    current = path.parent
    while not current.is_dir() and current != current.parent:
        current = current.parent
    return current


async def follow_store(
    location: str, target: MessagePump, stop: asyncio.Event | None = None, debounce_ms: int = 200
) -> None:
    """Post :class:`StoreChanged` to ``target`` whenever the store at ``location`` changes, until ``stop``."""
    stop = stop or asyncio.Event()
    while not stop.is_set():
        folder, recursive, keep = store_watch_target(location)
        waiting_for_store = not Path(location.split("#", 1)[0]).exists()
        async for changes in awatch(
            folder,
            watch_filter=keep,
            recursive=recursive,
            debounce=debounce_ms,
            step=50,
            stop_event=stop,
            ignore_permission_denied=True,
        ):
            runs_only = recursive and all(_is_run_record(folder, changed) for _change, changed in changes)
            target.post_message(StoreChanged(location, runs_only=runs_only))
            if waiting_for_store and os.path.exists(location.split("#", 1)[0]):
                break  # the store appeared: watch the store itself from now on
        else:
            return
