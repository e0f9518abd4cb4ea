"""Ordering and pruning plans over checkpoint metadata; no I/O here, providers delete what the plan names.

Order: within one run's branch (same lineage and branch) the sequence number decides, so clock steps never
reorder a branch; runs and branches are interleaved by creation time.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable
from operator import attrgetter

from crewpoint.providers.base import CheckpointMeta

_BY_TIME = attrgetter("created_at", "sequence", "id")
_BY_SEQUENCE = attrgetter("sequence", "created_at", "id")


def newest_first(metas: Iterable[CheckpointMeta]) -> list[CheckpointMeta]:
    """``metas`` newest first: by sequence within a (lineage, branch), by time across them."""
    ordered = sorted(metas, key=_BY_TIME, reverse=True)
    last: dict[tuple[str, str], int] = {}
    for meta in ordered:
        group = (meta.lineage, meta.branch)
        if last.get(group, meta.sequence) < meta.sequence:
            break
        last[group] = meta.sequence
    else:
        return ordered
    # A clock step put some branch out of sequence order: order each branch by sequence, then interleave.
    groups: dict[tuple[str, str], list[CheckpointMeta]] = defaultdict(list)
    for meta in ordered:
        groups[(meta.lineage, meta.branch)].append(meta)
    runs = [sorted(group, key=_BY_SEQUENCE, reverse=True) for group in groups.values()]
    return list(heapq.merge(*runs, key=_BY_TIME, reverse=True))


def fork_points(metas: Iterable[CheckpointMeta]) -> set[str]:
    """Ids of checkpoints another branch starts from (a child's parent on a different branch).

    A parent that is not in ``metas`` is included too: whether it is a fork point cannot be told, and keeping
    an id that is not there costs nothing.
    """
    metas = list(metas)
    branch_of = {m.id: m.branch for m in metas}
    points: set[str] = set()
    for meta in metas:
        parent = meta.parent_id
        if parent and branch_of.get(parent) != meta.branch:
            points.add(parent)
    return points


def plan_prune(
    metas: Iterable[CheckpointMeta],
    keep: int,
    branch: str | None = None,
    protect: Iterable[str] = (),
) -> list[str]:
    """Ids to delete so that each branch (or only ``branch``) keeps its newest ``keep`` checkpoints.

    Fork points and ``protect``-ed ids are never planned for deletion; they do not count against ``keep``.
    """
    if keep < 0:
        raise ValueError(f"keep must be 0 or more, not {keep}")
    metas = list(metas)
    spared = fork_points(metas) | set(protect)
    seen: dict[str, int] = defaultdict(int)
    doomed: list[str] = []
    for meta in newest_first(metas):
        if branch is not None and meta.branch != branch:
            continue
        seen[meta.branch] += 1
        if seen[meta.branch] > keep and meta.id not in spared:
            doomed.append(meta.id)
    return doomed


def plan_prune_older_than(
    metas: Iterable[CheckpointMeta],
    seconds: float,
    now: float,
    branch: str | None = None,
    protect: Iterable[str] = (),
    force: bool = False,
) -> list[str]:
    """Ids of checkpoints created more than ``seconds`` before ``now``.

    Ids in ``protect`` are always kept; fork points are kept unless ``force`` is true.
    """
    if seconds < 0:
        raise ValueError(f"age must be 0 seconds or more, not {seconds}")
    metas = list(metas)
    spared = set(protect) if force else fork_points(metas) | set(protect)
    cutoff = now - seconds
    return [
        m.id
        for m in newest_first(metas)
        if (branch is None or m.branch == branch) and m.created_at < cutoff and m.id not in spared
    ]
