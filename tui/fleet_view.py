"""What the app shows of its store's fleet (runs queued on the team's PostgreSQL store and the workers running them):
each run's state in the words ``list`` uses (``queued``, ``running on HOST``, ``recovering``), and the header's
counts of workers and their jobs.

The app is handed a :class:`Fleet` on a PostgreSQL store (the command line's fleet engine, which loads procrastinate
only when a job is queued or aborted); on any other store it has none. Each read goes to the store's server, so the
screen makes it in a worker thread. Headless: no textual here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from crewpoint.tui.diagnostics import plural

QUEUED, RECOVERING = "queued", "recovering"

KNOWN_BETTER = frozenset({None, "running", "crashed", "lost", "interrupted"})
"""The states a run's own record gives (:data:`~crewpoint.tui.store_index.RUN_STATES`, None: no record) that the
fleet knows better while it queues, runs or recovers the run, as ``list`` replaces them."""


@dataclass(frozen=True, slots=True)
class FleetView:
    """The store's fleet as read at one moment."""

    states: dict[str, str] = field(default_factory=dict)
    """Lineage → ``queued``, ``running on HOST`` or ``recovering``, for the runs the fleet is not done with."""
    workers: int = 0
    """Workers whose heartbeat is recent."""
    running: int = 0
    queued: int = 0
    recovering: int = 0

    def header(self) -> str:
        """``2 workers · 3 running · 1 queued`` (and how many recover, when any do)."""
        parts = [plural(self.workers, "worker"), f"{self.running:,} running", f"{self.queued:,} queued"]
        if self.recovering:
            parts.append(f"{self.recovering:,} {RECOVERING}")
        return " · ".join(parts)

    def state_over(self, lineage: str, own: str | None) -> str | None:
        """The fleet's word for a run whose own record says ``own``, when the fleet knows better; else None."""
        return self.states.get(lineage) if own in KNOWN_BETTER else None


def fleet_mark(word: str) -> tuple[str, str]:
    """How a fleet state shows in a branch's label, with the tree's component style (as ``STATE_MARKS``)."""
    if word == QUEUED:
        return "◌ queued", "muted"
    if word == RECOVERING:
        return "↻ recovering", "stopped"
    return f"● {word}", "live"


@dataclass(frozen=True, slots=True)
class Stopped:
    """What stopping a run of the fleet did: the job, and whether a worker was running it (else it was cancelled)."""

    job: int
    running: bool

    def said(self) -> str:
        if self.running:
            return f"Stopping job {self.job}: its worker interrupts the run, which ends with a checkpoint."
        return f"Cancelled job {self.job}: no worker had started it."


@dataclass(frozen=True, slots=True)
class ForkJob:
    """A fork for the fleet: checkpoint ``source`` onto ``branch`` with its edits (outputs by task number from 1), run
    by a worker started with ``program``, within ``budget`` dollars."""

    source: str
    branch: str
    inputs: dict[str, Any]
    outputs: dict[str, str]
    program: str
    budget: float | None


class Fleet(Protocol):
    """The store's fleet, as the app reads and drives it. Every method talks to the store's server: call it off the
    app's thread. Each raises an exception whose text is one line for the user."""

    def read(self) -> FleetView | None:
        """The fleet now; None when the store has no fleet (no worker or submit met it)."""
        ...

    def resume(self, lineage: str, program: str, budget: float | None) -> int:
        """Queue a job that goes on with the run ``lineage`` from its newest checkpoint, run by a worker started
        with ``program``; the job's number."""
        ...

    def fork(self, fork: ForkJob) -> int:
        """Queue a job that runs ``fork``; the job's number."""
        ...

    def stop(self, lineage: str) -> Stopped | None:
        """Abort the job of the run ``lineage`` as ``crewpoint checkpoint stop`` does; None when the fleet has no
        queued or running job of it."""
        ...
