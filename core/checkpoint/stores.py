"""Finding stores and checkpoints: a location, an id or prefix, a file; ancestors and children.

Every question about a store's files goes to its provider (:func:`crewpoint.providers.provider_for`); this
module never reads them itself.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from crewpoint.providers import is_url, provider_for, split_ref
from crewpoint.providers.base import (
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
)

if TYPE_CHECKING:
    from crewpoint.checkpoint.schema import CheckpointBody

DEFAULT_STORES = ("./.checkpoints", "./.checkpoints.db")


def _has_scheme(location: str) -> bool:
    """A URL (``postgresql://``) is always its URL's store, never a same-named local path."""
    return is_url(location)


def find_store(location: str | None) -> str:
    """The checkpoint store at ``location``; with None, ``./.checkpoints`` or ``./.checkpoints.db``.

    A reference to one checkpoint (a file, ``db#id``) stands for the store that holds it. Raises
    :class:`CheckpointNotFound` when there is no store there.
    """
    if location is None:
        for candidate in DEFAULT_STORES:
            if os.path.exists(candidate):
                return find_store(candidate)
        raise CheckpointNotFound(
            "no checkpoint store here (looked for ./.checkpoints and ./.checkpoints.db): pass --location PATH"
        )

    location = os.fspath(location)
    path, _ = split_ref(location)
    if not _has_scheme(path) and not os.path.lexists(path):
        raise CheckpointNotFound(f"{path}: no such file or folder")
    store: str = _provider(path).store_at(path)
    return store


def _provider(location: str) -> Any:

    return provider_for(location)


def list_checkpoints(location: str, branch: str | None = None, limit: int | None = None) -> list[CheckpointMeta]:
    """Metadata of the checkpoints in ``location``, newest first; reads no checkpoint bodies."""
    store = find_store(location)
    provider = _provider(store)
    if limit is not None:
        newest: list[CheckpointMeta] = provider.list_newest(store, limit, branch)
        return newest
    metas: list[CheckpointMeta] = provider.list(store, branch)
    return metas


def newest_checkpoints(location: str, limit: int) -> list[CheckpointMeta] | None:
    """The newest ``limit`` checkpoints when the store can tell them without reading everything, else None."""
    store = find_store(location)
    provider = _provider(store)
    if not provider.newest_is_cheap:
        return None
    newest: list[CheckpointMeta] = provider.list_newest(store, limit)
    return newest


def iter_checkpoints(location: str, branch: str | None = None) -> Iterator[CheckpointMeta]:
    """What :func:`list_checkpoints` gives, as the store yields it: a big store shows its first rows at once."""
    store = find_store(location)
    yield from _provider(store).iter_list(store, branch)


_PATH_SUFFIXES = (".json", ".db", ".sqlite", ".sqlite3")


def _is_path_ref(ref: str) -> bool:
    """Does ``ref`` name a store or file (rather than an id)? Ids never hold a slash."""
    path, _ = split_ref(ref)
    if _has_scheme(path) or os.path.lexists(path):
        return True
    if "/" in path or os.sep in path or path.lower().endswith(_PATH_SUFFIXES):
        raise CheckpointNotFound(f"{path}: no such file or folder")
    return False


def resolve_id(location: str | None, ref: str) -> str:
    """A reference :func:`load` accepts, from a file or ``db#id`` (kept as given, ``db#prefix`` completed) or
    an id or unique id prefix in ``location`` (None: the store found in the current folder).

    Raises :class:`AmbiguousCheckpoint` or :class:`CheckpointNotFound`.
    """
    ref = os.fspath(ref).strip()
    if not ref:
        raise CheckpointNotFound("empty checkpoint reference")
    if _is_path_ref(ref):
        path, fragment = split_ref(ref)
        if fragment is None and os.path.isfile(path) and path.lower().endswith(".json"):
            return ref  # a checkpoint file is read as it is, lone or in a store; a run finds its store (or refuses)
        store = find_store(path)
        if fragment is None:
            return ref
        return _ref_of(store, _provider(store).find(store, fragment))
    store = find_store(location)
    return _ref_of(store, _provider(store).find(store, ref))


def _ref_of(store: str, meta: CheckpointMeta) -> str:
    if meta.damaged:
        raise DamagedCheckpoint(f"{meta.location or meta.id}: damaged checkpoint ({meta.damaged})")
    if meta.location:
        return meta.location
    return f"{store}#{meta.id}"


def _names_a_store(ref: str) -> bool:
    """Is ``ref`` a whole store (a folder, a database, ``memory://name``) rather than one checkpoint?"""
    path, fragment = split_ref(ref)
    if fragment is not None or not (_has_scheme(path) or os.path.lexists(path)):
        return False
    if os.path.isfile(path) and path.lower().endswith(".json"):
        return False  # a checkpoint file, in a store or lone: never a whole store
    try:
        store = _provider(path).store_at(path)
    except CheckpointNotFound:
        return False
    return bool(os.path.normpath(store) == os.path.normpath(path))


def load(ref: str, location: str | None = None) -> CheckpointRecord:
    """Read and migrate one checkpoint: ``ref`` is a file, a folder or database (its latest), ``db#id``, or
    an id or id prefix looked up in ``location``."""
    return load_checked(ref, location)[0]


def load_checked(ref: str, location: str | None = None) -> tuple[CheckpointRecord, CheckpointBody]:
    """:func:`load` with the typed body it was checked into: read once and checked once, the pair a command hands
    on to plan, restore, fork check and describe."""
    # lazy: `checkpoint list` never loads checkpoint.restore, checkpoint.schema
    from crewpoint.checkpoint.restore import read_checked

    ref = os.fspath(ref)
    if _names_a_store(ref):
        return read_checked(ref)
    return read_checked(resolve_id(location, ref))


def body_or_none(ref: str | None) -> dict[str, Any] | None:
    """The body of the checkpoint at ``ref`` (:func:`load`), or None when there is none or it cannot be read: for
    what is only worth showing when it can be read (what ran after a checkpoint, for an estimate)."""
    if not ref:
        return None
    try:
        return load(ref).body
    except (CheckpointError, OSError, ValueError):
        return None


def store_of(record: CheckpointRecord) -> str:
    """The store (folder or database) a loaded checkpoint belongs to."""
    return str(_provider(record.meta.location).store_of(record.meta))


def ancestors(store: str, checkpoint_id: str) -> list[CheckpointMeta]:
    """The checkpoint and its parents, nearest first, as far as they are in ``store`` (no bodies read)."""
    chain: list[CheckpointMeta] = _provider(store).ancestors(store, checkpoint_id)
    return chain


def children(store: str, checkpoint_id: str) -> list[CheckpointMeta]:
    """Checkpoints whose parent is ``checkpoint_id``, newest first (no bodies read)."""
    return [m for m in _provider(store).list(store) if m.parent_id == checkpoint_id]


def newest_descendant(metas: Iterable[CheckpointMeta], checkpoint_id: str) -> CheckpointMeta | None:
    """The newest undamaged checkpoint among ``metas`` that descends from ``checkpoint_id`` (its child, their
    children, ...), or None. Its chain holds what ran after the checkpoint: what a fork of it will run again."""
    below: dict[str, list[CheckpointMeta]] = {}
    for meta in metas:
        if meta.parent_id is not None and meta.damaged is None:
            below.setdefault(meta.parent_id, []).append(meta)
    newest: CheckpointMeta | None = None
    seen, todo = {checkpoint_id}, [checkpoint_id]
    while todo:
        for meta in below.get(todo.pop(), ()):
            if meta.id not in seen:
                seen.add(meta.id)
                todo.append(meta.id)
                if newest is None or (meta.created_at, meta.sequence) > (newest.created_at, newest.sequence):
                    newest = meta
    return newest
