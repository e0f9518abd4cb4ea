"""``crewpoint checkpoint copy`` moves a store into a PostgreSQL store and out of it again, lineage kept."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from crewpoint.demo import run_demo
from crewpoint.providers import provider_for
from crewpoint.tui.cli import main


def copy(source: str, target: str) -> dict[str, list[str]]:
    result = CliRunner().invoke(main, ["checkpoint", "copy", source, target, "--json"])
    assert result.exit_code == 0, result.output
    report: dict[str, list[str]] = json.loads(result.stdout)
    return report


def test_a_store_moves_into_postgres_and_back_out_whole(pg_location: str, tmp_path: Path) -> None:
    source = str(tmp_path / "runs")
    run_demo(location=source)
    metas = provider_for(source).list(source)

    report = copy(source, pg_location)
    assert sorted(report["copied"]) == sorted(m.id for m in metas)
    into = provider_for(pg_location)
    copied = {m.id: m for m in into.list(pg_location)}
    for meta in metas:  # ids, parents, branches, order and bodies as they were
        got = copied[meta.id]
        assert (got.parent_id, got.branch, got.lineage, got.sequence) == (
            meta.parent_id,
            meta.branch,
            meta.lineage,
            meta.sequence,
        )
        assert into.read(pg_location, meta.id).body == provider_for(source).read(source, meta.id).body
    assert [m.id for m in into.list(pg_location)] == [m.id for m in metas]

    again = copy(source, pg_location)  # copying again adds only what is new
    assert again["copied"] == [] and sorted(again["already_there"]) == sorted(m.id for m in metas)

    back = str(tmp_path / "back.db")
    assert sorted(copy(pg_location, back)["copied"]) == sorted(m.id for m in metas)
    assert [m.id for m in provider_for(back).list(back)] == [m.id for m in metas]
    latest = metas[0].id
    assert provider_for(back).read(back, latest).body == into.read(pg_location, latest).body
