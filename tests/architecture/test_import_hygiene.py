"""The engine knows no screen: headless modules never load textual, and ``import crewpoint`` stays cheap."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

HEADLESS = [
    "crewpoint",
    "crewpoint.providers",
    "crewpoint.events",
    "crewpoint.runtime",
    "crewpoint.crew",
    "crewpoint.flow",
    "crewpoint.llm",
    "crewpoint.demo",
    "crewpoint.tui",
    "crewpoint.tui.cli",
]


@pytest.mark.parametrize("module", HEADLESS)
def test_headless_module_does_not_import_textual(module: str) -> None:
    code = f"import sys, {module}; print('textual' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_import_crewpoint_loads_no_pydantic_until_a_name_is_used() -> None:
    code = (
        "import sys, crewpoint; a = 'pydantic' in sys.modules; crewpoint.Crew; b = 'pydantic' in sys.modules;"
        " print(a, b)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True"]


def test_import_crewpoint_loads_no_store_code() -> None:
    code = "import sys, crewpoint; print(*sorted(m for m in sys.modules if m.startswith('crewpoint.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert [m for m in out.stdout.split() if m.startswith(("crewpoint.providers", "crewpoint.formats"))] == []


def test_every_public_name_resolves() -> None:
    import crewpoint

    for name in crewpoint.__all__:
        assert getattr(crewpoint, name) is not None
    with pytest.raises(AttributeError):
        crewpoint.NoSuchThing  # noqa: B018


def test_the_app_uses_only_public_textual_modules() -> None:
    """A private module (``textual.widgets._footer``) may change in any release; the app imports none."""
    root = Path(__file__).resolve().parents[2]
    private = re.compile(r"^\s*(?:from|import)\s+textual(?:\.\w+)*\._\w+", re.MULTILINE)
    offenders = [
        str(path.relative_to(root))
        for folder in ("core", "providers", "tui", "screens")
        for path in sorted((root / folder).rglob("*.py"))
        if private.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


_RUN = """
import atexit, sys
atexit.register(lambda: print("\\nloaded:", *sorted(sys.modules), file=sys.stderr))
sys.argv[0] = "crewpoint"
from crewpoint.tui.cli import run
run()
"""
"""The ``crewpoint`` command's entry point, then what the process had imported when it ended."""


def _loaded_by(*argv: str) -> tuple[str, set[str]]:
    """What ``crewpoint ARGV`` printed (80 columns) and the modules it had imported when it ended."""
    env = {**os.environ, "COLUMNS": "80"}
    done = subprocess.run([sys.executable, "-c", _RUN, *argv], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, set(done.stderr.rsplit("\nloaded:", 1)[1].split())


COMMAND_MODULES = {f"crewpoint.tui.cli.{name}" for name in ("answer", "cost", "listing", "runs", "serve", "demo")}
HEAVY = ("crewpoint.providers", "crewpoint.feedback", "crewpoint.cost", "crewpoint.budget", "crewpoint.tui.store_index")


@pytest.mark.parametrize("argv", [["--help"], ["checkpoint", "--help"]])
def test_help_loads_no_command_store_or_engine_module_and_lists_every_command(argv: list[str]) -> None:
    """``crewpoint --help`` is the first thing a user runs: it reads no command's module, no store, no price or
    feedback code, no pydantic or rich, and still lists every command with the help it gives itself."""
    shown, modules = _loaded_by(*argv)
    assert modules & COMMAND_MODULES == set()
    assert [name for name in modules if name.startswith(HEAVY) or name.split(".")[0] in ("pydantic", "rich")] == []
    # the same help made with every command's own module loaded (click's list from the commands themselves)
    code = "import sys; from crewpoint.tui.cli import load_commands, main; load_commands(); main(sys.argv[1:])"
    env = {**os.environ, "COLUMNS": "80"}
    loaded = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env, timeout=60)
    assert shown == loaded.stdout.replace("Usage: -c ", "Usage: crewpoint ")
    assert ("  resume " if argv[0] == "checkpoint" else "  demo ") in shown


def test_a_command_loads_its_own_module_only() -> None:
    _, modules = _loaded_by("checkpoint", "resume", "--help")
    assert "crewpoint.tui.cli.runs" in modules
    assert modules & COMMAND_MODULES == {"crewpoint.tui.cli.runs"}


def test_the_command_table_agrees_with_the_commands() -> None:
    """:data:`crewpoint.tui.cli.COMMANDS` names each command's module and short help, which ``--help`` shows without
    loading the module: a command added, moved or reworded fails here until its line says the same."""
    from crewpoint.tui.cli import COMMANDS, checkpoint, load_commands, main

    load_commands()
    for group in (main, checkpoint):
        registered = {
            name: (command.callback.__module__.rsplit(".", 1)[-1], command.get_short_help_str(10_000))
            for name, command in group.commands.items()
            if command.callback is not None and command.callback.__module__ != "crewpoint.tui.cli.root"
        }
        assert COMMANDS[group.name or ""] == registered


@pytest.mark.parametrize("kind", ["JSON", "SQLite"])
def test_list_loads_no_hashing_and_no_body_code(tmp_path: Path, kind: str) -> None:
    """``checkpoint list`` reads rows, never a body: it loads neither hashlib (starting OpenSSL costs every listing
    a few milliseconds) nor the body's schema, and still lists every checkpoint."""
    from support.stores import fill_store

    from crewpoint.providers import JsonProvider, SqliteProvider

    store = str(tmp_path / ("store.db" if kind == "SQLite" else "store"))
    provider = SqliteProvider() if kind == "SQLite" else JsonProvider(fsync=False)
    ids = fill_store(provider, store, 12)
    provider.close()
    shown, modules = _loaded_by("checkpoint", "list", store)
    assert {line.split()[0] for line in shown.splitlines()[1:]} == {i[:12] for i in ids}
    assert {"hashlib", "_hashlib", "crewpoint.checkpoint.schema"} & modules == set()


def test_info_checks_a_body_without_loading_the_generated_types_or_the_budget(tmp_path: Path) -> None:
    """``checkpoint info`` reads a body through the schema's checks; the body's generated types are for type
    checkers only, and a saved budget is checked against the ceilings without the budget's code: either would
    cost every reader of a body its start-up."""
    from support.stores import fill_store

    from crewpoint.providers import SqliteProvider

    store = str(tmp_path / "store.db")
    provider = SqliteProvider()
    newest = fill_store(provider, store, 4)[-1]
    provider.close()
    shown, modules = _loaded_by("checkpoint", "info", newest, "--location", store)
    assert newest[:12] in shown and "research-crew" in shown
    assert "crewpoint.checkpoint.schema" in modules
    assert {"crewpoint.checkpoint.schema_types", "crewpoint.budget"} & modules == set()
