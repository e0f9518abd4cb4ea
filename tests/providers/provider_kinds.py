"""The providers every conformance check runs against. A new provider is one more :class:`Kind` in ``KINDS``.

A kind says what it can do (its :class:`~crewpoint.providers.conformance.Capabilities`); a check of a capability
runs for the kinds that declare it, so what a provider lacks is written down, not skipped.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crewpoint.providers import (
    BaseProvider,
    CheckpointMeta,
    CheckpointRecord,
    MemoryProvider,
    PostgresProvider,
    SqliteProvider,
)
from crewpoint.providers.conformance import Capabilities, Inject, Store
from crewpoint.providers.json_provider import JsonProvider, file_name


def _inject_json(provider: BaseProvider, location: str, meta: CheckpointMeta, bad: dict[str, Any]) -> None:
    """A file named for ``meta`` whose metadata line holds the ``bad`` values."""
    raw = {k: v for k, v in meta.to_dict().items() if k not in ("size", "location", "damaged")}
    raw.update(bad)
    folder = Path(location, meta.branch)
    folder.mkdir(parents=True, exist_ok=True)
    text = '{"meta":' + json.dumps(raw) + ',\n"body":{}}\n'
    (folder / file_name(meta)).write_text(text)


def _inject_sqlite(provider: BaseProvider, location: str, meta: CheckpointMeta, bad: dict[str, Any]) -> None:
    """A good row for ``meta``, then the ``bad`` values written into its columns by another connection."""
    provider.write(location, CheckpointRecord(meta, {}))
    con = sqlite3.connect(location)
    for field, value in bad.items():
        stored = json.dumps(value).encode() if isinstance(value, list | dict) else value
        stored = float(stored) if isinstance(stored, int) and stored > 2**63 else stored
        con.execute(f'UPDATE checkpoints SET "{field}" = ? WHERE id = ?', [stored, meta.id])
    con.commit()
    con.close()


def _inject_memory(provider: BaseProvider, location: str, meta: CheckpointMeta, bad: dict[str, Any]) -> None:
    from crewpoint.providers import memory_provider

    provider.write(location, CheckpointRecord(meta, {}))
    store = memory_provider._stores[location]
    stored, text = store.records[meta.id]
    store.records[meta.id] = (stored._replace(**bad), text)


_PG_NUMBERS = {"sequence", "created_at", "tasks_done", "tasks_total", "schema_version", "size"}


def _pg_storable(field: str, value: Any) -> Any:
    """``value`` as a hand edit of a typed column could leave it: a number that does not fit or is not a number
    becomes one that is just as wrong (negative, NaN); text that is not text becomes NULL."""
    if field in _PG_NUMBERS:
        if type(value) in (int, float) and -(2**63) <= value < 2**63:
            return value
        return float("nan") if field == "created_at" else -1
    return value if value is None or isinstance(value, str) else None


def _inject_postgres(provider: BaseProvider, location: str, meta: CheckpointMeta, bad: dict[str, Any]) -> None:
    """A good row for ``meta``, then the ``bad`` values written into its columns by another connection."""
    import psycopg

    from crewpoint.providers.pg_location import parse

    provider.write(location, CheckpointRecord(meta, {}))
    where = parse(location)
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        for field, value in bad.items():
            conn.execute(
                f'UPDATE "{where.schema}".checkpoints SET "{field}" = %s WHERE id = %s',
                [_pg_storable(field, value), meta.id],
            )


def _make_postgres(tmp: Path) -> tuple[BaseProvider, str]:
    """A store in its own schema on this test run's server (started on first use)."""
    from pg_server import store_url

    return PostgresProvider(), store_url(tmp.name)


@dataclass(frozen=True)
class Kind:
    name: str
    make: Callable[[Path], tuple[BaseProvider, str]]
    inject: Inject
    can: Capabilities

    def store(self, tmp: Path) -> Store:
        """A provider of this kind and a location where no store is yet."""
        provider, location = self.make(tmp)
        return Store(provider, location, self.can, self.inject)

    def drop(self, store: Store) -> None:
        """Close the provider, and forget an in-memory store (it would outlive the test)."""
        store.provider.close()
        if isinstance(store.provider, MemoryProvider):
            store.provider.drop(store.location)


KINDS = [
    # a SQLite file changes as a whole: its notification cannot say that only run records changed
    Kind("json", lambda tmp: (JsonProvider(), str(tmp / "store")), _inject_json, Capabilities()),
    Kind(
        "sqlite",
        lambda tmp: (SqliteProvider(), str(tmp / "store.db")),
        _inject_sqlite,
        Capabilities(tells_runs_apart=False),
    ),
    # an in-memory store lives in one process
    Kind(
        "memory", lambda tmp: (MemoryProvider(), f"memory://{tmp.name}"), _inject_memory, Capabilities(processes=False)
    ),
    Kind("postgres", _make_postgres, _inject_postgres, Capabilities()),
]
