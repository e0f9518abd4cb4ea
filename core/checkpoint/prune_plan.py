"""Which checkpoints a prune deletes, and deleting them."""

from __future__ import annotations

from dataclasses import dataclass

from crewpoint.checkpoint.stores import _provider, find_store
from crewpoint.providers.base import CheckpointMeta


@dataclass
class PrunePlan:
    doomed: list[CheckpointMeta]
    kept_fork_points: set[str]


def _beyond_newest(metas: list[CheckpointMeta], keep: int, branch: str | None) -> set[str]:
    from crewpoint.providers.prune import newest_first

    seen: dict[str, int] = {}
    out: set[str] = set()
    for meta in newest_first(metas):
        if branch is not None and meta.branch != branch:
            continue
        seen[meta.branch] = seen.get(meta.branch, 0) + 1
        if seen[meta.branch] > keep:
            out.add(meta.id)
    return out


def _doomed(
    metas: list[CheckpointMeta], keep: int | None, older_than: float | None, branch: str | None, force: bool, now: float
) -> set[str]:
    from crewpoint.providers.prune import plan_prune as plan_keep
    from crewpoint.providers.prune import plan_prune_older_than

    chosen: set[str] | None = None
    if keep is not None:
        chosen = _beyond_newest(metas, keep, branch) if force else set(plan_keep(metas, keep=keep, branch=branch))
    if older_than is not None:
        old = set(plan_prune_older_than(metas, older_than, now, branch=branch, force=force))
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
    """Which checkpoints a prune deletes, newest first: beyond the newest ``keep`` per branch, and/or older
    than ``older_than`` seconds (with both, only those matching both). Fork points are kept unless ``force``;
    ``kept_fork_points`` names the ones kept that would otherwise go."""
    import time

    if keep is None and older_than is None:
        raise ValueError("prune needs a number of checkpoints to keep or an age")
    store = find_store(location)
    metas: list[CheckpointMeta] = _provider(store).list(store)
    now = time.time() if now is None else now
    doomed = _doomed(metas, keep, older_than, branch, force, now)
    kept = set() if force else _doomed(metas, keep, older_than, branch, True, now) - doomed
    return PrunePlan(doomed=[m for m in metas if m.id in doomed], kept_fork_points=kept)


def delete_checkpoints(location: str, ids: list[str]) -> int:
    """Delete checkpoints by id from the store; returns how many were removed."""
    if not ids:
        return 0
    store = find_store(location)
    return int(_provider(store).delete(store, ids))
