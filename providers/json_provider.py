"""JSON store: one human-readable file per checkpoint under ``<location>/<branch>/``.

A file is named ``<sequence>_<UTC time>_<id>_p-<parent>.json`` (``_root`` for a first checkpoint), so order,
id and parent are known from the name alone. Its first line holds the metadata, the body follows with one
top-level list item per line::

    {"meta":{"id":"...","branch":"main",...},
    "body":{
    "events":[
    {...},
    {...}],
    "entity":{...}}}

The metadata line records ``body_length`` and ``digest``: the length and sha256 of everything after that line.
Listing never parses bodies: a file whose size disagrees with its header's body length (cut short, or grown)
is listed as damaged, and a read checks the digest. ``<location>/.index.jsonl`` caches the metadata of files
that passed, with their size and mtime; a file that is missing from the index or changed since is listed from
its first line (and the index updated). The index is only a cache: deleting it costs one slower listing.

A checkpoint file names its store only through its real folders: ``<store>/<branch parts>/<file>``, each folder
the part of the branch its metadata records, under a folder that is a store (:func:`home_store`). A file in
another folder of a store is damaged; a file outside any store, or one that is no checkpoint, names no store,
so nothing is ever written or deleted beside it.

Writes are atomic (hidden temp file in the same folder, fsync, rename, fsync of the folder); files are 0600
and the folders this provider creates 0700. A branch may contain ``/`` (nested folders); names that would
leave the location, directly or through a symbolic link, are refused.
"""

from __future__ import annotations

import builtins
import errno
import json
import os
import re
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from operator import itemgetter
from stat import S_ISDIR, S_ISLNK, S_ISREG
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from crewpoint.providers.prune import PrunePlan, PruneStrategy
    from crewpoint.providers.watch import WatchSpec

from crewpoint.providers.base import (
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    new_meta,
    walk_parents,
)
from crewpoint.providers.claims import check_claim_key, claim_file, claim_files, read_claim_file
from crewpoint.providers.files import O_CLOEXEC as _O_CLOEXEC
from crewpoint.providers.files import O_NOFOLLOW as _O_NOFOLLOW
from crewpoint.providers.files import NotRegular as _NotRegular
from crewpoint.providers.files import (
    atomic_write,
    fsync_dir,
    make_private_dirs,
    nearest_existing,
    one_look,
    probe_file,
    remove_stale_temp_files,
    utf8_text,
)
from crewpoint.providers.files import open_regular as _open_regular
from crewpoint.providers.files import read_regular as _read_regular
from crewpoint.providers.json_index import (
    BRANCH_AT,
    INDEX,
    INDEX_FIELDS,
    POSITIONAL,
    ROW_POSITIONAL,
    ROW_TAIL,
    STORED_FIELDS,
    append_index,
    index_line,
    index_values,
    load_index,
    rewrite_index,
    row_from,
)
from crewpoint.providers.listed import ListedRow, all_sound, as_meta, newest_rows, row_of
from crewpoint.providers.refs import (
    DIGEST_LENGTH,
    MAX_BRANCH,
    MAX_SEQUENCE,
    check_record,
    check_stored_branch,
    match_prefix,
    meta_problem,
    split_ref,
    stored_branch_problem,
)
from crewpoint.providers.runs import RunInfo, run_from_dict
from crewpoint.providers.usage_meta import checked_usage

PRUNE_LOCK = ".prune.lock"
"""Held (``flock``) by a prune while it plans and deletes, so two processes never prune one store at once."""
NAME_RE = re.compile(
    r"(\d{1,40})_(\d{8}T\d{6}\.\d{6})_([A-Za-z0-9][A-Za-z0-9.\-]*)_(?:root|p-([A-Za-z0-9][A-Za-z0-9.\-]*))\.json"
)
_NAME_LINE = re.compile("^" + NAME_RE.pattern + "$", re.MULTILINE)
_NAME_GROUPS = re.compile(
    "^(" + NAME_RE.pattern.replace(r"(\d", r"(?:\d").replace(r"p-([", r"p-(?:[") + ")$", re.MULTILINE
)
"""A checkpoint file's name and its id (:data:`NAME_RE` with only the id's group kept), one name a line: a
listing finds them all in one pass per folder, as strings (no match object per file, no text per other part)."""
assert _NAME_GROUPS.groups == 2, "a listing takes each file's name and id from the pattern's two groups"
_MAYBE_FOLDER = re.compile(r"^(?!\.)(?![^\n]*\.json$)[^\n]+$", re.MULTILINE)
"""A name, one a line, that may be a branch's folder: not hidden, not a ``.json`` file."""
_TIME = "%Y%m%dT%H%M%S.%f"
_HEADER = b'{"meta":'
_HEAD_BYTES = 4096
_ASCII = json.JSONEncoder(separators=(",", ":"))


def file_name(meta: CheckpointMeta) -> str:
    stamp = datetime.fromtimestamp(meta.created_at, UTC).strftime(_TIME)
    parent = f"p-{meta.parent_id}" if meta.parent_id else "root"
    return f"{meta.sequence:08d}_{stamp}_{meta.id}_{parent}.json"


def stored_meta(meta: CheckpointMeta) -> dict[str, Any]:
    """The metadata written into a file: everything but what the store itself tells (size, location)."""
    return {f: getattr(meta, f) for f in STORED_FIELDS}


def encode_file(meta: CheckpointMeta, body: dict[str, Any]) -> bytes:
    """The file's bytes: compact JSON, metadata on the first line, one top-level list item per line. The
    metadata records the length and sha256 of everything after its line (:func:`encode_record`)."""
    return encode_record(meta, body)[1]


def encode_record(meta: CheckpointMeta, body: dict[str, Any]) -> tuple[CheckpointMeta, bytes]:
    """``meta`` with the body's length and digest filled in, and the file's bytes."""
    # lazy: the codec's encoder (providers.chunks) loads hashlib and zlib, which a listing never needs
    from crewpoint.providers.codec import codec

    rest = _text_bytes(codec.body_text(body), body)
    meta = meta.with_(body_length=len(rest), digest=_sha256(rest))
    return meta, _head_bytes(meta) + rest


def _head_bytes(meta: CheckpointMeta) -> bytes:
    head = '{"meta":' + encode_json(stored_meta(meta)) + ",\n"
    try:
        return head.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be UTF-8: write \u escapes instead, which read back exactly.
        return ('{"meta":' + _ASCII.encode(stored_meta(meta)) + ",\n").encode("ascii")


def _text_bytes(text: str, body: dict[str, Any]) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        from crewpoint.providers.codec import codec

        return codec.body_text(body, _ASCII.encode).encode("ascii")


class _Entry(NamedTuple):
    branch: str
    path: str
    match: re.Match[str]

    @property
    def id(self) -> str:
        return self.match.group(3)

    def damaged(self, reason: str, size: int) -> CheckpointMeta:
        """What the name alone tells, for a file whose content cannot be read."""
        seq, stamp, cid, parent = self.match.groups()
        created = datetime.strptime(stamp, _TIME).replace(tzinfo=UTC).timestamp()
        return CheckpointMeta(
            id=cid,
            parent_id=parent,
            branch=self.branch,
            lineage="",
            sequence=int(seq) if int(seq) <= MAX_SEQUENCE else 0,
            created_at=created,
            trigger="",
            size=size,
            location=self.path,
            damaged=reason,
        )


_LOOKED: dict[tuple[str, str | None], tuple[object, tuple[ListedRow, ...]]] = {}
"""The listing taken for the question being answered with one look (:func:`one_look`), by location and branch."""


class JsonProvider(BaseProvider):
    """Checkpoints as JSON files in a folder; ``location`` is the folder (or one checkpoint file)."""

    kind = "json"

    DIR_SYNC_INTERVAL = 1.0
    """Folder entries (the renames) are fsync'd at most this often while writes stream in, and always on
    :meth:`flush` (which the checkpoint writer calls at the end of a run and on signals). A file's bytes are
    always fsync'd before its rename, so a checkpoint is never torn; a power cut can only lose the renames of
    the last second."""

    def __init__(self, fsync: bool = True) -> None:
        self.fsync = fsync
        self._dirty: dict[str, float] = {}
        self._synced: dict[str, float] = {}
        self._dir_lock = threading.Lock()
        self._cleaned: set[str] = set()

    def flush(self) -> None:
        """fsync every folder that has renames not yet on disk."""
        with self._dir_lock:
            dirty, self._dirty = self._dirty, {}
        for folder in dirty:
            try:
                fsync_dir(folder)
            except OSError:
                continue
            self._synced[folder] = time.monotonic()

    def _sync_folder(self, folder: str) -> None:
        now = time.monotonic()
        if now - self._synced.get(folder, 0.0) >= self.DIR_SYNC_INTERVAL:
            fsync_dir(folder)
            self._synced[folder] = now
            with self._dir_lock:
                self._dirty.pop(folder, None)
        else:
            with self._dir_lock:
                self._dirty[folder] = now

    def __repr__(self) -> str:
        return "JsonProvider()" if self.fsync else "JsonProvider(fsync=False)"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonProvider) and other.fsync == self.fsync

    def __hash__(self) -> int:
        return hash((JsonProvider, self.fsync))

    # the provider interface

    def write(self, location: str, record: CheckpointRecord) -> str:
        meta = check_record(record)
        try:
            meta, data = encode_record(meta, record.body)
        except (TypeError, ValueError) as exc:
            raise CheckpointError(f"checkpoint {meta.id} has a body that is not JSON-ready: {exc}") from exc
        return self._write_file(location, meta, data)

    def write_encoded(self, location: str, meta: CheckpointMeta, data: bytes) -> str:
        """Store a checkpoint file already encoded by :func:`encode_file`: atomically, 0600, fsync'd.

        ``location`` is taken as written: a ``#`` in it is part of the folder's name, never a reference.
        """
        rest = data[data.index(b"\n") + 1 :]
        meta = meta.with_(body_length=len(rest), digest=_sha256(rest))
        return self._write_file(location, meta, data)

    def _write_file(self, location: str, meta: CheckpointMeta, data: bytes) -> str:
        root = _write_root(location)
        make_private_dirs(root)
        folder = self._branch_folder(root, meta.branch, create=True)
        assert folder is not None
        if folder not in self._cleaned:
            self._cleaned.add(folder)
            remove_stale_temp_files(folder)
        name = file_name(meta)
        try:
            stat = atomic_write(folder, name, data, self.fsync)
            if self.fsync:
                self._sync_folder(folder)
        except OSError as exc:
            raise CheckpointError(f"cannot write checkpoint {meta.id} to {folder}: {exc.strerror}") from exc
        append_index(root, [index_line(stat.st_size, stat.st_mtime_ns, index_values(meta))])
        return os.path.join(folder, name)

    def read(self, location: str, checkpoint_id: str | None = None) -> CheckpointRecord:
        root, ref_id = _root(location)
        wanted = checkpoint_id or ref_id
        if os.path.isfile(root):
            record = _read_file(root)
            if enclosing_store(root) is not None and home_store(root, record.meta.branch)[0] is None:
                # Inside a store, a record whose folder is not its recorded branch is damaged.
                raise _damage(root, f"damaged checkpoint: {_misplaced(record.meta.branch)}")
            return record
        if not os.path.isdir(root):
            raise CheckpointNotFound(f"no checkpoint store at {root}")
        if wanted is None:
            latest = self.latest(root)
            if latest is None:
                raise CheckpointNotFound(f"no readable checkpoints in {root}")
            return _read_file(latest.location, follow=False, branch=latest.branch)
        entries = self._scan(root)
        found = match_prefix([e.id for e in entries], wanted, root)
        chosen = max((e for e in entries if e.id == found), key=lambda e: (int(e.match.group(1)), e.match.group(2)))
        return _read_file(chosen.path, follow=False, branch=chosen.branch)

    def list(self, location: str, branch: str | None = None) -> list[CheckpointMeta]:
        return [new_meta(*row) for row in self.list_rows(location, branch)]

    # latest, meta and ancestors read the same rows as list and make an object only of the rows they give back
    def latest(self, location: str, branch: str | None = None) -> CheckpointMeta | None:
        return next((new_meta(*row) for row in self.list_rows(location, branch) if row.damaged is None), None)

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        return next((new_meta(*row) for row in self.list_rows(location) if row.id == checkpoint_id), None)

    def ancestors(self, location: str, checkpoint_id: str) -> builtins.list[CheckpointMeta]:
        by_id = {row.id: row for row in self.list_rows(location)}

        def lookup(wanted: str) -> CheckpointMeta | None:
            row = by_id.get(wanted)
            return None if row is None else new_meta(*row)

        return walk_parents(lookup, checkpoint_id)

    def iter_list_rows(self, location: str, branch: str | None = None) -> Iterator[ListedRow]:
        return iter(self.list_rows(location, branch))

    def list_rows(self, location: str, branch: str | None = None) -> builtins.list[ListedRow]:
        """What :meth:`list` gives, as rows (:class:`~crewpoint.providers.listed.ListedRow`): a row of the index
        whose file has the size, time and folder the index recorded is taken as it stands (no object made per
        field); any other file's header is read, and a file that fails its checks is listed damaged. While one
        question is answered with one look (:func:`~crewpoint.providers.files.looking_once`: ``info``, ``diff``),
        the store is listed once for it."""
        question = one_look()
        if question is None:
            return self._list_rows(location, branch)
        key = (location, branch)
        looked = _LOOKED.get(key)
        if looked is not None and looked[0] is question:
            return list(looked[1])
        if any(asked is not question for asked, _ in _LOOKED.values()):
            _LOOKED.clear()  # a look taken for another question is never used for this one
        rows = self._list_rows(location, branch)
        _LOOKED[key] = (question, tuple(rows))
        return rows

    def _list_rows(self, location: str, branch: str | None = None) -> builtins.list[ListedRow]:
        root = _root(location)[0]
        if branch is not None:
            check_stored_branch(branch)
        if os.path.isfile(root):
            single = _file_meta(root, None)
            single = _usage_checked(single, follow=True) if single.damaged is None and single.usage else single
            return [row_of(single)] if branch is None or single.branch == branch else []
        if not os.path.isdir(root):
            raise CheckpointNotFound(f"no checkpoint store at {root}")
        index, lines = load_index(root)
        rows: builtins.list[ListedRow] = []
        good: builtins.list[builtins.list[Any]] = []
        fresh: builtins.list[str] = []
        indexed: builtins.list[ListedRow] = []  # rows taken from the index, checked together below
        used: builtins.list[builtins.list[Any]] = []  # the index line of each
        lookup, files = index.get, 0
        make, tail, at = tuple.__new__, ROW_TAIL, BRANCH_AT
        for here, prefix, names in self._walk(root, branch):
            found = _NAME_GROUPS.findall(names)  # (name, id) of each file
            files += len(found)
            paths = [prefix + name for name in map(_FOUND_NAME, found)]
            cached = list(map(lookup, map(_FOUND_ID, found)))
            stats = _lstats(paths)
            if ROW_POSITIONAL:  # the usual folder: each file as the index recorded it, its row made in one call
                made = [
                    make(ListedRow, (*line[2:], stat.st_size, path, *tail))
                    for line, stat, path in zip(cached, stats, paths, strict=True)
                    if line is not None
                    and stat is not None
                    and S_ISREG(stat.st_mode)
                    and line[0] == stat.st_size
                    and line[1] == stat.st_mtime_ns
                    and line[at] == here
                ]
                if len(made) == len(found):
                    indexed.extend(made)
                    used.extend(cached)  # type: ignore[arg-type]  # every one there: each made a row
                    continue
            for name, path, line, stat in zip(map(_FOUND_NAME, found), paths, cached, stats, strict=True):
                if stat is None or not S_ISREG(stat.st_mode):
                    continue  # gone since the folder was read, or not a file: not listed
                size, mtime = stat.st_size, stat.st_mtime_ns
                if line is not None and line[0] == size and line[1] == mtime and line[at] == here:
                    try:
                        row = row_from(line, size, path)
                    except TypeError:
                        row = None
                    if row is not None:
                        indexed.append(row)
                        used.append(line)
                        continue
                rows.append(_listed_file(_entry(here, prefix, name), size, mtime, good, fresh))
        if all_sound(indexed):  # the usual index: every row of its types, checked at once
            rows.extend(indexed)
            good.extend(used)
        else:
            for row, line in zip(indexed, used, strict=True):
                if meta_problem(as_meta(row)) is None:
                    rows.append(row)
                    good.append(line)
                else:  # a line of the index that cannot be trusted: the file's header is read instead
                    name = os.path.basename(row.location)
                    entry = _entry(line[at], row.location[: -len(name)], name)
                    rows.append(_listed_file(entry, row.size, line[1], good, fresh))
        if branch is None and (lines > 2 * files + 64 or (fresh and not index)):
            rewrite_index(root, [encode_json(line) for line in good])
        elif fresh:
            append_index(root, fresh)
        return newest_rows(rows)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        root = _root(location)[0]
        wanted = set(ids)
        if not wanted or not os.path.isdir(root):
            return 0
        removed = 0
        folders: set[str] = set()
        # Oldest first: a delete cut short (a crash, a full disk) leaves each branch's newest part whole.
        doomed = sorted((e for e in self._scan(root) if e.id in wanted), key=lambda e: int(e.match.group(1)))
        for entry in doomed:
            try:
                os.unlink(entry.path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CheckpointError(f"cannot delete {entry.path}: {exc.strerror}") from exc
            removed += 1
            folders.add(os.path.dirname(entry.path))
        if self.fsync:
            for folder in folders:
                try:
                    fsync_dir(folder)
                except OSError:
                    continue
        if removed:
            index, _ = load_index(root)
            remaining = {e.id for e in self._scan(root)}
            rewrite_index(root, [encode_json(line) for cid, line in index.items() if cid in remaining])
        return removed

    @contextmanager
    def _pruning(self, location: str) -> Iterator[None]:
        """The store's prune lock: one prune at a time in this process (a thread lock) and across processes (an
        advisory ``flock`` on ``.prune.lock`` in the store's folder, where the platform has one)."""
        with self._prune_lock:
            try:
                import fcntl
            except ImportError:  # no advisory locks here: the thread lock alone
                yield
                return
            root = _root(location)[0]
            try:
                fd = os.open(os.path.join(root, PRUNE_LOCK), os.O_RDWR | os.O_CREAT | _O_CLOEXEC | _O_NOFOLLOW, 0o600)
            except OSError:  # a store that cannot take a lock file cannot be pruned either: the delete says why
                yield
                return
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                yield
            finally:
                os.close(fd)  # closing drops the lock

    def prune(self, location: str, strategy: PruneStrategy, dry_run: bool = False) -> PrunePlan:
        """As :meth:`BaseProvider.prune`; also removes temporary files that writers killed mid-write left."""
        plan = super().prune(location, strategy, dry_run)
        if not dry_run:
            self.clean(location)
        return plan

    def clean(self, location: str) -> int:
        """Remove temporary files left by writers that died mid-write; return how many."""
        root = _root(location)[0]
        removed = remove_stale_temp_files(root)
        for entry_folder in {os.path.dirname(e.path) for e in self._scan(root)} | self._folders(root):
            removed += remove_stale_temp_files(entry_folder)
        return removed

    def _folders(self, root: str) -> set[str]:
        found: set[str] = set()
        stack = [root]
        while stack:
            folder = stack.pop()
            try:
                names = os.listdir(folder)
            except OSError:
                continue
            for name in names:
                if name.startswith("."):
                    continue
                path = os.path.join(folder, name)
                try:
                    if S_ISDIR(os.lstat(path).st_mode):
                        found.add(path)
                        stack.append(path)
                except OSError:
                    continue
        return found

    # the store

    def store_at(self, location: str) -> str:
        """A folder that is a JSON store (empty, or with checkpoint files under it), or the store holding the
        checkpoint file ``location`` names (see :meth:`store_of`). A file that is not a checkpoint is never a
        store: it is refused."""
        path = _root(location)[0]
        if os.path.isdir(path):
            if _looks_like_store(path):
                return path
            raise CheckpointNotFound(f"{path}: this folder holds no checkpoints")
        if not os.path.lexists(path):
            raise CheckpointNotFound(f"{path}: no such file or folder")
        if path.endswith(".json"):
            try:
                meta = _file_meta(path, None)
            except DamagedCheckpoint as exc:
                raise CheckpointNotFound(f"{exc}: not a crewpoint checkpoint, so no store is found from it") from None
            return self.store_of(meta)
        raise CheckpointNotFound(f"{path}: not a checkpoint store (a checkpoint folder or a SQLite database)")

    def store_of(self, meta: CheckpointMeta) -> str:
        """The store holding the checkpoint file ``meta.location``, found from the file's real folders (links
        resolved): the folders it lies in must be its recorded branch, under a folder that is a JSON store.
        Raises :class:`CheckpointError` when they are not: nothing is ever written beside such a file."""
        path, _ = split_ref(meta.location)
        if os.path.isdir(path):
            return path
        root, problem = home_store(path, meta.branch)
        if root is None:
            if enclosing_store(path) is not None:
                raise _damage(path, f"damaged checkpoint: {_misplaced(meta.branch)}")
            raise CheckpointError(f"{path}: {problem}")
        return root

    def check_writable(self, location: str) -> None:
        """Refuse, before a run starts, a store this process cannot write to: a write probe (a hidden temp
        file, created and removed) in the store folder, or in the nearest existing folder above a new one."""
        root = os.path.abspath(_write_root(location))
        probe_in = nearest_existing(root)
        if not os.path.isdir(probe_in):
            raise CheckpointError(f"cannot write checkpoints to {location}: {probe_in} is not a folder")
        probe_file(probe_in, f"checkpoints to {location}")

    # run records: one small file per run under .runs/, never through a link

    def write_run(self, location: str, run: RunInfo) -> bool:
        root = _write_root(location)
        if not os.path.isdir(root):
            return False  # the store is made by the first checkpoint, not by a run record
        folder = os.path.join(root, RUNS)
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
        mode = os.lstat(folder).st_mode
        if not S_ISDIR(mode):
            raise CheckpointError(f"{folder} is not a folder (a link or a file): run records are not written")
        atomic_write(folder, f"{run.run_id}.json", encode_json(_run_dict(run)).encode("utf-8"), fsync=False)
        return True

    def read_runs(self, location: str) -> builtins.list[RunInfo]:
        folder = os.path.join(_root(location)[0], RUNS)
        try:
            if not S_ISDIR(os.lstat(folder).st_mode):
                return []
            names = os.listdir(folder)
        except OSError:
            return []
        runs: builtins.list[RunInfo] = []
        for name in names:
            if name.startswith(".") or not name.endswith(".json"):
                continue
            try:
                data = _read_regular(os.path.join(folder, name), follow=False)
                run = run_from_dict(json.loads(data))
            except (OSError, ValueError, RecursionError, _NotRegular):
                continue
            if run is not None:
                runs.append(run)
        runs.sort(key=lambda r: r.started_at, reverse=True)
        return runs

    # claims: one file per claim under .claims/, made by link(2) so that one claimer wins (providers.claims)

    def claim(self, location: str, key: str, value: Mapping[str, Any]) -> dict[str, Any]:
        check_claim_key(key)
        return claim_file(self.store_at(location), key, value, self.fsync)

    def read_claim(self, location: str, key: str) -> dict[str, Any] | None:
        check_claim_key(key)
        store = self._claims_store(location)
        return None if store is None else read_claim_file(store, key)

    def claims(self, location: str) -> dict[str, dict[str, Any]]:
        store = self._claims_store(location)
        return {} if store is None else claim_files(store)

    def _claims_store(self, location: str) -> str | None:
        try:
            return self.store_at(location)
        except CheckpointNotFound:
            return None  # no store: nothing is claimed

    # change notification

    def watch_spec(self, location: str) -> WatchSpec:
        # lazy: `checkpoint list` never loads providers.watch
        from crewpoint.providers.watch import WatchSpec, waiting_spec

        path = os.path.abspath(_root(location)[0])
        if os.path.isdir(path):
            runs = os.path.join(path, RUNS)

            def keep(changed: str) -> bool:
                return not changed.endswith(".tmp")

            def runs_only(changed: str) -> bool:
                return changed == runs or os.path.dirname(changed) == runs

            return WatchSpec(location, True, path, True, keep, runs_only)
        return waiting_spec(location, path)

    # folders

    @staticmethod
    def _branch_folder(root: str, branch: str, create: bool) -> str | None:
        """The folder of ``branch`` under ``root`` (created if asked). Every part must be a real folder:
        a symbolic link anywhere below ``root`` is refused, so the path cannot leave the store."""
        check_stored_branch(branch)
        current = root
        for part in branch.split("/"):
            step = os.path.join(current, part)
            try:
                mode = os.lstat(step).st_mode
            except FileNotFoundError:
                if not create:
                    return None
                try:
                    os.mkdir(step, 0o700)
                    os.chmod(step, 0o700)
                except FileExistsError:
                    pass
                except OSError as exc:
                    raise CheckpointError(f"cannot create branch folder {step}: {exc.strerror}") from exc
                mode = os.lstat(step).st_mode
            if S_ISLNK(mode):
                inside = _inside(os.path.realpath(step), os.path.realpath(root))
                where = "through a symbolic link" if inside else "outside the checkpoint store"
                raise CheckpointError(f"branch {branch!r} leads {where} ({step}): refused")
            if not S_ISDIR(mode):
                raise CheckpointError(f"branch {branch!r}: {step} is not a folder")
            current = step
        return current

    def _scan(self, root: str, branch: str | None = None) -> builtins.list[_Entry]:
        """Checkpoint files (by name) under ``root``, or directly in ``branch``'s folder. Links are skipped."""
        entries: builtins.list[_Entry] = []
        make = tuple.__new__  # a NamedTuple's own constructor is a Python function: this makes one per file faster
        for rel, prefix, names in self._walk(root, branch):
            # One regex pass over all names; hidden temp files never match (they start with ".").
            entries.extend([make(_Entry, (rel, prefix + m[0], m)) for m in _NAME_LINE.finditer(names)])
        return entries

    def _walk(self, root: str, branch: str | None) -> Iterator[tuple[str, str, str]]:
        """Each branch folder under ``root`` (or only ``branch``'s): its branch, its path and a separator, and the
        names in it, one a line (for one regex pass over them). Links are skipped."""
        if branch is not None:
            folder = self._branch_folder(root, branch, create=False)
            if folder is None:
                return
            stack = [(branch, folder)]
            recurse = False
        else:
            stack = [("", root)]
            recurse = True
        while stack:
            rel, folder = stack.pop()
            try:
                names = os.listdir(folder)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                raise CheckpointError(f"cannot list {folder}: {exc.strerror}") from exc
            prefix = folder + os.sep
            joined = "\n".join(names)
            if rel:
                yield rel, prefix, joined
            if recurse:
                if joined.count("\n") == len(names) - 1:  # no name holds a newline: the lines are the names
                    if joined.count(".json\n") == len(names) - 1 and joined.endswith(".json"):
                        maybe = []  # every name a .json file (a branch's usual folder): no folder among them
                    else:
                        maybe = _MAYBE_FOLDER.findall(joined)
                else:
                    maybe = [n for n in names if n[:1] != "." and not n.endswith(".json")]
                for name in maybe:
                    try:
                        mode = os.lstat(prefix + name).st_mode
                    except OSError:
                        continue
                    if S_ISDIR(mode):
                        stack.append((f"{rel}/{name}" if rel else name, prefix + name))


RUNS = ".runs"
"""The folder of a store's run records."""

_MAX_DEPTH = 4
_MAX_FOLDERS = 500


def _write_root(location: str) -> str:
    """The folder a write to ``location`` goes to: the location as written (a ``#`` is part of the name)."""
    return location.rstrip(os.sep) or location


def home_store(path: str, branch: str) -> tuple[str | None, str]:
    """The JSON store holding the checkpoint file ``path`` on ``branch``, or ``None`` and why not.

    Found from the file's real folders (links resolved), never from the branch alone: the folders the file
    lies in must be the parts of ``branch``, and the folder above them a store (its index, or checkpoint
    files in its branch folders). The store is given as the caller named it when that is the same folder.
    """
    if not isinstance(branch, str) or stored_branch_problem(branch) is not None:
        return None, f"its recorded branch {branch!r} is not a branch name"
    real = os.path.realpath(path)
    root = os.path.dirname(real)
    for part in reversed(branch.split("/")):
        if os.path.basename(root) != part:
            return None, (
                f"it does not lie in the folder of its branch {branch!r} inside a checkpoint store,"
                " so no store is found from it: info reads it, but resume and fork write only into the store a"
                " checkpoint lies in (copy it to <store>/<branch>/ first)"
            )
        root = os.path.dirname(root)
    if not (os.path.lexists(os.path.join(root, INDEX)) or _looks_like_store(root)):
        return None, f"{root}, above its branch folder, is not a checkpoint store"
    named = os.path.dirname(path) if not os.path.isabs(path) else os.path.dirname(os.path.abspath(path))
    for _ in branch.split("/"):
        named = os.path.dirname(named)
    named = named or "."
    return (named if os.path.realpath(named) == root else root), ""


def enclosing_store(path: str) -> str | None:
    """The nearest folder above the file ``path`` (links resolved) that holds a JSON store's index."""
    folder = os.path.dirname(os.path.realpath(path))
    for _ in range(MAX_BRANCH // 2 + 2):
        if os.path.lexists(os.path.join(folder, INDEX)):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent
    return None


def _looks_like_store(path: str) -> bool:
    """An empty folder (a store nothing has written to yet) or one with checkpoint files under it."""
    try:
        entries = [e for e in os.listdir(path) if not e.startswith(".")]
    except OSError:
        return False
    if not entries or os.path.lexists(os.path.join(path, INDEX)):
        return True
    seen = 0
    for top, dirs, files in os.walk(path):
        depth = top[len(path) :].count(os.sep)
        dirs[:] = [d for d in dirs if not d.startswith(".")] if depth < _MAX_DEPTH else []
        if top != path and any(NAME_RE.fullmatch(f) for f in files):
            return True
        seen += 1
        if seen >= _MAX_FOLDERS:  # a big folder that is no store: stop looking
            break
    return False


def _run_dict(run: RunInfo) -> dict[str, Any]:
    return {f: getattr(run, f) for f in RunInfo.__dataclass_fields__}


def _root(location: str) -> tuple[str, str | None]:
    """The store folder (or file) and the id a ``folder#id`` reference names."""
    path, ref_id = split_ref(location)
    return path.rstrip(os.sep) or path, ref_id


def _inside(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip(os.sep) + os.sep)


def _damage(path: str, reason: str) -> DamagedCheckpoint:
    return DamagedCheckpoint(f"{path}: {reason}")


def _parse(data: bytes) -> Any:
    """The JSON in ``data``; raises ValueError with a one-line reason."""
    if not data.strip():
        raise ValueError("the file is empty")
    text = utf8_text(data)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"not valid JSON, the file is truncated or damaged (line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise ValueError("JSON nested too deeply") from None


def _meta_from(raw: Any, size: int, location: str, listed: bool = False) -> CheckpointMeta:
    """Build metadata from a stored dict; raises ValueError with a one-line reason. ``listed``: for a listing,
    without the body's length and digest (see :func:`_recorded_length`)."""
    if not isinstance(raw, dict):
        raise ValueError("JSON, but not a crewpoint checkpoint (its meta is not an object)")
    if listed and POSITIONAL:
        try:  # the usual case, a header this provider wrote: every field there, taken in order
            args: tuple[Any, ...] = (*[raw[k] for k in INDEX_FIELDS], size, location)
            meta = CheckpointMeta(*args)
        except KeyError:
            pass
        else:
            problem = meta_problem(meta)
            if problem is not None:
                raise ValueError(f"bad metadata: {problem}")
            return meta
    missing = [f for f in ("id", "branch", "sequence", "created_at") if f not in raw]
    if missing:
        raise ValueError(f"JSON, but not a crewpoint checkpoint (meta lacks {', '.join(missing)})")
    fields = {k: raw[k] for k in (INDEX_FIELDS if listed else STORED_FIELDS) if k in raw}
    fields.setdefault("parent_id", None)
    fields.setdefault("lineage", "")
    fields.setdefault("trigger", "")
    meta = CheckpointMeta(**fields, size=size, location=location)
    problem = meta_problem(meta)
    if problem is not None:
        raise ValueError(f"bad metadata: {problem}")
    return meta


def _read_file(path: str, follow: bool = True, branch: str | None = None) -> CheckpointRecord:
    """Read and check one checkpoint file; inside a store (``follow=False``) a link is not followed.

    The body must match the length and digest its metadata records, and, read from the folder of
    ``branch``, its recorded branch must be that branch: otherwise the record is damaged.
    """
    try:
        data = _read_regular(path, follow)
    except FileNotFoundError:
        raise CheckpointNotFound(f"no checkpoint at {path}") from None
    except _NotRegular:
        raise DamagedCheckpoint(f"{path}: not a regular file (a FIFO, device or folder): never read") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            raise CheckpointError(f"{path} is a symbolic link inside the checkpoint store: refused") from None
        raise CheckpointError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        obj = _parse(data)
        if not isinstance(obj, dict) or not isinstance(obj.get("body"), dict) or "meta" not in obj:
            raise ValueError("JSON, but not a crewpoint checkpoint (no meta and body)")
        meta = _meta_from(obj["meta"], len(data), path)
        if meta.digest:
            rest = data[data.find(b"\n") + 1 :]
            problem = _length_problem(len(rest), meta.body_length)
            if problem is None and _sha256(rest) != meta.digest:
                problem = "its body does not match the digest its metadata records (altered or damaged)"
            if problem is not None:
                raise ValueError(problem)
        if branch is not None and meta.branch != branch:
            raise ValueError(_branch_problem(meta.branch, branch))
    except ValueError as exc:
        raise _damage(path, str(exc)) from None
    return CheckpointRecord(meta, obj["body"])


def _length_problem(found: int, recorded: int) -> str | None:
    if found < recorded:
        return f"the file is cut short: its body holds {found:,} of the {recorded:,} bytes its metadata records"
    if found > recorded:
        return f"its body holds {found:,} bytes, its metadata records {recorded:,}: altered or damaged"
    return None


def _misplaced(recorded: str) -> str:
    return f"its metadata says branch {recorded!r} but it does not lie in that branch's folder of its store"


def _branch_problem(recorded: str, folder: str) -> str:
    return f"its metadata says branch {recorded!r} but it lies in the folder of branch {folder!r}"


def _file_meta(path: str, entry: _Entry | None, size: int | None = None) -> CheckpointMeta:
    """Metadata from the file's first line (the whole file if the first line is not a header), checked
    against the file's size: a body shorter or longer than the metadata records is damaged, and so is (for
    records older than body digests) a file that does not end as a checkpoint file ends. No body is parsed.

    A file that cannot be read gives damaged metadata when its name parses (``entry``), else raises.
    """
    try:
        with os.fdopen(_open_regular(path, follow=entry is None), "rb") as handle:
            head = handle.read(_HEAD_BYTES)
            end = head.find(b"\n")
            if head.startswith(_HEADER) and end > len(_HEADER) and head[end - 1 : end] == b",":
                if size is None:
                    size = os.fstat(handle.fileno()).st_size
                try:
                    raw = json.loads(head[len(_HEADER) : end - 1])
                    meta = _meta_from(raw, size, path, listed=True)
                except (ValueError, RecursionError):
                    meta = None
                if meta is not None:
                    length = _recorded_length(raw)
                    if length is not None:
                        problem = _length_problem(size - end - 1, length)
                    elif size > len(head) or not head.endswith(_TAIL):
                        tail = os.pread(handle.fileno(), len(_TAIL), max(0, size - len(_TAIL)))
                        problem = None if tail == _TAIL else "the file is truncated (its JSON does not end)"
                    else:
                        problem = None
                    if problem is not None:
                        raise ValueError(problem)
                    return meta
            data = head + handle.read()
        size = len(data)
        obj = _parse(data)
        if not isinstance(obj, dict) or "meta" not in obj:
            raise ValueError("JSON, but not a crewpoint checkpoint (no meta)")
        meta = _meta_from(obj["meta"], size, path, listed=True)
        length = _recorded_length(obj["meta"])
        if length is not None:
            problem = _length_problem(size - data.find(b"\n") - 1, length)
            if problem is not None:
                raise ValueError(problem)
        return meta

    except ValueError as exc:
        if entry is None:
            raise _damage(path, str(exc)) from None
        return entry.damaged(str(exc), size or 0)
    except _NotRegular:
        if entry is None:
            raise _damage(path, "not a regular file (a FIFO, device or folder): never read") from None
        return entry.damaged("not a regular file (a FIFO, device or folder): never read", size or 0)
    except OSError as exc:
        if entry is None:
            raise CheckpointError(f"cannot read {path}: {exc.strerror}") from exc
        return entry.damaged(f"cannot read: {exc.strerror}", size or 0)


_FOUND_NAME, _FOUND_ID = itemgetter(0), itemgetter(1)


def encode_json(value: Any) -> str:
    """:func:`crewpoint.providers.chunks.encode_json`, whose module (it loads hashlib and zlib) a listing of an
    indexed store never imports."""
    # lazy: a listing whose files the index vouches for encodes nothing
    from crewpoint.providers.chunks import encode_json as encode

    return encode(value)


def _sha256(data: bytes) -> str:
    import hashlib  # here: a listing never hashes, and hashlib would add to its import time

    return hashlib.sha256(data).hexdigest()


def _lstats(paths: builtins.list[str]) -> builtins.list[os.stat_result | None]:
    """``os.lstat`` of each path (``None`` for one that is gone): one call for the whole folder, as a rule."""
    try:
        return builtins.list(map(os.lstat, paths))
    except FileNotFoundError:
        pass
    out: builtins.list[os.stat_result | None] = []
    for path in paths:
        try:
            out.append(os.lstat(path))
        except FileNotFoundError:
            out.append(None)
    return out


def _entry(branch: str, prefix: str, name: str) -> _Entry:
    """The entry of a file ``name`` (a checkpoint file's name) found in ``branch``'s folder (its path ``prefix``)."""
    match = NAME_RE.fullmatch(name)
    assert match is not None  # the name was found by the same pattern
    return _Entry(branch, prefix + name, match)


def _listed_file(
    entry: _Entry, size: int, mtime: int, good: builtins.list[builtins.list[Any]], fresh: builtins.list[str]
) -> ListedRow:
    """The row of a file the index does not vouch for, from its header (damaged when it fails its checks or lies
    in another branch's folder); a sound one's index line is added to ``good`` and, encoded, to ``fresh``."""
    found = _file_meta(entry.path, entry, size)
    if found.damaged is None and found.branch != entry.branch:
        found = entry.damaged(_branch_problem(found.branch, entry.branch), size)
    if found.damaged is None and found.usage:
        found = _usage_checked(found)
    if found.damaged is None:
        line = [size, mtime, *index_values(found)]
        fresh.append(encode_json(line))
        good.append(line)
    return row_of(found)


def _usage_checked(meta: CheckpointMeta, follow: bool = False) -> CheckpointMeta:
    """``meta`` of a file the index does not vouch for, its usage summary checked against its body once, when it
    is indexed (the index keeps what was found): a summary the body does not bear out is kept as damaged."""
    try:
        body = _read_file(meta.location, follow=follow).body
    except CheckpointError:
        body = None  # unreadable: no usage it could bear out
    usage = checked_usage(meta.usage, body)
    return meta if usage == meta.usage else meta.with_(usage=usage)


def _recorded_length(raw: dict[str, Any]) -> int | None:
    """The body length a metadata dict records with its digest; None for a record written before digests.
    Raises ValueError for a length or digest of the wrong kind."""
    digest = raw.get("digest", "")
    if digest == "":
        return None
    length = raw.get("body_length")
    if type(digest) is not str or len(digest) != DIGEST_LENGTH:
        raise ValueError(f"bad metadata: digest must be a sha256 in hex, not {str(digest)[:40]!r}")
    if type(length) is not int or length < 0:
        raise ValueError(f"bad metadata: body_length must be a count, not {str(length)[:40]!r}")
    return length


_TAIL = b"}}\n"
"""How every checkpoint file ends (its body, then the outer object)."""
