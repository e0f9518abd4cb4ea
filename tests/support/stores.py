"""Store builders shared by the tests, the benches and the scripts: real runs of the demo crew on the offline
model (:func:`make_store`), the demo store with a fork the app's tests browse (:func:`make_forked_store`), and
large realistic stores made fast by cloning a demo run's checkpoints (:func:`fill_store`, :func:`clone_sqlite_rows`).

Module-level imports stay at the providers' base: the side-by-side bench fills stores with this module under an
older crewpoint, so whatever else a builder needs is imported inside it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from crewpoint.providers.base import BaseProvider, CheckpointRecord


def make_store(
    location: str = ".checkpoints", *, stop_after: int | None = None, delay: float = 0.0, **config: Any
) -> str:
    """Run the demo crew checkpointing into ``location``; with ``stop_after`` the run is interrupted (as by
    Ctrl-C) right after that many tasks finished."""
    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.events import event_bus
    from crewpoint.providers import JsonProvider, SqliteProvider

    provider = SqliteProvider() if location.endswith(".db") else JsonProvider(fsync=False)
    crew = demo_crew(delay=delay, checkpoint=CheckpointConfig(location=location, provider=provider, **config))
    finished: list[str] = []

    def interrupt(source: object, event: object) -> None:
        finished.append("task")
        if stop_after is not None and len(finished) == stop_after:
            raise KeyboardInterrupt

    event_bus.register("task_completed", interrupt)
    try:
        crew.kickoff(inputs=DEMO_INPUTS)
    except KeyboardInterrupt:
        assert stop_after is not None
    finally:
        event_bus.off(interrupt)
    return location


def make_forked_store(
    location: str, *, branch: str = "experiment", inputs: Mapping[str, Any] | None = None, runs_after: int = 0
) -> str:
    """The demo store with a fork, as the app's tests browse it: a demo run (the crew's four checkpoints on
    ``main``, then the triage flow's three), and a fork of the crew's second checkpoint onto ``branch`` kicked off
    with ``inputs`` (None: the checkpoint's own); then ``runs_after`` more demo runs."""
    from crewpoint.checkpoint import ops
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.crew import Crew
    from crewpoint.demo import run_demo

    run_demo(location=location)
    main = sorted((m for m in ops.list_checkpoints(location) if m.entity_kind == "crew"), key=lambda m: m.sequence)
    Crew.fork(CheckpointConfig(restore_from=main[1].location), branch=branch).kickoff(inputs=inputs)
    for _ in range(runs_after):
        run_demo(location=location)
    return location


def demo_records() -> list[CheckpointRecord]:
    """The four records one demo crew run captures, written to an in-memory store and read back."""
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.providers import MemoryProvider

    location = f"memory://bench-{uuid.uuid4().hex}"
    provider = MemoryProvider()
    demo_crew(checkpoint=CheckpointConfig(location=location, provider=provider)).kickoff(inputs=DEMO_INPUTS)
    metas = sorted((m for m in provider.list(location) if m.entity_kind == "crew"), key=lambda m: m.sequence)
    records = [provider.read(location, m.id) for m in metas]
    provider.drop(location)
    return records


def clone_sqlite_rows(path: str, total: int) -> None:
    """Grow the SQLite store at ``path`` (holding at least one checkpoint) to ``total`` rows by cloning its
    first checkpoint's metadata in runs of four, all sharing its body: a million rows in seconds."""
    import sqlite3

    con = sqlite3.connect(path)
    columns = [r[1] for r in con.execute("PRAGMA table_info(checkpoints)")]
    first = con.execute("SELECT * FROM checkpoints ORDER BY sequence LIMIT 1").fetchone()
    manifest = con.execute("SELECT manifest FROM bodies WHERE id = ?", [first[0]]).fetchone()[0]
    have = con.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    row = dict(zip(columns, first, strict=True))
    now = 1_790_000_000.0
    batch_rows: list[tuple[object, ...]] = []
    bodies: list[tuple[str, bytes]] = []
    parent: str | None = None
    lineage = ""
    for n in range(total - have):
        seq = n % 4 + 1
        if seq == 1:
            lineage, parent = uuid.uuid4().hex, None
        cid = uuid.uuid4().hex
        values = {**row, "id": cid, "parent_id": parent, "lineage": lineage, "sequence": seq, "created_at": now + n}
        batch_rows.append(tuple(values[c] for c in columns))
        bodies.append((cid, manifest))
        parent = cid
        if len(batch_rows) >= 50_000:
            _flush(con, columns, batch_rows, bodies)
    _flush(con, columns, batch_rows, bodies)
    # every clone's manifest refers to the same chunks as the body it copies
    import zlib

    from crewpoint.providers import chunks

    roots = chunks.children_of(zlib.decompress(manifest))
    con.executemany("UPDATE chunk_refs SET refs = refs + ? WHERE hash = ?", [(total - have, h) for h in roots])
    con.commit()
    con.close()


def _flush(con: Any, columns: list[str], rows: list[tuple[object, ...]], bodies: list[tuple[str, bytes]]) -> None:
    marks = ",".join("?" * len(columns))
    con.executemany(f"INSERT INTO checkpoints ({','.join(columns)}) VALUES ({marks})", rows)
    con.executemany("INSERT INTO bodies (id, manifest) VALUES (?, ?)", bodies)
    con.commit()
    rows.clear()
    bodies.clear()


def fill_store(provider: BaseProvider, location: str, count: int, runs: bool = False) -> list[str]:
    """Write ``count`` checkpoints: runs of four on ``main``, with every tenth run forked onto its own branch;
    with ``runs``, each whole run's record too (finished), so that STATUS reads ``done`` for its checkpoints."""
    from crewpoint.providers.runs import RunInfo

    records = demo_records()
    ids: list[str] = []
    now = 1_790_000_000.0
    run = 0
    while len(ids) < count:
        lineage = uuid.uuid4().hex
        branch = "main" if run % 10 else f"fork-{run // 10}"
        parent = ids[-3] if branch != "main" and len(ids) >= 3 else None
        for seq, record in enumerate(records, start=1):
            if len(ids) >= count:
                break
            checkpoint_id = uuid.uuid4().hex
            meta = record.meta.with_(
                id=checkpoint_id,
                parent_id=parent,
                branch=branch,
                lineage=lineage,
                sequence=seq,
                created_at=now,
            )
            body = dict(record.body)
            body["lineage"] = {**body["lineage"], "id": checkpoint_id, "parent_id": parent, "branch": branch}
            provider.write(location, CheckpointRecord(meta=meta, body=body))
            ids.append(checkpoint_id)
            parent = checkpoint_id
            now += 1.0
        if runs and seq == len(records) and ids[-1] == checkpoint_id:  # a whole run: it finished
            started = now - len(records)
            done = RunInfo(uuid.uuid4().hex, 1, "host", started, now, "finished", branch, lineage, "crew")
            provider.write_run(location, replace(done, entity_name=meta.entity_name, checkpoint_id=checkpoint_id))
        run += 1
    return ids


def sqlite_store_with_bad_bodies(location: str, count: int, missing: int, empty: int) -> list[str]:
    """A SQLite store of ``count`` checkpoints (:func:`fill_store`) whose ``missing``-th checkpoint has lost its body
    row and whose ``empty``-th has an empty one: its ids."""
    import sqlite3

    from crewpoint.providers import SqliteProvider

    provider = SqliteProvider()
    ids = fill_store(provider, location, count)
    provider.close()
    con = sqlite3.connect(location)
    con.execute("DELETE FROM bodies WHERE id = ?", [ids[missing]])
    con.execute("UPDATE bodies SET manifest = x'' WHERE id = ?", [ids[empty]])
    con.commit()
    con.close()
    return ids


BASE_TIME = 1_704_164_645.0  # 2024-01-02 03:04:05 UTC
"""When the first checkpoint of a store :func:`fix_store` rewrote was written (each next one a minute later)."""


def fix_store(
    raw: str, out: str, fixed_id: Callable[[int], str], durations: Mapping[str, float] | None = None
) -> list[str]:
    """Copy the JSON store ``raw`` to ``out`` with what differs run to run made the same (for snapshots and
    screenshots): ids (``fixed_id(n)`` for the n-th oldest), lineage, times, the program's origin, the memory's
    times and ``raw``'s own path in the bodies. With ``durations`` (seconds by task description, 1.0 for the rest)
    each call's duration is fixed too. The new ids, oldest first."""
    import json

    from crewpoint.checkpoint import ops
    from crewpoint.providers import JsonProvider
    from crewpoint.providers.usage_meta import usage_summary

    metas = sorted(ops.list_checkpoints(raw), key=lambda m: (m.created_at, m.sequence))
    ids = {meta.id: fixed_id(n) for n, meta in enumerate(metas, 1)}
    provider = JsonProvider(fsync=False)
    for n, meta in enumerate(metas, 1):
        record = provider.read(meta.location)
        stamp = BASE_TIME + 60 * n
        new_meta = meta.with_(
            id=ids[meta.id],
            parent_id=ids.get(meta.parent_id or ""),
            lineage="5eed" * 8,
            created_at=stamp,
            location="",
            size=0,
        )
        body = dict(record.body)
        lineage = {**body["lineage"], "id": new_meta.id, "parent_id": new_meta.parent_id, "lineage": new_meta.lineage}
        if lineage.get("resumed_from"):
            lineage["resumed_from"] = ids.get(lineage["resumed_from"], lineage["resumed_from"])
        body["lineage"] = lineage
        body["created_at"] = stamp
        body.pop("origin", None)  # where the program came from differs between machines and test orders
        for i, event in enumerate(body.get("events", [])):
            event["timestamp"] = stamp + i / 8
            event["sequence"] = i + 1  # the runtime numbers events per process
            usage = event.get("usage")
            if durations is not None and isinstance(usage, dict) and "duration_s" in usage:
                usage["duration_s"] = 1.0
        for i, item in enumerate(body["entity"].get("crew_memory", {}).get("items", [])):
            item["created_at"] = stamp + i / 8
        if durations is not None:
            labels = {t["id"]: t["description"] for t in body["entity"].get("tasks", [])}
            body["usage"] = {key: _fixed_rows(rows, labels, durations) for key, rows in body.get("usage", {}).items()}
            spent = body["usage"]  # the metadata's summary sums the rows as fixed, as a run would have written it
            chain = [*spent.get("before", []), *spent.get("rows", [])]
            new_meta = new_meta.with_(usage=usage_summary(chain, spent.get("rows", [])))
        # the temporary folder's name (and so the body's size) differs from run to run
        body = json.loads(json.dumps(body).replace(raw, "/raw"))
        provider.write(out, CheckpointRecord(meta=new_meta, body=body))
    for n, run in enumerate(sorted(provider.read_runs(raw), key=lambda r: r.started_at), 1):
        if run.checkpoint_id in ids:  # each run's record, its ids and times made the same too
            stamp = BASE_TIME + 60 * n
            fixed = replace(run, run_id=f"run-{n}", pid=1, host="host", started_at=stamp, last_beat=stamp)
            provider.write_run(out, replace(fixed, lineage="5eed" * 8, checkpoint_id=ids[run.checkpoint_id]))
    return [ids[m.id] for m in metas]


def _fixed_rows(rows: Any, labels: Mapping[str, str], durations: Mapping[str, float]) -> Any:
    if not isinstance(rows, list):
        return rows
    # lazy: this module also fills stores for older crewpoints (bench/side_by_side.py), which have no usage rows
    from crewpoint.providers.usage_meta import decode_row, encode_row

    out = []
    for stored in rows:
        row = decode_row(stored)
        seconds = durations.get(labels.get(row.unit or "", ""), 1.0) if row is not None else 1.0
        out.append(encode_row(row._replace(duration_s=seconds)) if row is not None else stored)
    return out
