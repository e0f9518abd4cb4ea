"""CrewAI's JSON store, read-only: ``<location>/<branch>/<YYYYmmddTHHMMSS>_<uuid8>_p-<parent|none>.json``.

A checkpoint's id is the file name before ``_p-``; branches may nest (``fork/<id>_<suffix>``). CrewAI writes the
files in place (not atomically) and names them to the second, so a file that does not parse yet is listed as
damaged and the order within one second is the parent chain's, then the files' modification times.

Listing has to read each file (the name holds no progress); what it learns is kept per file, keyed by size and
modification time, so a live view re-reads only the files that changed. Writing goes through
:mod:`crewpoint.providers.crewai.fork` (a fork in CrewAI's own format), never through this provider.
"""

from __future__ import annotations

import builtins
import json
import os
import threading
from collections.abc import Iterable
from typing import Any

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
)
from crewpoint.providers.crewai.common import FILE_RE, parse_json, parse_stamp, to_body
from crewpoint.providers.crewai.detect import crewai_kind
from crewpoint.providers.crewai.listing import (
    Entry,
    Facts,
    LazyListing,
    ListsLazily,
    json_facts,
)
from crewpoint.providers.files import NotRegular, processes_allowed, read_regular, utf8_text
from crewpoint.providers.refs import split_ref
from crewpoint.providers.watch import WatchSpec, waiting_spec

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
            if top != path and any(FILE_RE.fullmatch(f.name) for f in files):
                return True
    except OSError:
        return False
    return False


def _walk(root: str, limit: int) -> Iterable[tuple[str, list[str], list[os.DirEntry[str]]]]:
    """(folder, subfolders, regular files) under ``root``, links and hidden entries skipped, at most ``limit``
    folders. The kind of each entry comes from the directory listing, so nothing is stat'ed here."""
    stack = [(root, 0)]
    seen = 0
    while stack and seen < limit:
        folder, depth = stack.pop()
        seen += 1
        try:
            with os.scandir(folder) as listing:
                found = [entry for entry in listing if not entry.name.startswith(".")]
        except OSError:
            continue
        dirs, files = [], []
        for entry in found:
            try:
                if entry.is_dir(follow_symlinks=False):
                    dirs.append(entry.name)
                    if depth < _MAX_DEPTH:
                        stack.append((entry.path, depth + 1))
                elif entry.is_file(follow_symlinks=False):
                    files.append(entry)
            except OSError:
                continue
        yield folder, dirs, files


def store_root(path: str) -> str:
    """The store folder of a CrewAI checkpoint file (``<store>/<branch>/<file>``), found from the file's real
    folders (links resolved), never from its recorded branch alone: the folders it lies in must be the parts of
    that branch (``main`` when it records none), under a folder that is a CrewAI JSON store. Raises
    :class:`CheckpointNotFound` when they are not: no folder above the store is ever listed as one."""
    branch: object = "main"
    try:
        data = parse_json(read_regular(path, follow=True))
        if isinstance(data, dict) and data.get("branch"):
            branch = data["branch"]
    except (OSError, ValueError, NotRegular):
        pass
    parts = branch.split("/") if isinstance(branch, str) else [""]
    real = os.path.dirname(os.path.realpath(path))
    named = os.path.dirname(os.path.abspath(path))
    for part in reversed(parts):
        if part in ("", ".", "..") or os.path.basename(real) != part:
            raise CheckpointNotFound(
                f"{path}: its recorded branch {branch!r} is not the folder it lies in, so no CrewAI store is"
                " found from it: name the store folder instead"
            )
        real, named = os.path.dirname(real), os.path.dirname(named)
    if crewai_kind(real) != "crewai-json":
        raise CheckpointNotFound(f"{path}: {real}, above its branch folder, is not a CrewAI JSON store")
    return named if os.path.realpath(named) == real else real


class CrewAIJsonProvider(ListsLazily, BaseProvider):
    """Reads CrewAI's JSON checkpoint folders; every key in them is masked."""

    kind = "crewai-json"
    newest_is_cheap = True  # the order comes from names (or narrow columns); only the newest rows are read

    def __repr__(self) -> str:
        return "CrewAIJsonProvider()"

    def watch_spec(self, location: str) -> WatchSpec:
        """The store folder, recursively (CrewAI's fork branches nest); any ``.json`` file counts."""
        path = split_ref(location)[0]
        path = os.path.abspath(os.path.dirname(os.path.dirname(path)) if os.path.isfile(path) else path)
        if os.path.isdir(path):
            return WatchSpec(location, True, path, True, lambda changed: changed.endswith(".json"))
        return waiting_spec(location, path)

    def store_of(self, meta: CheckpointMeta) -> str:
        """The store folder: the checkpoint file's folder is its branch, which may nest (``fork/<id>``)."""
        root = os.path.dirname(os.path.abspath(meta.location))
        for _ in meta.branch.split("/"):
            root = os.path.dirname(root)
        return root

    def _lazy(self, location: str, branch: str | None) -> LazyListing:
        """The store's files in order (names and sizes only); their facts are read as they are asked for."""
        path = os.path.abspath(split_ref(location)[0])
        if os.path.isfile(path):
            root, only = store_root(path), path
        elif os.path.isdir(path):
            root, only = path, None
        else:
            raise CheckpointNotFound(f"no CrewAI checkpoint store at {path}")
        scans: builtins.list[Scan] = []

        def look() -> frozenset[tuple[str, int, int]]:
            scans.append(_scan(root))
            return _names(scans[-1])

        listing = self._listing(root, look, lambda: _entries(scans[-1] if scans else _scan(root)), _learn)
        if only is not None:
            listing.entries = [e for e in listing.entries if e.location == only]
        elif branch is not None:
            listing.entries = [e for e in listing.entries if e.branch == branch]
        return listing

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        path, ref_id = split_ref(location)
        listing = self._lazy(path, None)
        if os.path.isfile(path):
            if not listing.entries:
                raise CheckpointNotFound(f"{path}: not a CrewAI checkpoint file")
            return self._read(listing.first(1)[0])
        chosen = listing.pick(checkpoint_id or ref_id, path)
        if chosen is None:
            raise CheckpointNotFound(f"no checkpoints in {path}")
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


Scan = builtins.list[tuple[str, str, os.DirEntry[str], int, int]]
"""(branch, key, file, size, modification time) of each checkpoint file in a store."""


def _scan(root: str) -> Scan:
    """Every CrewAI checkpoint file under ``root`` with its size and modification time (one ``lstat`` each,
    no reading)."""
    found: Scan = []
    for folder, _dirs, files in _walk(root, limit=100_000):
        if folder == root:
            continue
        branch = os.path.relpath(folder, root).replace(os.sep, "/")
        for file in files:
            if FILE_RE.fullmatch(file.name) is None:
                continue
            try:
                stat = file.stat(follow_symlinks=False)
            except OSError:
                continue
            found.append((branch, f"{branch}/{file.name}", file, stat.st_size, stat.st_mtime_ns))
    return found


def _names(scan: Scan) -> frozenset[tuple[str, int, int]]:
    """What the scan says of each file: any file added, removed, grown or rewritten changes it."""
    return frozenset((key, size, mtime) for _branch, key, _file, size, mtime in scan)


def _entries(scan: Scan) -> builtins.list[Entry]:
    """Every file of ``scan`` as its name tells it."""
    found: builtins.list[Entry] = []
    for branch, key, file, size, mtime in scan:
        match = FILE_RE.fullmatch(file.name)
        if match is None:
            continue
        stamp, short, parent = match.groups()
        found.append(
            Entry(
                id=f"{stamp}_{short}",
                parent_id=None if parent == "none" else parent,
                branch=branch,
                created_at=parse_stamp(stamp),
                tiebreak=mtime,
                size=size,
                location=file.path,
                key=key,
                stamp=mtime,
            )
        )
    return found


PARALLEL_FROM = 1000
"""Files to learn at once from which two processes read them side by side (parsing holds Python's lock)."""
_processes: dict[str, Any] = {"pool": None}


def _learn(entries: builtins.list[Entry]) -> dict[str, Facts]:
    """Facts of each file (only non-secret facts are kept, the name masked); a damaged file says why."""
    paths = [e.location for e in entries]
    pool = _pool() if len(paths) >= PARALLEL_FROM else None
    if pool is not None:
        try:
            halves = builtins.list(pool.map(_learn_paths, (paths[0::2], paths[1::2])))
            found = [*zip(paths[0::2], halves[0], strict=True), *zip(paths[1::2], halves[1], strict=True)]
            by_path = dict(found)
            return {e.key: by_path[e.location] for e in entries}
        except Exception:  # a worker that died or could not start: read them here
            _processes["pool"] = None
    return {e.key: facts for e, facts in zip(entries, _learn_paths(paths), strict=True)}


def _learn_paths(paths: builtins.list[str]) -> builtins.list[Facts]:
    learnt: builtins.list[Facts] = []
    for path in paths:
        try:
            learnt.append(json_facts(path, lambda whole: _load(whole, masked=False)))
        except (OSError, ValueError, TypeError, AttributeError) as exc:
            learnt.append({"damaged": _reason(exc)})
    return learnt


def _pool() -> Any:
    """Two forked worker processes, made once: only when allowed, on a machine with two cores or more, and
    while this process has no other thread (forking a threaded process is unsafe)."""
    if _processes["pool"] is None:
        if not processes_allowed() or (os.cpu_count() or 1) < 2 or not hasattr(os, "fork"):
            return None
        if threading.active_count() != 1:
            return None
        import atexit
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        context = multiprocessing.get_context("fork")
        _processes["pool"] = ProcessPoolExecutor(2, mp_context=context, initializer=_quiet_worker)
        atexit.register(_end_pool)
    return _processes["pool"]


def _end_pool() -> None:
    """At exit, end the workers and let go of the pool while the interpreter is whole."""
    pool, _processes["pool"] = _processes["pool"], None
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)


def _quiet_worker() -> None:
    """Ctrl-C is the parent's to handle: a worker ignores it and ends with the parent."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def read_dump(path: str, masked: bool = True) -> dict[str, Any]:
    """One CrewAI checkpoint file as a dict; keys masked unless ``masked=False`` (a fork copies them as CrewAI
    does, since CrewAI needs them to resume)."""
    return _load(path, masked)


def _load(path: str, masked: bool = True) -> dict[str, Any]:
    try:
        data = read_regular(path, follow=False)
    except NotRegular:
        raise ValueError("not a regular file (a FIFO, device or folder named like a checkpoint)") from None
    if not data.strip():
        raise ValueError("the file is empty (CrewAI may still be writing it)")
    text = utf8_text(data)
    try:
        dump = parse_json(text, masked)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON, truncated or damaged (line {exc.lineno} column {exc.colno})") from None
    if not isinstance(dump, dict) or "entities" not in dump:
        raise ValueError("JSON, but not a CrewAI checkpoint (no entities)")
    return dump


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot read: {exc.strerror or exc}"
    return " ".join(str(exc).split()) or type(exc).__name__
