"""Is a location one of CrewAI's own checkpoint stores? Cheap checks, tried before crewpoint's own kinds."""

from __future__ import annotations

import os
import threading

from crewpoint.providers import OPEN_DATABASES, has_sqlite_header
from crewpoint.providers.refs import split_ref

_known: dict[str, str] = {}
_lock = threading.Lock()


def crewai_kind(location: str) -> str | None:
    """``"crewai-json"`` for a CrewAI JSON folder or one of its files, ``"crewai-sqlite"`` for a CrewAI SQLite
    database (or ``db#id``), else None. Only stores that exist are CrewAI's: a new store is crewpoint's."""
    path = os.path.abspath(split_ref(os.fspath(location))[0])
    with _lock:
        known = _known.get(path)
    if known is not None:
        return known
    kind = _detect(path)
    if kind is not None:
        with _lock:
            _known[path] = kind
    return kind


def _detect(path: str) -> str | None:

    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, ".index.jsonl")):
            return None  # crewpoint's own JSON store
        # lazy: `checkpoint list` never loads providers.crewai.common, providers.crewai.json_store
        from crewpoint.providers.crewai.json_store import looks_like_crewai_json_store

        return "crewai-json" if looks_like_crewai_json_store(path) else None
    if not os.path.isfile(path):
        return None
    if path.endswith(".json"):
        # lazy: `checkpoint list` never loads providers.crewai.common, providers.crewai.json_store
        from crewpoint.providers.crewai.json_store import is_crewai_json_file

        return "crewai-json" if is_crewai_json_file(path) else None
    if path in OPEN_DATABASES or not has_sqlite_header(path):
        return None
    return "crewai-sqlite" if is_crewai_database(path) else None


def is_crewai_database(path: str) -> bool:
    """Does the SQLite file at ``path`` hold CrewAI's ``checkpoints`` table (and no crewpoint tables)? Asked of
    every database named, crewpoint's own too: it imports none of the CrewAI store's modules."""
    import sqlite3

    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5)
    except sqlite3.Error:
        return False
    try:
        tables = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "checkpoints" not in tables or "bodies" in tables or "schema_meta" in tables:
            return False
        columns = {row[1] for row in con.execute("PRAGMA table_info(checkpoints)")}
        return {"id", "created_at", "parent_id", "branch", "data"} <= columns
    except sqlite3.Error:
        return False
    finally:
        con.close()
