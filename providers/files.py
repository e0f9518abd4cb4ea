"""File helpers every file-based store shares: private folders, durable renames, leftovers of dead writers."""

from __future__ import annotations

import contextlib
import os
import re
import time
from collections.abc import Iterator
from stat import S_ISREG

from crewpoint.providers.base import CheckpointError

O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


_PROCESSES: dict[str, object] = {"allowed": False, "one_look": None}


def allow_processes() -> None:
    """Let a store read many files in forked worker processes. A command-line tool calls this; a program that
    uses crewpoint as a library never forks unless it does."""
    _PROCESSES["allowed"] = True


def processes_allowed() -> bool:
    return _PROCESSES["allowed"] is True


@contextlib.contextmanager
def looking_once() -> Iterator[None]:
    """While one question is answered from stores that are only read (``info``, ``diff``), a store looked at
    once is not looked at again to see whether it changed meanwhile: the answer is from one look."""
    before = _PROCESSES["one_look"]
    _PROCESSES["one_look"] = object()
    try:
        yield
    finally:
        _PROCESSES["one_look"] = before


def one_look() -> object | None:
    """The question being answered with one look at each store (:func:`looking_once`), if any: a look taken
    while answering it may be used again for it, and never for another."""
    return _PROCESSES["one_look"]


class NotRegular(Exception):
    """A path named like a checkpoint is a FIFO, device, socket or folder: it is never read."""


def open_regular(path: str, follow: bool) -> int:
    """Open ``path`` for reading only if it is a regular file (never blocking on a FIFO); inside a store
    (``follow=False``) a symbolic link is not followed."""
    flags = os.O_RDONLY | O_NONBLOCK | O_CLOEXEC | (0 if follow else O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            raise NotRegular(path)
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_regular(path: str, follow: bool) -> bytes:
    fd = open_regular(path, follow)
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def make_private_dirs(path: str) -> None:
    """Create ``path`` and missing parents, each new folder 0700 whatever the umask."""
    missing: list[str] = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            if os.path.isdir(folder):
                continue
            raise CheckpointError(f"cannot create folder {folder}: a file is in the way") from None
        except OSError as exc:
            raise CheckpointError(f"cannot create folder {folder}: {exc.strerror}") from exc
        os.chmod(folder, 0o700)


def fsync_dir(path: str) -> None:
    """Make a rename in ``path`` durable (where the platform can open folders)."""
    if not hasattr(os, "O_DIRECTORY"):
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(name: str, suffix: str = "tmp") -> str:
    """A hidden temporary name for ``name`` that tells which process writes it (so leftovers can be told)."""
    return f".{name}.{os.getpid()}-{os.urandom(4).hex()}.{suffix}"


_TEMP_RE = re.compile(r"\..+\.(\d+)-[0-9a-f]+\.(?:tmp|new)")
_OLD_TEMP_RE = re.compile(r"\..+\.[0-9a-f]{12}\.(?:tmp|new)")
STALE_TEMP_AGE = 3600.0
"""A temporary file of unknown owner older than this is a leftover (an hour: no write takes that long)."""


def atomic_write(folder: str, name: str, data: bytes, fsync: bool) -> os.stat_result:
    """Write ``data`` to ``folder/name`` by a private temp file renamed over it (fsynced first with ``fsync``)."""
    temp = os.path.join(folder, temp_name(name))
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
    try:
        try:
            os.fchmod(fd, 0o600)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
            stat = os.fstat(fd)
        finally:
            os.close(fd)
        os.replace(temp, os.path.join(folder, name))
    except BaseException:
        try:
            os.unlink(temp)
        except OSError:
            pass
        raise
    return stat


def nearest_existing(path: str) -> str:
    """``path`` if something is there (links not followed), else the nearest path above it that exists."""
    current = path
    while not os.path.lexists(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def pid_alive(pid: int) -> bool:
    """Is process ``pid`` of this host still there? (One that exists but is not ours counts as alive.)"""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True
    return True


def remove_stale_temp_files(folder: str, now: float | None = None, prefix: str = ".") -> int:
    """Remove the temporary files a writer killed mid-write left in ``folder`` (names starting with
    ``prefix``): those whose writer process is gone, and unnamed ones older than :data:`STALE_TEMP_AGE`.
    Return how many were removed."""
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    now = time.time() if now is None else now
    removed = 0
    for name in names:
        if not name.startswith(prefix):
            continue
        match = _TEMP_RE.fullmatch(name)
        path = os.path.join(folder, name)
        try:
            stat = os.lstat(path)
        except OSError:
            continue
        if not S_ISREG(stat.st_mode):
            continue
        if match is not None:
            stale = int(match.group(1)) != os.getpid() and not pid_alive(int(match.group(1)))
            stale = stale or now - stat.st_mtime > STALE_TEMP_AGE
        else:
            stale = _OLD_TEMP_RE.fullmatch(name) is not None and now - stat.st_mtime > STALE_TEMP_AGE
        if stale:
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                continue
    return removed


PROBE_BYTES = 512
"""What :func:`probe_file` writes: a read-only folder refuses the file, a full disk (no block left) its bytes."""


def probe_file(folder: str, what: str) -> None:
    """Write a small hidden temporary file in ``folder`` and remove it; raise :class:`CheckpointError` (one
    line, saying what could not be written and why) if the folder cannot take it."""
    path = os.path.join(folder, temp_name("probe"))
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
    except OSError as exc:
        raise CheckpointError(f"cannot write {what}: {folder}: {exc.strerror}") from None
    try:
        view = memoryview(bytes(PROBE_BYTES))
        while view:
            view = view[os.write(fd, view) :]
    except OSError as exc:
        raise CheckpointError(f"cannot write {what}: {folder}: {exc.strerror}") from None
    finally:
        os.close(fd)
        with contextlib.suppress(OSError):
            os.unlink(path)


def utf8_text(data: bytes) -> str:
    """``data`` as text; raises ValueError naming the first byte that is not UTF-8."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (bad byte at offset {exc.start})") from None
