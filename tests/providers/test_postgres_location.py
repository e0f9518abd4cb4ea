"""``postgresql://`` locations: the password comes from libpq's environment, is never part of a store's name,
never stored and never printed; the command line finds the store from ``--location`` or the environment."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from crewpoint.providers import CheckpointError, CheckpointMeta, CheckpointRecord, PostgresProvider, provider_for
from crewpoint.providers.pg_location import masked, parse
from crewpoint.tui.cli import main


def meta(n: int) -> CheckpointMeta:
    return CheckpointMeta(
        id=f"cp{n:04d}", parent_id=None if n == 1 else f"cp{n - 1:04d}", branch="main", lineage="run-a",
        sequence=n, created_at=time.time(), trigger="task_completed", entity_kind="crew", entity_name="crew",
    )  # fmt: skip


def test_a_password_in_the_url_is_used_to_connect_but_is_no_part_of_the_name() -> None:
    where = parse("postgresql://team:s3cr%40t@db.example:5433/runs?sslmode=require&schema=nightly")
    assert where.name == "postgresql://team@db.example:5433/runs?sslmode=require&schema=nightly"
    assert "s3cr" not in where.name and "s3cr" not in where.server
    assert where.password == "s3cr@t" and parse(where.conninfo).password == "s3cr@t"
    assert parse("postgres://u@h/db?password=pw").name == "postgresql://u@h/db"
    assert masked("postgresql://u:pw@h/db#cp0001") == "postgresql://u@h/db#cp0001"
    assert parse("postgresql://u@h/db").schema == "crewpoint"
    with pytest.raises(ValueError, match="invalid schema"):
        parse("postgresql://u@h/db?schema=Robert');DROP")


def test_a_password_given_in_the_url_never_reaches_a_checkpoint_or_the_screen(
    pg_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pg_server import session_server

    server = session_server()
    monkeypatch.delenv("PGPASSFILE")
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")
    secret_url = pg_location.replace("crewpoint@", f"crewpoint:{server.password}@")
    provider = PostgresProvider()
    try:
        ref = provider.write(secret_url, CheckpointRecord(meta(1), {"n": 1}))
        stored = provider.list(secret_url)[0]
        assert server.password not in ref + stored.location + provider.store_at(secret_url)
        assert provider.read(ref).body == {"n": 1}  # a reference without the password still reads, here
    finally:
        provider.close()
    with psycopg_connect(pg_location, server.password) as conn:
        dump = json.dumps(conn.execute(f"SELECT * FROM {schema(pg_location)}.checkpoints").fetchall(), default=str)
    assert server.password not in dump

    # Without it, libpq finds none: the error says where a password comes from, in one line, without one.
    wrong = pg_location.replace("crewpoint@", "crewpoint:wrong-password@")
    with pytest.raises(CheckpointError) as failed:
        PostgresProvider().list(wrong)
    text = str(failed.value)
    assert "wrong-password" not in text and "\n" not in text and "PGPASSWORD" in text
    cli = [
        sys.executable,
        "-m",
        "crewpoint.tui.cli",
        "checkpoint",
        "list",
        secret_url.replace(server.password, "not-it"),
    ]
    result = subprocess.run(cli, capture_output=True, text=True)  # a process with no open connection
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "PGPASSWORD" in result.stderr


def psycopg_connect(location: str, password: str):  # type: ignore[no-untyped-def]
    import psycopg

    return psycopg.connect(parse(location).conninfo, password=password, autocommit=True)


def schema(location: str) -> str:
    return f'"{parse(location).schema}"'


def test_the_command_line_takes_the_location_from_the_environment(
    pg_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = provider_for(pg_location)
    for n in (1, 2, 3):
        provider.write(pg_location, CheckpointRecord(meta(n), {"n": n}))
    monkeypatch.setenv("CREWPOINT_CHECKPOINT_LOCATION", pg_location)
    result = CliRunner().invoke(main, ["checkpoint", "list", "--json"])
    assert result.exit_code == 0, result.output
    assert [m["id"] for m in json.loads(result.output)] == ["cp0003", "cp0002", "cp0001"]
    # info finds cp0002 in that store, and reads its body: {"n": 2} is no checkpoint body, so it is named damaged
    result = CliRunner().invoke(main, ["checkpoint", "info", "cp0002", "--json"])
    assert result.exit_code == 2, result.output
    assert "checkpoint cp0002 is damaged: schema_version: missing" in result.output


def test_import_crewpoint_loads_no_postgres_driver() -> None:
    code = (
        "import sys, crewpoint, crewpoint.providers\n"
        "crewpoint.providers.provider_for('postgresql://u@127.0.0.1:1/db')\n"
        "print('psycopg' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_run_configured_with_a_password_in_its_url_stores_it_nowhere(
    pg_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crew and one of its agents checkpoint to a URL holding the password; no row of the store holds it."""
    import zlib

    from pg_server import session_server

    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.providers import shown_location

    server = session_server()
    monkeypatch.setenv("PGPASSFILE", "/nonexistent")
    secret_url = pg_location.replace("crewpoint@", f"crewpoint:{server.password}@")
    assert server.password not in shown_location(secret_url)
    provider = PostgresProvider()
    try:
        config = CheckpointConfig(location=secret_url, provider=provider)
        crew = demo_crew(checkpoint=config)
        crew.agents[0].checkpoint = config
        crew.kickoff(inputs=DEMO_INPUTS)
        assert len(provider.list(secret_url)) >= 4
        assert provider.read_runs(secret_url)
    finally:
        provider.close()
    with psycopg_connect(pg_location, server.password) as conn:
        s = schema(pg_location)
        texts = [repr(row) for table in ("checkpoints", "runs") for row in conn.execute(f"SELECT * FROM {s}.{table}")]
        texts += [zlib.decompress(m).decode() for (m,) in conn.execute(f"SELECT manifest FROM {s}.bodies")]
        texts += [zlib.decompress(d).decode() for (d,) in conn.execute(f"SELECT data FROM {s}.chunks")]
    everything = "\n".join(texts)
    assert pg_location.split("?")[0] in everything  # the agent's saved config names the store ...
    assert server.password not in everything  # ... without its password


def test_a_config_naming_a_postgres_url_writes_there_and_the_environment_gives_the_default(
    pg_location: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew

    config = CheckpointConfig(location=pg_location)  # no provider named: the location's own
    assert isinstance(config.provider, PostgresProvider)
    demo_crew(checkpoint=config).kickoff(inputs=DEMO_INPUTS)
    assert len(provider_for(pg_location).list(pg_location)) == 4
    monkeypatch.setenv("CREWPOINT_CHECKPOINT_LOCATION", pg_location)
    assert CheckpointConfig().location == pg_location and isinstance(CheckpointConfig().provider, PostgresProvider)
    demo_crew(checkpoint=True).kickoff(inputs=DEMO_INPUTS)
    assert len(provider_for(pg_location).list(pg_location)) == 8
