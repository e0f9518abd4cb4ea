"""What a checkpoint cost, in the views that list and describe it: ``list``'s COST column and ``--json`` figures,
``info``'s spent, this run and saved, on JSON, SQLite and PostgreSQL stores written by real runs against the local
OpenAI-compatible server (each answer reports a known usage, priced as gpt-4o on openai); and older stores, whose
checkpoints record no usage summary, still read.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from llm_server import LLMServer
from support.cli import cli

from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task
from crewpoint.cost import TOKEN_KINDS, format_usd, load_prices, price_rows, usage_rows
from crewpoint.events import event_bus
from crewpoint.providers import JsonProvider, SqliteProvider, provider_for
from crewpoint.providers.base import BaseProvider
from crewpoint.usage import UsageRow

PER_CALL = {"prompt_tokens": 1200, "completion_tokens": 300, "prompt_tokens_details": {"cached_tokens": 200}}
TASKS = ("Research owls.", "Outline the post.", "Write the post.")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.usage = PER_CALL
        yield running


def crew_of(server: LLMServer, location: str, provider: BaseProvider) -> Crew:
    llm = LLM(model="gpt-4o", base_url=server.base_url, provider="openai")
    writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
    tasks = [Task(name=f"t{i + 1}", description=d, expected_output="text", agent=writer) for i, d in enumerate(TASKS)]
    return Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location=location, provider=provider))


def run_and_resume(server: LLMServer, location: str, provider: BaseProvider) -> None:
    """A run stopped (as by Ctrl-C) after two tasks, then resumed from its newest checkpoint to the end."""
    finished: list[str] = []

    def interrupt(source: object, event: object) -> None:
        finished.append("task")
        if len(finished) == 2:
            raise KeyboardInterrupt

    event_bus.register("task_completed", interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            crew_of(server, location, provider).kickoff()
    finally:
        event_bus.off(interrupt)
    stopped = provider.list(location)[0]
    assert stopped.tasks_done == 2
    crew_of(server, location, provider).kickoff(from_checkpoint=stopped.location or f"{location}#{stopped.id}")


@pytest.fixture(params=["json", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[BaseProvider, str]:
    if request.param == "json":
        return JsonProvider(fsync=False), str(tmp_path / "store")
    if request.param == "sqlite":
        return SqliteProvider(), str(tmp_path / "store.db")
    location = request.getfixturevalue("pg_location")
    return provider_for(location), location


def column(output: str, name: str) -> list[str]:
    """The cells of the column headed ``name`` in a table ``list`` printed (sliced at the header's offsets)."""
    header, *lines = output.splitlines()
    names = header.split()
    start = header.index(name)
    following = names.index(name) + 1
    end = header.index(names[following]) if following < len(names) else None
    return [line[start:end].strip() for line in lines]


def tokens(summary: dict[str, Any]) -> dict[str, int]:
    return {kind: summary["usage"][kind] for kind in (*TOKEN_KINDS, "requests")}


def genai_usd(rows: list[UsageRow]) -> float:
    """genai-prices' own figure for gpt-4o rows, summed."""
    total = 0.0
    for row in rows:
        usage = Usage(
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            cache_read_tokens=row.cache_read_tokens or None,
        )
        total += float(calc_price(usage, model_ref="gpt-4o", provider_id="openai").total_price)
    return round(total, 6)


def test_list_and_info_show_what_each_checkpoint_cost(server: LLMServer, store: tuple[BaseProvider, str]) -> None:
    """Each listed checkpoint's COST and --json figures are its chain's rows (before + rows, read from its body)
    priced; info's spent, this run and saved are its body's rows priced, saved being the reused rows' cost."""
    provider, location = store
    run_and_resume(server, location, provider)
    prices = load_prices()
    metas = provider.list(location)
    bodies = {m.id: provider.read(location, m.id).body for m in metas}
    expected = {i: price_rows(usage_rows(b, "before") + usage_rows(b, "rows"), prices) for i, b in bodies.items()}
    assert all(s.rows and s.complete and not s.estimated for s in expected.values())
    assert len({m.run_id for m in metas}) == 2 and all(m.run_id for m in metas)

    listed = cli("checkpoint", "list", location)
    assert listed.exit_code == 0, listed.output
    assert column(listed.stdout, "COST") == [format_usd(expected[m.id].usd) for m in metas]
    assert len(set(column(listed.stdout, "COST"))) == len(metas)  # each checkpoint's chain costs more

    as_json = cli("checkpoint", "list", location, "--json")
    assert as_json.exit_code == 0, as_json.output
    for entry in json.loads(as_json.stdout):
        want = expected[entry["id"]].to_json()
        assert entry["cost_usd"] == want["cost_usd"] > 0
        assert tokens(entry) == tokens(want) and entry["cost_estimated"] is False and entry["price_unknown"] == []
        chain = usage_rows(bodies[entry["id"]], "before") + usage_rows(bodies[entry["id"]], "rows")
        assert entry["cost_usd"] == genai_usd(chain)

    newest = metas[0]
    body = bodies[newest.id]
    reused = usage_rows(body, "reused")
    assert {r.label for r in reused} == {"t1", "t2"}  # the two tasks the resume did not run again
    info = cli("checkpoint", "info", newest.id, "--location", location, "--json")
    assert info.exit_code == 0, info.output
    cost = json.loads(info.stdout)["cost"]
    assert cost["spent"] == expected[newest.id].to_json()
    assert cost["this_run"] == price_rows(usage_rows(body, "rows"), prices).to_json()
    assert cost["saved"] == price_rows(reused, prices).to_json()
    assert cost["saved"]["cost_usd"] == genai_usd(reused) > 0
    assert [t["task"] for t in cost["tasks"]] == ["t1", "t2", "t3"]
    assert cost["prices"].startswith("genai-prices ")

    text = cli("checkpoint", "info", newest.id, "--location", location)
    assert text.exit_code == 0, text.output
    lines = {line.split()[0]: line for line in text.stdout.splitlines() if line.startswith("  ") and line.split()}
    assert format_usd(expected[newest.id].usd) in lines["spent"]
    assert format_usd(price_rows(reused, prices).usd) in lines["saved"]
    assert "prices: genai-prices" in text.stdout


def test_a_checkpoint_with_no_usage_reads_a_dash_and_nulls(tmp_path: Path) -> None:
    """The v0 store (written before usage was recorded) lists with ``-`` and null figures, and info says so."""
    location = str(tmp_path / "v0")
    shutil.copytree(FIXTURES / "v0-store", location)
    listed = cli("checkpoint", "list", location)
    assert listed.exit_code == 0, listed.output
    assert set(column(listed.stdout, "COST")) == {"-"}
    entries = json.loads(cli("checkpoint", "list", location, "--json").stdout)
    assert entries and all(e["usage"] is None and e["cost_usd"] is None and e["run_id"] == "" for e in entries)
    info = cli("checkpoint", "info", entries[0]["id"], "--location", location)
    assert info.exit_code == 0, info.output
    assert "cost: no usage recorded" in info.stdout


def _as_schema_4(path: str) -> None:
    """Make a SQLite store what crewpoint wrote before schema 5: no run id, no usage summary."""
    con = sqlite3.connect(path)
    con.execute("DROP INDEX checkpoints_by_run")
    con.execute("ALTER TABLE checkpoints DROP COLUMN usage")
    con.execute("ALTER TABLE checkpoints DROP COLUMN run_id")
    con.execute("UPDATE schema_meta SET value = '4' WHERE key = 'schema_version'")
    con.commit()
    con.close()


def test_a_schema_4_sqlite_store_lists_and_prices_from_bodies_read_only(server: LLMServer, tmp_path: Path) -> None:
    """A store older than the usage summary, in a folder this process cannot write, lists (COST ``-``), and cost
    sums it from its bodies; its first write migrates it and records the summary from then on."""
    folder = tmp_path / "old"
    folder.mkdir()
    path = str(folder / "store.db")
    provider = SqliteProvider()
    crew_of(server, path, provider).kickoff()
    want = price_rows(usage_rows(provider.read(path).body), load_prices()).to_json()
    provider.close()
    _as_schema_4(path)
    os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR)
    try:
        listed = cli("checkpoint", "list", path)
        assert listed.exit_code == 0, listed.output
        assert set(column(listed.stdout, "COST")) == {"-"}
        summed = cli("checkpoint", "cost", path, "--by", "run", "--json")
        assert summed.exit_code == 0, summed.output
        assert json.loads(summed.stdout)["cost_usd"] == want["cost_usd"] > 0
    finally:
        os.chmod(folder, stat.S_IRWXU)
    crew_of(server, path, SqliteProvider()).kickoff()
    version = sqlite3.connect(path).execute("SELECT value FROM schema_meta WHERE key = 'schema_version'").fetchone()
    assert version == ("5",)
    cells = column(cli("checkpoint", "list", path).stdout, "COST")
    assert cells[:3] != ["-"] * 3 and cells[-3:] == ["-"] * 3  # the new run's checkpoints are priced


def test_a_version_2_index_is_migrated_and_hostile_summaries_are_ignored(server: LLMServer, tmp_path: Path) -> None:
    """A JSON store's index from before the usage summary is read (and written back as version 3); a summary
    that is not one shows ``-``; a summary of the wrong type marks its record damaged, and listing goes on."""
    location = str(tmp_path / "store")
    crew_of(server, location, JsonProvider(fsync=False)).kickoff()
    index = Path(location, ".index.jsonl")
    header, *lines = index.read_text().splitlines()
    fields = json.loads(header)["fields"]
    at = fields.index("run_id")
    old_fields = [f for f in fields if f not in ("run_id", "usage")]
    old = [json.loads(line) for line in lines]
    old = [[*line[: 2 + at], *line[2 + at + 2 :]] for line in old]
    index.write_text(
        "\n".join([json.dumps({"crewpoint_index": 2, "fields": old_fields}), *map(json.dumps, old)]) + "\n"
    )
    listed = JsonProvider().list(location)
    assert all(m.run_id == "" and m.usage == "" for m in listed)  # what the old index knew
    assert json.loads(index.read_text().splitlines()[0])["crewpoint_index"] == 3
    assert set(column(cli("checkpoint", "list", location).stdout, "COST")) == {"-"}

    files = sorted(Path(location, "main").glob("*.json"))
    index.unlink()
    for path, usage in ((files[0], '{"chain": [["gpt-4o", 5]], "run": "x"}'), (files[1], 12)):
        meta_line, rest = path.read_text().split("\n", 1)  # {"meta":{...}, then the body
        meta = json.loads(meta_line.removeprefix('{"meta":').removesuffix(","))
        meta["usage"] = usage
        path.write_text('{"meta":' + json.dumps(meta) + ",\n" + rest)
    listed_json = json.loads(cli("checkpoint", "list", location, "--json").stdout)
    by_file = {Path(e["location"]).name: e for e in listed_json}
    assert by_file[files[0].name]["damaged"] is None and by_file[files[0].name]["cost_usd"] is None
    assert "usage" in (by_file[files[1].name]["damaged"] or "")
    table = cli("checkpoint", "list", location)
    assert table.exit_code == 0 and "DAMAGED" in table.stdout


def test_prices_are_loaded_once_per_listing(server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    location = str(tmp_path / "store")
    crew_of(server, location, JsonProvider(fsync=False)).kickoff()
    import crewpoint.cost

    loaded: list[int] = []
    real = crewpoint.cost.load_prices

    def counting(*args: Any, **kwargs: Any) -> Any:
        loaded.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(crewpoint.cost, "load_prices", counting)
    assert cli("checkpoint", "list", location).exit_code == 0
    assert len(loaded) == 1
    assert cli("checkpoint", "list", location, "--json").exit_code == 0
    assert len(loaded) == 2


METRICS = {
    "total_tokens": 1500,
    "prompt_tokens": 1200,
    "cached_prompt_tokens": 200,
    "completion_tokens": 300,
    "successful_requests": 3,
}


def test_a_crewai_store_shows_the_usage_its_crew_carries(tmp_path: Path) -> None:
    """CrewAI keeps ``usage_metrics`` on the crew without a model: list --json and info show its tokens, its price
    unknown (COST ``?``); a crew with none lists ``-``."""
    from crewai_fixtures import json_store

    from crewpoint.providers.crewai.common import MODEL_NOT_RECORDED

    store = json_store(tmp_path / "crewai")
    big = max((store / "main").glob("*.json"), key=lambda p: p.stat().st_size)  # read from its head when listed
    text = big.read_text(encoding="utf-8")
    assert text.count('"usage_metrics": null') == 1
    big.write_text(text.replace('"usage_metrics": null', f'"usage_metrics": {json.dumps(METRICS)}'), encoding="utf-8")
    checkpoint = big.name.split("_p-")[0]

    entries = {e["id"]: e for e in json.loads(cli("checkpoint", "list", str(store), "--json").stdout)}
    shown = entries[checkpoint]
    assert shown["usage"]["input_tokens"] == 1200 and shown["usage"]["output_tokens"] == 300
    assert shown["usage"]["cache_read_tokens"] == 200 and shown["usage"]["requests"] == 3
    assert shown["cost_usd"] is None and shown["price_unknown"] == [MODEL_NOT_RECORDED]
    assert all(e["usage"] is None for i, e in entries.items() if i != checkpoint)

    table = cli("checkpoint", "list", str(store))
    assert table.exit_code == 0, table.output
    ids = [line.split()[0] for line in table.stdout.splitlines()[1:]]
    cells = dict(zip(ids, column(table.stdout, "COST"), strict=True))
    assert {cell for i, cell in cells.items() if checkpoint.startswith(i)} == {"?"}
    assert {cell for i, cell in cells.items() if not checkpoint.startswith(i)} == {"-"}

    info = cli("checkpoint", "info", str(big), "--json")
    assert info.exit_code == 0, info.output
    spent = json.loads(info.stdout)["cost"]["spent"]
    assert spent["usage"]["input_tokens"] == 1200 and spent["cost_usd"] is None
    said = cli("checkpoint", "info", str(big))
    assert "price unknown" in said.stdout and "1,200 in, 300 out" in said.stdout
