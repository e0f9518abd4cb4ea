"""Checkpoint storage: a JSON folder or a SQLite file, behind one interface.

Importing this package is cheap: the providers load on first use, and sqlite-utils only when a SQLite store
is opened.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import (
    AmbiguousCheckpoint,
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    UnsupportedSchema,
)
from crewpoint.providers.refs import split_ref

if TYPE_CHECKING:
    from crewpoint.providers.json_provider import JsonProvider
    from crewpoint.providers.sqlite_provider import SqliteProvider

__all__ = [
    "AmbiguousCheckpoint",
    "BaseProvider",
    "CheckpointError",
    "CheckpointMeta",
    "CheckpointNotFound",
    "CheckpointRecord",
    "DamagedCheckpoint",
    "JsonProvider",
    "SqliteProvider",
    "UnsupportedSchema",
    "is_sqlite_location",
    "provider_for",
    "split_ref",
]

_LAZY = {
    "JsonProvider": "crewpoint.providers.json_provider",
    "SqliteProvider": "crewpoint.providers.sqlite_provider",
}
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_SQLITE_MAGIC = b"SQLite format 3\x00"
_shared: dict[str, BaseProvider] = {}


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'crewpoint.providers' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


def is_sqlite_location(location: str) -> bool:
    """True for a ``path#id`` ref, a ``.db``/``.sqlite``/``.sqlite3`` path or an existing SQLite file.

    An existing folder is never SQLite (``folder#id`` names a checkpoint in a JSON store).
    """
    path, ref_id = split_ref(location)
    if os.path.isdir(path):
        return False
    if ref_id is not None or path.lower().endswith(SQLITE_SUFFIXES):
        return True
    return has_sqlite_header(path)


OPEN_DATABASES: set[str] = set()
"""Absolute paths of the SQLite files this process holds connections to (kept by SqliteProvider)."""


def has_sqlite_header(path: str) -> bool:
    """Does the file start with the SQLite header?

    Never opens a database this process is connected to: closing any descriptor of a file drops every POSIX
    lock the process holds on it, SQLite's included, and another process could then checkpoint and delete the
    WAL under our live connection.
    """
    if os.path.abspath(path) in OPEN_DATABASES:
        return True
    try:
        with open(path, "rb") as handle:
            return handle.read(len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False


def provider_for(location: str) -> BaseProvider:
    """The provider that can open ``location``; one shared instance per kind (providers are thread-safe)."""
    crewai = crewai_provider_for(location)
    if crewai is not None:
        return crewai
    kind = "sqlite" if is_sqlite_location(location) else "json"
    provider = _shared.get(kind)
    if provider is None:
        if kind == "sqlite":
            from crewpoint.providers.sqlite_provider import SqliteProvider

            provider = SqliteProvider()
        else:
            from crewpoint.providers.json_provider import JsonProvider

            provider = JsonProvider()
        provider = _shared.setdefault(kind, provider)
    return provider


# -- CrewAI's own stores (read-only), recognised before crewpoint's kinds ----------------------------------------


def crewai_provider_for(location: str) -> BaseProvider | None:
    """The read-only provider for a CrewAI JSON folder or SQLite file at ``location``, else None."""
    from crewpoint.providers.crewai_detect import crewai_kind

    kind = crewai_kind(location)
    if kind is None:
        return None
    provider = _shared.get(kind)
    if provider is None:
        if kind == "crewai-sqlite":
            from crewpoint.providers.crewai_sqlite import CrewAISqliteProvider

            provider = CrewAISqliteProvider()
        else:
            from crewpoint.providers.crewai_json import CrewAIJsonProvider

            provider = CrewAIJsonProvider()
        provider = _shared.setdefault(kind, provider)
    return provider
