"""CrewAI's own stores: `checkpoint list` of 10,000 crew checkpoints (copies of the fixtures' crew dumps, about
130 KB each: 1.3 GB of files, a 1 GB database) the first time and again.

The first listing has to read every checkpoint once: CrewAI's names hold no progress and its stores have no
index. It reads what it needs (a JSON file's head and tail, a row's JSONB inside SQLite) and keeps it in
crewpoint's cache, so later listings read names only. For comparison, a crewpoint JSON store of 10,000
checkpoints whose index was deleted lists in about 0.5 s on the same machine."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from run import Row, bench_env

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "crewai"


def make_json_store(target: Path, count: int) -> None:
    """``count`` crew checkpoints in one chain on ``main``, copies of the fixtures' crew dumps."""
    dumps = []
    for path in sorted((FIXTURES / "json" / "main").glob("*.json")):
        if json.loads(path.read_text())["entities"][0]["entity_type"] == "crew":
            dumps.append(path.read_text())
    (target / "main").mkdir(parents=True)
    parent = "none"
    for i in range(count):
        cid = f"20260101T{i // 3600:02d}{(i // 60) % 60:02d}{i % 60:02d}_{i:08x}"
        (target / "main" / f"{cid}_p-{parent}.json").write_text(dumps[i % len(dumps)])
        parent = cid


def make_sqlite_store(target: Path, count: int) -> None:
    import apsw

    shutil.copy(FIXTURES / "store.db", target)
    con = apsw.Connection(str(target))
    rows = list(
        con.execute("SELECT json(data) FROM checkpoints WHERE json_extract(data, '$.entities[0].entity_type') = 'crew'")
    )
    con.execute("BEGIN")
    parent = None
    for i in range(count):
        cid = f"20260101T{i // 3600:02d}{(i // 60) % 60:02d}{i % 60:02d}_{i:08x}"
        con.execute(
            "INSERT INTO checkpoints VALUES (?, ?, ?, 'main', jsonb(?))",
            (cid, cid[:15], parent, rows[i % len(rows)][0]),
        )
        parent = cid
    con.execute("COMMIT")
    con.close()


def _list_time(store: Path, cache: Path, fresh: bool) -> float:
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**bench_env(), "XDG_CACHE_HOME": str(cache)}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", str(store)],
        env=env,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    return time.perf_counter() - started


COUNT = 10_000
TARGETS = {"JSON": 0.30, "SQLite": 0.25}
"""crewpoint's own stores' targets for listing 10,000 checkpoints."""


def _run(store: Path, cache: Path, *args: str) -> str:
    env = {**bench_env(), "XDG_CACHE_HOME": str(cache)}
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", *args]
    if args[0] == "list":
        command.append(str(store))
    return subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout


def _timed(store: Path, cache: Path, *args: str) -> float:
    started = time.perf_counter()
    _run(store, cache, *args)
    return time.perf_counter() - started


def _paint_time(store: Path, cache: Path, fresh: bool) -> float:
    """The app's start to its first painted tree, in a process of its own (so nothing is remembered)."""
    if fresh:
        shutil.rmtree(cache, ignore_errors=True)
    env = {**bench_env(), "XDG_CACHE_HOME": str(cache)}
    code = f"import asyncio, app_bench; print(asyncio.run(app_bench._first_paint({str(store)!r})))"
    here = str(Path(__file__).resolve().parent)
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=here, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def bench_crewai_list() -> list[Row]:
    rows = []
    for kind, make in (("JSON", make_json_store), ("SQLite", make_sqlite_store)):
        store = Path(os.getcwd()) / (f"crewai-{kind.lower()}" + (".db" if kind == "SQLite" else ""))
        make(store, COUNT)
        cache = Path(os.getcwd()) / f"cache-{kind.lower()}"
        first = statistics.median(_list_time(store, cache, fresh=True) for _ in range(3))
        _list_time(store, cache, fresh=False)
        again = statistics.median(_list_time(store, cache, fresh=False) for _ in range(5))
        name = f"CrewAI {kind} store, `checkpoint list`, 10,000 checkpoints"
        rows.append(Row(f"{name}, first time", first, "s", None, "reads every checkpoint once"))
        rows.append(Row(f"{name}, again", again, "s", TARGETS[kind]))
        oldest = json.loads(_run(store, cache, "list", "--json"))[-1]["id"]
        info = statistics.median(_timed(store, cache, "info", "-l", str(store), oldest) for _ in range(5))
        target, note = (0.12, "the first one") if kind == "SQLite" else (None, "the first one; crewpoint JSON: 0.26 s")
        rows.append(Row(f"CrewAI {kind} store of 10,000, `checkpoint info`", info, "s", target, note))
        paint = statistics.median(_paint_time(store, cache, fresh=True) for _ in range(3))
        paint_again = statistics.median(_paint_time(store, cache, fresh=False) for _ in range(3))
        name = f"CrewAI {kind} store, app: start to first painted tree, 10,000 checkpoints"
        rows.append(Row(f"{name}, first time", paint, "s", 0.5, "newest 500 first"))
        rows.append(Row(f"{name}, again", paint_again, "s", 0.5))
        shutil.rmtree(store, ignore_errors=True) if store.is_dir() else store.unlink()
    return rows


def crewai_benches() -> list[Callable[[], list[Row]]]:
    return [bench_crewai_list]
