"""Ordering and pruning plans over checkpoint metadata; no I/O here, providers delete what the plan names.

Pruning has one path: a :class:`PruneStrategy` says what to delete, each provider's ``prune`` lists its store
and reads its run records under the store's lock or in one transaction, asks the strategy for its
:class:`PrunePlan`, and (unless it is a dry run) deletes exactly that plan before letting go.

Order: within one run's branch (same lineage and branch) the sequence number decides, so clock steps never
reorder a branch; runs and branches are interleaved by creation time.
"""

from __future__ import annotations

import builtins
import heapq
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import attrgetter

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.claims import claim_key
from crewpoint.providers.runs import RunInfo, classify

REQUESTED = "human_feedback_requested"
"""The trigger of a checkpoint a run wrote to wait for a person's answer: its metadata says so, so a prune reads the
body (and the claim) only of checkpoints with this trigger that it would otherwise delete."""

Waiting = Callable[[builtins.list[CheckpointMeta]], set[str]]
"""Given checkpoints with the trigger :data:`REQUESTED`, the ids of those an unanswered request waits at: a
provider's reader of their bodies and claims, under the same lock or transaction as the prune."""

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


def live_checkpoints(metas: Iterable[CheckpointMeta], runs: Iterable[RunInfo], own_run: str | None = None) -> set[str]:
    """Ids a prune must leave alone because a live (or lost) run other than ``own_run`` owns or stands on them: every
    checkpoint of its branch (same lineage and branch) and every ancestor of its newest checkpoint."""
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


def request_key(body: object, checkpoint_id: str) -> str | None:
    """The claim key of the request for a person's answer that ``body``, the body of the checkpoint
    ``checkpoint_id``, holds (its entity's ``pending_feedback``: a request is identified by its id and the checkpoint
    holding it, :func:`~crewpoint.providers.claims.claim_key`), or None when it holds none."""
    entity = body.get("entity") if isinstance(body, dict) else None
    pending = entity.get("pending_feedback") if isinstance(entity, dict) else None
    request_id = pending.get("request_id") if isinstance(pending, dict) else None
    return claim_key(request_id, checkpoint_id) if isinstance(request_id, str) else None


def unanswered(
    metas: Iterable[CheckpointMeta], body_of: Callable[[CheckpointMeta], object], claimed: Callable[[str], bool]
) -> set[str]:
    """Ids of the checkpoints among ``metas`` an unanswered request waits at: their body holds a request (see
    :func:`request_key`) that nobody has claimed yet. What cannot be told (a body or a claim that cannot be read)
    is kept: a prune never costs a person's request on a guess."""
    waiting: set[str] = set()
    for meta in metas:
        try:
            key = request_key(body_of(meta), meta.id)
            if key is not None and not claimed(key):
                waiting.add(meta.id)
        except Exception:  # unreadable: whether it waits cannot be told, and keeping it costs one record
            waiting.add(meta.id)
    return waiting


Entity = tuple[str, str]
"""An entity's kind and name (``("crew", "research")``): the unit a count keeps its newest N of, per branch."""


def entity_of(meta: CheckpointMeta) -> Entity:
    return (meta.entity_kind, meta.entity_name)


@dataclass(frozen=True)
class PrunePlan:
    """What one prune deletes (or, in a dry run, would delete), and what it kept that it would otherwise have."""

    doomed: builtins.list[CheckpointMeta] = field(default_factory=builtins.list)
    """Newest first."""
    kept_fork_points: frozenset[str] = frozenset()
    """Checkpoints kept because another branch forks from them or a fork starts with them."""
    kept_live: frozenset[str] = frozenset()
    """Checkpoints kept because a live (or lost) run owns or stands on them."""
    kept_waiting: frozenset[str] = frozenset()
    """Checkpoints kept because a request for a person's answer waits at them, unanswered."""
    damaged: int = 0
    """Damaged records in the store: never counted, never deleted by a prune."""

    @property
    def ids(self) -> builtins.list[str]:
        return [m.id for m in self.doomed]


@dataclass(frozen=True)
class PruneStrategy:
    """What a prune deletes: the one description every provider's :meth:`~BaseProvider.prune` takes, and the one
    plan behind ``max_checkpoints``, ``prune --keep N``, ``prune --older-than AGE`` and their dry runs.

    ``keep``: beyond the newest N checkpoints of each entity (kind and name) per branch. ``older_than``: created
    more than that many seconds before ``now``. With both, only checkpoints both name. ``branch`` and ``entity``
    narrow the prune to one branch, one entity; ``only`` (a run's own checkpoints) to the ids it holds: the
    others still count, but are never deleted.

    Never deleted: damaged records (they never count either), ids in ``protect`` (the checkpoint a run resumes
    from, the one it wrote last), the checkpoints of live runs other than ``own_run`` and every ancestor of their
    newest checkpoint, every checkpoint an unanswered request waits at (even with ``force``), and unless ``force``
    (the command line's explicit word) every checkpoint another branch forks from and the first checkpoint of each
    fork.
    """

    keep: int | None = None
    older_than: float | None = None
    now: float | None = None
    branch: str | None = None
    entity: Entity | None = None
    protect: frozenset[str] = frozenset()
    own_run: str | None = None
    force: bool = False
    only: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.keep is None and self.older_than is None:
            raise ValueError("prune needs a number of checkpoints to keep or an age")
        if self.keep is not None and self.keep < 0:
            raise ValueError(f"keep must be 0 or more, not {self.keep}")
        if self.older_than is not None and self.older_than < 0:
            raise ValueError(f"age must be 0 seconds or more, not {self.older_than}")

    def plan(
        self, metas: Iterable[CheckpointMeta], runs: Iterable[RunInfo] = (), waiting: Waiting | None = None
    ) -> PrunePlan:
        """The plan over a store's metadata and run records; changes nothing. ``waiting`` (the store's reader of
        requests, see :data:`Waiting`) is asked only about the checkpoints the plan would otherwise delete whose
        trigger is :data:`REQUESTED`; without it, every such checkpoint is kept (whether it waits cannot be told)."""
        import time

        metas = builtins.list(metas)
        good = [m for m in metas if m.damaged is None]
        ordered = newest_first(good)
        chosen = self._chosen(ordered, time.time() if self.now is None else self.now)
        live = live_checkpoints(metas, runs, self.own_run) - self.protect
        structural = (fork_points(metas) | fork_roots(good)) - self.protect - live
        spared = self.protect | live | (set() if self.force else structural)
        doomed = [m for m in ordered if m.id in chosen and m.id not in spared]
        asking = [m for m in doomed if m.trigger == REQUESTED]
        held = (waiting(asking) if waiting is not None else {m.id for m in asking}) if asking else set()
        held &= {m.id for m in asking}
        return PrunePlan(
            doomed=[m for m in doomed if m.id not in held],
            kept_fork_points=frozenset(set() if self.force else chosen & structural),
            kept_live=frozenset(chosen & live),
            kept_waiting=frozenset(held),
            damaged=len(metas) - len(good),
        )

    def _chosen(self, ordered: builtins.list[CheckpointMeta], now: float) -> set[str]:
        """Ids the count and the age name, before anything is spared."""
        scoped = [
            m
            for m in ordered
            if (self.branch is None or m.branch == self.branch) and (self.entity is None or entity_of(m) == self.entity)
        ]
        chosen = {m.id for m in scoped}
        if self.keep is not None:
            seen: dict[tuple[Entity, str], int] = defaultdict(int)
            beyond: set[str] = set()
            for meta in scoped:
                group = (entity_of(meta), meta.branch)
                seen[group] += 1
                if seen[group] > self.keep:
                    beyond.add(meta.id)
            chosen &= beyond
        if self.older_than is not None:
            cutoff = now - self.older_than
            chosen &= {m.id for m in scoped if m.created_at < cutoff}
        if self.only is not None:
            chosen &= self.only
        return chosen
