"""Which checkpoints a prune deletes, and deleting them."""

from __future__ import annotations

from dataclasses import dataclass

from crewpoint.checkpoint.stores import _provider, find_store
from crewpoint.providers.base import CheckpointMeta


@dataclass
class PrunePlan:
    doomed: list[CheckpointMeta]
    kept_fork_points: set[str]
    kept_live: set[str]
    damaged: int = 0
    """Damaged records in the store: never counted, never deleted by a prune."""


def _doomed(
    metas: list[CheckpointMeta],
    keep: int | None,
    older_than: float | None,
    branch: str | None,
    force: bool,
    now: float,
    protect: set[str],
) -> set[str]:
    from crewpoint.providers.prune import plan_prune as plan_keep
    from crewpoint.providers.prune import plan_prune_older_than

    chosen: set[str] | None = None
    if keep is not None:
        chosen = set(plan_keep(metas, keep=keep, branch=branch, protect=protect, force=force))
    if older_than is not None:
        old = set(plan_prune_older_than(metas, older_than, now, branch=branch, protect=protect, force=force))
        chosen = old if chosen is None else chosen & old
    return chosen or set()


def plan_prune(
    location: str,
    keep: int | None = None,
    older_than: float | None = None,
    branch: str | None = None,
    force: bool = False,
    now: float | None = None,
) -> PrunePlan:
    """Which checkpoints a prune deletes, newest first: beyond the newest ``keep`` of each run's branch, and/or
    older than ``older_than`` seconds (with both, only those matching both). Damaged records never count and are
    never planned; the checkpoints of live runs are always kept; fork points and the first checkpoint of each
    fork are kept unless ``force``. ``kept_fork_points`` and ``kept_live`` name the ones kept that would
    otherwise go."""
    import time

    from crewpoint.providers.prune import live_checkpoints

    if keep is None and older_than is None:
        raise ValueError("prune needs a number of checkpoints to keep or an age")
    store = find_store(location)
    provider = _provider(store)
    metas: list[CheckpointMeta] = provider.list(store)
    live = live_checkpoints(metas, provider.read_runs(store))
    now = time.time() if now is None else now
    doomed = _doomed(metas, keep, older_than, branch, force, now, live)
    unguarded = _doomed(metas, keep, older_than, branch, True, now, set())
    kept = set() if force else _doomed(metas, keep, older_than, branch, True, now, live) - doomed
    return PrunePlan(
        doomed=[m for m in metas if m.id in doomed],
        kept_fork_points=kept,
        kept_live=(unguarded - doomed) & live,
        damaged=sum(1 for m in metas if m.damaged is not None),
    )


def delete_checkpoints(location: str, ids: list[str]) -> int:
    """Delete checkpoints by id from the store, oldest first, and what interrupted writes left behind;
    returns how many checkpoints were removed."""
    store = find_store(location)
    provider = _provider(store)
    removed = int(provider.delete(store, ids)) if ids else 0
    provider.clean(store)
    return removed
