"""CrewAI's JSON store, read-only: ``<location>/<branch>/<YYYYmmddTHHMMSS>_<uuid8>_p-<parent|none>.json``.

A checkpoint's id is the file name before ``_p-``; branches may nest (``fork/<id>_<suffix>``). CrewAI writes the
files in place (not atomically) and names them to the second, so a file that does not parse yet is listed as
damaged and the order within one second is the parent chain's, then the files' modification times.

Listing has to read each file (the name holds no progress); what it learns is kept per file, keyed by size and
modification time, so a live view re-reads only the files that changed. Writing goes through
:mod:`crewpoint.providers.crewai_fork` (a fork in CrewAI's own format), never through this provider.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from collections.abc import Iterable
from stat import S_ISDIR, S_ISREG
from typing import TYPE_CHECKING, Any

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
)
from crewpoint.providers.crewai_common import (
    FILE_RE,
    FactsCache,
    describe_dump,
    loads_masked,
    order,
    parse_stamp,
    to_body,
)
from crewpoint.providers.prune import newest_first
from crewpoint.providers.refs import match_prefix, split_ref

if TYPE_CHECKING:
    from crewpoint.providers.watch import WatchSpec

READ_ONLY = (
    "CrewAI stores are read-only in crewpoint: fork a checkpoint, or copy the store with `crewpoint checkpoint copy`"
)
_MAX_DEPTH = 8


def is_crewai_json_file(path: str) -> bool:
    return FILE_RE.fullmatch(os.path.basename(path)) is not None


def looks_like_crewai_json_store(path: str) -> bool:
    """A folder with CrewAI checkpoint files in a branch folder under it (``main/`` first, then any)."""
    main = os.path.join(path, "main")
    try:
        if os.path.isdir(main) and any(FILE_RE.fullmatch(n) for n in os.listdir(main)):
            return True
        for top, _dirs, files in _walk(path, limit=200):
            if top != path and any(FILE_RE.fullmatch(f) for f in files):
                return True
    except OSError:
        return False
    return False


def _walk(root: str, limit: int) -> Iterable[tuple[str, list[str], list[str]]]:
    """(folder, subfolders, files) under ``root``, links and hidden entries skipped, at most ``limit`` folders."""
    stack = [(root, 0)]
    seen = 0
    while stack and seen < limit:
        folder, depth = stack.pop()
        seen += 1
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        dirs, files = [], []
        for name in names:
            if name.startswith("."):
                continue
            full = os.path.join(folder, name)
            try:
                mode = os.lstat(full).st_mode
            except OSError:
                continue
            if S_ISDIR(mode):
                dirs.append(name)
                if depth < _MAX_DEPTH:
                    stack.append((full, depth + 1))
            elif S_ISREG(mode):
                files.append(name)
        yield folder, dirs, files


def store_root(path: str) -> str:
    """The store folder of a CrewAI checkpoint file (``<store>/<branch>/<file>``, the branch read from the file)."""
    branch = "main"
    try:
        with open(path, "rb") as handle:
            data = json.loads(handle.read())
        if isinstance(data, dict) and isinstance(data.get("branch"), str) and data["branch"]:
            branch = data["branch"]
    except (OSError, ValueError):
        pass
    root = os.path.dirname(os.path.abspath(path))
    for _ in branch.split("/"):
        root = os.path.dirname(root)
    return root


class CrewAIJsonProvider(BaseProvider):
    """Reads CrewAI's JSON checkpoint folders; every key in them is masked."""

    kind = "crewai-json"
    read_only = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[str, FactsCache] = {}

    def __repr__(self) -> str:
        return "CrewAIJsonProvider()"

    def write(self, location: str, record: CheckpointRecord) -> str:
        raise CheckpointError(READ_ONLY)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        raise CheckpointError(READ_ONLY)

    def watch_spec(self, location: str) -> WatchSpec:
        """The store folder, recursively (CrewAI's fork branches nest); any ``.json`` file counts."""
        from crewpoint.providers.watch import WatchSpec, waiting_spec

        path = split_ref(location)[0]
        path = os.path.abspath(os.path.dirname(os.path.dirname(path)) if os.path.isfile(path) else path)
        if os.path.isdir(path):
            return WatchSpec(location, True, path, True, lambda changed: changed.endswith(".json"))
        return waiting_spec(location, path)

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        path = split_ref(location)[0]
        if os.path.isfile(path):
            metas = self._list_root(store_root(path))
            return [m for m in metas if m.location == os.path.abspath(path)]
        if not os.path.isdir(path):
            raise CheckpointNotFound(f"no CrewAI checkpoint store at {path}")
        metas = self._list_root(path)
        if branch is not None:
            metas = [m for m in metas if m.branch == branch]
        return metas

    def _list_root(self, root: str) -> builtins.list[CheckpointMeta]:
        root = os.path.abspath(root)
        with self._lock:
            cache = self._caches.get(root)
            if cache is None:
                cache = self._caches[root] = FactsCache(root)
            found: builtins.list[CheckpointMeta] = []
            seen: set[str] = set()
            for folder, _dirs, files in _walk(root, limit=100_000):
                if folder == root:
                    continue
                branch = os.path.relpath(folder, root).replace(os.sep, "/")
                for name in files:
                    match = FILE_RE.fullmatch(name)
                    if match is None:
                        continue
                    full = os.path.join(folder, name)
                    try:
                        stat = os.lstat(full)
                    except OSError:
                        continue
                    key = f"{branch}/{name}"
                    seen.add(key)
                    found.append(self._meta(cache, key, full, branch, match, stat.st_size, stat.st_mtime_ns))
            cache.keep_only(seen)
            cache.save()
        return newest_first(order(found))

    @staticmethod
    def _meta(
        cache: FactsCache, key: str, path: str, branch: str, match: Any, size: int, mtime_ns: int
    ) -> CheckpointMeta:
        stamp, short, parent = match.groups()
        fields: dict[str, Any] = {
            "id": f"{stamp}_{short}",
            "parent_id": None if parent == "none" else parent,
            "branch": branch,
            "lineage": "",
            "sequence": mtime_ns,
            "created_at": parse_stamp(stamp),
            "trigger": "",
            "schema_version": 1,
            "size": size,
            "location": path,
        }
        facts = cache.get(key, size, mtime_ns)
        if facts is None:
            try:
                facts = describe_dump(_load(path, masked=False))  # only non-secret facts are kept (the name masked)
            except (OSError, ValueError, TypeError, AttributeError) as exc:
                return CheckpointMeta(**fields, damaged=_reason(exc))
            cache.put(key, size, mtime_ns, facts)
        try:
            return CheckpointMeta(**(fields | facts))
        except TypeError:
            return CheckpointMeta(**fields, damaged="unreadable cached facts: list again")

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        path, ref_id = split_ref(location)
        wanted = checkpoint_id or ref_id
        if os.path.isfile(path):
            metas = self.list(path)
            if not metas:
                raise CheckpointNotFound(f"{path}: not a CrewAI checkpoint file")
            return self._read(metas[0])
        metas = self.list(path)
        if not metas:
            raise CheckpointNotFound(f"no checkpoints in {path}")
        if wanted is None:
            chosen = next((m for m in metas if not m.damaged), metas[0])
        else:
            full = match_prefix([m.id for m in metas], wanted, path)
            chosen = next(m for m in metas if m.id == full)
        return self._read(chosen)

    def _read(self, meta: CheckpointMeta) -> CheckpointRecord:
        if meta.damaged:
            raise DamagedCheckpoint(f"{meta.location}: damaged checkpoint ({meta.damaged})")
        try:
            dump = _load(meta.location)
            return CheckpointRecord(meta, to_body(dump, meta))
        except FileNotFoundError:
            raise CheckpointNotFound(f"no checkpoint at {meta.location}") from None
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            raise DamagedCheckpoint(f"{meta.location}: {_reason(exc)}") from None


def read_dump(path: str, masked: bool = True) -> dict[str, Any]:
    """One CrewAI checkpoint file as a dict; keys masked unless ``masked=False`` (a fork copies them as CrewAI
    does, since CrewAI needs them to resume)."""
    return _load(path, masked)


def _load(path: str, masked: bool = True) -> dict[str, Any]:
    with open(path, "rb") as handle:
        data = handle.read()
    if not data.strip():
        raise ValueError("the file is empty (CrewAI may still be writing it)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (bad byte at offset {exc.start})") from None
    try:
        dump = loads_masked(text) if masked else json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON, truncated or damaged (line {exc.lineno} column {exc.colno})") from None
    if not isinstance(dump, dict) or "entities" not in dump:
        raise ValueError("JSON, but not a CrewAI checkpoint (no entities)")
    return dump


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return " ".join(str(exc).split()) or type(exc).__name__
