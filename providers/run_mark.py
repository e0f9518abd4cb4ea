"""Which process is a run: the mark a running run holds, and the check made before signalling a process.

A run record (``.runs/``, a ``runs`` table) names its process by pid, and a record is data anyone who can write the
store can forge. So a process is taken for the run a record names only when the process itself shows it: while a
run goes, its process holds an anonymous in-memory file named ``crewpoint-run:<run id>`` (Linux ``memfd_create``,
closed when the run ends and never passed to child programs), and :func:`held_by` looks for it among the process's
open files (``/proc/<pid>/fd``). Another program cannot be made to hold it, so a forged record naming any other
process fails the check. Where the system has no such files, nothing can be verified and nothing is signalled.
"""

from __future__ import annotations

import os
import re

_RUN_ID_RE = re.compile(r"[0-9A-Za-z_-]{1,64}")
_PREFIX = "crewpoint-run:"


def mark_name(run_id: str) -> str:
    return _PREFIX + run_id


def hold(run_id: str) -> int | None:
    """Open the mark of run ``run_id`` in this process; the descriptor to :func:`release` when the run ends (None
    where the system has no in-memory files, or the id is not one crewpoint makes)."""
    create = getattr(os, "memfd_create", None)
    if create is None or not _RUN_ID_RE.fullmatch(run_id):
        return None
    try:
        return int(create(mark_name(run_id), getattr(os, "MFD_CLOEXEC", 1)))
    except OSError:
        return None


def release(fd: int | None) -> None:
    if fd is not None:
        try:
            os.close(fd)
        except OSError:
            pass


def can_verify() -> bool:
    """Can this system tell a run's process (in-memory files and ``/proc``)?"""
    return hasattr(os, "memfd_create") and os.path.isdir("/proc/self/fd")


def held_by(pid: int, run_id: str) -> bool:
    """Does process ``pid`` hold the mark of run ``run_id``, that is: is it that run's process, running now?"""
    if type(pid) is not int or pid <= 0 or not isinstance(run_id, str) or not _RUN_ID_RE.fullmatch(run_id):
        return False
    wanted = f"/memfd:{mark_name(run_id)} (deleted)"
    folder = f"/proc/{pid}/fd"
    try:
        entries = os.listdir(folder)
    except OSError:  # gone, or another user's process
        return False
    for entry in entries:
        try:
            if os.readlink(os.path.join(folder, entry)) == wanted:
                return True
        except OSError:
            continue
    return False
