"""The provider contract, run against every provider (see conftest.KINDS)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from provider_kinds import KINDS, Store

from crewpoint.providers import (
    AmbiguousCheckpoint,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    provider_for,
)
from crewpoint.providers.prune import PruneStrategy
from crewpoint.providers.runs import RunInfo, this_host

T0 = 1_760_000_000.0


def meta(
    n: int,
    parent: int | None = None,
    branch: str = "main",
    *,
    lineage: str = "run-a",
    created: float | None = None,
    entity: str = "crew",
) -> CheckpointMeta:
    return CheckpointMeta(
        id=f"cp{n:04d}",
        parent_id=None if parent is None else f"cp{parent:04d}",
        branch=branch,
        lineage=lineage,
        sequence=n,
        created_at=T0 + n if created is None else created,
        trigger="task_completed",
        entity_kind="crew",
        entity_name=entity,
        tasks_done=n % 4,
        tasks_total=4,
        version="0.1.0",
    )


def body(n: int) -> dict[str, Any]:
    return {"n": n, "events": [{"i": i} for i in range(n % 5)], "text": "ünïcødé [bold]", "none": None}


def chain(
    store: Store,
    first: int,
    last: int,
    branch: str = "main",
    lineage: str = "run-a",
    root: int | None = None,
    entity: str = "crew",
) -> None:
    parent = root
    for n in range(first, last + 1):
        record = CheckpointRecord(meta(n, parent, branch, lineage=lineage, entity=entity), body(n))
        store.provider.write(store.location, record)
        parent = n


def ids(store: Store, branch: str | None = None) -> list[str]:
    return [m.id for m in store.provider.list(store.location, branch)]


# -- write, read, list, latest, meta ----------------------------------------------------------------------------


def test_write_then_read_gives_back_the_record(store: Store) -> None:
    chain(store, 1, 3)
    record = store.provider.read(store.location)
    assert record.meta.id == "cp0003" and record.body == body(3)
    assert store.provider.read(store.location, "cp0001").body == body(1)
    assert store.provider.read(record.meta.location).meta.id == "cp0003"  # a record's location reads it back
    assert store.provider.meta(store.location, "cp0002") == store.provider.list(store.location)[1]
    assert store.provider.meta(store.location, "nope") is None


def test_a_missing_store_is_reported_and_not_made(store: Store) -> None:
    with pytest.raises(CheckpointNotFound):
        store.provider.list(store.location)
    with pytest.raises(CheckpointNotFound):
        store.provider.read(store.location)


def test_unique_prefixes_resolve_and_ambiguous_ones_are_refused(store: Store) -> None:
    chain(store, 1, 12)
    assert store.provider.read(store.location, "cp0011").meta.id == "cp0011"
    with pytest.raises(AmbiguousCheckpoint):
        store.provider.read(store.location, "cp001")
    with pytest.raises(CheckpointNotFound):
        store.provider.read(store.location, "zz")


def test_order_is_by_sequence_within_a_branch_whatever_the_clock(store: Store) -> None:
    """Fault 6: the clock steps back after checkpoint 70 of 75; the latest is still sequence 75."""
    parent = None
    for n in range(1, 76):
        created = T0 + n if n <= 70 else T0 - 1000 + n  # five checkpoints written after the clock went back
        store.provider.write(store.location, CheckpointRecord(meta(n, parent, created=created), body(n)))
        parent = n
    metas = store.provider.list(store.location)
    assert [m.sequence for m in metas] == list(range(75, 0, -1))
    latest = store.provider.latest(store.location)
    assert latest is not None and latest.sequence == 75
    assert store.provider.read(store.location).meta.sequence == 75


def test_branches_forks_and_ancestors(store: Store) -> None:
    chain(store, 1, 4)
    chain(store, 10, 12, branch="fork/x", root=2)
    assert ids(store, "fork/x") == ["cp0012", "cp0011", "cp0010"]
    assert [m.id for m in store.provider.ancestors(store.location, "cp0012")] == [
        "cp0012",
        "cp0011",
        "cp0010",
        "cp0002",
        "cp0001",
    ]
    assert store.provider.latest(store.location, "main") == store.provider.list(store.location, "main")[0]


def test_bad_records_are_refused_on_write_and_nothing_is_stored(store: Store) -> None:
    chain(store, 1, 1)
    bad = [
        meta(2).with_(sequence=10**30),  # fault 10: it would sort above every later checkpoint
        meta(2).with_(branch="../x"),  # fault 9: a branch never leaves the store
        meta(2).with_(lineage=["not", "text"]),
        meta(2).with_(id="has_underscore"),
    ]
    for record in bad:
        with pytest.raises(CheckpointError) as refused:
            store.provider.write(store.location, CheckpointRecord(record, {}))
        assert "\n" not in str(refused.value)
    with pytest.raises(CheckpointError, match="not JSON-ready"):
        store.provider.write(store.location, CheckpointRecord(meta(3), {"x": object()}))
    assert ids(store) == ["cp0001"]


def test_a_branch_named_before_the_naming_rule_stays_readable(store: Store) -> None:
    """New branches may not hold spaces (fault 9: one naming rule); a store still keeps and lists old ones."""
    from crewpoint.providers.refs import check_branch

    with pytest.raises(CheckpointError, match="invalid branch name"):
        check_branch("a b")
    chain(store, 1, 2, branch="old name")
    assert [m.id for m in store.provider.list(store.location, "old name")] == ["cp0002", "cp0001"]
    assert all(m.damaged is None for m in store.provider.list(store.location))


async def test_async_write_and_read(store: Store) -> None:
    await store.provider.awrite(store.location, CheckpointRecord(meta(1), body(1)))
    assert (await store.provider.aread(store.location)).body == body(1)


# -- delete and prune -------------------------------------------------------------------------------------------


def test_delete_removes_only_the_named(store: Store) -> None:
    chain(store, 1, 4)
    assert store.provider.delete(store.location, ["cp0002", "cp0003", "absent"]) == 2
    assert ids(store) == ["cp0004", "cp0001"]


def test_prune_keeps_the_newest_of_each_entity_per_branch(store: Store) -> None:
    """Two runs of one crew and a run of another on branch main: keeping 2 keeps the newest 2 of each crew there
    (the seed's bound for repeated runs), whichever run wrote them."""
    chain(store, 1, 4, lineage="run-a")
    chain(store, 21, 24, lineage="run-b")
    chain(store, 41, 43, lineage="run-x", entity="other crew")
    plan = store.provider.prune(store.location, PruneStrategy(keep=2))
    assert sorted(plan.ids) == ["cp0001", "cp0002", "cp0003", "cp0004", "cp0021", "cp0022", "cp0041"]
    assert sorted(ids(store)) == ["cp0023", "cp0024", "cp0042", "cp0043"]
    chain(store, 31, 34, lineage="run-c")
    one_entity = PruneStrategy(keep=1, entity=("crew", "crew"), branch="main")  # what max_checkpoints=1 asks
    assert sorted(store.provider.prune(store.location, one_entity).ids) == [
        "cp0023",
        "cp0024",
        "cp0031",
        "cp0032",
        "cp0033",
    ]
    assert sorted(ids(store)) == ["cp0034", "cp0042", "cp0043"]


def test_prune_spares_fork_points_fork_roots_and_protected(store: Store) -> None:
    """Fault 3: a fork's first checkpoint links it to where it came from; pruning the fork keeps it."""
    chain(store, 1, 5)
    chain(store, 10, 14, branch="fork-b", root=2)
    doomed = store.provider.prune(store.location, PruneStrategy(keep=1, protect=frozenset({"cp0001"}))).ids
    assert sorted(doomed) == ["cp0003", "cp0004", "cp0011", "cp0012", "cp0013"]
    left = {m.id: m for m in store.provider.list(store.location)}
    assert set(left) == {"cp0001", "cp0002", "cp0005", "cp0010", "cp0014"}
    assert left["cp0010"].parent_id == "cp0002"  # the fork still names its source


def test_prune_dry_run_deletes_nothing(store: Store) -> None:
    chain(store, 1, 4)
    dry = store.provider.prune(store.location, PruneStrategy(keep=1), dry_run=True)
    assert dry.ids == ["cp0003", "cp0002", "cp0001"]
    assert len(ids(store)) == 4
    assert store.provider.prune(store.location, PruneStrategy(keep=1)) == dry  # the same plan, carried out
    assert ids(store) == ["cp0004"]


def test_prune_never_touches_a_live_runs_checkpoints(store: Store) -> None:
    chain(store, 1, 4, lineage="run-a")
    chain(store, 21, 24, lineage="run-b")
    now = time.time()
    live = RunInfo("live-b", os.getpid(), this_host(), now, now, branch="main", lineage="run-b", checkpoint_id="cp0024")
    assert store.provider.write_run(store.location, live)
    plan = store.provider.prune(store.location, PruneStrategy(keep=1, own_run="live-a"))
    assert sorted(plan.ids) == ["cp0001", "cp0002", "cp0003", "cp0004"]
    assert plan.kept_live == {"cp0021", "cp0022", "cp0023"}
    assert {"cp0021", "cp0022", "cp0023", "cp0024"} <= set(ids(store))
    # the run itself may prune its own checkpoints
    own = store.provider.prune(store.location, PruneStrategy(keep=1, own_run="live-b"))
    assert sorted(own.ids) == ["cp0021", "cp0022", "cp0023"]


# -- every record is isolated -----------------------------------------------------------------------------------

DAMAGE = {
    "list-typed lineage": {"lineage": ["a", "b"]},
    "text created_at": {"created_at": "yesterday"},
    "huge sequence": {"sequence": 10**30},
    "text tasks_done": {"tasks_done": "three"},
}


@pytest.mark.parametrize("damage", list(DAMAGE), ids=list(DAMAGE))
def test_one_damaged_record_never_hides_stops_or_costs_the_others(store: Store, damage: str) -> None:
    """Faults 1 and 4: the rest list, read and restore; the bad one is shown damaged with its reason; it never
    counts for pruning, is never deleted by one, and never makes a good checkpoint go."""
    chain(store, 1, 4)
    store.inject(meta(9, 4, created=T0 + 100), **DAMAGE[damage])
    metas = {m.id: m for m in store.provider.list(store.location)}
    assert set(metas) == {"cp0001", "cp0002", "cp0003", "cp0004", "cp0009"}
    reason = metas["cp0009"].damaged
    assert reason and "\n" not in reason
    assert all(metas[f"cp000{n}"].damaged is None for n in range(1, 5))
    latest = store.provider.latest(store.location)
    assert latest is not None and latest.id == "cp0004"
    assert store.provider.read(store.location).meta.id == "cp0004"
    assert store.provider.read(store.location, "cp0002").body == body(2)
    plan = store.provider.prune(store.location, PruneStrategy(keep=1))
    assert sorted(plan.ids) == ["cp0001", "cp0002", "cp0003"]
    assert plan.damaged == 1
    assert sorted(ids(store)) == ["cp0004", "cp0009"]


# -- run records ------------------------------------------------------------------------------------------------


def test_run_records_round_trip_and_never_make_a_store(store: Store) -> None:
    now = time.time()
    run = RunInfo("r1", os.getpid(), this_host(), now, now, branch="main", lineage="run-a")
    assert store.provider.write_run(store.location, run) is False  # no store yet: nothing made
    chain(store, 1, 1)
    assert store.provider.write_run(store.location, run)
    finished = run.beat(status="finished", checkpoint_id="cp0001")
    assert store.provider.write_run(store.location, finished)
    assert store.provider.read_runs(store.location) == [finished]


# -- change notification ----------------------------------------------------------------------------------------


async def _next_change(store: Store, action: Any) -> Any:
    stop, ready = asyncio.Event(), asyncio.Event()
    changes = store.provider.watch(store.location, stop, debounce_ms=50, ready=ready.set)
    waiting = asyncio.ensure_future(anext(changes))
    await asyncio.wait({waiting, asyncio.ensure_future(ready.wait())}, return_when=asyncio.FIRST_COMPLETED)
    assert ready.is_set(), "the watch ended before it was in place"
    await asyncio.to_thread(action)
    try:
        return await asyncio.wait_for(waiting, timeout=20)
    finally:
        stop.set()
        await changes.aclose()


async def test_watch_reports_new_checkpoints_and_run_records(store: Store) -> None:
    chain(store, 1, 1)
    change = await _next_change(store, lambda: chain(store, 2, 2, root=1))
    assert change.runs_only is False
    now = time.time()
    run = RunInfo("r1", os.getpid(), this_host(), now, now, lineage="run-a")
    change = await _next_change(store, lambda: store.provider.write_run(store.location, run))
    assert change.runs_only is store.kind.tells_runs_apart


async def test_watch_waits_for_a_store_that_does_not_exist_yet(store: Store) -> None:
    change = await _next_change(store, lambda: chain(store, 1, 1))
    assert change.runs_only is False


# -- the resolver -----------------------------------------------------------------------------------------------


def test_the_resolver_gives_each_store_its_provider(store: Store) -> None:
    chain(store, 1, 1)
    assert type(provider_for(store.location)) is type(store.provider)
    ref = store.provider.list(store.location)[0].location
    assert type(provider_for(ref)) is type(store.provider)
    assert provider_for(ref).store_of(store.provider.list(store.location)[0]) == store.location


# -- several processes ------------------------------------------------------------------------------------------

WRITER = r"""
import sys, time
from crewpoint.providers import CheckpointMeta, CheckpointRecord, provider_for
location, tag = sys.argv[1], sys.argv[2]
provider = provider_for(location)
parent = None
for n in range(1, 41):
    cid = f"{tag}-{n:03d}"
    meta = CheckpointMeta(id=cid, parent_id=parent, branch="main", lineage=tag, sequence=n,
                          created_at=time.time(), trigger="t")
    provider.write(location, CheckpointRecord(meta, {"n": n, "tag": tag}))
    parent = cid
"""


def test_processes_write_one_store_at_once(shared_store: Store) -> None:
    store = shared_store
    chain(store, 1, 1)  # the store exists, so both processes open the same one
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, store.location, tag]) for tag in ("a", "b", "c")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    metas = store.provider.list(store.location)
    assert len(metas) == 1 + 3 * 40 and all(m.damaged is None for m in metas)
    for tag in ("a", "b", "c"):
        own = [m for m in metas if m.lineage == tag]
        assert [m.sequence for m in own] == list(range(40, 0, -1))
        assert store.provider.read(store.location, f"{tag}-040").body == {"n": 40, "tag": tag}


def test_every_kind_declares_what_it_can_do() -> None:
    assert {k.name: (k.processes, k.tells_runs_apart) for k in KINDS} == {
        "json": (True, True),
        "sqlite": (True, False),
        "memory": (False, True),
        "postgres": (True, True),
    }


def test_list_newest_is_the_head_of_the_full_listing(store: Store) -> None:
    chain(store, 1, 6)
    chain(store, 21, 24, lineage="run-b")
    everything = store.provider.list(store.location)
    for limit in (0, 1, 3, 50):
        assert store.provider.list_newest(store.location, limit) == everything[:limit]
    # a clock step: the head of the listing still follows sequence order
    store.provider.write(store.location, CheckpointRecord(meta(7, 6, created=T0 - 500), body(7)))
    everything = store.provider.list(store.location)
    assert [m.id for m in everything[:6]] == ["cp0024", "cp0023", "cp0022", "cp0021", "cp0007", "cp0006"]
    for limit in (1, 5, 6, 50):
        assert store.provider.list_newest(store.location, limit) == everything[:limit]


def test_iter_list_streams_what_list_gives(store: Store) -> None:
    chain(store, 1, 6)
    chain(store, 21, 24, lineage="run-b")
    assert list(store.provider.iter_list(store.location)) == store.provider.list(store.location)
    assert list(store.provider.iter_list(store.location, "main")) == store.provider.list(store.location, "main")
    store.provider.write(store.location, CheckpointRecord(meta(7, 6, created=T0 - 500), body(7)))  # clock step
    assert list(store.provider.iter_list(store.location)) == store.provider.list(store.location)


def test_run_status_reads_back_running_finished_and_crashed(store: Store) -> None:
    from crewpoint.providers.runs import classify

    chain(store, 1, 1)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    now = time.time()
    runs = [
        RunInfo("alive", os.getpid(), this_host(), now, now, lineage="a"),
        RunInfo("done", os.getpid(), this_host(), now - 1, now, status="finished", lineage="b"),
        RunInfo("gone", dead.pid, this_host(), now - 2, now, lineage="c"),  # its process died without a word
        RunInfo("stale", os.getpid(), this_host(), now - 3, now - 600, lineage="d"),  # no beat for ten minutes
        # from another host a stale beat may be a host cut off, not a crash: only that host can tell
        RunInfo("far", os.getpid(), "elsewhere", now - 4, now - 600, lineage="e"),
    ]
    for run in runs:
        assert store.provider.write_run(store.location, run)
    read = {r.run_id: classify(r) for r in store.provider.read_runs(store.location)}
    assert read == {"alive": "running", "done": "finished", "gone": "crashed", "stale": "crashed", "far": "lost"}
    assert [r.run_id for r in store.provider.read_runs(store.location)] == ["alive", "done", "gone", "stale", "far"]
