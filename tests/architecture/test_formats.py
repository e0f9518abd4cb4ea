"""Checkpoint formats: the registry answers for crewpoint's format and CrewAI's, and no module outside CrewAI's
(its stores in providers/crewai/, its format in core/formats/crewai/) compares a string to CrewAI's names, parses
CrewAI's ids or imports one of them."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from crewai_fixtures import json_store, sqlite_store
from support.stores import make_store

from crewpoint.checkpoint.plan import plan_fork
from crewpoint.providers import provider_for, split_ref
from crewpoint.providers.formats import (
    NATIVE_FORMAT,
    format_named,
    format_names,
    format_of,
    format_of_id,
    format_of_store,
    written_by,
    written_not_run,
)
from crewpoint.providers.refs import short_id

ROOT = Path(__file__).resolve().parents[2]
PRODUCTION = ("core", "providers", "tui", "screens")
CREWAI_FOLDERS = (ROOT / "providers" / "crewai", ROOT / "core" / "formats" / "crewai")
"""CrewAI's read-only stores, and its format above the schema (translation, forks, runs)."""
CREWAI_MODULES = ("crewpoint.providers.crewai", "crewpoint.formats.crewai")
REGISTRATIONS = ("providers/__init__.py", "core/formats/__init__.py")
"""Where CrewAI's read-only providers and its format are registered: the modules outside CrewAI's that name its
modules (they compare no string and parse no id either)."""
_STAMP_SHAPE = re.compile(r"\\d\{6\}(_|\[_-\])")
"""A CrewAI id's shape in a pattern: its time stamp, then ``_`` (``-`` in crewpoint's copies)."""
CREWAI_ID = "20261130T150422_db37a9ed"
CREWPOINT_ID = "3f9a0c1e5b7d4a2e8c6f1b0d9e7a5c3b"


def _production_modules() -> list[Path]:
    files = [p for part in PRODUCTION for p in (ROOT / part).rglob("*.py")]
    return sorted(p for p in files if not any(folder in p.parents for folder in CREWAI_FOLDERS))


def _strings_in(node: ast.AST) -> list[str]:
    return [n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _knows_crewai(source: str, where: str) -> list[str]:
    """Where the module ``source`` compares a string to a CrewAI name, tests one against a CrewAI id shape, or
    imports the adapter package: ``file:line what``."""
    tree = ast.parse(source, filename=where)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            words = [s for side in (node.left, *node.comparators) for s in _strings_in(side)]
            if any("crewai" in w.lower() for w in words):
                found.append(f"{where}:{node.lineno} compares to {words}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if node.func.attr in ("startswith", "endswith", "fullmatch", "match", "compile", "search"):
                words = [s for arg in node.args for s in _strings_in(arg)]
                if any("crewai" in w.lower() or _STAMP_SHAPE.search(w) for w in words):
                    found.append(f"{where}:{node.lineno} {node.func.attr}({words})")
        elif where in REGISTRATIONS:
            continue  # a registration names CrewAI's modules
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(CREWAI_MODULES):
            found.append(f"{where}:{node.lineno} imports {node.module}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(CREWAI_MODULES):
                    found.append(f"{where}:{node.lineno} imports {alias.name}")
    return found


def test_no_module_outside_the_adapter_compares_to_crewai_or_parses_its_ids() -> None:
    modules = _production_modules()
    assert len(modules) > 50  # the scan reads the tree, not an empty folder
    found = [hit for p in modules for hit in _knows_crewai(p.read_text(encoding="utf-8"), str(p.relative_to(ROOT)))]
    assert found == []


def test_the_scan_finds_a_comparison_an_id_shape_and_an_import() -> None:
    sample = (
        "import re\n"
        "from crewpoint.formats.crewai.fork import plan_body\n"
        "import crewpoint.providers.crewai.detect\n"
        "def f(body, version, ref):\n"
        "    if body['format'] == 'crewai':\n"
        "        return version.startswith(('crewai ', 'x'))\n"
        "    return re.fullmatch(r'\\d{8}T\\d{6}_[0-9a-f]{8}', ref)\n"
    )
    found = _knows_crewai(sample, "probe.py")
    assert sorted(hit.split()[0] for hit in found) == [f"probe.py:{n}" for n in (2, 3, 5, 6, 7)], found


def test_the_registry_names_both_formats_and_which_one_crewpoint_runs() -> None:
    assert format_names()[:1] == ["crewpoint"] and "crewai" in format_names()
    assert format_named("crewpoint") is NATIVE_FORMAT and not NATIVE_FORMAT.foreign
    crewai = format_named("crewai")
    assert crewai.foreign and crewai.title == "CrewAI"
    with pytest.raises(LookupError, match="no checkpoint format named 'langgraph'"):
        format_named("langgraph")
    assert format_of({"format": "crewai"}) is crewai
    assert format_of({"schema_version": 3}) is NATIVE_FORMAT  # a body without a format is crewpoint's


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_records_and_stores_are_answered_for_by_their_format(tmp_path: Path, kind: str) -> None:
    crewai_store = str(json_store(tmp_path / "crewai") if kind == "json" else sqlite_store(tmp_path / "crewai.db"))
    ours = make_store(str(tmp_path / ("ours.db" if kind == "sqlite" else "ours")))

    assert format_of_store(crewai_store).name == "crewai"
    assert format_of_store(ours) is NATIVE_FORMAT
    assert format_of_store(crewai_store).provider_for(crewai_store) is not None
    assert format_of_store(crewai_store).provider_for(ours) is None

    theirs = provider_for(crewai_store)
    meta = next(m for m in theirs.list(crewai_store) if m.entity_kind == "crew")
    record = theirs.read(meta.location or crewai_store, meta.id)
    assert format_of(record).name == "crewai"
    assert format_of_id(meta.id).name == "crewai"
    assert written_by(meta.version) == f"{meta.version} (a CrewAI store, read-only)"

    mine = provider_for(ours)
    own_meta = mine.list(ours)[0]
    own = mine.read(own_meta.location or ours, own_meta.id)
    assert format_of(own) is NATIVE_FORMAT
    assert format_of_id(own_meta.id) is NATIVE_FORMAT
    assert written_by(own_meta.version) is None

    # the engine's fork plan asks the format: CrewAI's adapter plans on CrewAI's dump, crewpoint's engine on its own
    edited = plan_fork(record, outputs={0: "an edited first output"})
    assert edited.edited_outputs == {0: "an edited first output"} and edited.rerun[:1] == [1]
    assert plan_fork(own, outputs={0: "an edited first output"}).edited_outputs == {0: "an edited first output"}


def test_ids_are_shown_and_referenced_as_their_format_says() -> None:
    assert short_id(CREWPOINT_ID) == CREWPOINT_ID[:8]
    assert short_id(CREWPOINT_ID, 12, typeable=True) == CREWPOINT_ID[:12]
    assert short_id(CREWAI_ID) == "db37a9ed"  # the time part is shared by every checkpoint of that second
    assert short_id(CREWAI_ID, 12, typeable=True) == CREWAI_ID  # a command line takes it whole
    copied = CREWAI_ID.replace("_", "-")  # crewpoint's copy of a CrewAI checkpoint
    assert short_id(copied) == "db37a9ed"
    assert split_ref(f"store.db#{CREWAI_ID}") == ("store.db", CREWAI_ID)
    assert split_ref("store.db#20261130T150422_db3") == ("store.db", "20261130T150422_db3")
    assert split_ref("store.db#not_an_id") == ("store.db#not_an_id", None)
    assert written_by("copy of crewai 1.15.30") == "crewpoint, a copy of crewai 1.15.30 checkpoint"


def test_resume_and_fork_of_a_crewai_checkpoint_go_to_its_format_and_its_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The command line hands a CrewAI checkpoint to the format's adapter, which runs the user's CrewAI (here a
    stand-in that records what it was given and fails); a fork it writes is never taken for a live run."""
    from click.testing import CliRunner

    from crewpoint.tui.cli import main
    from crewpoint.tui.store_index import StoreIndex

    store = sqlite_store(tmp_path / "crewai.db")
    given = tmp_path / "given.txt"
    tool = tmp_path / "python-with-crewai"
    tool.write_text(f'#!/bin/sh\nprintf "%s\\n" "$3" "$4" > "{given}"\nexit 3\n', encoding="utf-8")
    tool.chmod(0o755)
    monkeypatch.setenv("CREWPOINT_CREWAI_PYTHON", str(tool))
    crews = [m for m in provider_for(str(store)).list(str(store)) if m.entity_kind == "crew"]
    crew = next(m for m in crews if 0 < m.tasks_done < m.tasks_total)  # unfinished: only its trigger says not live

    resumed = CliRunner().invoke(main, ["checkpoint", "resume", crew.id, "--location", str(store)])
    assert resumed.exit_code == 1, resumed.output
    assert resumed.stderr.strip().splitlines()[-1] == "crewpoint: the CrewAI run failed (exit 3)"
    ref, kind = given.read_text(encoding="utf-8").splitlines()
    assert kind == "crew" and crew.id in ref  # the handoff copy of that checkpoint, not the store itself
    assert str(store) not in ref

    monkeypatch.setenv("CREWPOINT_CREWAI_PYTHON", str(tmp_path / "no-such-python"))
    forked = CliRunner().invoke(main, ["checkpoint", "fork", crew.id, "--location", str(store), "--branch", "try"])
    assert forked.exit_code == 0, forked.output
    assert "CrewAI is not installed here" in forked.stderr
    fork = next(m for m in provider_for(str(store)).list(str(store)) if m.branch == "try")
    assert forked.stdout.strip() == f"{store}#{fork.id}"
    assert fork.trigger in written_not_run()
    index = StoreIndex.build(provider_for(str(store)).list(str(store)))
    segment = next(s for s in index.segments.values() if s.branch == "try")
    assert not segment.finished and not segment.is_live(now=fork.created_at)  # written a moment ago, yet not live
