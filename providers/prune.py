"""Ordering and pruning plans over checkpoint metadata; no I/O here, providers delete what the plan names.

Order: within one run's branch (same lineage and branch) the sequence number decides, so clock steps never
reorder a branch; runs and branches are interleaved by creation time.
"""

from __future__ import annotations

import builtins
import heapq
from collections import defaultdict
from collections.abc import Iterable
from operator import attrgetter

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.runs import RunInfo

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
    """Ids of checkpoints something else continues from: a child on a different branch, or more than one child
    (two runs resumed from it). Damaged records count as children here: they never cost a good checkpoint.

    A parent that is not in ``metas`` is included too: whether it is a fork point cannot be told, and keeping
    an id that is not there costs nothing.
    """
    metas = builtins.list(metas)
    branch_of = {m.id: m.branch for m in metas}
    points: set[str] = set()
    children: dict[str, int] = defaultdict(int)
    for meta in metas:
        parent = meta.parent_id
        if parent:
            children[parent] += 1
            if branch_of.get(parent) != meta.branch or children[parent] > 1:
                points.add(parent)
    return points


def fork_roots(metas: Iterable[CheckpointMeta]) -> set[str]:
    """Ids of the first checkpoint of each fork: its parent is on another branch. Deleting one would cut the
    fork from the checkpoint it came from."""
    metas = builtins.list(metas)
    branch_of = {m.id: m.branch for m in metas}
    return {m.id for m in metas if m.parent_id and m.parent_id in branch_of and branch_of[m.parent_id] != m.branch}


def own_chain(metas: Iterable[CheckpointMeta], head: str) -> set[str]:
    """``head`` and its parents on the same run's branch (same lineage and branch): one run's own checkpoints."""
    by_id = {m.id: m for m in metas}
    start = by_id.get(head)
    chain: set[str] = set()
    current = start
    while current is not None and current.id not in chain:
        if start is None or current.lineage != start.lineage or current.branch != start.branch:
            break
        chain.add(current.id)
        current = by_id.get(current.parent_id) if current.parent_id else None
    return chain


def live_checkpoints(metas: Iterable[CheckpointMeta], runs: Iterable[RunInfo], own_run: str | None = None) -> set[str]:
    """Ids a prune must leave alone because a live (or lost) run other than ``own_run`` owns or stands on them: every
    checkpoint of its branch (same lineage and branch) and every ancestor of its newest checkpoint."""
    from crewpoint.providers.runs import classify

    # a lost run (a stale beat from another host) may still be going: its checkpoints are spared too
    others = [r for r in runs if r.run_id != own_run and classify(r) in ("running", "lost")]
    if not others:
        return set()
    metas = builtins.list(metas)
    groups = {(r.lineage, r.branch) for r in others}
    ids = {m.id for m in metas if (m.lineage, m.branch) in groups}
    by_id = {m.id: m for m in metas}
    for run in others:
        current = by_id.get(run.checkpoint_id) if run.checkpoint_id else None
        while current is not None and current.id not in ids:
            ids.add(current.id)
            current = by_id.get(current.parent_id) if current.parent_id else None
        if run.checkpoint_id:
            ids.add(run.checkpoint_id)
    return ids


def plan_prune(
    metas: Iterable[CheckpointMeta],
    keep: int,
    branch: str | None = None,
    protect: Iterable[str] = (),
    *,
    lineage: str | None = None,
    head: str | None = None,
    force: bool = False,
) -> builtins.list[str]:
    """Ids to delete so that each run's branch (same ``lineage`` and ``branch``) keeps its newest ``keep``.

    Only good records count and only good records are planned: a damaged one neither takes the place of a good
    one nor is deleted by a prune. Never planned: ids in ``protect``, and unless ``force``, fork points
    (checkpoints another branch or run continues from) and the first checkpoint of each fork. ``branch`` and
    ``lineage`` narrow the plan; ``head`` narrows it to one run's own chain (:func:`own_chain`).
    """
    if keep < 0:
        raise ValueError(f"keep must be 0 or more, not {keep}")
    metas = builtins.list(metas)
    good = [m for m in metas if m.damaged is None]
    spared = set(protect) if force else fork_points(metas) | fork_roots(good) | set(protect)
    chain = own_chain(good, head) if head is not None else None
    seen: dict[tuple[str, str], int] = defaultdict(int)
    doomed: builtins.list[str] = []
    for meta in newest_first(good):
        if branch is not None and meta.branch != branch:
            continue
        if lineage is not None and meta.lineage != lineage:
            continue
        if chain is not None and meta.id not in chain:
            continue
        group = (meta.lineage, meta.branch)
        seen[group] += 1
        if seen[group] > keep and meta.id not in spared:
            doomed.append(meta.id)
    return doomed


def plan_prune_older_than(
    metas: Iterable[CheckpointMeta],
    seconds: float,
    now: float,
    branch: str | None = None,
    protect: Iterable[str] = (),
    force: bool = False,
) -> builtins.list[str]:
    """Ids of good checkpoints created more than ``seconds`` before ``now`` (damaged ones are never planned).

    Ids in ``protect`` are always kept; fork points and fork roots are kept unless ``force`` is true.
    """
    if seconds < 0:
        raise ValueError(f"age must be 0 seconds or more, not {seconds}")
    metas = builtins.list(metas)
    good = [m for m in metas if m.damaged is None]
    spared = set(protect) if force else fork_points(metas) | fork_roots(good) | set(protect)
    cutoff = now - seconds
    return [
        m.id
        for m in newest_first(good)
        if (branch is None or m.branch == branch) and m.created_at < cutoff and m.id not in spared
    ]
