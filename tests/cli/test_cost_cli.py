"""``crewpoint checkpoint cost``: a store summed run by run, one checkpoint's chain (spent and saved), ``--by``,
``--since``, price overrides, "price unknown", a bad override file, and no network.

The stores hold real checkpoints of the demo crew (run on the offline model) written back through the provider API
with known usage rows patched in: a run on ``main`` written ten days ago, and a fork of its second checkpoint whose
first checkpoint is three days old and whose last is an hour old.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.cli import cli
from support.prices import genai_usd
from support.stores import demo_records

from crewpoint.providers import JsonProvider, SqliteProvider
from crewpoint.providers.base import BaseProvider, CheckpointRecord

DAY = 86_400.0
KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def row(
    unit: str, label: str, agent: str, model: str, provider: str, inp: int, out: int, **more: Any
) -> dict[str, Any]:
    counts = {"cache_read_tokens": 0, "cache_write_tokens": 0, "reasoning_tokens": 0, "requests": 1}
    return {
        "unit": unit,
        "label": label,
        "agent": agent,
        "model": model,
        "provider": provider,
        "input_tokens": inp,
        "output_tokens": out,
        **counts,
        "duration_s": 1.0,
        "estimated": False,
        **more,
    }


RESEARCH = row("t1", "research", "researcher", "gpt-4o", "openai", 1000, 200, cache_read_tokens=100)
OUTLINE = row("t2", "outline", "writer", "gpt-4o-mini", "openai", 500, 100)
DRAFT = row("t3", "draft", "writer", "gpt-4o-mini", "openai", 700, 300, reasoning_tokens=50)
EDIT = row("t4", "edit", "writer", "claude-sonnet-4-5", "anthropic", 400, 100, cache_write_tokens=50)
OUTLINE_AGAIN = row("t2", "outline", "writer", "gpt-4o-mini", "openai", 600, 120)
LOCAL_DRAFT = row("t3", "draft", "writer", "my-local-model", "openai", 800, 50, estimated=True)

RUN_A = [[RESEARCH], [RESEARCH, OUTLINE], [RESEARCH, OUTLINE, DRAFT], [RESEARCH, OUTLINE, DRAFT, EDIT]]
"""What the first run had spent at each of its four checkpoints (the ledger's rows grow as tasks finish)."""
RUN_B = [[OUTLINE_AGAIN], [OUTLINE_AGAIN, LOCAL_DRAFT]]
"""What the fork of the first run's second checkpoint spent at each of its two checkpoints."""


def usd(rows: list[dict[str, Any]]) -> Decimal:
    """genai-prices' own figure for ``rows`` (the models it knows)."""
    return sum((genai_usd(r) for r in rows if r["model"] != "my-local-model"), Decimal(0))


def tokens(rows: list[dict[str, Any]]) -> dict[str, int]:
    return {k: sum(r[k] for r in rows) for k in (*KINDS, "requests")}


def build_store(location: str, provider: BaseProvider) -> dict[str, list[str]]:
    """Write run A (main) and run B (a fork of A's second checkpoint); return the ids of each run's checkpoints."""
    records = demo_records()
    now = time.time()
    ids: dict[str, list[str]] = {"A": [], "B": []}

    def write(
        run: str,
        record: CheckpointRecord,
        parent: str | None,
        branch: str,
        lineage: str,
        seq: int,
        at: float,
        usage: dict[str, Any],
        resumed_from: str | None,
    ) -> None:
        checkpoint_id = f"{run.lower()}{seq}".ljust(32, "0")
        meta = record.meta._replace(
            id=checkpoint_id, parent_id=parent, branch=branch, lineage=lineage, sequence=seq, created_at=at
        )
        meta = meta.with_(run_id="", usage="")  # a body patched after the run: its metadata summarises nothing
        body = dict(record.body)
        body["lineage"] = {
            **body["lineage"],
            "id": checkpoint_id,
            "parent_id": parent,
            "branch": branch,
            "lineage": lineage,
            "sequence": seq,
            "resumed_from": resumed_from,
        }
        body["usage"] = usage
        provider.write(location, CheckpointRecord(meta=meta, body=body))
        ids[run].append(checkpoint_id)

    lineage = "f" * 32
    for n, rows in enumerate(RUN_A):
        parent = ids["A"][-1] if ids["A"] else None
        write("A", records[n], parent, "main", lineage, n + 1, now - 10 * DAY + n, {"rows": rows}, None)
    source = ids["A"][1]
    usage_b = {"before": RUN_A[1], "reused": [RESEARCH]}
    for n, (rows, at) in enumerate(zip(RUN_B, (now - 3 * DAY, now - 3600), strict=True)):
        parent = ids["B"][-1] if ids["B"] else source
        write("B", records[n + 2], parent, "fork-1", lineage, 3 + n, at, {**usage_b, "rows": rows}, source)
    return ids


@pytest.fixture(params=["json", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[str, dict[str, list[str]]]:
    if request.param == "json":
        location = str(tmp_path / ".checkpoints")
        return location, build_store(location, JsonProvider(fsync=False))
    if request.param == "postgres":
        from crewpoint.providers.postgres_provider import PostgresProvider

        location = request.getfixturevalue("pg_location")
        return location, build_store(location, PostgresProvider())
    location = str(tmp_path / "store.db")
    return location, build_store(location, SqliteProvider())


def cost_json(*args: str) -> dict[str, Any]:
    result = cli("checkpoint", "cost", *args, "--json")
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


def groups(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {g["label"]: g for g in data["groups"]}


def assert_sums(found: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    assert {k: found["usage"][k] for k in (*KINDS, "requests")} == tokens(rows)
    known = [r for r in rows if r["model"] != "my-local-model"]
    assert found["cost_usd"] == (float(round(usd(rows), 6)) if known else None)
    assert found["cost_estimated"] == any(r["estimated"] for r in rows)
    assert found["price_unknown"] == (["my-local-model"] if len(known) < len(rows) else [])


SPENT = RUN_A[-1] + RUN_B[-1]
"""What the store's two runs spent, each counted once."""


def test_a_store_counts_each_run_once(store: tuple[str, dict[str, list[str]]]) -> None:
    location, _ = store
    data = cost_json(location)
    assert data["runs"] == 2 and data["by"] == "model"
    assert_sums(data, SPENT)
    assert data["prices"].startswith("genai-prices ")


@pytest.mark.parametrize(
    ("by", "expected"),
    [
        (
            "model",
            {
                "gpt-4o (openai)": [RESEARCH],
                "gpt-4o-mini (openai)": [OUTLINE, DRAFT, OUTLINE_AGAIN],
                "claude-sonnet-4-5 (anthropic)": [EDIT],
                "my-local-model (openai)": [LOCAL_DRAFT],
            },
        ),
        ("agent", {"researcher": [RESEARCH], "writer": [OUTLINE, DRAFT, EDIT, OUTLINE_AGAIN, LOCAL_DRAFT]}),
        (
            "task",
            {
                "research": [RESEARCH],
                "outline": [OUTLINE, OUTLINE_AGAIN],
                "draft": [DRAFT, LOCAL_DRAFT],
                "edit": [EDIT],
            },
        ),
        ("branch", {"main": RUN_A[-1], "fork-1": RUN_B[-1]}),
    ],
)
def test_cost_by_sums_each_group(
    store: tuple[str, dict[str, list[str]]], by: str, expected: dict[str, list[dict[str, Any]]]
) -> None:
    location, _ = store
    data = cost_json(location, "--by", by)
    found = groups(data)
    assert set(found) == set(expected)
    for label, rows in expected.items():
        assert_sums(found[label], rows)
    assert_sums(data, SPENT)


def test_cost_by_run_names_each_runs_newest_checkpoint(store: tuple[str, dict[str, list[str]]]) -> None:
    location, ids = store
    data = cost_json(location, "--by", "run")
    runs = {g["checkpoint"]: g for g in data["groups"]}
    assert set(runs) == {ids["A"][-1], ids["B"][-1]}
    assert_sums(runs[ids["A"][-1]], RUN_A[-1])
    assert_sums(runs[ids["B"][-1]], RUN_B[-1])
    assert runs[ids["B"][-1]]["resumed_from"] == ids["A"][1] and runs[ids["B"][-1]]["branch"] == "fork-1"


def test_since_counts_only_what_was_spent_after(store: tuple[str, dict[str, list[str]]]) -> None:
    location, ids = store
    week = cost_json(location, "--since", "7d", "--by", "run")
    assert [g["checkpoint"] for g in week["groups"]] == [ids["B"][-1]]  # run A wrote nothing in the last week
    assert_sums(week, RUN_B[-1])
    two_days = cost_json(location, "--since", "2d")
    assert_sums(two_days, [LOCAL_DRAFT])  # the fork's outline was paid three days ago, at its first checkpoint
    assert_sums(cost_json(location, "--since", "30d"), SPENT)
    assert cost_json(location, "--since", "30m")["runs"] == 0


def test_one_checkpoint_shows_its_chain_spent_and_saved(store: tuple[str, dict[str, list[str]]]) -> None:
    location, ids = store
    head = ids["B"][-1]
    data = cost_json(head[:8], "--location", location, "--by", "task")
    assert data["checkpoint"] == head
    assert_sums(data, RUN_A[1] + RUN_B[-1])  # before (the source's) + rows (this run's)
    assert_sums(data["this_run"], RUN_B[-1])
    assert_sums(data["saved"], [RESEARCH])
    assert set(groups(data)) == {"research", "outline", "draft"}
    assert_sums(groups(data)["outline"], [OUTLINE, OUTLINE_AGAIN])


def test_the_table_shows_tokens_costs_price_unknown_and_the_table_version(
    store: tuple[str, dict[str, list[str]]],
) -> None:
    location, _ = store
    result = cli("checkpoint", "cost", location, "--by", "model")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].split() == [
        "MODEL",
        "REQUESTS",
        "INPUT",
        "OUTPUT",
        "CACHE",
        "READ",
        "CACHE",
        "WRITE",
        "REASONING",
        "COST",
    ]
    local = next(line for line in lines if line.startswith("my-local-model"))
    assert local.split()[3:5] == ["800", "50"] and local.rstrip().endswith("price unknown ~")
    total = next(line for line in lines if line.startswith("TOTAL"))
    shown = f"${usd(SPENT).quantize(Decimal('0.0001'), rounding='ROUND_HALF_UP')}"
    assert f"{shown} + price unknown" in total
    assert any(line.startswith("price unknown: my-local-model") for line in lines)
    assert lines[-1].startswith("prices: genai-prices ")


def test_an_override_changes_the_cost_of_old_checkpoints(
    store: tuple[str, dict[str, list[str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, _ = store
    (tmp_path / "pyproject.toml").write_text(
        '[tool.crewpoint.prices]\n"my-local-model" = { input_mtok = 1.0, output_mtok = 2.0 }\n', encoding="utf-8"
    )
    data = cost_json(location, "--by", "model")
    local = groups(data)["my-local-model (openai)"]
    assert local["cost_usd"] == 0.0009 and local["price_unknown"] == []  # 800 × $1 + 50 × $2 per million
    assert data["cost_usd"] == float(round(usd(SPENT) + Decimal("0.0009"), 6))
    assert data["price_overrides"] == {"my-local-model": str(tmp_path / "pyproject.toml")}
    rates = tmp_path / "rates.toml"
    rates.write_text('"gpt-4o" = { input_mtok = 10, output_mtok = 10 }\n', encoding="utf-8")
    monkeypatch.setenv("CREWPOINT_PRICES", str(rates))
    research = groups(cost_json(location, "--by", "model"))["gpt-4o (openai)"]
    assert research["cost_usd"] == 0.012  # 1,200 tokens at $10 per million


def test_a_bad_override_file_is_one_line_and_exit_2(
    store: tuple[str, dict[str, list[str]]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    location, _ = store
    rates = tmp_path / "rates.toml"
    rates.write_text('"gpt-4o" = { input_mtok = "a lot" }\n', encoding="utf-8")
    monkeypatch.setenv("CREWPOINT_PRICES", str(rates))
    result = cli("checkpoint", "cost", location)
    assert result.exit_code == 2 and result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crewpoint: ") and str(rates) in lines[0]
    assert "Traceback" not in result.stderr


def test_grouping_by_run_needs_a_store(store: tuple[str, dict[str, list[str]]]) -> None:
    location, ids = store
    for args in (["--by", "run"], ["--since", "7d"]):
        result = cli("checkpoint", "cost", ids["A"][0][:8], "--location", location, *args)
        assert result.exit_code == 2 and result.stderr.startswith("crewpoint: ") and "store" in result.stderr


def test_no_network_is_touched(tmp_path: Path) -> None:
    """Pricing reads genai-prices' bundled table: with every connection refused and proxies unreachable, the
    figures are the same."""
    location = str(tmp_path / ".checkpoints")
    build_store(location, JsonProvider(fsync=False))
    code = (
        "import socket, sys\n"
        "def refuse(*a, **k):\n"
        "    raise OSError('network used')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from crewpoint.tui.cli import main\n"
        "main(['checkpoint', 'cost', sys.argv[1], '--json'])\n"
    )
    unreachable = "http://127.0.0.1:9"
    env = {**os.environ, "HTTP_PROXY": unreachable, "HTTPS_PROXY": unreachable, "ALL_PROXY": unreachable}
    out = subprocess.run(
        [sys.executable, "-c", code, location], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert_sums(json.loads(out.stdout), SPENT)


def test_a_real_run_and_its_resume_are_summed_from_what_they_recorded(tmp_path: Path) -> None:
    """The demo crew on the offline model, stopped after two tasks and resumed: the store's sum is each run's own
    recorded rows once, and the resumed chain's saved figure is what the resume reused."""
    from support.stores import make_store

    from crewpoint.cost import usage_rows

    location = make_store(str(tmp_path / ".checkpoints"), stop_after=2)
    provider = JsonProvider(fsync=False)
    first = provider.list(location)[0]
    assert cli("checkpoint", "resume", first.id, "--location", location).exit_code == 0
    last = provider.list(location)[0]
    assert last.tasks_done == 4 and last.id != first.id
    first_rows = usage_rows(provider.read(location, first.id).body)
    body = provider.read(location, last.id).body
    second_rows, reused = usage_rows(body), usage_rows(body, "reused")
    assert first_rows and second_rows and reused  # the recording is there to be summed

    by_run = cost_json(location, "--by", "run")
    assert by_run["runs"] == 2
    runs = {g["checkpoint"]: g for g in by_run["groups"]}
    assert set(runs) == {first.id, last.id}
    assert runs[first.id]["usage"]["input_tokens"] == sum(r.input_tokens for r in first_rows) > 0
    assert runs[last.id]["usage"]["output_tokens"] == sum(r.output_tokens for r in second_rows) > 0
    assert by_run["usage"]["input_tokens"] == sum(r.input_tokens for r in first_rows + second_rows)
    assert by_run["cost_usd"] == 0.0  # the offline model costs nothing

    chain = cost_json(last.id[:10], "--location", location)
    assert chain["usage"] == by_run["usage"]  # one chain: what it spent is what the store spent
    assert chain["saved"]["usage"]["input_tokens"] == sum(r.input_tokens for r in reused) > 0
    assert {r.label for r in reused} == {r.label for r in first_rows}  # the two finished tasks


def test_checkpoints_without_usage_say_so(tmp_path: Path) -> None:
    location = str(tmp_path / ".checkpoints")
    provider = JsonProvider(fsync=False)
    records = demo_records()
    for record in records:
        provider.write(
            location,
            CheckpointRecord(
                meta=record.meta.with_(usage=""), body={k: v for k, v in record.body.items() if k != "usage"}
            ),
        )
    result = cli("checkpoint", "cost", location)
    assert result.exit_code == 0, result.output
    assert "no usage recorded" in result.stdout
    data = cost_json(location)
    assert data["runs"] == 1 and data["usage"]["input_tokens"] == 0 and data["cost_usd"] == 0.0
    chain = cli("checkpoint", "cost", records[-1].meta.id, "--location", location)
    assert chain.exit_code == 0 and "no usage recorded" in chain.stdout
