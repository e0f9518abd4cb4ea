"""``cost --by run --since`` on PostgreSQL answers from the checkpoint rows' indexed columns (each run's newest row
and its usage summary, one query), and its answer is the one the bodies give: run by run, tokens and dollars.

The store holds real runs against the local OpenAI-compatible server (a run stopped after two tasks and its resume,
then a third run); their rows' times are moved back so that one run is older than the cutoff, one started before it
and went on after it, and one ran wholly after it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner
from llm_server import LLMServer
from test_cost_views import PER_CALL, crew_of, run_and_resume

from crewpoint.cost import TOKEN_KINDS, load_prices, price_rows
from crewpoint.providers.pg_location import parse
from crewpoint.providers.postgres_provider import PostgresProvider
from crewpoint.tui.cli import cost as cost_command
from crewpoint.tui.cli import main

DAY = 86_400.0


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.usage = PER_CALL
        yield running


def figures(rows: list[dict[str, Any]]) -> dict[str, Any]:
    summary = price_rows(rows, load_prices()).to_json()
    return {"tokens": {k: summary["usage"][k] for k in (*TOKEN_KINDS, "requests")}, "usd": summary["cost_usd"]}


def test_cost_by_run_since_from_indexed_columns_equals_the_bodies(server: LLMServer, pg_location: str) -> None:
    provider = PostgresProvider()
    try:
        run_and_resume(server, pg_location, provider)
        crew_of(server, pg_location, provider).kickoff()
        metas = sorted(provider.list(pg_location), key=lambda m: m.created_at)
        runs = list(dict.fromkeys(m.run_id for m in metas))
        assert len(runs) == 3 and all(runs)
        first, resumed, third = ([m for m in metas if m.run_id == r] for r in runs)
        moved = {first[0].id: 10 * DAY} | {m.id: 20 * DAY for m in third}  # the first spans the cutoff
        where = parse(pg_location)
        with psycopg.connect(where.conninfo, autocommit=True) as conn:
            for checkpoint_id, back in moved.items():
                conn.execute(
                    f'UPDATE "{where.schema}".checkpoints SET created_at = created_at - %s WHERE id = %s',
                    [back, checkpoint_id],
                )
        cutoff = max(m.created_at for m in metas) - 7 * DAY

        heads, legacy = provider.run_heads(pg_location, cutoff)
        assert legacy == [] and {h.id for h, _, _ in heads} == {first[-1].id, resumed[-1].id}
        assert {h.id: resumed_from for h, _, resumed_from in heads}[resumed[-1].id] == first[-1].id
        indexed, unread = cost_command._runs(pg_location, cutoff, "run")
        from_bodies, unread_bodies = cost_command._body_runs(provider, pg_location, provider.list(pg_location), cutoff)
        assert unread == unread_bodies == 0
        assert {r.head.id: figures(r.rows) for r in indexed} == {r.head.id: figures(r.rows) for r in from_bodies}
        since = {r.head.id: figures(r.rows) for r in indexed}
        assert since[first[-1].id]["tokens"]["requests"] == 1  # its second task, after the cutoff
        assert since[resumed[-1].id]["tokens"]["requests"] == 1 and since[resumed[-1].id]["usd"] > 0

        result = CliRunner().invoke(main, ["checkpoint", "cost", pg_location, "--by", "run", "--since", "7d", "--json"])
        assert result.exit_code == 0, result.output
        data = json.loads(result.stdout)
        assert data["runs"] == 2
        assert {g["checkpoint"]: g["cost_usd"] for g in data["groups"]} == {k: v["usd"] for k, v in since.items()}
    finally:
        provider.close()


def test_a_schema_3_postgres_store_reads_and_migrates_on_its_first_write(server: LLMServer, pg_location: str) -> None:
    """A store from before the run id and usage summary (schema 3) lists with '' for both, cost sums it from its
    bodies, and its first write migrates it."""
    provider = PostgresProvider()
    try:
        crew_of(server, pg_location, provider).kickoff()
        body_rows = cost_command._body_runs(provider, pg_location, provider.list(pg_location), None)[0]
        want = figures([row for run in body_rows for row in run.rows])
    finally:
        provider.close()
    where = parse(pg_location)
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        s = f'"{where.schema}"'
        conn.execute(f"DROP INDEX {s}.checkpoints_by_run")
        conn.execute(f"DROP INDEX {s}.checkpoints_by_created")
        conn.execute(f"ALTER TABLE {s}.checkpoints DROP COLUMN run_id, DROP COLUMN usage")
        conn.execute(f"UPDATE {s}.schema_meta SET value = '3' WHERE key = 'schema_version'")
    provider = PostgresProvider()
    try:
        listed = provider.list(pg_location)
        assert listed and all(m.run_id == "" and m.usage == "" and m.damaged is None for m in listed)
        assert provider.read(pg_location).meta.usage == ""
        runs, unread = cost_command._runs(pg_location, None, "run")
        assert unread == 0 and figures([row for run in runs for row in run.rows]) == want
        crew_of(server, pg_location, provider).kickoff()
        newest = provider.list(pg_location)[0]
        assert newest.run_id and newest.usage
    finally:
        provider.close()
