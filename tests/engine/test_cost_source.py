"""A checkpoint's cost has one source, its body: the usage summary in its metadata (what a store's ``cost`` prices
without reading every body) is checked against the body's rows, and a summary that says otherwise, or a usage row
that is not one, is damage that is said and never priced. Real runs against the local test server, real files, the
real CLI."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support import cost_runs
from support.cli import checkpoint as cli

from crewpoint.cost import usage_damage
from crewpoint.providers import JsonProvider, SqliteProvider
from crewpoint.providers.base import CheckpointRecord
from crewpoint.providers.usage_meta import usage_summary

_PRICEY = {"model": "gpt-4o", "provider": "openai", "input_tokens": 400_000_000, "output_tokens": 0, "requests": 1}
LIE = usage_summary([_PRICEY], [_PRICEY])
"""A summary saying the chain spent $1,000.00 on gpt-4o."""


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Path]:
    with cost_runs.usage_server() as server:
        cost_runs.build(str(tmp_path / "store"), server.base_url, fork=False)
    yield tmp_path / "store"


def crafted(store: Path, *, usage: str | None = None, body_change: Any = None) -> str:
    """A copy of the store's newest checkpoint on a branch of its own, its metadata's summary or body changed."""
    provider = JsonProvider(fsync=False)
    record = provider.read(str(store), provider.list(str(store))[0].id)
    body = copy.deepcopy(record.body)
    if body_change is not None:
        body_change(body)
    meta = record.meta.with_(
        id="c0ffee" + record.meta.id[6:],
        branch="crafted",
        parent_id=None,
        location="",
        run_id="crafted-run",
        usage=record.meta.usage if usage is None else usage,
    )
    provider.write(str(store), CheckpointRecord(meta=meta, body=body))
    return meta.id


def test_every_checkpoint_a_run_writes_has_a_summary_its_body_bears_out(tmp_path: Path) -> None:
    with cost_runs.usage_server() as server:
        for location, provider in (("j", JsonProvider()), ("s.db", SqliteProvider())):
            cost_runs.build(str(tmp_path / location), server.base_url)
            listed = provider.list(str(tmp_path / location))
            assert len(listed) >= 4 and all(m.usage for m in listed)
            for meta in listed:
                record = provider.read(str(tmp_path / location), meta.id)
                assert usage_damage(record.body, record.meta.usage) is None


def test_a_summary_its_body_does_not_bear_out_is_damage_never_priced(store: Path) -> None:
    crafted_id = crafted(store, usage=LIE)
    project = store.parent
    cost = cli("cost", crafted_id, "--location", "store", cwd=project)
    assert cost.returncode == 2 and cost.stdout == ""
    (line,) = cost.stderr.strip().splitlines()
    assert "is damaged: its metadata's usage summary does not match the usage its body records" in line
    assert "$" not in line

    info = cli("info", crafted_id, "--location", "store", cwd=project)
    assert info.returncode == 0, info.stderr
    assert "cost: damaged, not priced: its metadata's usage summary does not match" in info.stdout
    assert "$1,000" not in info.stdout
    as_json = json.loads(cli("info", crafted_id, "--location", "store", "--json", cwd=project).stdout)
    assert as_json["cost"] is None and "does not match" in as_json["cost_damaged"]

    for by in ("task", "agent"):  # summed from the bodies: the lie is not priced
        summed = cli("cost", "store", "--by", by, "--json", cwd=project)
        assert summed.returncode == 0, summed.stderr
        data = json.loads(summed.stdout)
        assert data["runs"] == 1 and data["unreadable_checkpoints"] == 1, by
        assert data["cost_usd"] < 1, by  # the real run's cents, not the crafted $1,000
    shown = cli("cost", "store", "--by", "task", cwd=project).stdout
    assert "1 checkpoint could not be read or is damaged, and count for nothing" in shown


def test_a_usage_row_that_is_not_one_is_said_not_dropped(store: Path) -> None:
    def spoil(body: dict[str, Any]) -> None:
        body["usage"]["rows"][0][5] = -1  # a negative input count: not a usage row

    crafted_id = crafted(store, body_change=spoil)
    cost = cli("cost", crafted_id, "--location", "store", cwd=store.parent)
    assert cost.returncode == 2 and "is damaged: usage.rows[0]: not a usage row" in cost.stderr
    assert cost.stdout == ""  # not the other rows priced as if they were the whole


def _crafted_file(store: Path) -> str:
    """A checkpoint file of its own whose header's summary says $1,000.00, its body the run's honest one (the
    digest covers the body alone, so the file reads whole): as a crafted store file arrives, by hand."""
    crafted_id = crafted(store)  # an honest copy of the newest checkpoint, on a branch of its own
    (path,) = [m.location for m in JsonProvider(fsync=False).list(str(store)) if m.id == crafted_id]
    head, sep, rest = Path(path).read_bytes().partition(b"\n")
    meta = json.loads(head[len(b'{"meta":') : -1])
    meta["usage"] = LIE
    Path(path).write_bytes(b'{"meta":' + json.dumps(meta, separators=(",", ":")).encode() + b"," + sep + rest)
    return crafted_id


def _listed_costs(store: str, cwd: Path) -> dict[str, Any]:
    listed = cli("list", store, "--json", cwd=cwd)
    assert listed.returncode == 0, listed.stderr
    return {row["id"]: row["cost_usd"] for row in json.loads(listed.stdout)}


def _by_model(store: str, cwd: Path) -> dict[str, Any]:
    summed = cli("cost", store, "--by", "model", "--json", cwd=cwd)
    assert summed.returncode == 0, summed.stderr
    data: dict[str, Any] = json.loads(summed.stdout)
    return data


def test_list_and_a_stores_cost_by_model_never_show_a_summary_its_body_does_not_bear_out(store: Path) -> None:
    """The crafted JSON file, the same checkpoint copied into SQLite, and a SQLite row written with the lying
    summary: ``list`` shows none of them at $1,000.00 (its COST reads ``?``), and ``cost --by model`` counts each
    for nothing and says so; the honest checkpoints read as before."""
    project = store.parent
    honest = _listed_costs("store", project)
    honest_total = _by_model("store", project)
    assert honest_total["unreadable_checkpoints"] == 0 and 0 < honest_total["cost_usd"] < 1
    crafted_id = _crafted_file(store)

    copied = cli("copy", "store", "copy.db", cwd=project)
    assert copied.returncode == 0, copied.stderr
    written = SqliteProvider()
    record = written.read(str(project / "copy.db"), honest_id := next(iter(honest)))
    lying = record.meta.with_(id="beef" + honest_id[4:], branch="lying", parent_id=None, run_id="lying", usage=LIE)
    written.write(str(project / "copy.db"), CheckpointRecord(meta=lying, body=record.body))
    written.close()

    for where, extra in (("store", [crafted_id]), ("copy.db", [crafted_id, lying.id])):
        costs = _listed_costs(where, project)
        assert {k: v for k, v in costs.items() if k in honest} == honest, where  # honest rows unchanged
        assert [costs[i] for i in extra] == [None] * len(extra), where
        table = cli("list", where, cwd=project)
        assert "1,000" not in table.stdout and "1000" not in table.stdout, where
        cells = {line.split()[0]: line.split() for line in table.stdout.splitlines()[1:]}
        assert all("?" in cells[i[:12]] for i in extra), where  # damaged: a mark, not a figure
        total = _by_model(where, project)
        assert total["cost_usd"] == honest_total["cost_usd"], where
        assert total["unreadable_checkpoints"] == len(extra), where
        assert all("1000" not in json.dumps(group) for group in total.get("groups", [])), where
        shown = cli("cost", where, "--by", "model", cwd=project).stdout
        assert "1,000" not in shown and "could not be read or" in shown, where


def test_a_runs_own_checkpoints_are_not_summed_again_and_a_copy_of_one_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run's checkpoint holds its summary and its rows from one ledger: its store does not sum the chain's rows
    again at each write (a checkpoint per task would cost more the longer the run). The same record read back and
    written elsewhere is checked, and a lie put in it is kept as damage."""
    from crewpoint import Agent, CheckpointConfig, Crew, Task
    from crewpoint.providers import refs, usage_meta

    summed: list[str] = []

    def counted(usage: str, body: object) -> str:
        summed.append(usage)
        return usage_meta.checked_usage(usage, body)

    monkeypatch.setattr(refs, "checked_usage", counted)
    agent = Agent(role="Writer", goal="Write", backstory="Experienced")
    tasks = [Task(description=f"Step {i}", expected_output="One line", agent=agent) for i in range(3)]
    provider = JsonProvider(fsync=False)
    run = str(tmp_path / "run")
    Crew(agents=[agent], tasks=tasks, checkpoint=CheckpointConfig(location=run, provider=provider)).kickoff()
    listed = provider.list(run)
    assert len(listed) >= 3 and all(m.usage and not m.damaged for m in listed)
    assert summed == []

    record = provider.read(run, listed[0].id)
    copy_to = str(tmp_path / "copy")
    provider.write(copy_to, record)
    provider.write(
        copy_to, CheckpointRecord(meta=record.meta.with_(id="c0ffee" + record.meta.id[6:], usage=LIE), body=record.body)
    )
    assert summed == [record.meta.usage, LIE]
    by_id = {m.id[:6]: m.usage for m in provider.list(copy_to)}
    assert by_id[record.meta.id[:6]] == record.meta.usage and by_id["c0ffee"] == usage_meta.DAMAGED
