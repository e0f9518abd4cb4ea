"""A listing's cells made once per value (times by their minute, sizes by their value) read as made one by one;
and `list` of 10,000 checkpoints stays near its floor (bench/list_floor.py), as a ratio of whole processes."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from crewpoint.providers.base import CheckpointMeta
from crewpoint.tui.cli.tables import format_time, table_rows

BENCH = Path(__file__).resolve().parents[2] / "bench"
ZONES = ["UTC", "Asia/Kolkata", "America/St_Johns", "Africa/Monrovia", "Europe/Amsterdam", "Australia/Lord_Howe"]

_CHECK = """
import random, sys
from crewpoint.providers.base import CheckpointMeta
from crewpoint.tui.cli.tables import format_time, table_rows
rng = random.Random(7)
times = [rng.uniform(1, 4e9) for _ in range(3000)] + [rng.uniform(0, 2.5e8) for _ in range(3000)]
times += [1711846800 + i * 0.7 for i in range(-300, 300)] + [1.0, 59.999, 60.0, 63072000.5]
metas = [CheckpointMeta("a" * 32, None, "main", "l", 1, t, "x", size=int(t) % 5000) for t in times]
for t, row in zip(times, table_rows(metas)):
    if row[1] != format_time(t):
        sys.exit(f"{t!r}: {row[1]} != {format_time(t)}")
print(len(times))
"""


@pytest.mark.parametrize("zone", ZONES)
def test_times_in_a_table_read_as_each_formatted_alone(zone: str) -> None:
    """Every time zone, those whose offset is not whole minutes (Monrovia before 1972) and those that change
    it (a daylight-saving switch in the sample) included: the table's time cell is the time formatted alone."""
    env = {**os.environ, "TZ": zone}
    done = subprocess.run([sys.executable, "-c", _CHECK], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "6604"


def test_sizes_and_a_zero_time_in_a_table() -> None:
    rng = random.Random(3)
    sizes = [rng.choice([0, 1, 1023, 1024, 26053, 5 * 2**20]) for _ in range(200)]
    metas = [CheckpointMeta("b" * 32, None, "main", "l", 1, 0.0 if s == 1 else 1e9, "x", size=s) for s in sizes]
    rows = table_rows(metas)
    assert [row[7] for row in rows] == [
        ("0 B", "1 B", "1023 B", "1.0 KiB", "25.4 KiB", "5.0 MiB")[[0, 1, 1023, 1024, 26053, 5 * 2**20].index(s)]
        for s in sizes
    ]
    assert [row[1] for row in rows] == ["-" if s == 1 else format_time(1e9) for s in sizes]


def test_metadata_is_one_immutable_tuple_type_whose_defaults_fill_a_short_row() -> None:
    """A listing makes one ``CheckpointMeta`` per row by position (``new_meta`` is the class): defaults fill what a
    short row leaves out, nothing can be assigned, too few or too many values are refused."""
    from crewpoint.providers.base import new_meta

    values = ("c" * 32, "d" * 32, "main", "l", 3, 1.5, "task_completed", "crew", "r", 3, 4, 1, "0.1.0", "r1", "")
    values += (26053, "/x")
    values += ("cut", 10, "e" * 64)
    assert new_meta is CheckpointMeta
    short = CheckpointMeta(*values[:7])
    assert (short.entity_kind, short.damaged, short.digest, short.schema_version) == ("", None, "", 1)
    assert tuple(CheckpointMeta(*values)) == values
    with pytest.raises(AttributeError):
        short.branch = "other"  # type: ignore[misc]
    for wrong in (values[:6], (*values, "more")):
        with pytest.raises(TypeError):
            CheckpointMeta(*wrong)


GUARDS = {"JSON": 2.25, "SQLite": 2.0}
"""The most ``list`` of 10,000 may take over its floor (CPU, medians of interleaved whole processes) in this suite,
where other tests share the cores. The goal, 2.0 for both (``bench/run.py``'s ``LIST_FLOOR_GOAL``, COST column
included), is what ``make bench`` prints and holds on a quiet machine: SQLite 1.5x; JSON 1.9x (2.2x before
``checkpoint list`` ran without click; 2.8x before its listing read rows), too close to 2.0 for a guard that runs
beside other tests, so its guard keeps a margin. The checks a listing owes (every file looked at, a lying index
line, a missing body) take most of what is left over the floor."""


@pytest.mark.parametrize("kind", ["JSON", "SQLite"])
def test_list_of_ten_thousand_stays_near_its_floor(tmp_path: Path, kind: str) -> None:
    """``crewpoint checkpoint list STORE`` of 10,000 checkpoints, as a user runs it, prints the floor's bytes
    (checked by ``list_over_floor``) in at most :data:`GUARDS` times the floor's CPU time."""
    sys.path.insert(0, str(BENCH))
    try:
        from run import list_over_floor
    finally:
        sys.path.remove(str(BENCH))
    from support.stores import fill_store

    from crewpoint.providers import JsonProvider, SqliteProvider

    provider = JsonProvider(fsync=False) if kind == "JSON" else SqliteProvider()
    store = str(tmp_path / ("store" if kind == "JSON" else "store.db"))
    fill_store(provider, store, 10_000)
    provider.close()
    _, cpu, ours, floor = list_over_floor(store, runs=7)
    assert cpu <= GUARDS[kind], f"list takes {cpu:.2f}x its floor's CPU ({ours:.3f} s / {floor:.3f} s wall)"
