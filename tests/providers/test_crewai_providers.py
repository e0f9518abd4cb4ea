"""CrewAI's own stores, as crewai 1.15.30 wrote them (tests/fixtures/crewai, made by
scripts/make_crewai_fixtures.py): the format facts crewpoint relies on, detection, the read-only provider
contract on both formats, and key masking."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from crewai_fixtures import FAKE_KEY, FIXTURES, PLACEHOLDER
from crewai_fixtures import json_store as copy_json_store
from crewai_fixtures import sqlite_store as copy_sqlite_store

from crewpoint.checkpoint.schema import SCHEMA_VERSION, load_body
from crewpoint.providers import (
    AmbiguousCheckpoint,
    BaseProvider,
    CheckpointError,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    provider_for,
    split_ref,
)
from crewpoint.providers.crewai.common import MASK, mask_text, mask_value
from crewpoint.providers.crewai.json_store import CrewAIJsonProvider
from crewpoint.providers.crewai.sqlite_store import CrewAISqliteProvider
from crewpoint.providers.prune import PruneStrategy

PROJECT_KEY = "sk-" + "proj-" + "ABCDEFGHIJKLMNOPQRSTUVWX"  # key-shaped test values, assembled here only
AWS_KEY = "AKIA" + "ABCDEFGHIJKLMNOP"
BEARER = "".join(chr(ord("a") + i) for i in range(26))

FILE_NAME = re.compile(r"\d{8}T\d{6}_[0-9a-f]{8}_p-(none|\d{8}T\d{6}_[0-9a-f]{8})\.json")


@pytest.fixture
def json_store(tmp_path: Path) -> Path:
    return copy_json_store(tmp_path / "crewai-json")


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Path:
    return copy_sqlite_store(tmp_path / "crewai.db")


@pytest.fixture(params=["json", "sqlite"])
def store(request: pytest.FixtureRequest, json_store: Path, sqlite_store: Path) -> Iterator[tuple[BaseProvider, str]]:
    location = str(json_store if request.param == "json" else sqlite_store)
    yield provider_for(location), location


def json_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json"))


# -- the format, checked against what CrewAI wrote -----------------------------------------------------------


def test_fixture_json_layout_is_what_crewai_writes() -> None:
    files = json_files(FIXTURES / "json")
    assert len(files) == 13
    branches = set()
    for path in files:
        assert FILE_NAME.fullmatch(path.name), path.name
        dump = json.loads(path.read_text())
        branch = str(path.parent.relative_to(FIXTURES / "json"))
        assert dump["branch"] == branch  # the folder is the branch; fork/<id>_<suffix> nests
        parent = path.name.split("_p-")[1].removesuffix(".json")
        assert dump["parent_id"] == (None if parent == "none" else parent)
        assert {"crewai_version", "entities", "event_record", "trigger"} <= set(dump)
        assert "nodes" in dump["event_record"]
        assert dump["entities"][0]["entity_type"] in {"crew", "flow", "agent"}
        branches.add(branch)
    assert "main" in branches and "edited" in branches
    assert sum(b.startswith("fork/") for b in branches) == 2  # the crew's fork and the flow's
    kinds = {json.loads(p.read_text())["entities"][0]["entity_type"] for p in files}
    assert kinds == {"crew", "flow", "agent"}
    assert any(PLACEHOLDER in p.read_text() for p in files)  # where CrewAI wrote its key in plain text


def test_fixture_sqlite_table_and_jsonb_are_what_crewai_writes() -> None:
    con = sqlite3.connect(FIXTURES / "store.db")
    try:
        (sql,) = con.execute("SELECT sql FROM sqlite_master WHERE name = 'checkpoints'").fetchone()
        columns = [row[1] for row in con.execute("PRAGMA table_info(checkpoints)")]
        assert columns == ["id", "created_at", "parent_id", "branch", "data"]
        assert "JSONB" in sql
        (data,) = con.execute("SELECT data FROM checkpoints LIMIT 1").fetchone()
        assert isinstance(data, bytes) and not data.startswith(b"{")  # a JSONB blob, not JSON text
        if sqlite3.sqlite_version_info < (3, 45, 0):
            with pytest.raises(sqlite3.OperationalError):
                con.execute("SELECT json(data) FROM checkpoints LIMIT 1").fetchone()
    finally:
        con.close()


# -- detection -----------------------------------------------------------------------------------------------


def test_the_location_resolver_picks_the_crewai_providers(json_store: Path, sqlite_store: Path) -> None:
    assert isinstance(provider_for(str(json_store)), CrewAIJsonProvider)
    assert isinstance(provider_for(str(json_files(json_store)[0])), CrewAIJsonProvider)
    assert isinstance(provider_for(str(sqlite_store)), CrewAISqliteProvider)
    assert isinstance(provider_for(f"{sqlite_store}#20261130T150420_f9c3a90a"), CrewAISqliteProvider)
    assert split_ref(f"{sqlite_store}#20261130T150420_f9c3a90a") == (str(sqlite_store), "20261130T150420_f9c3a90a")


def test_crewpoint_stores_are_not_taken_for_crewai(tmp_path: Path) -> None:
    from crewpoint.providers import JsonProvider, SqliteProvider

    assert isinstance(provider_for(str(tmp_path / "new")), JsonProvider)
    assert isinstance(provider_for(str(tmp_path / "new.db")), SqliteProvider)
    (tmp_path / "empty").mkdir()
    assert isinstance(provider_for(str(tmp_path / "empty")), JsonProvider)


# -- the read-only provider contract, on both formats ----------------------------------------------------------


def test_every_checkpoint_lists_and_reads(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    metas = provider.list(location)
    assert len(metas) == 13
    assert not any(m.damaged for m in metas)
    for meta in metas:
        record = provider.read(location, meta.id)
        assert record.meta.id == meta.id
        assert record.body["schema_version"] == SCHEMA_VERSION  # translated as it is read, so current
        assert load_body(record.body, meta.id)["format"] == "crewai"
        assert record.body["entity"]["kind"] == meta.entity_kind
        assert record.body["lineage"]["parent_id"] == meta.parent_id


def test_list_is_newest_first_with_parents_before_children(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    metas = provider.list(location)
    by_id = {m.id: m for m in metas}
    sequences = [m.sequence for m in metas]
    assert sequences == sorted(sequences, reverse=True)  # all in one second or not, order is kept
    for meta in metas:
        if meta.parent_id in by_id:
            assert by_id[meta.parent_id].sequence < meta.sequence
            assert by_id[meta.parent_id].lineage == meta.lineage


def test_lineage_progress_trigger_and_entity_are_read(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    metas = provider.list(location)
    crew_main = sorted((m for m in metas if m.entity_kind == "crew" and m.branch == "main"), key=lambda m: m.sequence)
    assert [(m.tasks_done, m.tasks_total) for m in crew_main] == [(1, 3), (2, 3), (3, 3)]
    assert {m.trigger for m in crew_main} == {"task_completed"}
    assert {m.entity_name for m in crew_main} == {"research crew"}
    assert crew_main[0].parent_id is None and crew_main[1].parent_id == crew_main[0].id
    forks = [m for m in metas if m.branch.startswith("fork/") and m.entity_kind == "crew"]
    assert forks and all(m.lineage == crew_main[0].id for m in forks)  # the fork joins its source's run
    agent = next(m for m in metas if m.entity_kind == "agent")
    assert (agent.entity_name, agent.tasks_done, agent.tasks_total) == ("Summarizer", 1, 1)
    flows = [m for m in metas if m.entity_kind == "flow"]
    assert {m.entity_name for m in flows} == {"TriageFlow"}
    assert all(m.version == "crewai 1.15.30" for m in metas)


def test_branch_filter_prefix_ambiguous_and_unknown(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    edited = provider.list(location, branch="edited")
    assert len(edited) == 2 and {m.branch for m in edited} == {"edited"}
    some = edited[0].id
    assert provider.read(location, some[:-2]).meta.id == some
    with pytest.raises(AmbiguousCheckpoint):
        provider.read(location, "2026")
    with pytest.raises(CheckpointNotFound):
        provider.read(location, "19990101T000000_deadbeef")


def test_latest_is_read_without_an_id(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    assert provider.read(location).meta.id == provider.list(location)[0].id


def test_writing_deleting_and_pruning_are_refused(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    meta = provider.list(location)[0]
    before = provider.list(location)
    for attempt in (
        lambda: provider.write(location, CheckpointRecord(meta, {})),
        lambda: provider.delete(location, [meta.id]),
        lambda: provider.prune(location, PruneStrategy(keep=1)),
    ):
        with pytest.raises(CheckpointError, match="read-only"):
            attempt()
    assert provider.list(location) == before


def test_missing_store_is_reported() -> None:
    for provider in (CrewAIJsonProvider(), CrewAISqliteProvider()):
        with pytest.raises(CheckpointNotFound):
            provider.list("/nonexistent/crewai-store")


def test_a_file_being_written_is_damaged_and_hides_nothing(json_store: Path) -> None:
    victim = json_files(json_store)[0]
    victim.write_bytes(victim.read_bytes()[:500])  # CrewAI writes in place: a reader can see half a file
    provider = provider_for(str(json_store))
    metas = provider.list(str(json_store))
    damaged = [m for m in metas if m.damaged]
    assert len(metas) == 13 and len(damaged) == 1
    assert "not valid JSON" in (damaged[0].damaged or "")
    with pytest.raises(DamagedCheckpoint):
        provider.read(str(json_store), damaged[0].id)
    for meta in metas:
        if not meta.damaged:
            provider.read(str(json_store), meta.id)


def test_a_changed_file_is_read_again(json_store: Path) -> None:
    provider = provider_for(str(json_store))
    path = next(p for p in json_files(json_store) if "_p-none" in p.name and "main" in str(p))
    before = next(m for m in provider.list(str(json_store)) if m.location == str(path))
    dump = json.loads(path.read_text())
    dump["trigger"] = "task_started"
    path.write_text(json.dumps(dump) + "\n")
    after = next(m for m in provider.list(str(json_store)) if m.location == str(path))
    assert before.trigger != "task_started" and after.trigger == "task_started"


def test_jsonb_without_a_new_enough_sqlite_says_what_to_install(sqlite_store: Path) -> None:
    code = (
        "import sys; sys.modules['apsw'] = None\n"
        "import sqlite3\n"
        "from crewpoint.providers.crewai.sqlite_store import CrewAISqliteProvider, JSONB_VERSION\n"
        "if sqlite3.sqlite_version_info >= JSONB_VERSION: print('NEW-ENOUGH'); raise SystemExit\n"
        "from crewpoint.providers.base import CheckpointError\n"
        f"try: CrewAISqliteProvider().list({str(sqlite_store)!r})\n"
        "except CheckpointError as exc: print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    if out != "NEW-ENOUGH":
        assert "pip install 'crewpoint[crewai]'" in out and "3.45" in out
        assert "\n" not in out


# -- keys ------------------------------------------------------------------------------------------------------


def test_keys_never_leave_the_file(store: tuple[BaseProvider, str]) -> None:
    provider, location = store
    assert _holds_key(Path(location))  # the copy holds the key where CrewAI wrote it
    for meta in provider.list(location):
        text = json.dumps(provider.read(location, meta.id).body, ensure_ascii=False)
        assert FAKE_KEY not in text and FAKE_KEY[:10] not in text
        if meta.entity_kind == "crew":
            agent = provider.read(location, meta.id).body["crewai"]["entities"][0]["agents"][0]
            assert agent["llm"]["api_key"] == MASK


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ('{"api_key": "abc123"}', "abc123"),
        ('{"OPENAI_API_KEY": "plain"}', "plain"),
        ('{"client_secret": "s3cr3t"}', "s3cr3t"),
        (f'{{"headers": {{"Authorization": "Bearer {BEARER}"}}}}', BEARER),
        (f"the key is {PROJECT_KEY} in a prompt", PROJECT_KEY),
        (f'{{"note": "{AWS_KEY}"}}', AWS_KEY),
        ('{"nested": "{\\"api_key\\": \\"inner-value\\"}"}', "inner-value"),
    ],
)
def test_masking_hides_keys_and_key_looking_strings(text: str, hidden: str) -> None:
    masked = mask_text(text)
    assert hidden not in masked and MASK in masked


def test_masking_keeps_what_is_not_a_key() -> None:
    value = {"max_tokens": 100, "token_usage": {"total_tokens": 5}, "task": "ask for the api key politely"}
    assert mask_value(value) == value


def test_a_damaged_database_row_is_damaged_and_hides_nothing(sqlite_store: Path) -> None:
    con = sqlite3.connect(sqlite_store)
    with con:
        con.execute(
            "INSERT INTO checkpoints VALUES (?, ?, ?, ?, ?)",
            ("20261130T170000_0badf00d", "20261130T170000", None, "main", b"\xff\x00not jsonb"),
        )
    con.close()
    provider = provider_for(str(sqlite_store))
    metas = provider.list(str(sqlite_store))
    damaged = [m for m in metas if m.damaged]
    assert len(metas) == 14 and [m.id for m in damaged] == ["20261130T170000_0badf00d"]
    with pytest.raises(DamagedCheckpoint):
        provider.read(str(sqlite_store), "20261130T170000_0badf00d")
    assert provider.read(str(sqlite_store), "20261130T150420_08a9f6c2").meta.tasks_done == 3


def test_the_crewai_modules_load_neither_textual_nor_the_engine() -> None:
    code = (
        "import sys\n"
        "import crewpoint.providers.crewai.json_store, crewpoint.providers.crewai.sqlite_store\n"
        "import crewpoint.formats.crewai.fork, crewpoint.formats.crewai.copy, crewpoint.providers.crewai.detect\n"
        "layers = ('textual', 'crewpoint.checkpoint', 'crewpoint.crew', 'crewpoint.runtime', 'crewpoint.tui',"
        " 'crewpoint.screens', 'pydantic')\n"
        "print(sorted(m for m in sys.modules if m.startswith(layers)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_store_reads_a_body_translated_above_the_schema_without_pydantic(store: tuple[BaseProvider, str]) -> None:
    """A CrewAI store only reads; the body comes from CrewAI's format (crewpoint.formats.crewai), reached through
    the format registry, and reading it loads no model library."""
    _, location = store
    code = (
        "import sys\n"
        "from crewpoint.providers import provider_for\n"
        f"provider = provider_for({location!r})\n"
        f"meta = next(m for m in provider.list({location!r}) if m.entity_kind == 'crew')\n"
        f"body = provider.read({location!r}, meta.id).body\n"
        "print(body['schema_version'], body['format'], body['entity']['kind'], len(body['entity']['tasks']))\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'textual', 'crewpoint.formats.crewai.'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    first, loaded = out.stdout.strip().splitlines()
    assert first == f"{SCHEMA_VERSION} crewai crew 3"  # the research crew's three tasks, at the schema's version
    assert loaded == "['crewpoint.formats.crewai.adapter', 'crewpoint.formats.crewai.body']"


def _holds_key(location: Path) -> bool:
    if location.is_dir():
        return any(FAKE_KEY in p.read_text() for p in location.rglob("*.json"))
    import apsw

    con = apsw.Connection(str(location))
    try:
        (count,) = con.execute("SELECT count(*) FROM checkpoints WHERE instr(json(data), ?)", (FAKE_KEY,)).fetchone()
    finally:
        con.close()
    return int(count) > 0
