"""The PostgreSQL store's own schema: made on the first write, migrated in order, a newer one refused, and a
schema that is not a crewpoint store never written to."""

from __future__ import annotations

import time

import psycopg
import pytest

from crewpoint.providers import CheckpointError, CheckpointMeta, CheckpointRecord, PostgresProvider, UnsupportedSchema
from crewpoint.providers.pg_location import parse
from crewpoint.providers.pg_sql import MIGRATIONS, migrate


def record(n: int) -> CheckpointRecord:
    meta = CheckpointMeta(f"cp{n:04d}", None, "main", "run-a", n, time.time(), "task_completed")
    return CheckpointRecord(meta, {"n": n})


def tables(conn: psycopg.Connection[tuple[str]], schema: str) -> set[str]:
    rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = %s", [schema]).fetchall()
    return {r[0] for r in rows}


def test_a_store_is_migrated_in_order_and_a_newer_one_is_refused_untouched(pg_location: str) -> None:
    where = parse(pg_location)
    provider = PostgresProvider()
    try:
        provider.write(pg_location, record(1))

        def v2(s: str) -> list[str]:
            return [f"CREATE TABLE {s}.notes (id text PRIMARY KEY)"]

        with psycopg.connect(where.conninfo, autocommit=True) as conn:
            newer = len(MIGRATIONS) + 1
            assert migrate(conn, where, (*MIGRATIONS, v2)) == newer  # runs only the new step
            assert migrate(conn, where, (*MIGRATIONS, v2)) == newer  # and only once
            assert {"checkpoints", "bodies", "chunks", "runs", "schema_meta", "notes"} <= tables(conn, where.schema)
        fresh = PostgresProvider()  # a crewpoint that knows only the versions before
        with pytest.raises(UnsupportedSchema, match=rf"schema v{newer}.*upgrade crewpoint"):
            fresh.list(pg_location)
        with pytest.raises(UnsupportedSchema):
            fresh.write(pg_location, record(2))
        fresh.close()
        with psycopg.connect(where.conninfo, autocommit=True) as conn:
            count = conn.execute(f'SELECT count(*) FROM "{where.schema}".checkpoints').fetchone()
            version = conn.execute(f"SELECT value FROM \"{where.schema}\".schema_meta WHERE key = 'schema_version'")
            assert count == (1,) and version.fetchone() == (str(newer),)
    finally:
        provider.close()


def test_a_schema_that_is_not_a_store_is_left_untouched(pg_location: str) -> None:
    where = parse(pg_location)
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{where.schema}"')
        conn.execute(f'CREATE TABLE "{where.schema}".invoices (id int)')
        conn.execute(f'INSERT INTO "{where.schema}".invoices VALUES (1)')
    provider = PostgresProvider()
    try:
        with pytest.raises(CheckpointError, match="not a crewpoint store"):
            provider.write(pg_location, record(1))
        with pytest.raises(CheckpointError, match="not a crewpoint store"):
            provider.list(pg_location)
    finally:
        provider.close()
    with psycopg.connect(where.conninfo, autocommit=True) as conn:
        assert tables(conn, where.schema) == {"invoices"}
        assert conn.execute(f'SELECT count(*) FROM "{where.schema}".invoices').fetchone() == (1,)
