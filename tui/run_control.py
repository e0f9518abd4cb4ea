"""Stopping a live run that this app did not start: only a process verified as the run its record names.

A run record names a pid, and a record can be forged; :func:`interrupt` sends SIGINT only to a process of this
host that holds the run's own mark (:mod:`crewpoint.providers.run_mark`). The process is pinned before it is
checked (a pidfd where the system has one), so the signal cannot reach another process that took the pid
meanwhile. Headless: no textual here.
"""

from __future__ import annotations

import os
import signal

from crewpoint.providers.run_mark import can_verify, held_by
from crewpoint.providers.runs import RunInfo, this_host


def problem(run: RunInfo) -> str | None:
    """Why ``run``'s process may not be signalled from here (None: it is verified as that run, now)."""
    if run.host != this_host():
        return "it runs on another machine: stop it there"
    if not can_verify():
        return "this system cannot tell which process runs it: stop it where it runs"
    if not held_by(run.pid, run.run_id):
        return f"pid {run.pid} is not that run's process (it ended, or its record is wrong): nothing was sent"
    return None


def interrupt(run: RunInfo) -> str | None:
    """Send SIGINT to ``run``'s process once it is verified; the reason nothing was sent, or None when it was."""
    pidfd: int | None = None
    opener = getattr(os, "pidfd_open", None)
    if opener is not None:
        try:
            pidfd = opener(run.pid)  # pin the process: a pid taken over by another process no longer matches
        except OSError:
            return f"pid {run.pid} is not running: nothing was sent"
    try:
        reason = problem(run)
        if reason is not None:
            return reason
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signal.SIGINT)
            else:
                os.kill(run.pid, signal.SIGINT)
        except OSError as exc:
            return f"cannot stop pid {run.pid}: {exc.strerror}"
        return None
    finally:
        if pidfd is not None:
            os.close(pidfd)
