"""The side-by-side benches run on tiny stores, so they cannot rot between ``make bench`` runs.

No timing is asserted here (budgets live in bench/): that the floor prints the very bytes ``list`` prints, and
that the side-by-side rows come out, each with a ratio.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture()
def bench_modules() -> Iterator[None]:
    sys.path.insert(0, str(BENCH))
    try:
        yield
    finally:
        sys.path.remove(str(BENCH))


def _stdout(args: list[str]) -> bytes:
    return subprocess.run(args, capture_output=True, check=True).stdout


@pytest.mark.parametrize("kind", ["JSON", "SQLite", "JSON with checks", "SQLite with checks"])
def test_the_floor_prints_what_list_prints(tmp_path: Path, bench_modules: None, kind: str) -> None:
    from support.stores import fill_store

    from crewpoint.providers import JsonProvider, SqliteProvider

    store = str(tmp_path / ("store.db" if kind.startswith("SQLite") else "store"))
    if kind.startswith("SQLite"):
        provider = SqliteProvider()
        fill_store(provider, store, 50)
        provider.close()
    else:
        fill_store(JsonProvider(fsync=False), store, 50)
    listed = _stdout([sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", store])
    checks = ["--checks"] if kind.endswith("checks") else []
    floor = _stdout([sys.executable, str(BENCH / "list_floor.py"), store, *checks])
    assert len(listed.splitlines()) == 51  # a header and 50 rows
    assert b"fork-0" in listed  # branches, not only ids
    assert all(line.rstrip().endswith(b" -") for line in listed.splitlines()[1:])  # no run records: no status
    assert floor == listed


def test_the_floor_with_checks_drops_a_file_gone_since_the_index_was_written(
    tmp_path: Path, bench_modules: None
) -> None:
    from support.stores import fill_store

    from crewpoint.providers import JsonProvider

    store = tmp_path / "store"
    fill_store(JsonProvider(fsync=False), str(store), 50)
    list_command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", str(store)]
    _stdout(list_command)  # the index now holds every file
    gone = min((store / "main").iterdir())
    gone.unlink()
    listed = _stdout(list_command)
    assert len(listed.splitlines()) == 50
    assert _stdout([sys.executable, str(BENCH / "list_floor.py"), str(store), "--checks"]) == listed
    # without the checks the floor trusts the index: the bench's plain floor is the lower bound it claims to be
    trusting = _stdout([sys.executable, str(BENCH / "list_floor.py"), str(store)])
    assert len(trusting.splitlines()) == 51


def test_side_by_side_rows_come_out_for_both_store_kinds(tmp_path: Path, bench_modules: None) -> None:
    from side_by_side import BASELINE, BUDGET, CREWAI_GOAL, FLOOR_GOAL, FORK_INPUT, measure, prepare

    known = subprocess.run(["git", "cat-file", "-e", f"{BASELINE}^{{commit}}"], cwd=BENCH, capture_output=True)
    if known.returncode != 0:
        pytest.skip(f"this clone does not hold {BASELINE} (a shallow clone): `git fetch --unshallow` enables it")
    baseline, today = prepare(tmp_path / "side", count=50)
    for build in (baseline, today):  # ordinary installs: the package's files in the venv, not a link back here
        assert Path(build.crewpoint).is_file()
        assert list(build.venv.glob("lib/python*/site-packages/crewpoint/tui/cli/__init__.py"))
        assert not list(build.venv.glob("lib/python*/site-packages/__editable__*"))
    # Python's own --help stands in for CrewAI's
    rows = measure(baseline, today, runs=1, crewai=Path(sys.executable), crew_runs=1)
    names = [row.name for row in rows]
    fork = f"fork --dry-run --input {FORK_INPUT} of the newest of 50"
    assert names == [
        f"today / {BASELINE}: crewpoint --help",
        f"today / {BASELINE}: list 50 (JSON)",
        f"today / {BASELINE}: list 50 (SQLite)",
        f"today / {BASELINE}: info of the newest of 50 (JSON)",
        f"today / {BASELINE}: info of the newest of 50 (SQLite)",
        f"today / {BASELINE}: {fork} (JSON)",
        f"today / {BASELINE}: {fork} (SQLite)",
        f"today / {BASELINE}: 30-task crew, a checkpoint per task (JSON), cost per task",
        "crewpoint --help / crewai --help",
        "crewpoint checkpoint --help / crewai --help",
        "list 50 (JSON) / its floor",
        "list 50 (SQLite) / its floor",
        "list 50 (JSON) / its floor with the checks a listing owes",
        "list 50 (SQLite) / its floor with the checks a listing owes",
    ]
    assert [row.target for row in rows] == [BUDGET] * 8 + [CREWAI_GOAL] * 2 + [FLOOR_GOAL] * 2 + [None] * 2
    # a ratio of two costs can be negative on a busy machine with one pair; every other ratio is a positive number
    assert all(math.isfinite(row.value) for row in rows), [(r.name, r.note) for r in rows]
    assert all(row.value > 0 for row in rows if "cost per task" not in row.name), [(r.name, r.note) for r in rows]
    # each version listed the store it wrote itself: the same table shape, other ids
    for kind in ("JSON", "SQLite"):
        ours, theirs = today.listing[kind].splitlines(), baseline.listing[kind].splitlines()
        assert len(ours) == len(theirs) == 51
        assert ours[1].split()[0] != theirs[1].split()[0]


def test_the_answer_bench_times_both_sides_from_copies_of_one_store(tmp_path: Path, bench_modules: None) -> None:
    from feedback_bench import GOAL, measure

    (row,) = measure(tmp_path, pairs=1)
    assert row.name == "answer → first new checkpoint / resume → first new checkpoint"
    assert row.target == GOAL == 1.5
    assert math.isfinite(row.value) and row.value > 0, row.note
    # each run had its own copy: the store the bench prepared still waits, with no answer claimed
    assert not (tmp_path / "project" / "store" / ".claims").exists()


def test_the_usage_bench_prints_what_recording_costs(tmp_path: Path) -> None:
    env = {**os.environ, "USAGE_BENCH_ROUNDS": "2", "USAGE_BENCH_TASKS": "3"}
    done = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "bench_usage_recording"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
        env=env,
    )
    cells = {
        parts[1].strip(): parts[2:]
        for line in done.stdout.splitlines()
        if len(parts := [cell.strip() for cell in line.split("│")]) > 4
    }
    assert "failed" not in done.stdout
    for name in ("whole process, wall", "whole process, CPU", "kickoff alone, wall", "kickoff alone, CPU"):
        value, unit = cells[f"recording usage / not recording it ({name})"][:2]
        assert unit == "x" and 0 < float(value) < 10, done.stdout
    assert cells["recording usage / not recording it (whole process, wall)"][2] == "≤ 1.02"
    assert float(cells["3-task offline crew as a process, usage recorded"][0].replace(",", "")) > 0
    assert float(cells["3-task offline crew kickoff alone, usage recorded"][0].replace(",", "")) > 0


def test_the_pg_cost_bench_loads_runs_with_usage_and_times_both_commands(pg_location: str, bench_modules: None) -> None:
    """The PostgreSQL cost bench, small: its rows carry run ids and usage summaries that ``cost --by run --since
    7d`` sums (without reading a body), and its row is the ratio of the two commands' times."""
    import json

    from click.testing import CliRunner
    from pg_cost_bench import GOAL, RUN_LENGTH, measure

    from crewpoint.tui.cli import main

    row = measure(pg_location, count=2000, runs=1)
    assert row.target == GOAL == 2.0 and row.unit == "x"
    assert math.isfinite(row.value) and row.value > 0, row.note
    done = CliRunner().invoke(main, ["checkpoint", "cost", pg_location, "--by", "run", "--since", "7d", "--json"])
    assert done.exit_code == 0, done.output
    data = json.loads(done.stdout)
    assert data["unreadable_checkpoints"] == 0
    step = 60 / 2000  # days between rows, the newest written now
    recent = {n // RUN_LENGTH for n in range(1, 2001) if (2000 - n) * step <= 7}
    # and the demo checkpoint that made the store; a row at the cutoff's edge may fall either side
    assert len(recent) <= data["runs"] <= len(recent) + 1
    assert data["cost_usd"] > 0 and data["usage"]["cache_read_tokens"] > 0


def test_without_crewai_the_side_by_side_says_how_to_get_it(tmp_path: Path, bench_modules: None) -> None:
    from side_by_side import CREWAI_GOAL, crewai_rows

    (missing,) = crewai_rows({}, tmp_path / "no-crewai" / "bin" / "crewai", runs=1)
    assert missing.target == CREWAI_GOAL == 0.2
    assert math.isnan(missing.value) and "`make test-crewai` makes no-crewai" in missing.note


def test_the_export_bench_runs_with_and_without_spans(bench_modules: None, tmp_path: Path, monkeypatch: Any) -> None:
    from otel_bench import bench_otel_export

    monkeypatch.chdir(tmp_path)
    (row,) = bench_otel_export(runs=1)
    assert row.unit == "ms" and math.isfinite(row.value) and row.target == 0.5
    assert "spans received" in row.note and not row.note.endswith(" 0 spans received")


def test_the_fleet_bench_kills_a_worker_and_times_both_sides(tmp_path: Path) -> None:
    """The fleet bench, small (one kill, one round with one worker, an idle worker watched for two seconds): its rows
    come out with their goals, each figure measured."""
    from pg_server import find_bindir

    find_bindir()  # a machine without PostgreSQL's binaries skips, as the PostgreSQL tests do
    small = {"FLEET_BENCH_KILLS": "1", "FLEET_BENCH_ROUNDS": "1", "FLEET_BENCH_WORKERS": "1", "FLEET_BENCH_IDLE": "2"}
    done = subprocess.run(
        [sys.executable, str(BENCH / "run.py"), "bench_fleet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **small},
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    cells = {
        parts[1]: parts[2:]
        for line in done.stdout.splitlines()
        if len(parts := [cell.strip() for cell in line.split("│")]) > 4
    }
    assert "failed" not in done.stdout, done.stdout
    value, unit, goal, _ok, note = cells["fleet: kill → next model call on another worker, p95"][:5]
    assert (unit, goal) == ("s", "≤ 10") and float(value) > 0, done.stdout
    one = f"{float(value):.2f} s"
    assert note.startswith(f"p50 {one}, max {one} of 1;"), note  # one kill: its latency is every figure
    value, unit, goal = cells["fleet: runs/s queued / started directly, 1 worker"][:3]
    assert (unit, goal) == ("x", "≥ 0.9") and float(value) > 0, done.stdout
    value, unit, goal, _ok, note = cells["fleet: an idle worker's CPU"][:5]
    assert unit == "s/min" and float(value) >= 0, done.stdout
    queries = int(note.split()[0])
    assert queries > 0 and f"({queries} statements" not in note, note  # its pool's BEGIN and COMMIT are more
