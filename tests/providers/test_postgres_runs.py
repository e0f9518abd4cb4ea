"""A PostgreSQL store shared by processes and hosts: kill -9 mid-run, concurrent writers and forks, pruning
beside a writer, run status across hosts. Every test runs against this run's real server."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from support.waiting import wait_for

from crewpoint import CheckpointConfig, Crew
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers import PostgresProvider, provider_for
from crewpoint.providers.prune import PruneStrategy
from crewpoint.providers.runs import STALE_AFTER, classify, read_runs

# Another host: the same machine under another name (a run records its host's name, a reader compares them).
ON_HOST_B = "import socket; socket.gethostname = lambda: 'host-b'\n"

SLOW_RUN = (
    "import sys\n"
    "from crewpoint import CheckpointConfig\n"
    "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
    "from crewpoint.providers import provider_for\n"
    "loc, delay = sys.argv[1], float(sys.argv[2])\n"
    "demo_crew(delay=delay, checkpoint=CheckpointConfig(location=loc, provider=provider_for(loc)))"
    ".kickoff(inputs=DEMO_INPUTS)\n"
)


def count(location: str) -> int:
    try:
        return len(provider_for(location).list(location))
    except Exception:
        return 0


def test_kill_9_mid_run_loses_nothing_written_and_resumes_without_redoing_work(
    pg_location: str, llm_calls: list[str]
) -> None:
    reference = demo_crew(checkpoint=False).kickoff(inputs=DEMO_INPUTS)
    for seen in (1, 2, 3):
        location = f"{pg_location}_{seen}"
        proc = subprocess.Popen([sys.executable, "-c", SLOW_RUN, location, "0.05"])
        wait_for(
            lambda loc=location, n=seen, p=proc: count(loc) >= n or p.poll() is not None,  # type: ignore[misc]
            "a checkpoint row",
        )
        proc.send_signal(signal.SIGKILL)
        assert proc.wait() == -signal.SIGKILL
        provider = provider_for(location)
        metas = provider.list(location)
        assert len(metas) >= seen
        for meta in metas:  # every committed checkpoint is whole: a kill never leaves half a write
            assert meta.damaged is None
            provider.read(location, meta.id)
        latest = next(m for m in metas if m.entity_kind == "crew")
        crew = Crew.from_checkpoint(CheckpointConfig(restore_from=latest.location, provider=provider))
        pending = {t.id for t in crew.tasks if t.output is None}
        assert len(pending) == latest.tasks_total - latest.tasks_done
        llm_calls.clear()
        result = crew.kickoff()
        assert [t.raw for t in result.tasks_output] == [t.raw for t in reference.tasks_output]
        assert set(llm_calls) <= pending  # no finished task's LLM call repeated


WRITER = r"""
import sys, time
from crewpoint.providers import CheckpointMeta, CheckpointRecord, provider_for
location, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
provider = provider_for(location)
shared = [{"role": "system", "content": "You are a careful researcher. " * 20, "i": i} for i in range(40)]
parent = None
for k in range(1, n + 1):
    cid = f"{tag}-{k:04d}"
    meta = CheckpointMeta(id=cid, parent_id=parent, branch=tag if tag.startswith("fork") else "main", lineage=tag,
                          sequence=k, created_at=time.time(), trigger="task_completed", entity_kind="crew",
                          entity_name=tag)
    history = shared + [{"k": j} for j in range(k)]
    provider.write(location, CheckpointRecord(meta, {"tag": tag, "k": k, "history": history}))
    parent = cid
"""


def test_writers_and_forks_on_many_processes_lose_nothing(pg_location: str) -> None:
    """Six processes, runs and forks, write bodies that share most of their chunks into one store at once."""
    tags = ["run-a", "run-b", "run-c", "fork-a", "fork-b", "fork-c"]
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg_location, tag, "60"]) for tag in tags]
    assert [p.wait(timeout=300) for p in procs] == [0] * len(tags)
    provider = PostgresProvider()
    try:
        metas = provider.list(pg_location)
        assert len(metas) == 6 * 60 and all(m.damaged is None for m in metas)
        for tag in tags:
            assert [m.sequence for m in metas if m.lineage == tag] == list(range(60, 0, -1))
            record = provider.read(pg_location, f"{tag}-0060")
            assert record.body["history"][-1] == {"k": 59} and len(record.body["history"]) == 100
        stats = provider.stats(pg_location)
        assert stats["chunks"] < 6 * 60  # the shared history is stored once, not per checkpoint
    finally:
        provider.close()


def test_pruning_beside_a_writer_never_costs_the_writer_a_checkpoint(pg_location: str) -> None:
    """One process writes 150 checkpoints of a run while this one prunes another run again and again: the
    writer's checkpoints all read back whole (no chunk it counted on was removed), the pruned run keeps 2."""
    provider = PostgresProvider()
    try:
        proc = subprocess.Popen([sys.executable, "-c", WRITER, pg_location, "old", "30"])
        assert proc.wait(timeout=120) == 0
        proc = subprocess.Popen([sys.executable, "-c", WRITER, pg_location, "live", "150"])
        prunes = 0
        while proc.poll() is None or prunes == 0:
            provider.prune(pg_location, PruneStrategy(keep=2, entity=("crew", "old")))
            provider.delete(pg_location, [])
            prunes += 1
        assert proc.wait() == 0
        metas = provider.list(pg_location)
        assert sorted(m.id for m in metas if m.lineage == "old") == ["old-0029", "old-0030"]
        live = [m for m in metas if m.lineage == "live"]
        assert len(live) == 150
        for meta in live:
            assert provider.read(pg_location, meta.id).body["k"] == meta.sequence
        assert provider.read(pg_location, "old-0030").body["k"] == 30
    finally:
        provider.close()


def test_a_run_on_another_host_reads_live_then_lost_until_its_host_reports_it_crashed(pg_location: str) -> None:
    proc = subprocess.Popen([sys.executable, "-c", ON_HOST_B + SLOW_RUN, pg_location, "0.5"])
    try:
        wait_for(lambda: [r for r in read_runs(pg_location) if r.host == "host-b"], "host-b's run record")
        run = read_runs(pg_location)[0]
        assert classify(run) == "running"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    run = read_runs(pg_location)[0]
    # From this host its pid means nothing: the run reads running until its beat is stale, then lost.
    assert classify(run) == "running"
    assert classify(run, now=run.last_beat + STALE_AFTER + 1) == "lost"
    # A reader on host-b sees the process is gone and records it, for every host to see.
    reader = ON_HOST_B + "import sys\nfrom crewpoint.providers.runs import read_runs\nread_runs(sys.argv[1])\n"
    subprocess.run([sys.executable, "-c", reader, pg_location], check=True)
    run = read_runs(pg_location)[0]
    assert run.status == "crashed" and classify(run, now=run.last_beat + STALE_AFTER + 1) == "crashed"


def test_a_finished_run_on_another_host_reads_finished(pg_location: str) -> None:
    subprocess.run([sys.executable, "-c", ON_HOST_B + SLOW_RUN, pg_location, "0"], check=True)
    (run,) = read_runs(pg_location)
    assert run.host == "host-b" and run.pid != os.getpid()
    assert classify(run, now=time.time() + 10 * STALE_AFTER) == "finished"


def test_the_newest_few_come_from_the_time_index_in_list_order(pg_location: str) -> None:
    from crewpoint.checkpoint.stores import list_checkpoints
    from crewpoint.providers import CheckpointMeta, CheckpointRecord

    provider = PostgresProvider()
    try:
        for lineage, branch, offset in (("run-a", "main", 0.0), ("run-b", "main", 0.5), ("run-a", "fork-x", 0.25)):
            parent = None
            for n in range(1, 9):
                cid = f"{lineage}-{branch}-{n}"
                meta = CheckpointMeta(cid, parent, branch, lineage, n, 1_790_000_000 + n + offset, "task_completed")
                provider.write(pg_location, CheckpointRecord(meta, {"n": n}))
                parent = cid
        everything = provider.list(pg_location)
        for limit in (0, 1, 5, 24, 100):
            assert provider.list_newest(pg_location, limit) == everything[:limit]
        assert provider.list_newest(pg_location, 3, branch="fork-x") == provider.list(pg_location, "fork-x")[:3]
        assert [m.id for m in list_checkpoints(pg_location, limit=2)] == ["run-b-main-8", "run-a-fork-x-8"]
    finally:
        provider.close()


def test_a_prune_spares_a_run_lost_on_another_host(pg_location: str) -> None:
    """A lost run may still be going behind a broken network: pruning leaves its checkpoints alone."""
    from crewpoint.providers import CheckpointMeta, CheckpointRecord
    from crewpoint.providers.runs import RunInfo

    provider = PostgresProvider()
    try:
        for lineage in ("done-run", "far-run"):
            for n in range(1, 5):
                meta = CheckpointMeta(f"{lineage}-{n}", f"{lineage}-{n - 1}" if n > 1 else None, "main", lineage, n,
                                      time.time(), "task_completed")  # fmt: skip
                provider.write(pg_location, CheckpointRecord(meta, {"n": n}))
        stale = time.time() - STALE_AFTER - 5
        far = RunInfo("far", 4242, "host-c", stale, stale, "running", "main", "far-run", checkpoint_id="far-run-4")
        assert provider.write_run(pg_location, far) and classify(far) == "lost"
        # the newest checkpoint of the entity on main is the lost run's: every one of the finished run's goes
        plan = provider.prune(pg_location, PruneStrategy(keep=1))
        assert sorted(plan.ids) == ["done-run-1", "done-run-2", "done-run-3", "done-run-4"]
        assert plan.kept_live == {"far-run-1", "far-run-2", "far-run-3"}
        assert len([m for m in provider.list(pg_location) if m.lineage == "far-run"]) == 4
    finally:
        provider.close()


def test_a_delete_never_removes_a_chunk_a_writer_in_flight_counts_on(pg_location: str) -> None:
    """The race a shared store must survive, forced step by step: a writer has seen that chunk X is stored and
    is held up before it counts its reference; meanwhile the only checkpoint holding X is deleted. The delete
    waits for the writer, and the written checkpoint reads back whole."""
    import json
    import threading
    import zlib

    import psycopg

    from crewpoint.providers import CheckpointMeta, CheckpointRecord, chunks
    from crewpoint.providers.pg_location import parse

    shared, unique = "shared " * 100, "only in the new checkpoint " * 20

    def record(cid: str, body: dict[str, str]) -> CheckpointRecord:
        return CheckpointRecord(CheckpointMeta(cid, None, "main", cid, 1, time.time(), "task_completed"), body)

    writer, deleter = PostgresProvider(), PostgresProvider()
    where = parse(pg_location)
    s = f'"{where.schema}"'
    try:
        writer.write(pg_location, record("holder", {"x": shared}))
        new_body = {"x": shared, "y": unique}
        y_payload = json.dumps(unique, ensure_ascii=False, separators=(",", ":")).encode()
        y_hash = next(h for h, c in chunks.split(new_body).chunks.items() if c.payload == y_payload)
        with psycopg.connect(where.conninfo) as blocker, psycopg.connect(where.conninfo, autocommit=True) as probe:
            # an uncommitted row for chunk Y: the writer's insert of Y waits for this transaction
            blocker.execute(f"INSERT INTO {s}.chunks (hash, data, refs) VALUES (%s, %s, 0)",
                            [y_hash, zlib.compress(y_payload)])  # fmt: skip
            errors: list[BaseException] = []

            def run(action: Callable[[], object]) -> threading.Thread:
                def target() -> None:
                    try:
                        action()
                    except BaseException as exc:
                        errors.append(exc)

                thread = threading.Thread(target=target)
                thread.start()
                return thread

            def waiting() -> int:
                row = probe.execute(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                ).fetchone()
                return int(row[0]) if row else 0

            writing = run(lambda: writer.write(pg_location, record("new", new_body)))
            wait_for(lambda: waiting() == 1, "the writer to wait on chunk Y")
            deleting = run(lambda: deleter.delete(pg_location, ["holder"]))
            wait_for(lambda: waiting() == 2 or not deleting.is_alive(), "the delete to wait or finish")
            blocker.rollback()
            writing.join(60)
            deleting.join(60)
        assert not errors, errors
        assert writer.read(pg_location, "new").body == new_body
        assert writer.meta(pg_location, "holder") is None
    finally:
        writer.close()
        deleter.close()
