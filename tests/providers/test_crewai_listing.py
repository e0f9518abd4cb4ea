"""Listing a CrewAI store without reading every dump whole: the head-and-tail reading of a JSON file and the
in-SQLite reading of a JSONB row give exactly what parsing the whole dump gives, fall back to it for anything
laid out otherwise, and a listing reads only the rows it is asked for."""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from crewai_fixtures import FAKE_KEY
from crewai_fixtures import json_store as copy_json_store
from crewai_fixtures import sqlite_store as copy_sqlite_store

from crewpoint.providers import files
from crewpoint.providers.crewai.json_store import CrewAIJsonProvider, read_dump
from crewpoint.providers.crewai.listing import describe_dump, json_facts
from crewpoint.providers.crewai.sqlite_store import CrewAISqliteProvider, _facts_of, _whole_facts, connect

KEY_NAME = "sk-" + "ant-" + "NAMEDNAMEDNAMEDNAMEDNAMED"  # key-shaped, assembled here only


@pytest.fixture
def json_store(tmp_path: Path) -> Path:
    return copy_json_store(tmp_path / "crewai-json")


def whole(path: str) -> dict[str, object]:
    return read_dump(path, masked=False)


def crew_files(root: Path) -> list[Path]:
    found = [p for p in sorted(root.rglob("*.json")) if whole(str(p))["entities"][0]["entity_type"] == "crew"]  # type: ignore[index]
    assert found and all(p.stat().st_size > 65_536 for p in found), "the crew fixtures are read by head and tail"
    return found


def test_head_and_tail_facts_are_the_whole_dumps_facts(json_store: Path) -> None:
    for path in sorted(json_store.rglob("*.json")):
        expected = describe_dump(whole(str(path)))

        def refuse(_path: str) -> dict[str, object]:
            raise AssertionError("a crew file this big is read by its head and tail")

        big_crew = expected["entity_kind"] == "crew" and path.stat().st_size > 65_536
        got = json_facts(str(path), refuse if big_crew else whole)
        assert got == expected, path.name


def _rewrite(path: Path, dump: dict[str, object], order: list[str]) -> None:
    path.write_text(json.dumps({k: dump[k] for k in order}), encoding="utf-8")


def test_another_key_order_is_read_whole_and_gives_the_same_facts(json_store: Path) -> None:
    path = crew_files(json_store)[-1]
    dump = whole(str(path))
    expected = describe_dump(dump)
    for order in (
        ["trigger", "event_record", "entities", "crewai_version", "parent_id", "branch"],
        ["crewai_version", "event_record", "entities", "trigger", "parent_id", "branch"],
        ["entities", "crewai_version", "parent_id", "branch", "trigger", "event_record"],
    ):
        _rewrite(path, dump, order)
        assert json_facts(str(path), whole) == expected, order


def test_a_trigger_inside_the_events_is_not_taken_for_the_checkpoints(json_store: Path) -> None:
    path = crew_files(json_store)[-1]
    dump = whole(str(path))
    del dump["trigger"]
    dump["event_record"]["nodes"]["zz"] = {"event": {"type": "x", "trigger": "nested_trigger"}}  # type: ignore[index]
    path.write_text(json.dumps(dump), encoding="utf-8")
    facts = json_facts(str(path), whole)
    assert facts["trigger"] == "" and facts == describe_dump(dump)


def test_a_flow_before_the_crew_is_read_whole(json_store: Path) -> None:
    path = crew_files(json_store)[-1]
    dump = whole(str(path))
    entities = dump["entities"]
    assert isinstance(entities, list)
    dump["entities"] = [entities[1], entities[0], *entities[2:]]
    path.write_text(json.dumps(dump), encoding="utf-8")
    facts = json_facts(str(path), whole)
    assert facts["entity_kind"] == "crew" and facts == describe_dump(dump)


@pytest.mark.parametrize("cut", [0.3, 0.7, 0.999])
def test_a_torn_crew_file_lists_as_damaged(json_store: Path, cut: float) -> None:
    path = crew_files(json_store)[-1]
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * cut)])
    metas = {m.id: m for m in CrewAIJsonProvider().list(str(json_store))}
    assert metas[path.name.split("_p-")[0]].damaged
    assert sum(1 for m in metas.values() if not m.damaged) == len(list(json_store.rglob("*.json"))) - 1


def test_a_key_in_a_crews_name_is_masked_when_read_by_head_and_tail(json_store: Path) -> None:
    path = crew_files(json_store)[-1]
    dump = whole(str(path))
    dump["entities"][0]["name"] = f"crew {KEY_NAME}"  # type: ignore[index]
    path.write_text(json.dumps(dump), encoding="utf-8")
    meta = next(m for m in CrewAIJsonProvider().list(str(json_store)) if m.location == str(path))
    assert meta.entity_name == "crew ••••"


def test_the_in_sqlite_facts_are_the_whole_rows_facts(tmp_path: Path) -> None:
    store = copy_sqlite_store(tmp_path / "crewai.db")
    with connect(str(store)) as con:
        ids = [str(row[0]) for row in con.execute("SELECT id FROM checkpoints")]
        quick = _facts_of(con, ids)
        kinds = {facts["entity_kind"] for facts in quick.values()}
        assert kinds == {"crew", "flow", "agent"}
        for cid in ids:
            assert quick[cid] == _whole_facts(con, cid), cid


def test_a_listing_reads_only_the_rows_it_is_asked_for(tmp_path: Path) -> None:
    """``list --limit 2`` learns two checkpoints, a full listing all of them, and the cache never holds a key."""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for store in (copy_json_store(tmp_path / "crewai-json"), copy_sqlite_store(tmp_path / "crewai.db")):
        if store.is_dir():
            total = len(list(store.rglob("*.json")))
        else:
            total = sqlite3.connect(store).execute("SELECT count(*) FROM checkpoints").fetchone()[0]
        digest = hashlib.sha256(os.path.abspath(store).encode()).hexdigest()[:24]
        saved = tmp_path / "cache" / "crewpoint" / "crewai" / f"{digest}.json"
        command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", str(store)]
        subprocess.run([*command, "--limit", "2"], env=env, check=True, capture_output=True)
        assert len(json.loads(saved.read_text())["entries"]) == 2
        listed = subprocess.run(command, env=env, check=True, capture_output=True, text=True).stdout
        assert len(listed.splitlines()) == total + 1
        assert len(json.loads(saved.read_text())["entries"]) == total > 2
        assert FAKE_KEY not in saved.read_text() and FAKE_KEY not in listed


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize("before_tasks", [True, False])
@pytest.mark.parametrize("levels", [70, 990, 200_000])
def test_a_deeply_nested_file_is_damaged_and_the_rest_lists(
    json_store: Path, tmp_path: Path, levels: int, before_tasks: bool
) -> None:
    """A crafted file nesting deeper than Python can follow (or than any CrewAI dump) costs only itself: the
    listing shows every other checkpoint, and reading it says in one line that it is damaged."""
    deep = f'"x": {_deep(levels)}'
    crew = (
        f'"entity_type": "crew", "name": "c", {deep}, "tasks": []'
        if before_tasks
        else (f'"entity_type": "crew", "name": "c", "tasks": [], {deep}')
    )
    crafted = json_store / "main" / "20261130T150459_deadbeef_p-none.json"
    crafted.write_text(
        '{"crewai_version": "1.15.30", "parent_id": null, "branch": "main", '
        f'"entities": [{{{crew}}}], "event_record": {{"nodes": {{}}, "pad": "{"p" * 70_000}"}}, '
        '"trigger": "task_completed"}',
        encoding="utf-8",
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint"]
    listed = subprocess.run([*command, "list", str(json_store), "--json"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert len(rows) == len(list(json_store.rglob("*.json")))
    assert sum(1 for r in rows.values() if not r["damaged"]) >= len(rows) - 1
    info = subprocess.run(
        [*command, "info", "-l", str(json_store), "20261130T150459_deadbeef"], env=env, capture_output=True, text=True
    )
    assert info.returncode != 0 and len(info.stderr.strip().splitlines()) == 1
    assert "nested" in info.stderr and "Traceback" not in info.stderr


def test_a_deeply_nested_row_is_damaged_and_the_rest_lists(tmp_path: Path) -> None:
    import apsw

    store = copy_sqlite_store(tmp_path / "crewai.db")
    con = apsw.Connection(str(store))
    row = (
        '{"crewai_version": "1.15.30", "entities": [{"entity_type": "agent", "role": "r", '
        f'"x": {_deep(900)}}}], "event_record": {{"nodes": {{}}}}, "trigger": "t"}}'
    )
    con.execute(
        "INSERT INTO checkpoints VALUES ('20261130T150459_deadbeef', '20261130T150459', NULL, 'main', jsonb(?))", (row,)
    )
    con.close()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint"]
    listed = subprocess.run([*command, "list", str(store), "--json"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert rows["20261130T150459_deadbeef"]["damaged"]
    assert sum(1 for r in rows.values() if not r["damaged"]) == len(rows) - 1
    info = subprocess.run(
        [*command, "info", "-l", str(store), "20261130T150459_deadbeef"], env=env, capture_output=True, text=True
    )
    assert info.returncode != 0 and len(info.stderr.strip().splitlines()) == 1 and "Traceback" not in info.stderr


def test_a_fifo_or_link_swapped_in_after_the_walk_is_never_read(json_store: Path, tmp_path: Path) -> None:
    """Between the listing's walk and its reading, a checkpoint file becomes a FIFO (reading would block) or a
    link to a file outside the store: each is damaged, nothing blocks, nothing outside is read."""
    secret = tmp_path / "secret.json"
    secret.write_text('{"crewai_version": "x", "entities": [{"entity_type": "crew", "name": "SECRET"}]}')
    script = f"""
import os, sys
from crewpoint.providers.crewai.json_store import CrewAIJsonProvider
provider = CrewAIJsonProvider()
listing = provider._lazy({str(json_store)!r}, None)
fifo, link = listing.entries[0], listing.entries[1]
os.unlink(fifo.location); os.mkfifo(fifo.location)
os.unlink(link.location); os.symlink({str(secret)!r}, link.location)
metas = listing.metas([fifo, link])
print([bool(m.damaged) for m in metas], [m.entity_name for m in metas])
"""
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[True, True] ['', '']"


def test_a_big_first_listing_read_by_two_processes_is_the_same_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`list` reads a big CrewAI store the first time in two forked processes; what it prints is what one
    process reads, row for row, and it leaves no process behind."""
    from crewpoint.providers.crewai.json_store import PARALLEL_FROM

    source = copy_json_store(tmp_path / "source")
    dumps = [p.read_bytes() for p in sorted(source.rglob("*.json"))]
    store = tmp_path / "big"
    (store / "main").mkdir(parents=True)
    parent = "none"
    for i in range(PARALLEL_FROM + 7):
        cid = f"20260101T{i // 3600:02d}{(i // 60) % 60:02d}{i % 60:02d}_{i:08x}"
        (store / "main" / f"{cid}_p-{parent}.json").write_bytes(dumps[i % len(dumps)])
        parent = cid
    (store / "main" / f"20260102T000000_ffffffff_p-{parent}.json").write_bytes(dumps[0][:5000])  # torn
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "list", str(store), "--json"]
    listed = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    in_two = json.loads(listed.stdout)
    assert not _processes_naming(str(store)), "the workers end with the command"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other-cache"))  # nothing remembered: all read here
    monkeypatch.setitem(files._PROCESSES, "allowed", False)  # by this process alone
    in_one = [{k: v for k, v in m.to_dict().items() if k != "usage"} for m in CrewAIJsonProvider().list(str(store))]
    priced = ("status", "request", "usage", "cost_usd", "cost_estimated", "price_unknown")  # list's own fields
    assert [{k: v for k, v in row.items() if k not in priced} for row in in_two] == in_one
    assert sum(1 for row in in_one if row["damaged"]) == 1 and len(in_one) == PARALLEL_FROM + 8
    assert FAKE_KEY not in listed.stdout
    if (os.cpu_count() or 1) >= 2:  # the listing above did use two processes
        script = (
            "from crewpoint.providers.crewai import json_store as j\n"
            "from crewpoint.providers.files import allow_processes\n"
            f"allow_processes(); j.CrewAIJsonProvider().list({str(store)!r}); print(j._processes['pool'] is not None)"
        )
        env["XDG_CACHE_HOME"] = str(tmp_path / "third-cache")
        used = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
        assert used.stdout.strip() == "True", used.stderr


def _processes_naming(text: str) -> list[str]:
    """Ids of running processes whose command line holds ``text``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes():
                    found.append(entry.name)
            except OSError:
                continue
    return found


def test_info_shows_the_ancestry_and_reads_only_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`info` on a forked checkpoint of a CrewAI store shows its ancestry across branch folders, and reads
    that checkpoint and its ancestors only (a short ancestry without even reading the store's cache)."""
    from click.testing import CliRunner

    from crewpoint.providers.crewai import json_store, sqlite_store
    from crewpoint.tui.cli import main

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    learnt: list[str] = []
    for module in (json_store, sqlite_store):
        real = module._learn

        def learn(*args: Any, real: Any = real) -> Any:
            found = real(*args)
            learnt.extend(found)
            return found

        monkeypatch.setattr(module, "_learn", learn)
    for store in (copy_json_store(tmp_path / "crewai-json"), copy_sqlite_store(tmp_path / "crewai.db")):
        provider = CrewAIJsonProvider() if store.is_dir() else CrewAISqliteProvider()
        rows = {m.id: m for m in provider.list(str(store))}
        forked = next(m for m in rows.values() if m.branch.startswith("fork/") and m.tasks_done == 3)
        chain = [forked]
        while chain[-1].parent_id in rows:
            chain.append(rows[chain[-1].parent_id])
        assert {m.branch for m in chain} == {forked.branch, "main"} and len(chain) < len(rows)
        learnt.clear()
        result = CliRunner().invoke(main, ["checkpoint", "info", "-l", str(store), forked.id[:20]])
        assert result.exit_code == 0, result.output
        ancestry = result.output.split("ancestry (newest first)\n")[1].split("\n\n")[0].splitlines()
        assert [line.split()[0] for line in ancestry] == [m.id for m in chain]
        keys = {os.path.relpath(m.location, store) if store.is_dir() else m.id for m in chain}
        assert learnt and set(learnt) == keys  # a file's key is its path in the store, a row's its id


def test_one_provider_sees_every_change_between_listings(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The order a provider remembers between listings is made again whenever the store changed: a row added
    or removed by another connection, the database replaced by another file; a file added, removed, or
    finished in place."""
    import apsw

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = copy_sqlite_store(tmp_path / "crewai.db")
    provider = CrewAISqliteProvider()
    before = [m.id for m in provider.list(str(store))]
    con = apsw.Connection(str(store))
    con.execute(
        "INSERT INTO checkpoints SELECT '20261201T000000_0000abcd', '20261201T000000', id, branch, data "
        "FROM checkpoints WHERE id = ?",
        (before[0],),
    )
    assert [m.id for m in provider.list(str(store))] == ["20261201T000000_0000abcd", *before]
    con.execute("DELETE FROM checkpoints WHERE id IN ('20261201T000000_0000abcd', ?)", (before[-1],))
    con.close()
    after = provider.list(str(store))
    assert set(m.id for m in after) == set(before[:-1])
    assert after == CrewAISqliteProvider().list(str(store)), "as a provider that never saw it before lists it"
    other = copy_sqlite_store(tmp_path / "other.db")
    with sqlite3.connect(other) as plain:
        plain.execute("DELETE FROM checkpoints WHERE id <> ?", (before[1],))
    plain.close()
    os.replace(other, store)
    assert [m.id for m in provider.list(str(store))] == [before[1]]

    folder = copy_json_store(tmp_path / "crewai-json")
    json_provider = CrewAIJsonProvider()
    files = {m.id: Path(m.location) for m in json_provider.list(str(folder))}
    newest, oldest = next(iter(files)), list(files)[-1]
    whole_text = files[newest].read_bytes()
    added = files[newest].with_name(f"20261201T000000_0000abcd_p-{newest}.json")
    added.write_bytes(whole_text[:300])  # CrewAI has begun writing it
    listed = {m.id: m for m in json_provider.list(str(folder))}
    assert listed["20261201T000000_0000abcd"].damaged
    added.write_bytes(whole_text)  # and has finished
    listed = {m.id: m for m in json_provider.list(str(folder))}
    assert not listed["20261201T000000_0000abcd"].damaged
    assert list(listed.values()) == CrewAIJsonProvider().list(str(folder))
    files[oldest].unlink()
    listed = {m.id: m for m in json_provider.list(str(folder))}
    assert oldest not in listed and list(listed.values()) == CrewAIJsonProvider().list(str(folder))
    assert listed["20261201T000000_0000abcd"].tasks_total == listed[newest].tasks_total


def test_a_jsonb_row_with_bytes_that_are_not_utf8_is_damaged_on_its_own(tmp_path: Path) -> None:
    """A damaged blob whose text is not UTF-8 (SQLite hands it over as it is) costs only its own row."""
    import apsw

    store = copy_sqlite_store(tmp_path / "crewai.db")
    con = apsw.Connection(str(store))
    victim, blob = next(iter(con.execute("SELECT id, data FROM checkpoints WHERE instr(data, 'research crew')")))
    con.execute(
        "UPDATE checkpoints SET data = ? WHERE id = ?", (blob.replace(b"research crew", b"\xffesearch crew"), victim)
    )
    total = next(iter(con.execute("SELECT count(*) FROM checkpoints")))[0]
    con.close()
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint"]
    listed = subprocess.run([*command, "list", str(store), "--json"], env=env, capture_output=True, text=True)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert len(rows) == total and rows[victim]["damaged"]
    assert sum(1 for r in rows.values() if r["damaged"]) == 1
    info = subprocess.run([*command, "info", "-l", str(store), victim], env=env, capture_output=True, text=True)
    assert info.returncode != 0 and len(info.stderr.strip().splitlines()) == 1 and "Traceback" not in info.stderr
