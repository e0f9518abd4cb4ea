"""Finding stores and checkpoints: a location, an id or prefix, a file; ancestors and children."""

from __future__ import annotations

import os
from typing import Any

from crewpoint.providers.base import CheckpointMeta, CheckpointNotFound, CheckpointRecord, DamagedCheckpoint

DEFAULT_STORES = ("./.checkpoints", "./.checkpoints.db")
SQLITE_MAGIC = b"SQLite format 3\x00"
_MAX_DEPTH = 4
_MAX_FOLDERS = 500


def find_store(location: str | None) -> str:
    """The checkpoint store at ``location``; with None, ``./.checkpoints`` or ``./.checkpoints.db``.

    A path to one checkpoint file stands for the store that holds it. Raises :class:`CheckpointNotFound`
    when there is no store there.
    """
    if location is None:
        for candidate in DEFAULT_STORES:
            if os.path.exists(candidate):
                return find_store(candidate)
        raise CheckpointNotFound(
            "no checkpoint store here (looked for ./.checkpoints and ./.checkpoints.db): pass --location PATH"
        )
    from crewpoint.providers import split_ref

    path, _ = split_ref(os.fspath(location))
    if not os.path.exists(path):
        raise CheckpointNotFound(f"{path}: no such file or folder")
    if os.path.isdir(path):
        if _looks_like_json_store(path):
            return path
        raise CheckpointNotFound(f"{path}: this folder holds no checkpoints")
    if _is_sqlite(path):
        return path
    if path.endswith(".json"):
        metas = _provider(path).list(path)
        if metas and not metas[0].damaged:
            return _root_of(path, metas[0].branch)
        return os.path.dirname(os.path.dirname(os.path.abspath(path)))
    raise CheckpointNotFound(f"{path}: not a checkpoint store (a checkpoint folder or a SQLite database)")


def _is_sqlite(path: str) -> bool:
    from crewpoint.providers import has_sqlite_header

    if not os.path.isfile(path):
        return False
    if os.path.getsize(path) == 0:
        return path.endswith((".db", ".sqlite", ".sqlite3"))
    return has_sqlite_header(path)


def _looks_like_json_store(path: str) -> bool:
    """An empty folder (a store nothing has written to yet) or one with checkpoint files under it."""
    try:
        entries = [e for e in os.listdir(path) if not e.startswith(".")]
    except OSError:
        return False
    if not entries or os.path.exists(os.path.join(path, ".index.jsonl")):
        return True
    seen = 0
    for top, dirs, files in os.walk(path):
        depth = top[len(path) :].count(os.sep)
        dirs[:] = [d for d in dirs if not d.startswith(".")] if depth < _MAX_DEPTH else []
        if top != path and any(f.endswith(".json") for f in files):
            return True
        seen += 1
        if seen >= _MAX_FOLDERS:  # a big folder that is no store: stop looking
            break
    return False


def _provider(location: str) -> Any:
    from crewpoint.providers import provider_for

    return provider_for(location)


def list_checkpoints(location: str, branch: str | None = None, limit: int | None = None) -> list[CheckpointMeta]:
    """Metadata of the checkpoints in ``location``, newest first; reads no checkpoint bodies."""
    store = find_store(location)
    metas: list[CheckpointMeta] = _provider(store).list(store, branch)
    return metas if limit is None else metas[: max(0, limit)]


_PATH_SUFFIXES = (".json", ".db", ".sqlite", ".sqlite3")


def _is_path_ref(ref: str) -> bool:
    """Does ``ref`` name a file or folder (rather than an id)? Ids never hold a slash."""
    from crewpoint.providers import split_ref

    path, _ = split_ref(ref)
    if os.path.exists(path):
        return True
    if "/" in path or os.sep in path or path.lower().endswith(_PATH_SUFFIXES):
        raise CheckpointNotFound(f"{path}: no such file or folder")
    return False


def resolve_id(location: str | None, ref: str) -> str:
    """A reference :func:`load` accepts, from a file or ``db#id`` (kept as given, ``db#prefix`` completed) or
    an id or unique id prefix in ``location`` (None: the store found in the current folder).

    Raises :class:`AmbiguousCheckpoint` or :class:`CheckpointNotFound`.
    """
    from crewpoint.providers import split_ref
    from crewpoint.providers.refs import match_prefix

    ref = os.fspath(ref).strip()
    if not ref:
        raise CheckpointNotFound("empty checkpoint reference")
    if _is_path_ref(ref):
        path, fragment = split_ref(ref)
        store = find_store(path)
        if fragment is None:
            return ref
        metas = _provider(store).list(store)
        full = match_prefix([m.id for m in metas], fragment, store)
        return _ref_of(store, next(m for m in metas if m.id == full))
    store = find_store(location)
    metas = _provider(store).list(store)
    full = match_prefix([m.id for m in metas], ref, store)
    return _ref_of(store, next(m for m in metas if m.id == full))


def _ref_of(store: str, meta: CheckpointMeta) -> str:
    if meta.damaged:
        raise DamagedCheckpoint(f"{meta.location or meta.id}: damaged checkpoint ({meta.damaged})")
    if meta.location:
        return meta.location
    return f"{store}#{meta.id}"


def load(ref: str, location: str | None = None) -> CheckpointRecord:
    """Read and migrate one checkpoint: ``ref`` is a file, a folder or database (its latest), ``db#id``, or
    an id or id prefix looked up in ``location``."""
    from crewpoint.checkpoint.restore import load_record

    ref = os.fspath(ref)
    if os.path.isdir(ref) or (os.path.isfile(ref) and _is_sqlite(ref)):
        find_store(ref)
        return load_record(ref)
    return load_record(resolve_id(location, ref))


def _root_of(path: str, branch: str) -> str:
    """The store folder of the JSON checkpoint file ``path`` on ``branch`` (``<store>/<branch>/<file>``)."""
    root = os.path.dirname(path)
    for _ in branch.split("/"):
        root = os.path.dirname(root)
    return root or "."


def store_of(record: CheckpointRecord) -> str:
    """The store (folder or database) a loaded checkpoint belongs to."""
    from crewpoint.providers import split_ref

    path, _ = split_ref(record.meta.location)
    if os.path.isfile(path) and not _is_sqlite(path):
        return _root_of(path, record.meta.branch)
    return path


def ancestors(store: str, checkpoint_id: str) -> list[CheckpointMeta]:
    """The checkpoint and its parents, nearest first, as far as they are in ``store`` (no bodies read)."""
    provider = _provider(store)
    # JSON: one listing (an index read) beats a file lookup per parent; SQLite: one indexed row per parent.
    by_id = {m.id: m for m in provider.list(store)} if provider.kind != "sqlite" else None

    def lookup(wanted: str) -> CheckpointMeta | None:
        return by_id.get(wanted) if by_id is not None else provider.meta(store, wanted)

    chain: list[CheckpointMeta] = []
    seen: set[str] = set()
    current = lookup(checkpoint_id)
    while current is not None and current.id not in seen:
        seen.add(current.id)
        chain.append(current)
        current = lookup(current.parent_id) if current.parent_id else None
    return chain


def children(store: str, checkpoint_id: str) -> list[CheckpointMeta]:
    """Checkpoints whose parent is ``checkpoint_id``, newest first (no bodies read)."""
    return [m for m in _provider(store).list(store) if m.parent_id == checkpoint_id]
