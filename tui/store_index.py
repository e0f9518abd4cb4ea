"""How the tree groups a store's metadata: entity → branch segment → checkpoints, forks under their source.

Pure data, built from :class:`CheckpointMeta` only (no bodies), so it can be computed in a worker thread for
stores of any size. A *segment* is one unbroken parent chain on one branch of one lineage: a fork starts a new
segment whose source is the checkpoint it was forked from; a resume on the same branch continues its segment.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from collections.abc import Container
from dataclasses import dataclass, field, replace
from operator import attrgetter
from typing import Any

from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.formats import written_not_run
from crewpoint.providers.runs import RunInfo, classify

TERMINAL_TRIGGERS = frozenset({"crew_kickoff_completed", "flow_finished", "lite_agent_execution_completed"})
"""A branch whose newest checkpoint has one of these triggers has finished."""

WRITTEN_NOT_RUN = written_not_run()
"""Triggers of checkpoints a command wrote without running anything (a fork of a CrewAI checkpoint): a branch
whose newest checkpoint is one of them is not live, however new it is."""

LIVE_WINDOW = 10.0
"""Seconds an unfinished branch looks live by the clock (:meth:`Segment.is_live`); no status takes it from there."""

RUN_STATES = ("running", "waiting", "answered", "budget", "finished", "failed", "interrupted", "crashed", "lost")
"""What :meth:`StoreIndex.state_of` can say about a segment (None: nothing known)."""

STATUS_WORDS = {
    "running": "live",
    "waiting": "waiting",
    "answered": "answered",
    "budget": "stopped: budget",
    "finished": "done",
    "failed": "failed",
    "interrupted": "interrupted",
    "crashed": "crashed",
}
"""How a run state is written for people (the tree's marks, ``list``'s STATUS column, the filter's words)."""

EntityKey = tuple[str, str]

RUN_LABEL_LENGTH = 6


def progress_text(meta: CheckpointMeta) -> str:
    """A checkpoint's progress as people read it (:meth:`crewpoint.entities.EntityKind.progress`): ``2/4`` tasks
    of a crew; a flow's steps run so far, ``step 3``, since its routers decide how many of its methods run
    ("" when nothing is counted)."""
    # lazy: the entity registry loads pathlib and more, which list (statuses only) never needs
    from crewpoint.entities import kind_of

    return kind_of(meta.entity_kind).progress(meta.tasks_done, meta.tasks_total)


def run_label(lineage: str) -> str:
    """How a run is named to people (the tree, the dialogs): the start of its lineage, the id shared by all its
    checkpoints."""
    return lineage[:RUN_LABEL_LENGTH]


@dataclass(frozen=True, slots=True)
class EntityRef:
    """Tree node data: an entity (kind, name)."""

    kind: str
    name: str


@dataclass(frozen=True, slots=True)
class SegmentRef:
    """Tree node data: one branch segment, by its stable key."""

    key: str


@dataclass(frozen=True, slots=True)
class CheckpointRef:
    """Tree node data: one checkpoint, by id."""

    id: str


@dataclass(frozen=True, slots=True)
class OlderRef:
    """Tree node data: the folded older runs of an entity, filled in when expanded."""

    kind: str
    name: str


NodeRef = EntityRef | SegmentRef | CheckpointRef | OlderRef


@dataclass(slots=True)
class Segment:
    key: str
    entity: EntityKey
    branch: str
    lineage: str
    metas: list[CheckpointMeta] = field(default_factory=list)
    source_id: str | None = None
    """The checkpoint this segment was forked from (its first checkpoint's parent), if it is in the store."""

    @property
    def head(self) -> CheckpointMeta:
        return self.metas[-1]

    @property
    def finished(self) -> bool:
        return _finished(self.metas[-1])

    def is_live(self, now: float | None = None) -> bool:
        return _live(self.metas[-1], time.time() if now is None else now)


def _finished(head: CheckpointMeta) -> bool:
    return head.trigger in TERMINAL_TRIGGERS or (head.tasks_total > 0 and head.tasks_done >= head.tasks_total)


def _live(head: CheckpointMeta, now: float) -> bool:
    if head.damaged or _finished(head) or head.trigger in WRITTEN_NOT_RUN:
        return False
    return now - head.created_at < LIVE_WINDOW


ORDER = attrgetter("sequence", "created_at", "id")
"""Checkpoints of one branch of one run, in the order they were written."""


def status_word(word: str) -> str | None:
    """The status a filter word asks for: a status word (live, waiting, done, …) or ``status:WORD``; else None."""
    field_name, _, needle = word.partition(":")
    if needle and field_name == "status":
        return needle
    return word if word in STATUS_WORDS.values() else None


def matches(meta: CheckpointMeta, query: str, status: str | None = None) -> bool:
    """Does ``meta`` match a filter? Words must all match; ``branch:``, ``trigger:``, ``entity:`` narrow a word;
    a status word (live, waiting, done, interrupted, crashed, failed), alone or as ``status:WORD``, matches the
    ``status`` of the meta's run."""
    for word in query.lower().split():
        wanted = status_word(word)
        if wanted is not None:
            if status != wanted:
                return False
            continue
        field_name, _, needle = word.partition(":")
        if needle and field_name == "branch":
            if needle not in meta.branch.lower():
                return False
        elif needle and field_name == "trigger":
            if needle not in meta.trigger.lower():
                return False
        elif needle and field_name == "entity":
            if needle not in f"{meta.entity_kind} {meta.entity_name}".lower():
                return False
        else:
            haystack = " ".join(
                (meta.id, meta.branch, meta.trigger, meta.entity_kind, meta.entity_name, meta.damaged or "")
            ).lower()
            if word not in haystack:
                return False
    return True


@dataclass(slots=True)
class StoreIndex:
    """The grouped view of a store's metadata."""

    metas: dict[str, CheckpointMeta] = field(default_factory=dict)
    segments: dict[str, Segment] = field(default_factory=dict)
    segment_of: dict[str, str] = field(default_factory=dict)
    entities: dict[EntityKey, list[str]] = field(default_factory=dict)
    """Entity → keys of its top-level segments (those with no source in view), oldest first."""
    forks: dict[str, list[str]] = field(default_factory=dict)
    """Checkpoint id → keys of the segments forked from it, oldest first."""
    runs: dict[tuple[str, str], list[RunInfo]] = field(default_factory=dict)
    """(lineage, branch) → the run records of that pair, newest start first."""
    query: str = ""
    total: int = 0

    @classmethod
    def build(cls, metas: list[CheckpointMeta], query: str = "", runs: list[RunInfo] | None = None) -> StoreIndex:
        index = cls(query=query.strip(), total=len(metas))
        index.set_runs(runs or [])
        chains = _segments(metas, {meta.id for meta in metas})
        if index.query:
            statuses: dict[str, str] = {}
            if any(status_word(word) is not None for word in index.query.lower().split()):
                statuses = cls.build(metas, "", runs).statuses()
            visible_ids = {meta.id for meta in metas if matches(meta, index.query, statuses.get(meta.id))}
            for segment in chains:
                segment.metas = [m for m in segment.metas if m.id in visible_ids]
            chains = [segment for segment in chains if segment.metas]
        segments, by_id, segment_of = index.segments, index.metas, index.segment_of
        for segment in chains:
            key = segment.key
            segments[key] = segment
            for meta in segment.metas:
                by_id[meta.id] = meta
                segment_of[meta.id] = key
        for segment in index.segments.values():
            if segment.source_id is not None and segment.source_id in index.metas:
                index.forks.setdefault(segment.source_id, []).append(segment.key)
            else:
                index.entities.setdefault(segment.entity, []).append(segment.key)
        index.entities = dict(sorted(index.entities.items()))
        return index

    def set_runs(self, runs: list[RunInfo]) -> None:
        """Take these run records (all of the store's) in place of the ones held."""
        grouped: dict[tuple[str, str], list[RunInfo]] = {}
        for run in sorted(runs, key=lambda r: r.started_at, reverse=True):
            grouped.setdefault((run.lineage, run.branch), []).append(run)
        self.runs = grouped

    def run_of(self, segment: Segment) -> RunInfo | None:
        """The run record of a segment: the newest run of its (lineage, branch) whose latest checkpoint lies in
        this segment. A run whose latest checkpoint is older than the run is still at the checkpoint it started
        from: from a segment's head it continues that segment; from an earlier checkpoint it will start a segment
        of its own, so it marks none yet (a resume from an earlier checkpoint, cancelled at once, does not mark
        the finished run it started from). Else the run that wrote the segment's newest checkpoint, when its record
        is here: a run that wrote checkpoints to other stores between them leaves segments its latest is not in."""
        runs = self.runs.get((segment.lineage, segment.branch), ())
        for run in runs:
            key = self.segment_of.get(run.checkpoint_id) if run.checkpoint_id is not None else None
            if key is None:
                return run  # its checkpoint is not in view (none yet, or filtered out): the newest run stands
            if key != segment.key:
                continue
            started_here = self.metas[run.checkpoint_id or ""].created_at < run.started_at
            if started_here and segment.head.id != run.checkpoint_id:
                continue
            return run
        writer = segment.head.run_id
        return next((run for run in runs if run.run_id == writer), None) if writer else None

    def state_of(self, segment: Segment, now: float | None = None) -> str | None:
        """One of :data:`RUN_STATES` from the segment's run record; None without one: neither how recent a
        checkpoint is nor its saying the work is complete says what became of its run."""
        run = self.run_of(segment)
        return classify(run, now) if run is not None else None

    def statuses(self, now: float | None = None) -> dict[str, str]:
        """Checkpoint id → the status word of the run of its segment (ids without a known run are left out)."""
        out: dict[str, str] = {}
        for segment in self.segments.values():
            state = self.state_of(segment, now)
            if state is not None:
                for meta in segment.metas:
                    out[meta.id] = STATUS_WORDS.get(state, state)
        return out

    def live_branches(self, now: float | None = None) -> set[str]:
        """Keys of the segments whose run is going."""
        return {s.key for s in self.segments.values() if self.state_of(s, now) == "running"}


class ListingStatuses:
    """Checkpoint id → its run's status (``list``'s STATUS) for a listing's chunks, newest first: each chunk's
    :meth:`StoreIndex.statuses` (its segments alone), a segment cut by a chunk boundary read as its head."""

    def __init__(self, runs: list[RunInfo]) -> None:
        self.index = StoreIndex()
        self.index.set_runs(runs)
        self.named = {run.checkpoint_id for run in runs if run.checkpoint_id}  # all StoreIndex.run_of looks up
        self.claims: dict[str, tuple[tuple[str, str, EntityKey], tuple[Any, ...], str | None]] = {}
        """Parent id → (lineage, branch, entity), order and status of the oldest checkpoint of a segment shown in
        an earlier chunk: the first of the parent's children on its branch continues the parent's segment."""

    def of(self, chunk: list[CheckpointMeta]) -> dict[str, str]:
        index, claims, now = self.index, self.claims, time.time()
        ids = list(map(_ID, chunk))
        if len(set(ids)) == len(ids):
            segments = _segments(chunk, ())  # the status of a segment does not ask where it was forked from
            named = self.named.intersection(ids)
            index.metas = {meta.id: meta for meta in chunk if meta.id in named} if named else {}
            index.segment_of = {m.id: s.key for s in segments for m in s.metas if m.id in named} if named else {}
        else:  # an id listed twice: the index decides which of the two it keeps
            index = StoreIndex.build(chunk, "")
            index.runs = self.index.runs
            segments = list(index.segments.values())
        out: dict[str, str] = {}
        for segment in segments:
            head, oldest = segment.metas[-1], segment.metas[0]
            placed = (segment.lineage, segment.branch, segment.entity)
            claim = claims.get(head.id)
            if claim is not None and claim[0] == placed and claim[1] > ORDER(head):
                word = claim[2]  # the rest of a segment whose newer checkpoints an earlier chunk showed
            elif (segment.lineage, segment.branch) in index.runs:
                state = index.state_of(segment, now)
                word = STATUS_WORDS.get(state, state) if state is not None else None
            else:  # no run record: nothing is known of its run (as StoreIndex.state_of without a run)
                word = None
            if word is not None:
                out.update(dict.fromkeys(map(_ID, segment.metas), word))
            if oldest.parent_id:
                order = ORDER(oldest)
                known = claims.get(oldest.parent_id)
                if known is None or known[1] > order:
                    claims[oldest.parent_id] = (placed, order, word)
        return out


REQUEST_FIELDS = ("request_id", "message", "label", "output", "outcomes", "default_outcome", "kind", "deadline")
"""What a pending request shows (``list --json``'s ``request``, the Answer dialog), read from a waiting body."""


def pending_request(body: object) -> dict[str, Any] | None:
    """The request for a person's answer a checkpoint body holds (its entity's ``pending_feedback``), as plain
    checked data (:data:`REQUEST_FIELDS`, and ``method`` or ``task_index``), or None when it holds none. It is
    checkpoint data: strings stay strings to be shown literally, never markup or code."""
    entity = body.get("entity") if isinstance(body, dict) else None
    pending = entity.get("pending_feedback") if isinstance(entity, dict) else None
    if not isinstance(pending, dict) or not isinstance(pending.get("request_id"), str):
        return None
    output = pending.get("output")
    outcomes = pending.get("outcomes")
    default = pending.get("default_outcome")
    deadline = pending.get("deadline")
    request: dict[str, Any] = {
        "request_id": pending["request_id"],
        "message": str(pending.get("message") or ""),
        "label": str(pending.get("label") or pending.get("method") or ""),
        "output": output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str),
        "outcomes": [str(o) for o in outcomes] if isinstance(outcomes, list) else [],
        "default_outcome": default if isinstance(default, str) else None,
        "kind": "task" if pending.get("kind") == "task" else "method",
        "deadline": deadline if type(deadline) in (int, float) else None,
    }
    if request["kind"] == "task":
        index = pending.get("task_index")
        request["task_index"] = index if type(index) is int else None
    else:
        request["method"] = str(pending.get("method") or "")
    return request


def budget_lines(meta: CheckpointMeta, events: list[Any], origin: object = None) -> list[str]:
    """What ``info`` says of a checkpoint a budget stopped: ``stopped: budget``, what the run spent of which budget
    (its ``budget_exceeded`` event), and the resume command (:func:`~crewpoint.feedback.command_for`) that goes on,
    naming the program the recorded ``origin`` (or the project) names."""
    if meta.trigger != "budget_exceeded":
        return []
    # lazy: crewpoint.cost loads decimal, which list (statuses only) never needs
    from crewpoint.cost import format_usd

    # lazy: naming a command reads the store's provider, only for a checkpoint a budget stopped
    from crewpoint.feedback import command_at

    found = [e for e in events if isinstance(e, dict) and e.get("type") == "budget_exceeded"]
    line = f"{STATUS_WORDS['budget']}: the run stopped here, before an LLM call"
    options = "--budget USD or --budget-tokens N"
    if found:
        event = found[-1]

        def number(key: str) -> float | None:
            value = event.get(key)
            ok = isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e16  # not nan, inf
            return float(value) if ok and isinstance(value, int | float) else None

        spent_usd, spent_tokens = number("spent_usd"), number("spent_tokens")
        budget_usd, budget_tokens = number("budget_usd"), number("budget_tokens")
        spent = [format_usd(spent_usd)] if spent_usd is not None else []
        spent += [f"{int(spent_tokens):,} tokens"] if spent_tokens is not None else []
        limits = [format_usd(budget_usd)] if budget_usd is not None else []
        limits += [f"{int(budget_tokens):,} tokens"] if budget_tokens is not None else []
        if spent and limits:
            line += f": spent {' and '.join(spent)} of {' or '.join(limits)}"
        suggested = [f"--budget {budget_usd * 2:g}"] if budget_usd is not None and budget_usd > 0 else []
        suggested += [f"--budget-tokens {int(budget_tokens) * 2}"] if budget_tokens is not None else []
        options = " ".join(suggested) or options
    return ["", line, f"  go on with a larger budget: {command_at('resume', meta, origin)} {options}"]


def waiting_requests(store: str, runs: list[RunInfo]) -> tuple[list[RunInfo], dict[str, dict[str, Any]]]:
    """Settle the ``waiting`` run records of ``store`` so that each request shows waiting once: a run whose
    request was claimed at its checkpoint reads ``answered``; of the runs of one branch holding one request (a
    plain resume that waited again asked it anew at its own checkpoint), the one at the newest checkpoint waits and
    the others read ``interrupted``; a fork's copy is its own. The requests come back by the id of the checkpoint
    holding them. Reads the bodies of waiting runs' checkpoints and their requests' claims, no other claim."""
    waiting = [run for run in runs if run.status == "waiting" and run.checkpoint_id]
    if not waiting:
        return runs, {}
    # lazy: a request's claims are read by the engine's rule (its key, its damage), only when a run waits
    from crewpoint.feedback_claims import is_claimed

    provider = provider_for(store)
    holders: dict[tuple[str, str, str], list[tuple[Any, RunInfo, dict[str, Any]]]] = defaultdict(list)
    spots = {(run.lineage, run.branch) for run in waiting}
    answered = [r for r in runs if r.status == "answered" and r.checkpoint_id and (r.lineage, r.branch) in spots]
    for run in waiting + answered:  # an answered request newer than a waiting one supersedes it too
        try:
            record = provider.read(store, run.checkpoint_id)
        except Exception:  # a damaged or vanished checkpoint: the record stands, with no request to show
            continue
        request = pending_request(record.body)
        if request is not None:
            order = (record.meta.sequence, record.meta.created_at, run.started_at)
            holders[(request["request_id"], record.meta.lineage, record.meta.branch)].append((order, run, request))
    requests: dict[str, dict[str, Any]] = {}
    settled: dict[str, str] = {}
    for held in holders.values():
        held.sort(key=lambda h: h[0])
        for at, (_, run, request) in enumerate(held):
            if run.status != "waiting":
                continue
            if is_claimed(provider, store, request, run.checkpoint_id or ""):
                settled[run.run_id] = "answered"
            elif at < len(held) - 1:
                settled[run.run_id] = "interrupted"  # a newer checkpoint holds its request, asked anew
            else:
                requests[run.checkpoint_id or ""] = request
    return [replace(run, status=settled[run.run_id]) if run.run_id in settled else run for run in runs], requests


_DAMAGED, _SPOT = attrgetter("damaged"), attrgetter("lineage", "branch", "entity_kind", "entity_name")
_ID, _PARENT = attrgetter("id"), attrgetter("parent_id")


def _segments(metas: list[CheckpointMeta], known: Container[str | None]) -> list[Segment]:
    """The branch segments of ``metas``, oldest first: each (lineage, branch, entity) cut into unbroken parent
    chains (a resume from an earlier checkpoint starts one); a source is a first parent ``known`` holds."""
    groups = _groups(metas)
    chains: list[Segment] = []
    for (lineage, branch, entity), members in groups.items():
        prefix = f"{entity[0]}/{entity[1]}/{lineage}/{branch}/"
        if len(members) > 1:
            members.sort(key=ORDER)
        if len(members) == 1 or list(map(_PARENT, members[1:])) == list(map(_ID, members[:-1])):  # one chain
            source = members[0].parent_id if members[0].parent_id in known else None
            chains.append(Segment(prefix + members[0].id, entity, branch, lineage, members, source))
            continue
        own: dict[str, Segment] = {}
        for meta in members:
            parent_id = meta.parent_id
            segment = own.get(parent_id) if parent_id else None
            if segment is not None and segment.metas[-1].id != parent_id:
                segment = None  # a second child on the same branch (a resume from an earlier checkpoint)
            if segment is None:
                source = parent_id if parent_id in known else None
                segment = Segment(prefix + meta.id, entity, branch, lineage, source_id=source)
                chains.append(segment)
            segment.metas.append(meta)
            own[meta.id] = segment
    chains.sort(key=lambda s: (s.metas[0].created_at, s.metas[0].sequence, s.key))
    return chains


def _groups(metas: list[CheckpointMeta]) -> dict[tuple[str, str, EntityKey], list[CheckpointMeta]]:
    """The metas by (lineage, branch, entity) (:func:`_placements`); when none is damaged and no two (kind, name)
    name one entity, by their own fields, the entity made once per group."""
    if not any(map(_DAMAGED, metas)):
        raw = _group_by(list(map(_SPOT, metas)), metas)  # (lineage, branch, kind, name)
        made = {spot[2:]: _entity_of(members[0]) for spot, members in raw.items()}
        if len(set(made.values())) == len(made):
            return {(spot[0], spot[1], made[spot[2:]]): members for spot, members in raw.items()}
    keys = [(lineage, meta.branch, entity) for meta, (lineage, entity) in zip(metas, _placements(metas), strict=True)]
    return _group_by(keys, metas)


def _group_by(keys: list[Any], metas: list[CheckpointMeta]) -> dict[Any, list[CheckpointMeta]]:
    groups: dict[Any, list[CheckpointMeta]] = defaultdict(list)
    for key, meta in zip(keys, metas, strict=True):
        groups[key].append(meta)
    return groups


def _placements(metas: list[CheckpointMeta]) -> list[tuple[str, EntityKey]]:
    """Lineage and entity of each meta; a damaged one (which knows only its name) borrows its neighbour's."""
    by_id = {meta.id: meta for meta in metas}
    child_of: dict[str, CheckpointMeta] = {}
    for meta in metas:
        if meta.parent_id and not meta.damaged:
            child_of.setdefault(meta.parent_id, meta)
    out: list[tuple[str, EntityKey]] = []
    for meta in metas:
        if meta.damaged and not meta.lineage:
            parent = by_id.get(meta.parent_id or "")
            neighbour = parent if parent is not None and not parent.damaged else child_of.get(meta.id)
            if neighbour is not None and neighbour.branch == meta.branch:
                out.append((neighbour.lineage, _entity_of(neighbour)))
                continue
        out.append((meta.lineage, _entity_of(meta)))
    return out


def _entity_of(meta: CheckpointMeta) -> EntityKey:
    if meta.entity_kind or meta.entity_name:
        return (meta.entity_kind or "entity", meta.entity_name or "unnamed")
    return ("damaged" if meta.damaged else "entity", "unknown")
