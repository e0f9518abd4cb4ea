"""The provider contract as a suite any provider runs, a third party's included, in one line::

    from crewpoint.providers.conformance import Capabilities, check_provider

    def test_my_store_keeps_the_contract(tmp_path):
        check_provider(lambda folder: (MyProvider(), str(folder / "store")), Capabilities(processes=False))

``check_provider`` runs every check of :data:`CHECKS` on a fresh store (``make(folder)`` gives a provider and a
location where no store is yet, in a new empty folder) and raises :class:`ConformanceError` naming the first check
that fails. What a provider cannot do is declared in its :class:`Capabilities`, never skipped silently: the checks
that need it are not run, and ``check_provider`` returns their names with what they need. crewpoint's own tests run
the same checks one by one (``tests/providers/test_conformance.py``) against JSON, SQLite, PostgreSQL and memory.

Standard library only (no pytest): a check is a plain function of a :class:`Store` that raises ``AssertionError``.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crewpoint.providers import provider_for
from crewpoint.providers.base import (
    AmbiguousCheckpoint,
    BaseProvider,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
)
from crewpoint.providers.claims import claim_key, copy_claims
from crewpoint.providers.prune import REQUESTED, PruneStrategy
from crewpoint.providers.refs import check_branch
from crewpoint.providers.runs import RunInfo, classify, this_host
from crewpoint.providers.usage_meta import decode_row, encode_row, read_usage_summary, usage_summary

__all__ = ["CHECKS", "Capabilities", "Check", "ConformanceError", "Inject", "Make", "Store", "check_provider"]


@dataclass(frozen=True)
class Capabilities:
    """What a provider can do beyond the core contract (write, read, list, latest, find, ancestors, delete, prune).
    A check that needs a capability the provider lacks is not run, and is named in ``check_provider``'s answer."""

    run_records: bool = True
    """It keeps run records (heartbeats): :meth:`~BaseProvider.write_run` and :meth:`~BaseProvider.read_runs`."""
    watches: bool = True
    """Its :meth:`~BaseProvider.watch` reports changes (and calls ``ready`` once in place)."""
    tells_runs_apart: bool = True
    """Its change notification says when only run records changed (a SQLite file changes as a whole: False)."""
    resolvable: bool = True
    """:func:`~crewpoint.providers.provider_for` gives this provider for its locations (it is registered)."""
    processes: bool = True
    """Several processes may write one store at once (files, a server; not a store in one process's memory)."""
    claims: bool = True
    """It keeps claims (one answer wins per request): :meth:`~BaseProvider.claim`, ``read_claim`` and ``claims``."""

    def lacks(self, needs: tuple[str, ...]) -> tuple[str, ...]:
        """The capabilities among ``needs`` that this provider does not have."""
        return tuple(name for name in needs if not getattr(self, name))


Make = Callable[[Path], tuple[BaseProvider, str]]
"""Makes a provider and a location where no store is yet, given a new empty folder."""
Inject = Callable[[BaseProvider, str, CheckpointMeta, dict[str, Any]], None]
"""Stores a record for ``meta`` whose stored fields hold the given wrong values (as a hand edit or a crafted
file could leave them): how the isolation checks make a damaged record. Without one, they are not run."""


@dataclass
class Store:
    """The store a check runs on: a provider, a location, what the provider can do, and how to damage a record."""

    provider: BaseProvider
    location: str
    can: Capabilities = Capabilities()
    injector: Inject | None = None

    def inject(self, meta: CheckpointMeta, **bad: Any) -> None:
        if self.injector is None:
            raise ConformanceError("this check needs a way to store a damaged record (inject)")
        self.injector(self.provider, self.location, meta, bad)


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Store], Awaitable[None] | None]
    needs: tuple[str, ...] = ()
    """Capabilities the check needs (names of :class:`Capabilities` fields, or ``"inject"``)."""

    def __str__(self) -> str:
        return self.name

    def missing(self, store: Store) -> tuple[str, ...]:
        """What the check needs that ``store`` lacks (empty: it can run)."""
        lacking = store.can.lacks(tuple(n for n in self.needs if n != "inject"))
        return lacking + (("inject",) if "inject" in self.needs and store.injector is None else ())

    def __call__(self, store: Store) -> None:
        """Run the check on ``store`` (a coroutine check in its own event loop when none runs here)."""
        outcome = self.run(store)
        if inspect.isawaitable(outcome):
            asyncio.run(_awaited(outcome))


async def _awaited(outcome: Awaitable[None]) -> None:
    await outcome


class ConformanceError(AssertionError):
    """A provider broke the contract: the message names the check and what went wrong."""


CHECKS: list[Check] = []
"""Every check of the contract, in the order ``check_provider`` runs them."""


def check(*needs: str) -> Callable[[Callable[[Store], Any]], Callable[[Store], Any]]:
    def register(function: Callable[[Store], Any]) -> Callable[[Store], Any]:
        CHECKS.append(Check(function.__name__, function, needs))
        return function

    return register


def check_provider(make: Make, capabilities: Capabilities | None = None, inject: Inject | None = None) -> list[str]:
    """Run every check against a fresh store from ``make``; raise :class:`ConformanceError` at the first that
    fails. Return the checks not run, each with the capabilities it needs that the provider lacks."""
    can = capabilities or Capabilities()
    not_run: list[str] = []
    for each in CHECKS:
        with tempfile.TemporaryDirectory(prefix="crewpoint-conformance-") as folder:
            provider, location = make(Path(folder))
            store = Store(provider, location, can, inject)
            missing = each.missing(store)
            if missing:
                not_run.append(f"{each.name} (needs {', '.join(missing)})")
                continue
            with provider:
                try:
                    each(store)
                except Exception as error:
                    raise ConformanceError(f"{type(provider).__name__} fails {each.name}: {error!r}") from error
    return not_run


class _Raised:
    value: BaseException


@contextmanager
def raises(kind: type[BaseException], match: str | None = None) -> Iterator[_Raised]:
    """The block must raise ``kind`` (whose message matches ``match``, a regular expression, when given)."""
    raised = _Raised()
    try:
        yield raised
    except kind as error:
        if match is not None and not re.search(match, str(error)):
            raise AssertionError(f"{kind.__name__} raised, but {str(error)!r} does not match {match!r}") from error
        raised.value = error
        return
    raise AssertionError(f"{kind.__name__} was not raised")


# -- the records the checks write -------------------------------------------------------------------------------

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


@check()
def write_then_read_gives_back_the_record(store: Store) -> None:
    chain(store, 1, 3)
    record = store.provider.read(store.location)
    assert record.meta.id == "cp0003" and record.body == body(3)
    assert store.provider.read(store.location, "cp0001").body == body(1)
    assert store.provider.read(record.meta.location).meta.id == "cp0003"  # a record's location reads it back
    assert store.provider.meta(store.location, "cp0002") == store.provider.list(store.location)[1]
    assert store.provider.meta(store.location, "nope") is None


@check()
def run_id_and_usage_summary_round_trip(store: Store) -> None:
    """The run that wrote a checkpoint and its usage summary (what listing prices it from) come back from every
    read and listing as written; a record without them reads ''."""
    rows = [{"model": "gpt-4o", "provider": "openai", "input_tokens": 120, "output_tokens": 30, "requests": 2}]
    summary = usage_summary(rows * 2, rows)
    assert summary and read_usage_summary(summary) is not None
    written = meta(1).with_(run_id="0123456789abcdef", usage=summary)
    stored = [
        encode_row(row) for row in filter(None, map(decode_row, rows))
    ]  # the body holds the rows its summary sums (before, and this run's)
    spent = {**body(1), "usage": {"before": stored, "rows": stored, "reused": []}}
    store.provider.write(store.location, CheckpointRecord(written, spent))
    store.provider.write(store.location, CheckpointRecord(meta(2, 1), body(2)))
    listed = {m.id: m for m in store.provider.list(store.location)}
    for got in (listed["cp0001"], store.provider.read(store.location, "cp0001").meta):
        assert (got.run_id, got.usage) == (written.run_id, summary), (got.run_id, got.usage)
    assert store.provider.meta(store.location, "cp0001") == listed["cp0001"]
    assert (listed["cp0002"].run_id, listed["cp0002"].usage) == ("", "")
    newest = store.provider.list_newest(store.location, 2)
    assert [(m.run_id, m.usage) for m in newest] == [("", ""), (written.run_id, summary)]


@check()
def a_missing_store_is_reported_and_not_made(store: Store) -> None:
    with raises(CheckpointNotFound):
        store.provider.list(store.location)
    with raises(CheckpointNotFound):
        store.provider.read(store.location)


@check()
def unique_prefixes_resolve_and_ambiguous_ones_are_refused(store: Store) -> None:
    chain(store, 1, 12)
    assert store.provider.read(store.location, "cp0011").meta.id == "cp0011"
    with raises(AmbiguousCheckpoint):
        store.provider.read(store.location, "cp001")
    with raises(CheckpointNotFound):
        store.provider.read(store.location, "zz")


@check()
def order_is_by_sequence_within_a_branch_whatever_the_clock(store: Store) -> None:
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


@check()
def branches_forks_and_ancestors(store: Store) -> None:
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


@check()
def bad_records_are_refused_on_write_and_nothing_is_stored(store: Store) -> None:
    chain(store, 1, 1)
    bad = [
        meta(2).with_(sequence=10**30),  # fault 10: it would sort above every later checkpoint
        meta(2).with_(branch="../x"),  # fault 9: a branch never leaves the store
        meta(2).with_(lineage=["not", "text"]),
        meta(2).with_(id="has_underscore"),
    ]
    for record in bad:
        with raises(CheckpointError) as refused:
            store.provider.write(store.location, CheckpointRecord(record, {}))
        assert "\n" not in str(refused.value)
    with raises(CheckpointError, match="not JSON-ready"):
        store.provider.write(store.location, CheckpointRecord(meta(3), {"x": object()}))
    assert ids(store) == ["cp0001"]


@check()
def a_branch_named_before_the_naming_rule_stays_readable(store: Store) -> None:
    """New branches may not hold spaces (fault 9: one naming rule); a store still keeps and lists old ones."""
    with raises(CheckpointError, match="invalid branch name"):
        check_branch("a b")
    chain(store, 1, 2, branch="old name")
    assert [m.id for m in store.provider.list(store.location, "old name")] == ["cp0002", "cp0001"]
    assert all(m.damaged is None for m in store.provider.list(store.location))


@check()
async def async_write_and_read(store: Store) -> None:
    await store.provider.awrite(store.location, CheckpointRecord(meta(1), body(1)))
    assert (await store.provider.aread(store.location)).body == body(1)


# -- delete and prune -------------------------------------------------------------------------------------------


@check()
def delete_removes_only_the_named(store: Store) -> None:
    chain(store, 1, 4)
    assert store.provider.delete(store.location, ["cp0002", "cp0003", "absent"]) == 2
    assert ids(store) == ["cp0004", "cp0001"]


@check()
def prune_keeps_the_newest_of_each_entity_per_branch(store: Store) -> None:
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


@check()
def prune_spares_fork_points_fork_roots_and_protected(store: Store) -> None:
    """Fault 3: a fork's first checkpoint links it to where it came from; pruning the fork keeps it."""
    chain(store, 1, 5)
    chain(store, 10, 14, branch="fork-b", root=2)
    doomed = store.provider.prune(store.location, PruneStrategy(keep=1, protect=frozenset({"cp0001"}))).ids
    assert sorted(doomed) == ["cp0003", "cp0004", "cp0011", "cp0012", "cp0013"]
    left = {m.id: m for m in store.provider.list(store.location)}
    assert set(left) == {"cp0001", "cp0002", "cp0005", "cp0010", "cp0014"}
    assert left["cp0010"].parent_id == "cp0002"  # the fork still names its source


@check()
def prune_dry_run_deletes_nothing(store: Store) -> None:
    chain(store, 1, 4)
    dry = store.provider.prune(store.location, PruneStrategy(keep=1), dry_run=True)
    assert dry.ids == ["cp0003", "cp0002", "cp0001"]
    assert len(ids(store)) == 4
    assert store.provider.prune(store.location, PruneStrategy(keep=1)) == dry  # the same plan, carried out
    assert ids(store) == ["cp0004"]


@check("run_records")
def prune_never_touches_a_live_runs_checkpoints(store: Store) -> None:
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

DAMAGE: dict[str, dict[str, Any]] = {
    "list-typed lineage": {"lineage": ["a", "b"]},
    "text created_at": {"created_at": "yesterday"},
    "huge sequence": {"sequence": 10**30},
    "text tasks_done": {"tasks_done": "three"},
}


def _damaged_record_check(damage: str) -> None:
    def one_damaged_record_never_hides_stops_or_costs_the_others(store: Store) -> None:
        """Faults 1 and 4: the rest list, read and restore; the bad one is shown damaged with its reason; it
        never counts for pruning, is never deleted by one, and never makes a good checkpoint go."""
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

    name = f"one_damaged_record_never_hides_stops_or_costs_the_others[{damage}]"
    CHECKS.append(Check(name, one_damaged_record_never_hides_stops_or_costs_the_others, ("inject",)))


for _damage in DAMAGE:
    _damaged_record_check(_damage)


# -- run records ------------------------------------------------------------------------------------------------


@check("run_records")
def run_records_round_trip_and_never_make_a_store(store: Store) -> None:
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
        if isinstance(changes, AsyncGenerator):
            await changes.aclose()


@check("watches", "run_records")
async def watch_reports_new_checkpoints_and_run_records(store: Store) -> None:
    chain(store, 1, 1)
    change = await _next_change(store, lambda: chain(store, 2, 2, root=1))
    assert change.runs_only is False
    now = time.time()
    run = RunInfo("r1", os.getpid(), this_host(), now, now, lineage="run-a")
    change = await _next_change(store, lambda: store.provider.write_run(store.location, run))
    assert change.runs_only is store.can.tells_runs_apart


@check("watches")
async def watch_waits_for_a_store_that_does_not_exist_yet(store: Store) -> None:
    change = await _next_change(store, lambda: chain(store, 1, 1))
    assert change.runs_only is False


# -- the resolver -----------------------------------------------------------------------------------------------


@check("resolvable")
def the_resolver_gives_each_store_its_provider(store: Store) -> None:
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


@check("processes", "resolvable")
def processes_write_one_store_at_once(store: Store) -> None:
    chain(store, 1, 1)  # the store exists, so both processes open the same one
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, store.location, tag]) for tag in ("a", "b", "c")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    metas = store.provider.list(store.location)
    assert len(metas) == 1 + 3 * 40 and all(m.damaged is None for m in metas)
    for tag in ("a", "b", "c"):
        own = [m for m in metas if m.lineage == tag]
        assert [m.sequence for m in own] == list(range(40, 0, -1))
        assert store.provider.read(store.location, f"{tag}-040").body == {"n": 40, "tag": tag}


@check()
def list_newest_is_the_head_of_the_full_listing(store: Store) -> None:
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


@check()
def iter_list_streams_what_list_gives(store: Store) -> None:
    chain(store, 1, 6)
    chain(store, 21, 24, lineage="run-b")
    assert list(store.provider.iter_list(store.location)) == store.provider.list(store.location)
    assert list(store.provider.iter_list(store.location, "main")) == store.provider.list(store.location, "main")
    store.provider.write(store.location, CheckpointRecord(meta(7, 6, created=T0 - 500), body(7)))  # clock step
    assert list(store.provider.iter_list(store.location)) == store.provider.list(store.location)


@check("run_records")
def run_status_reads_back_running_finished_and_crashed(store: Store) -> None:

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


# -- what a store keeps of a record, and closing ----------------------------------------------------------------


@check()
def every_field_a_list_view_reads_comes_back_as_written(store: Store) -> None:
    """Each field of :class:`CheckpointMeta` a store keeps reads back with its own value, whatever the store's
    column order (the list view's columns are derived from the class, never kept by hand)."""
    written = CheckpointMeta(
        id="cp0001",
        parent_id=None,
        branch="main",
        lineage="lineage-1",
        sequence=7,
        created_at=T0 + 0.5,
        trigger="trigger-1",
        entity_kind="kind-1",
        entity_name="name-1",
        tasks_done=3,
        tasks_total=11,
        schema_version=1,
        version="version-1",
    )
    store.provider.write(store.location, CheckpointRecord(written, body(1)))
    listed = store.provider.list(store.location)[0]
    read = store.provider.read(store.location, "cp0001").meta
    for name in CheckpointMeta._fields:
        if name in ("location", "size", "body_length", "digest", "damaged"):
            continue  # the store's to fill: where it keeps the record, and how big its body is
        assert getattr(listed, name) == getattr(written, name), f"list gives another {name}"
        assert getattr(read, name) == getattr(written, name), f"read gives another {name}"
    assert listed.damaged is None and listed.size > 0


@check()
def a_closed_provider_opens_again_when_used(store: Store) -> None:
    """``close()`` releases what the provider holds; used again (or as a context manager), it works as before."""
    chain(store, 1, 2)
    store.provider.close()
    assert ids(store) == ["cp0002", "cp0001"]
    with store.provider as provider:
        assert provider is store.provider
        provider.write(store.location, CheckpointRecord(meta(3, 2), body(3)))
    assert store.provider.read(store.location).body == body(3)


# -- claims: one answer wins ------------------------------------------------------------------------------------


@check("claims")
def a_claim_wins_once_and_a_second_claim_gets_the_first(store: Store) -> None:
    chain(store, 1, 1)
    provider, location = store.provider, store.location
    assert provider.read_claim(location, "req-1") is None and provider.claims(location) == {}
    ours: dict[str, Any] = {"token": "t-1", "who": "ana@host-a", "outcome": "approved", "n": 1.5, "z": None}
    ours |= {"feedback": "ünïcødé [bold]\x00\ud800", "list": [1, "two", {"three": True}], "empty": {}}
    assert provider.claim(location, "req-1", ours) == ours
    assert provider.claim(location, "req-1", {"token": "t-2", "who": "ben@host-b"}) == ours  # the first one stays
    assert provider.read_claim(location, "req-1") == ours
    assert provider.claim(location, "flow:review.draft_2", {"token": "t-3"}) == {"token": "t-3"}
    assert provider.claims(location) == {"req-1": ours, "flow:review.draft_2": {"token": "t-3"}}
    assert provider.read_claim(location, "req-9") is None
    assert ids(store) == ["cp0001"]  # a claim is no checkpoint


@check("claims")
def a_bad_claim_is_refused_in_one_line_and_nothing_is_stored(store: Store) -> None:
    chain(store, 1, 1)
    provider, location = store.provider, store.location
    for key in ("", "a/b", "../x", "a b", "x" * 129, "é"):
        with raises(CheckpointError) as refused:
            provider.claim(location, key, {"token": "t"})
        assert "\n" not in str(refused.value) and "request id" in str(refused.value)
        with raises(CheckpointError):
            provider.read_claim(location, key)
    for value in ({"token": object()}, {"token": float("nan")}, {1: "x"}, ["token"], {"big": "x" * 70_000}):
        with raises(CheckpointError) as refused:
            provider.claim(location, "req-1", value)  # type: ignore[arg-type]
        assert "\n" not in str(refused.value)
    assert provider.claims(location) == {} and provider.read_claim(location, "req-1") is None
    assert provider.claim(location, "x" * 128, {"token": "t"}) == {"token": "t"}  # the longest key is a key


@check("claims")
def a_claim_never_makes_a_store(store: Store) -> None:
    with raises(CheckpointNotFound):
        store.provider.claim(store.location, "req-1", {"token": "t"})
    assert store.provider.read_claim(store.location, "req-1") is None
    assert store.provider.claims(store.location) == {}
    with raises(CheckpointNotFound):
        store.provider.list(store.location)


@check("claims")
def threads_claiming_one_key_at_once_have_one_winner(store: Store) -> None:
    chain(store, 1, 1)
    count = 8
    start = threading.Barrier(count)
    got: list[dict[str, Any]] = []
    failed: list[BaseException] = []

    def claimer(n: int) -> None:
        try:
            start.wait(timeout=60)
            got.append(store.provider.claim(store.location, "req-1", {"token": f"t-{n}"}))
        except BaseException as error:  # reported below, with the others' answers
            failed.append(error)

    threads = [threading.Thread(target=claimer, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failed, failed
    assert len(got) == count and len({each["token"] for each in got}) == 1, got  # every claimer got the winner's
    assert store.provider.read_claim(store.location, "req-1") == got[0]


@check("claims")
def a_request_is_claimed_at_each_checkpoint_that_holds_it(store: Store) -> None:
    """The same request id held by two checkpoints (a fork's copy, a resume that asked again) is two requests:
    each takes its own answer, and the longest request id with the longest checkpoint id still makes a key."""
    chain(store, 1, 1)
    provider, location = store.provider, store.location
    here, there = claim_key("r1", "cp0001"), claim_key("r1", "cp0002")
    assert here != there
    assert provider.claim(location, here, {"token": "main"}) == {"token": "main"}
    assert provider.claim(location, there, {"token": "fork"}) == {"token": "fork"}  # not taken by main's
    assert provider.read_claim(location, here) == {"token": "main"}
    longest = claim_key("r" * 64, "c" * 128, MAX_CLAIM_ATTEMPT)
    assert provider.claim(location, longest, {"token": "t"}) == {"token": "t"}


MAX_CLAIM_ATTEMPT = 7
"""The last key a request tries past damaged claims (``.7``)."""


@check("claims")
def copied_claims_never_overwrite_the_targets(store: Store) -> None:
    """``copy`` carries claims: the source's are claimed in the target, where a claim already there stands and
    the source's other answer comes back as one line, never written over it."""
    # lazy: an in-memory store is the source, whatever the provider under test
    from crewpoint.providers.memory_provider import MemoryProvider

    chain(store, 1, 1)
    source, name = MemoryProvider(), f"memory://conformance-copy-{os.getpid()}-{time.monotonic_ns()}"
    source.write(name, CheckpointRecord(meta(1, None), body(1)))
    kept, other, new = claim_key("r1", "cp0001"), {"token": "src-1", "who": "ben"}, claim_key("r2", "cp0001")
    source.claim(name, kept, other)
    source.claim(name, new, {"token": "src-2", "who": "ann"})
    store.provider.claim(store.location, kept, {"token": "dst-1", "who": "cy"})
    copied, conflicts = copy_claims(source, name, store.provider, store.location)
    assert copied == [new] and len(conflicts) == 1 and kept in conflicts[0] and "\n" not in conflicts[0]
    assert store.provider.read_claim(store.location, kept) == {"token": "dst-1", "who": "cy"}
    assert store.provider.read_claim(store.location, new) == {"token": "src-2", "who": "ann"}
    assert copy_claims(source, name, store.provider, store.location)[0] == [new]  # copying again changes nothing
    source.delete(name, ["cp0001"])


CLAIMER = r"""
import sys
from crewpoint.providers import provider_for
location, tag = sys.argv[1], sys.argv[2]
provider = provider_for(location)
provider.claims(location)  # the store is open
print("ready", flush=True)
sys.stdin.readline()  # every claimer is ready before any claims
print(provider.claim(location, "req-1", {"token": tag})["token"], flush=True)
"""


@check("claims", "processes", "resolvable")
def processes_claiming_one_key_at_once_have_one_winner(store: Store) -> None:
    chain(store, 1, 1)
    tags = [f"p-{n}" for n in range(4)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CLAIMER, store.location, tag],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for tag in tags
    ]
    for proc in procs:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    answers = [proc.communicate(timeout=120)[0].strip() for proc in procs]
    assert [proc.returncode for proc in procs] == [0] * len(procs)
    assert len(set(answers)) == 1 and answers[0] in tags, answers
    assert store.provider.read_claim(store.location, "req-1") == {"token": answers[0]}


@check("claims", "watches")
async def watch_reports_a_claim(store: Store) -> None:
    chain(store, 1, 1)
    change = await _next_change(store, lambda: store.provider.claim(store.location, "req-1", {"token": "t"}))
    assert change.runs_only is False  # a request was answered: what a list view shows changed


# -- pruning and claims: what a person's request waits at ----------------------------------------------------


def _asking(store: Store, n: int, parent: int | None, request: str, lineage: str) -> None:
    """A checkpoint a run wrote to wait for a person's answer: its trigger says so, its body holds the request."""
    record = meta(n, parent, lineage=lineage).with_(trigger=REQUESTED)
    waits = {**body(n), "entity": {"kind": "flow", "pending_feedback": {"request_id": request, "message": "ok?"}}}
    store.provider.write(store.location, CheckpointRecord(record, waits))


@check("claims")
def prune_never_deletes_what_an_unanswered_request_waits_at(store: Store) -> None:
    """Two runs wait for an answer, one of them answered: a count, an age and ``force`` delete the answered one's
    and keep the other's request, and the dry run names it kept exactly as the prune keeps it."""
    chain(store, 1, 2, lineage="run-a")
    _asking(store, 3, 2, "req-a", "run-a")
    chain(store, 11, 12, lineage="run-b")
    _asking(store, 13, 12, "req-b", "run-b")
    chain(store, 21, 23, lineage="run-c")
    store.provider.claim(store.location, claim_key("req-b", "cp0013"), {"token": "t-1", "who": "ana"})
    provider, location = store.provider, store.location
    for strategy in (PruneStrategy(keep=1, force=True), PruneStrategy(older_than=0, now=T0 + 1000)):
        dry = provider.prune(location, strategy, dry_run=True)
        assert dry.kept_waiting == {"cp0003"}, strategy
        assert "cp0003" not in dry.ids and "cp0013" in dry.ids, strategy
        assert len(ids(store)) == 9
    dry = provider.prune(location, PruneStrategy(keep=1), dry_run=True)
    plan = provider.prune(location, PruneStrategy(keep=1))
    assert plan == dry and plan.kept_waiting == {"cp0003"}
    assert sorted(ids(store)) == ["cp0003", "cp0023"]
    assert provider.read(location, "cp0003").body["entity"]["pending_feedback"]["request_id"] == "req-a"
    store.provider.claim(
        location, claim_key("req-a", "cp0003"), {"token": "t-2", "who": "ben"}
    )  # answered: an ordinary checkpoint now
    assert provider.prune(location, PruneStrategy(keep=1)).ids == ["cp0003"]
