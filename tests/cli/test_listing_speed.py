"""``list`` gives each checkpoint the status of its run however the listing is cut into chunks, and ``info``
finds an id prefix in a SQLite store without listing it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cli import cli
from support.stores import fill_store, sqlite_store_with_bad_bodies

from crewpoint.providers import JsonProvider, SqliteProvider
from crewpoint.providers.base import BaseProvider
from crewpoint.tui.cli import listing


def _table_statuses(store: str) -> dict[str, str]:
    result = cli("checkpoint", "list", store)
    assert result.exit_code == 0, result.stderr
    rows = result.stdout.splitlines()
    assert rows[0].split()[0] == "ID"
    return {row.split()[0]: row.split()[-1] for row in rows[1:]}


@pytest.mark.parametrize("kind", ["json", "sqlite"])
@pytest.mark.parametrize("chunk", [3, 5, 2000])
def test_a_run_cut_by_a_chunk_boundary_reads_one_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, chunk: int
) -> None:
    provider: BaseProvider = JsonProvider(fsync=False) if kind == "json" else SqliteProvider()
    store = str(tmp_path / ("store" if kind == "json" else "store.db"))
    ids = fill_store(provider, store, 46, runs=True)  # runs of four: with chunks of 3 or 5 most straddle a boundary
    provider.close()
    whole = cli("checkpoint", "list", store, "--json")
    assert whole.exit_code == 0, whole.stderr
    expected = {m["id"][:12]: m["status"] or "-" for m in json.loads(whole.stdout)}
    assert set(expected.values()) == {"done", "-"}  # finished runs, and the unfinished last one
    monkeypatch.setattr(listing, "LIST_CHUNK", chunk)
    shown = _table_statuses(store)
    assert shown == expected
    assert all(shown[i[:12]] == "done" for i in ids[:4])  # run fork-0, listed last


def test_a_run_straddling_the_real_chunk_reads_done_throughout(tmp_path: Path) -> None:
    provider = SqliteProvider()
    store = str(tmp_path / "store.db")
    ids = fill_store(provider, store, listing.LIST_CHUNK + 2, runs=True)  # fork-0's last two rows: the second chunk
    provider.close()
    shown = _table_statuses(store)
    assert [shown[i[:12]] for i in ids[:4]] == ["done"] * 4


def test_info_finds_a_prefix_in_sqlite_and_names_an_ambiguous_one(tmp_path: Path) -> None:
    provider = SqliteProvider()
    store = str(tmp_path / "store.db")
    ids = fill_store(provider, store, 30)
    found = provider.find(store, ids[7][:10])
    assert found.id == ids[7] and found.damaged is None
    assert found == next(m for m in provider.list(store) if m.id == ids[7])
    provider.close()
    shown = cli("checkpoint", "info", ids[7][:12], "--location", store)
    assert shown.exit_code == 0, shown.stderr
    assert f"checkpoint  {ids[7]}" in shown.stdout.splitlines()
    first = ids[0][0]
    many = sorted(i for i in ids if i.startswith(first))
    if len(many) > 1:
        ambiguous = cli("checkpoint", "info", first, "--location", store)
        assert ambiguous.exit_code == 2
        assert "ambiguous" in ambiguous.stderr and many[0] in ambiguous.stderr
    missing = cli("checkpoint", "info", "f" * 31 + "0" if ids[0] != "f" * 31 + "0" else "0" * 32, "--location", store)
    assert missing.exit_code == 2 and "no checkpoint" in missing.stderr


def test_a_run_lost_on_another_host_lists_as_lost(tmp_path: Path) -> None:
    from crewpoint.providers.runs import RunInfo

    provider = SqliteProvider()
    store = str(tmp_path / "store.db")
    fill_store(provider, store, 6, runs=True)  # fork-0 (finished) and two checkpoints of an unfinished run on main
    newest = provider.list(store)[0]
    run = RunInfo(
        run_id="r1",
        pid=1,
        host="another-host-" + tmp_path.name,
        started_at=1.0,
        last_beat=2.0,  # its beats stopped long ago, on a host this one cannot look at
        branch=newest.branch,
        lineage=newest.lineage,
        entity_kind=newest.entity_kind,
        entity_name=newest.entity_name,
        checkpoint_id=newest.id,
    )
    assert provider.write_run(store, run)
    provider.close()
    shown = _table_statuses(store)
    assert shown[newest.id[:12]] == "lost"
    assert sorted(shown.values()) == ["done"] * 4 + ["lost"] * 2


def test_the_fast_table_rows_are_the_cells_of_table_row(tmp_path: Path) -> None:

    from crewpoint.tui.cli.tables import CELL_WIDTH, table_row, table_rows

    provider = SqliteProvider()
    store = str(tmp_path / "store.db")
    fill_store(provider, store, 8)
    base = provider.list(store)
    provider.close()
    odd = [
        base[0]._replace(branch="b" * (CELL_WIDTH + 5)),  # cut
        base[1]._replace(trigger="two  spaces", entity_name=" padded "),  # folded
        base[2]._replace(trigger="tab\there", entity_name="bidi\u202ename"),  # shown, not sent
        base[3]._replace(id="20261130T150000_abcdef12", parent_id="A" * 40),  # another format's id, a long one
        base[4]._replace(entity_kind="", entity_name="", trigger=""),  # empty cells
        base[5]._replace(damaged="its body is missing"),
    ]
    metas = [*base, *odd]
    assert table_rows(metas) == [table_row(m) for m in metas]
    rows = table_rows(odd)
    assert len(rows[0][2]) == CELL_WIDTH and rows[0][2].endswith("…")
    assert rows[1][4] == "two spaces" and rows[1][5].endswith(" padded")
    assert "\t" not in rows[2][4] and "\u202e" not in rows[2][5]
    assert rows[3][0] == "20261130T150000_abcdef12" and rows[3][3] == "A" * 12


def test_a_sqlite_row_without_its_body_row_lists_and_finds_damaged(tmp_path: Path) -> None:
    store = str(tmp_path / "store.db")
    ids = sqlite_store_with_bad_bodies(store, 5, missing=1, empty=2)
    provider = SqliteProvider()
    listed = {m.id: m.damaged for m in provider.list(store)}
    streamed = {m.id: m.damaged for m in provider.iter_list(store)}
    assert listed == streamed
    assert listed[ids[1]] == "its body is missing" and listed[ids[2]] == "its body is empty"
    assert [listed[i] for i in (ids[0], ids[3], ids[4])] == [None] * 3
    assert provider.find(store, ids[1][:12]).damaged == "its body is missing"
    assert provider.find(store, ids[2]).damaged == "its body is empty"
    provider.close()
    shown = cli("checkpoint", "list", store)
    assert shown.exit_code == 0
    assert [r.split()[5] for r in shown.stdout.splitlines()[1:] if r.startswith((ids[1][:12], ids[2][:12]))] == [
        "DAMAGED"
    ] * 2
