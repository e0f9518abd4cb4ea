"""A table's listing reads rows (one tuple per checkpoint) where everything else reads ``CheckpointMeta``: the
rows hold the same fields, pass the same checks, come in the same order and show the same cells."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from support.stores import fill_store, sqlite_store_with_bad_bodies

from crewpoint.providers import JsonProvider, SqliteProvider
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.json_index import INDEX
from crewpoint.providers.listed import ListedRow, all_sound, as_meta, row_of
from crewpoint.providers.refs import meta_problem
from crewpoint.tui.cli.tables import table_row, table_rows


def test_a_row_is_the_metadata() -> None:
    assert ListedRow is CheckpointMeta
    meta = CheckpointMeta("a" * 32, None, "main", "l", 1, 2.0, "t", damaged="cut", digest="d" * 64)
    assert row_of(meta) == tuple(meta) and row_of(meta).damaged == "cut" and meta.with_(damaged=None).damaged is None


_ODD: list[tuple[str, Any]] = [
    ("id", 7),
    ("id", ""),
    ("id", "-leading"),
    ("id", "x" * 200),
    ("parent_id", 3),
    ("parent_id", "bad id"),
    ("branch", ""),
    ("branch", "../out"),
    ("branch", "a/.hidden"),
    ("branch", b"main"),
    ("lineage", None),
    ("sequence", -1),
    ("sequence", 2**63),
    ("sequence", 1.0),
    ("sequence", True),
    ("created_at", math.nan),
    ("created_at", math.inf),
    ("created_at", -0.5),
    ("created_at", 10**400),
    ("created_at", "1.0"),
    ("trigger", 1),
    ("entity_kind", None),
    ("entity_name", ["crew"]),
    ("tasks_done", -2),
    ("tasks_total", "4"),
    ("schema_version", None),
    ("version", 0.1),
    ("body_length", -1),
    ("digest", "abc"),
    ("digest", None),
]


@pytest.mark.parametrize(("name", "value"), _ODD)
def test_rows_checked_at_once_fail_as_one_row_fails(name: str, value: Any) -> None:
    """:func:`all_sound` says no exactly when ``meta_problem`` finds something in one of the rows, wherever the
    odd row is and whatever the others hold."""
    rng = random.Random(name + repr(value))
    rows = [
        ListedRow(
            f"{rng.getrandbits(128):032x}",
            None if i % 4 == 0 else f"{rng.getrandbits(128):032x}",
            rng.choice(["main", "fork-1", "a/b"]),
            "lineage",
            i % 4 + 1,
            1.7e9 + i if i % 3 else 1_700_000_000 + i,
            "task_completed",
            "crew",
            "research",
            i % 4,
            4,
            1,
            "0.1.0",
            "",
            "",
            100,
            "/x",
            None,
            0,
            "" if i % 2 else "e" * 64,
        )
        for i in range(50)
    ]
    assert all_sound(rows) and all(meta_problem(as_meta(r)) is None for r in rows)
    where = rng.randrange(len(rows))
    rows[where] = rows[where]._replace(**{name: value})
    assert meta_problem(as_meta(rows[where])) is not None
    assert not all_sound(rows)


def _rows(provider: Any, store: str) -> list[ListedRow]:
    if isinstance(provider, JsonProvider):
        return provider.list_rows(store)
    return list(provider.iter_list_rows(store))


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_rows_are_the_listing_damaged_ones_included(tmp_path: Path, kind: str) -> None:
    """A store with a damaged record (a JSON file cut short and an index line that lies about a field; a SQLite
    row without its body and one whose field has the wrong type) lists the same rows as metadata, in the same
    order, and its table shows the same cells."""
    provider: Any = JsonProvider(fsync=False) if kind == "json" else SqliteProvider()
    store = str(tmp_path / ("store" if kind == "json" else "store.db"))
    ids = fill_store(provider, store, 24)
    provider.close()
    assert _rows(provider, store) == [tuple(m) for m in provider.list(store)]
    if kind == "json":
        cut = next(m for m in provider.list(store) if m.id == ids[3]).location
        os.truncate(cut, os.path.getsize(cut) - 10)
        index = Path(store, INDEX)
        lines = index.read_text().splitlines()
        lines = [json.dumps([*json.loads(line)[:-1], 7]) if ids[5] in line else line for line in lines]
        index.write_text("\n".join(lines) + "\n")
    else:
        con = sqlite3.connect(store)
        con.execute("DELETE FROM bodies WHERE id = ?", [ids[3]])
        con.execute("UPDATE checkpoints SET tasks_done = 'many' WHERE id = ?", [ids[5]])
        con.commit()
        con.close()
    provider = JsonProvider(fsync=False) if kind == "json" else SqliteProvider()
    metas = provider.list(store)
    rows = _rows(provider, store)
    provider.close()
    assert rows == [tuple(m) for m in metas]
    damaged = {m.id: m.damaged for m in metas if m.damaged}
    assert set(damaged) == ({ids[3]} if kind == "json" else {ids[3], ids[5]})
    if kind == "json":  # the lying line is not trusted: the file's own header is read, and it is whole
        assert next(m for m in metas if m.id == ids[5]).version != 7
    assert table_rows(rows) == [table_row(m) for m in metas]
    assert [r[4] for r in table_rows(rows) if r[4] == "DAMAGED"] == ["DAMAGED"] * len(damaged)


def test_a_big_sqlite_store_streams_its_rows_checking_each_chunks_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a size, a streamed listing looks up each chunk's body rows instead of reading every body id first (a
    store of a million lists its newest 50 at once): the rows and the damage it finds are the same."""
    import crewpoint.providers.sqlite_provider as sqlite_provider

    store = str(tmp_path / "store.db")
    ids = sqlite_store_with_bad_bodies(store, 24, missing=3, empty=7)
    whole = [tuple(m) for m in SqliteProvider().iter_list(store)]
    monkeypatch.setattr(sqlite_provider, "_FEW_ROWS", 0)  # this store counts as big now
    streamed = [tuple(m) for m in SqliteProvider().iter_list(store)]
    assert streamed == whole and len(streamed) == 24
    damaged = {m.id: m.damaged for m in SqliteProvider().iter_list(store) if m.damaged}
    assert set(damaged) == {ids[3], ids[7]}
    newest = SqliteProvider().list_newest(store, 5)
    assert [m.id for m in newest] == [row[0] for row in whole[:5]]


@pytest.mark.parametrize(
    "odd",
    [
        *("", "-x", ".x", "a" * 129, "a b", "a\nb", "é", "a_b", "a/b", "ａ", "a\u0660", "x" * 128, "A.b-9", "0"),
        *("a\n", "\x7f", "a\x00", "a.", "9-", "-", "Z\u0301", "a:b", "[", "`"),
    ],
)
def test_ids_checked_at_once_answer_as_the_pattern(odd: str) -> None:
    from crewpoint.providers.listed import _all_ids
    from crewpoint.providers.refs import ID_RE

    ids = [f"{i:032x}" for i in range(20)]
    assert _all_ids(ids)
    for where in (0, 7, 19):
        mixed = [*ids[:where], odd, *ids[where:]]
        assert _all_ids(mixed) == bool(ID_RE.fullmatch(odd)), (odd, where)


def test_a_listing_printed_by_columns_is_the_table_printed_by_rows(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The table a listing prints column by column has the bytes of the rows printed as rows: with its header
    or after an earlier chunk's widths, odd cells (cut, folded, shown, another format's id) and damaged rows."""
    from crewpoint.tui.cli.tables import CELL_WIDTH, print_listing, print_table

    provider = SqliteProvider()
    store = str(tmp_path / "store.db")
    fill_store(provider, store, 12)
    base = provider.list(store)
    provider.close()
    odd = [
        base[0]._replace(branch="b" * (CELL_WIDTH + 5)),
        base[1]._replace(trigger="two  spaces", entity_name=" padded "),
        base[2]._replace(trigger="tab\there", entity_name="bidi\u202ename"),
        base[3]._replace(id="20261130T150000_abcdef12", parent_id="A" * 40),
    ]
    header = ["ID", "TIME", "BRANCH", "PARENT", "TRIGGER", "ENTITY", "PROGRESS", "SIZE", "STATUS"]
    statuses = {base[5].id: "done", odd[0].id: "live"}
    cases = [base, [*base, *odd], [*odd, base[6]._replace(damaged="its body is missing")]]
    for metas in cases:
        for widths in (None, [3] * 9, [30] * 9):
            got = print_listing(None if widths else header, metas, statuses, widths)
            shown = capsys.readouterr().out
            made = print_table(None if widths else header, table_rows(metas, statuses), widths)
            assert (got, shown) == (made, capsys.readouterr().out)
            assert shown.count("\n") == len(metas) + (0 if widths else 1)


def test_list_loads_no_other_command_and_every_command_is_still_there() -> None:
    """``crewpoint checkpoint list`` imports its own command's module only; help, an unknown command's
    suggestion and every other command still find all of them (each module of ``COMMAND_MODULES`` registers)."""
    import subprocess
    import sys

    from click.testing import CliRunner

    code = (
        "import sys\n"
        "from crewpoint.tui.cli import COMMAND_MODULES, main\n"
        "try:\n"
        "    main(['checkpoint', 'list', sys.argv[1]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in COMMAND_MODULES if f'crewpoint.tui.cli.{m}' in sys.modules), file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code, "no-such-store"], capture_output=True, text=True)
    assert done.stderr.splitlines()[-1] == "['listing']", done.stderr
    from crewpoint.tui.cli import COMMAND_MODULES, main

    shown = CliRunner().invoke(main, ["checkpoint", "--help"])
    assert shown.exit_code == 0
    from crewpoint.tui.cli import checkpoint, load_commands

    load_commands()  # every module the registry names: each command it registers is listed by its group's help
    assert checkpoint.commands and set(main.commands) - {"checkpoint"}
    for name in checkpoint.commands:
        assert f"  {name} " in shown.stdout, name
    top = CliRunner().invoke(main, ["--help"]).stdout
    for name in main.commands:
        assert f"  {name} " in top, name
    wrong = CliRunner().invoke(main, ["checkpoint", "lst"])
    assert wrong.exit_code == 2 and "lst" in wrong.stderr
    assert len(COMMAND_MODULES) == len(set(COMMAND_MODULES))


def test_every_module_that_registers_a_command_is_named() -> None:
    import re

    import crewpoint.tui.cli as cli

    folder = Path(cli.__file__).parent
    registering = {
        p.stem for p in folder.glob("*.py") if re.search(r"^@(checkpoint|main)\.(command|group)\(", p.read_text(), re.M)
    }
    assert registering - {"root"} == set(cli.COMMAND_MODULES)


@pytest.mark.parametrize("seed", range(6))
def test_rows_come_newest_first_as_metadata_does(seed: int) -> None:
    """Clocks that step back (a later checkpoint of a run's branch with an earlier time) included."""
    from crewpoint.providers.listed import newest_rows
    from crewpoint.providers.prune import newest_first

    rng = random.Random(seed)
    rows = []
    for i in range(60):
        sequence = rng.randrange(1, 6)
        when = rng.choice([1.0, 2.0, 3.0]) if seed % 2 else 1000.0 + sequence  # odd seeds: clocks that step
        rows.append(ListedRow(f"{i:032x}", None, rng.choice("ab"), rng.choice("xyz"), sequence, when, "t"))
    expected = newest_first([CheckpointMeta(*r) for r in rows])
    assert [r.id for r in newest_rows(rows)] == [m.id for m in expected]


def _segments_one_by_one(metas: list[CheckpointMeta]) -> list[tuple[str, list[str], str | None]]:
    """The segments of a store as the rule says, made one checkpoint at a time: each group (lineage, branch,
    entity) in order; a checkpoint continues the segment whose newest is its parent, else starts one."""
    from crewpoint.tui.store_index import ORDER, _placements

    groups: dict[tuple[Any, ...], list[CheckpointMeta]] = {}
    for meta, (lineage, entity) in zip(metas, _placements(metas), strict=True):
        groups.setdefault((lineage, meta.branch, entity), []).append(meta)
    ids = {m.id for m in metas}
    out: list[tuple[str, list[str], str | None]] = []
    for (lineage, branch, entity), members in groups.items():
        own: dict[str, list[Any]] = {}
        for meta in sorted(members, key=ORDER):
            segment = own.get(meta.parent_id) if meta.parent_id else None
            if segment is None or segment[1][-1] != meta.parent_id:
                source = meta.parent_id if meta.parent_id in ids else None
                segment = [f"{entity[0]}/{entity[1]}/{lineage}/{branch}/{meta.id}", [], source]
                out.append(segment)  # type: ignore[arg-type]
            segment[1].append(meta.id)
            own[meta.id] = segment
    return sorted(tuple(s) for s in out)  # type: ignore[misc]


@pytest.mark.parametrize("seed", range(8))
def test_segments_are_the_rule_s_however_a_run_branches(seed: int) -> None:
    """Runs that go straight (most), resumes from an earlier checkpoint (two children on one branch), forks to
    other branches, parents out of view and damaged records: the index's segments are the rule's."""
    from crewpoint.tui.store_index import StoreIndex

    rng = random.Random(seed)
    metas: list[CheckpointMeta] = []
    for run in range(12):
        lineage, branch = f"l{run % 5}", rng.choice(["main", "main", "b"])
        parent = rng.choice([None, None, *(m.id for m in metas[-6:])])
        for sequence in range(1, rng.randrange(2, 7)):
            cid = f"{len(metas):032x}"
            if rng.random() < 0.15 and metas:
                parent = rng.choice(metas).id  # a resume from somewhere earlier
            damaged = "cut" if rng.random() < 0.05 else None
            metas.append(
                CheckpointMeta(
                    cid, parent, branch, lineage, sequence, 100.0 + len(metas), "t", "crew", "c", damaged=damaged
                )
            )
            parent = cid
    rng.shuffle(metas)
    index = StoreIndex.build(metas)
    made = sorted((s.key, [m.id for m in s.metas], s.source_id) for s in index.segments.values())
    assert made == _segments_one_by_one(metas)
    assert {m.id for m in metas} == set(index.segment_of) == set(index.metas)


def test_the_names_that_may_be_folders_are_read_in_one_pass_as_one_by_one() -> None:
    from crewpoint.providers.json_provider import _MAYBE_FOLDER

    rng = random.Random(5)
    parts = ["main", ".", "json", ".json", "x", "-", " ", "\r", "é", "JSON", "1_2", "tmp"]
    for _ in range(300):
        names = ["".join(rng.choice(parts) for _ in range(rng.randrange(1, 4))) for _ in range(rng.randrange(1, 9))]
        expected = [n for n in names if n[:1] != "." and not n.endswith(".json")]
        assert _MAYBE_FOLDER.findall("\n".join(names)) == expected, names


def test_a_file_s_name_and_id_are_read_in_one_pass_as_the_name_pattern_reads_them() -> None:
    """A listing takes each checkpoint file's name and id from one pattern pass over a folder's names: the names
    :data:`NAME_RE` takes whole, with the id it finds, and no other name (folders, temporary and foreign files)."""
    from crewpoint.providers.json_provider import _NAME_GROUPS, NAME_RE

    rng = random.Random(11)
    parts = ["00000001", "_", "20260921T141320.000000", "abc", "d2986630ec0344da", "root", "p-", "x.y", ".json", "-"]
    named = ["00000003_20260921T141322.000000_a4b8-7.x_p-b3b1969f.json", "7_20260101T000000.000000_Z_root.json"]
    for _ in range(400):
        names = [*rng.sample(named, 1)]
        names += ["".join(rng.choice(parts) for _ in range(rng.randrange(1, 9))) for _ in range(rng.randrange(1, 9))]
        rng.shuffle(names)
        matches = [NAME_RE.fullmatch(name) for name in names]
        expected = [(m.group(0), m.group(3)) for m in matches if m is not None]
        assert _NAME_GROUPS.findall("\n".join(names)) == expected, names


def test_branches_in_folders_within_folders_are_all_listed(tmp_path: Path) -> None:
    """A branch's folder that holds only checkpoint files is not searched for folders; one that also holds a
    folder (``team`` holding ``team/alpha``) is, so every branch's checkpoints are listed, from the index and
    without it alike."""
    from crewpoint.tui.cli.listing_run import _listed

    provider = JsonProvider(fsync=False)
    store = str(tmp_path / "store")
    fill_store(provider, store, 8)
    records = [provider.read(store, m.id) for m in provider.list(store)[:3]]
    for record, branch in zip(records, ["team", "team/alpha", "solo"], strict=True):
        meta = record.meta._replace(id=record.meta.id[::-1], branch=branch, parent_id=None)
        provider.write(store, dataclasses.replace(record, meta=meta))
    expected = sorted((m.id, m.branch) for m in provider.list(store))
    assert {"team", "team/alpha", "solo", "main"} <= {branch for _, branch in expected} and len(expected) == 11
    for _ in range(2):  # with the index the writes kept, then with none
        assert sorted((r.id, r.branch) for r in _listed(store, None)) == expected
        assert sorted((r.id, r.branch) for r in provider.list_rows(store)) == expected
        os.unlink(os.path.join(store, INDEX))
