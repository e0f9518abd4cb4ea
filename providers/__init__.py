"""Checkpoint storage behind one interface, and the one resolver from a location to its provider.

A location is a folder (JSON), a database file (SQLite), ``file.db#id`` (one checkpoint in it), or a URL
(``memory://name``, ``postgresql://user@host/db``). :func:`provider_for` asks each registered provider's detection
function, highest priority first; nothing outside this package decides what kind of store a location is.

Importing this package is cheap: the providers load on first use, and sqlite-utils only when a SQLite store
is created.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import (
    AmbiguousCheckpoint,
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    StoreChange,
    UnsupportedSchema,
)
from crewpoint.providers.refs import split_ref

if TYPE_CHECKING:
    from crewpoint.providers.json_provider import JsonProvider
    from crewpoint.providers.memory_provider import MemoryProvider
    from crewpoint.providers.postgres_provider import PostgresProvider
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
    "MemoryProvider",
    "PostgresProvider",
    "ProviderEntry",
    "SqliteProvider",
    "StoreChange",
    "UnsupportedSchema",
    "is_postgres_location",
    "is_sqlite_location",
    "is_url",
    "provider_for",
    "provider_kind",
    "provider_named",
    "register_provider",
    "registered_providers",
    "shown_location",
    "split_ref",
    "writable_provider_for",
]

_LAZY = {
    "JsonProvider": "crewpoint.providers.json_provider",
    "SqliteProvider": "crewpoint.providers.sqlite_provider",
    "MemoryProvider": "crewpoint.providers.memory_provider",
    "PostgresProvider": "crewpoint.providers.postgres_provider",
}
SQLITE_SUFFIXES = (".db", ".sqlite", ".sqlite3")
_SQLITE_MAGIC = b"SQLite format 3\x00"


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'crewpoint.providers' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


# -- the resolver ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderEntry:
    """A registered kind of store.

    ``factory`` is ``"module:Class"`` (imported on first use) or a callable making the shared instance;
    ``detect`` answers, cheaply and without writing anything, whether a location is this kind of store;
    higher ``priority`` is asked first; ``read_only`` declares that the store is only read.
    """

    name: str
    factory: str | Callable[[], BaseProvider]
    detect: Callable[[str], bool]
    priority: int = 0
    read_only: bool = False

    def make(self) -> BaseProvider:
        if callable(self.factory):
            return self.factory()
        module_name, _, attr = self.factory.partition(":")
        cls = getattr(importlib.import_module(module_name), attr)
        provider: BaseProvider = cls()
        return provider


_registry: dict[str, ProviderEntry] = {}
_shared: dict[str, BaseProvider] = {}
_lock = threading.Lock()


def register_provider(
    name: str,
    factory: str | Callable[[], BaseProvider],
    detect: Callable[[str], bool],
    *,
    priority: int = 0,
    read_only: bool = False,
) -> None:
    """Add (or replace) a kind of store the resolver can pick."""
    with _lock:
        _registry[name] = ProviderEntry(name, factory, detect, priority, read_only)
        _shared.pop(name, None)


def registered_providers() -> list[ProviderEntry]:
    """The registered kinds of store, in the order the resolver asks them."""
    return sorted(_registry.values(), key=lambda e: -e.priority)


def provider_kind(location: str) -> str:
    """The name of the provider that owns ``location``; raises :class:`CheckpointError` if none does."""
    location = os.fspath(location)
    for entry in registered_providers():
        if entry.detect(location):
            return entry.name
    # lazy: crewpoint.providers.masking imports this module back (cycle)
    from crewpoint.providers.masking import mask_location

    scheme = location.partition("://")[0]
    raise CheckpointError(f"no checkpoint store kind handles {scheme}:// locations ({mask_location(location)})")


def provider_named(name: str) -> BaseProvider:
    """The shared provider registered as ``name`` (providers are thread-safe)."""
    provider = _shared.get(name)
    if provider is None:
        entry = _registry.get(name)
        if entry is None:
            known = ", ".join(sorted(_registry))
            raise CheckpointError(f"unknown checkpoint store kind {name!r} (known: {known})")
        made = entry.make()
        with _lock:
            provider = _shared.setdefault(name, made)
    return provider


def provider_for(location: str) -> BaseProvider:
    """The provider that owns ``location``; one shared instance per kind."""
    return provider_named(provider_kind(location))


def writable_provider_for(location: str) -> BaseProvider:
    """The provider a run writes ``location`` with: the first writable kind that detects it. A URL is always its
    URL's provider (a same-named local folder never wins); a path ending in ``.db``, ``.sqlite`` or ``.sqlite3``
    (or an existing SQLite file) is SQLite; any other path is JSON folders. Raises :class:`CheckpointError` for a
    URL no kind handles."""
    location = os.fspath(location)
    for entry in registered_providers():
        if not entry.read_only and entry.detect(location):
            return provider_named(entry.name)
    return provider_for(location)  # raises with the one-line reason


def check_provider_owns(location: str, provider: BaseProvider) -> None:
    """Refuse a provider given for a URL location that another kind owns (``JsonProvider`` for ``postgresql://``
    would make a local folder named ``postgresql:``)."""
    if not is_url(location):
        return
    kind = provider_kind(location)
    if provider.kind != kind:
        raise CheckpointError(
            f"{shown_location(location)} is a {kind} store: a {provider.kind} provider cannot write there"
            " (leave provider= out and the location picks it)"
        )


def shown_location(location: str) -> str:
    """``location`` as it may be written into a checkpoint, an event or a message: a URL without its password
    (``postgresql://user:secret@host/db`` becomes ``postgresql://user@host/db``); a path as it is."""
    if not _has_scheme(location) or "@" not in location:
        return location
    # lazy: crewpoint.providers.pg_location imports this module back (cycle)
    from crewpoint.providers.pg_location import masked

    if is_postgres_location(location):
        return masked(location)
    scheme, _, rest = location.partition("://")
    credentials, at, host = rest.partition("@")
    return f"{scheme}://{credentials.partition(':')[0]}{at}{host}" if "/" not in credentials else location


# -- detection of the built-in kinds --------------------------------------------------------------------------

OPEN_DATABASES: set[str] = set()
"""Absolute paths of the SQLite files this process holds connections to (kept by SqliteProvider)."""


def has_sqlite_header(path: str) -> bool:
    """Does the regular file at ``path`` start with the SQLite header?

    Never opens a database this process is connected to: closing any descriptor of a file drops every POSIX
    lock the process holds on it, SQLite's included, and another process could then checkpoint and delete the
    WAL under our live connection. Never opens a FIFO or device (it could block).
    """
    if os.path.abspath(path) in OPEN_DATABASES:
        return True
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        return os.read(fd, len(_SQLITE_MAGIC)) == _SQLITE_MAGIC
    except OSError:
        return False
    finally:
        os.close(fd)


def is_url(location: str) -> bool:
    """Does ``location`` have a URL scheme (``postgresql://``, ``memory://``)? Such a location is never a local
    path, whatever exists on disk under the same name."""
    head, sep, _ = location.partition("://")
    return bool(sep) and head.replace("+", "_").replace("-", "_").replace(".", "_").isidentifier()


_has_scheme = is_url


def is_sqlite_location(location: str) -> bool:
    """Is ``location`` a SQLite store: an existing SQLite file (by its header), ``path#id`` in one, or a path
    that does not exist yet ending in ``.db``, ``.sqlite`` or ``.sqlite3``? A folder never is."""
    if _has_scheme(location):
        return False
    path, _ = split_ref(location)
    if os.path.isdir(path):
        return False
    if os.path.lexists(path):
        if has_sqlite_header(path):
            return True
        try:
            empty = os.path.getsize(path) == 0
        except OSError:
            return False
        return empty and path.lower().endswith(SQLITE_SUFFIXES)
    return path.lower().endswith(SQLITE_SUFFIXES)


def _is_json_location(location: str) -> bool:
    return not _has_scheme(location)


def _is_memory_location(location: str) -> bool:
    return location.startswith("memory://")


def is_postgres_location(location: str) -> bool:
    """Whether ``location`` names a PostgreSQL store: a ``postgresql://`` or ``postgres://`` URL."""
    return location.startswith(("postgresql://", "postgres://"))


register_provider(
    "postgres", "crewpoint.providers.postgres_provider:PostgresProvider", is_postgres_location, priority=100
)
register_provider("memory", "crewpoint.providers.memory_provider:MemoryProvider", _is_memory_location, priority=100)
register_provider("sqlite", "crewpoint.providers.sqlite_provider:SqliteProvider", is_sqlite_location, priority=10)
register_provider("json", "crewpoint.providers.json_provider:JsonProvider", _is_json_location, priority=0)


# -- CrewAI's own stores (read-only), recognised before crewpoint's kinds ----------------------------------------


def _is_crewai(kind: str) -> Callable[[str], bool]:
    def detect(location: str) -> bool:
        # lazy: crewpoint.providers.crewai.detect imports this module back (cycle)
        from crewpoint.providers.crewai.detect import crewai_kind

        return not _has_scheme(location) and crewai_kind(location) == kind

    return detect


register_provider(
    "crewai-sqlite",
    "crewpoint.providers.crewai.sqlite_store:CrewAISqliteProvider",
    _is_crewai("crewai-sqlite"),
    priority=20,
    read_only=True,
)
register_provider(
    "crewai-json",
    "crewpoint.providers.crewai.json_store:CrewAIJsonProvider",
    _is_crewai("crewai-json"),
    priority=5,
    read_only=True,
)

# CrewAI's format (its translation, forks and runs) sits above the schema: crewpoint.formats registers it.
