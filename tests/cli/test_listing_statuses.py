"""``list``'s STATUS column, made chunk by chunk without a whole index, says what the store index says: each
chunk's segments and their runs' states as :meth:`StoreIndex.build` and :meth:`StoreIndex.state_of` give them, a
segment cut by a chunk boundary read as one."""

from __future__ import annotations

import random
import time
from typing import Any

import pytest

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.listed import row_of
from crewpoint.providers.runs import RunInfo
from crewpoint.tui.store_index import ORDER, STATUS_WORDS, ListingStatuses, StoreIndex


def _by_the_index(chunks: list[list[CheckpointMeta]], runs: list[RunInfo]) -> list[dict[str, str]]:
    """The statuses of each chunk from a whole :class:`StoreIndex` of it (the rule), a segment whose newer part
    an earlier chunk showed taking the word shown there."""
    claims: dict[str, tuple[Any, ...]] = {}
    out = []
    for chunk in chunks:
        index = StoreIndex.build(chunk, "", runs)
        words: dict[str, str] = {}
        for segment in index.segments.values():
            head, oldest = segment.metas[-1], segment.metas[0]
            placed = (segment.lineage, segment.branch, segment.entity)
            claim = claims.get(head.id)
            if claim is not None and claim[0] == placed and claim[1] > ORDER(head):
                word = claim[2]
            else:
                state = index.state_of(segment)
                word = STATUS_WORDS.get(state, state) if state is not None else None
            if word is not None:
                words.update((meta.id, word) for meta in segment.metas)
            if oldest.parent_id:
                known = claims.get(oldest.parent_id)
                if known is None or known[1] > ORDER(oldest):
                    claims[oldest.parent_id] = (placed, ORDER(oldest), word)
        out.append(words)
    return out


def _store(seed: int) -> tuple[list[CheckpointMeta], list[RunInfo]]:
    """Runs that go straight, finish, stop, resume from an earlier checkpoint, fork to other branches, write
    damaged records, share ids by accident (odd seeds); some are recent (live), most old; each with a run record
    or none, at its head, at an earlier checkpoint, or at none yet."""
    rng = random.Random(seed)
    now = time.time()
    metas: list[CheckpointMeta] = []
    runs: list[RunInfo] = []
    for run in range(rng.randrange(20, 60)):
        lineage, branch = f"l{run % 7}", rng.choice(["main", "main", "b", "c"])
        kind, name = rng.choice([("crew", "c"), ("flow", "f"), ("", "c"), ("entity", "c"), ("crew", "")])
        parent = rng.choice([None, None, *(m.id for m in metas[-8:])])
        start = rng.choice([now - 5000, now - 2, now - 5000 + run])
        total = rng.randrange(0, 5)
        for sequence in range(1, rng.randrange(2, 8)):
            cid = f"{len(metas):032x}" if seed % 2 == 0 or rng.random() > 0.05 or not metas else metas[-1].id
            if rng.random() < 0.15 and metas:
                parent = rng.choice(metas).id  # a resume from somewhere earlier
            trigger = rng.choice(["task_completed"] * 6 + ["crew_kickoff_completed", "crewpoint_fork"])
            damaged = "cut" if rng.random() < 0.05 else None
            metas.append(
                CheckpointMeta(
                    cid,
                    parent,
                    branch,
                    "" if damaged and rng.random() < 0.5 else lineage,
                    rng.choice([sequence, sequence, 1]),
                    start + sequence * rng.choice([0.5, 0.0, -0.1]),
                    trigger,
                    kind,
                    name,
                    min(sequence, total),
                    total,
                    damaged=damaged,
                )
            )
            parent = cid
        if rng.random() < 0.7:
            at = rng.choice([metas[-1].id, rng.choice(metas).id, None, ""])
            status = rng.choice(["running", "finished", "failed", "interrupted", "waiting", "answered", "budget"])
            beat = rng.choice([now, now - 100])
            started = start + rng.choice([-1, 1, 3])
            runs.append(RunInfo(f"r{run}", 1, "elsewhere", started, beat, status, branch, lineage, "", "", at))
    rng.shuffle(metas)
    return metas, runs


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("size", [7, 50, 10_000])
def test_statuses_chunk_by_chunk_are_the_index_s(seed: int, size: int) -> None:
    metas, runs = _store(seed)
    ordered = sorted(metas, key=lambda m: (m.created_at, m.sequence, m.id), reverse=True)
    chunks = [ordered[i : i + size] for i in range(0, len(ordered), size)]
    expected = _by_the_index(chunks, runs)
    statuses = ListingStatuses(runs)
    got = [statuses.of(chunk) for chunk in chunks]
    assert got == expected
    assert any(expected), "a store whose every status is unknown tells nothing"
    rows = ListingStatuses(runs)  # rows (what a JSON or SQLite listing reads) read as their metadata does
    assert [rows.of([row_of(m) for m in chunk]) for chunk in chunks] == expected  # type: ignore[misc]


def test_a_store_of_many_runs_reads_every_status_word() -> None:
    seen: set[str] = set()
    for seed in range(16):
        metas, runs = _store(seed)
        seen.update(ListingStatuses(runs).of(metas).values())
    assert {"live", "done", "failed", "interrupted", "waiting", "answered", "stopped: budget", "lost"} <= seen


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "named",
    [[("crew", "c"), ("flow", "f")], [("crew", "c"), ("", "c"), ("entity", "c"), ("crew", ""), ("", "")]],
    ids=["plain", "names-one-entity-twice"],
)
def test_checkpoints_are_grouped_by_the_placement_rule(seed: int, named: list[tuple[str, str]]) -> None:
    """Grouped by their own columns when each (kind, name) names its entity alone, else by the rule: the same
    groups, in the same order, as (lineage, branch, entity) of :func:`_placements` gives them."""
    from crewpoint.tui.store_index import _groups, _placements

    rng = random.Random(seed)
    metas = [
        CheckpointMeta(f"{i:032x}", None, rng.choice("ab"), rng.choice("xyz"), i, 1.0 + i, "t", *rng.choice(named))
        for i in range(80)
    ]
    expected: dict[tuple[Any, ...], list[CheckpointMeta]] = {}
    for meta, (lineage, entity) in zip(metas, _placements(metas), strict=True):
        expected.setdefault((lineage, meta.branch, entity), []).append(meta)
    got = _groups(metas)
    assert list(got.items()) == list(expected.items())
