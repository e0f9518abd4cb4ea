"""``crewpoint checkpoint list`` as the ``crewpoint`` command runs it: arguments the listing reads itself run
without building the click command line, anything else is click's, and either way a user sees the same bytes on
stdout and stderr and the same exit code as from the click command line."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from crewpoint.tui.cli.listing_run import listing_args

COMMAND = str(Path(sys.executable).with_name("crewpoint"))
CLICK = "import sys; sys.argv[0] = 'crewpoint'; from crewpoint.tui.cli import main; main(prog_name='crewpoint')"
LOADS = (
    "import atexit, sys; atexit.register(lambda: print('click' in sys.modules, file=sys.stderr)); "
    "sys.argv[0] = 'crewpoint'; from crewpoint.tui.cli import run; run()"
)


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    from support.stores import fill_store

    from crewpoint.providers import JsonProvider, SqliteProvider

    root = tmp_path_factory.mktemp("fast")
    json_store, sqlite_store, empty = root / "store", root / "store.db", root / "empty"
    for provider, store in ((JsonProvider(fsync=False), json_store), (SqliteProvider(), sqlite_store)):
        fill_store(provider, str(store), 24)
        provider.close()
    empty.mkdir()
    (root / "notes.txt").write_text("not a store\n")
    yield {"S": str(json_store), "DB": str(sqlite_store), "EMPTY": str(empty), "FILE": str(root / "notes.txt")}


def _run(args: list[str], env: dict[str, str], cwd: str, fast: bool) -> tuple[int, str, str]:
    command = [COMMAND, *args] if fast else [sys.executable, "-c", CLICK, *args]
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    return done.returncode, done.stdout, done.stderr


CASES = [
    ["checkpoint", "list", "S"],
    ["checkpoint", "list", "DB"],
    ["checkpoint", "list", "S", "--json"],
    ["checkpoint", "list", "--json", "DB", "-n", "3"],
    ["checkpoint", "list", "S", "--limit=2"],
    ["checkpoint", "list", "S", "--limit", "0"],
    ["checkpoint", "list", "-b", "fork-1", "S"],
    ["checkpoint", "list", "S", "--branch=fork-2", "--json"],
    ["checkpoint", "--location", "S", "list"],
    ["checkpoint", "-l", "DB", "list", "--limit", "4"],
    ["checkpoint", "--location=S", "list", "DB", "-n", "1"],
    ["checkpoint", "list", "--location", "S"],
    ["checkpoint", "list", "-l", "DB", "--json", "-n", "2"],
    ["checkpoint", "list", "--location=DB", "-b", "fork-1"],
    ["checkpoint", "-l", "S", "list", "-l", "DB"],
    ["checkpoint", "list", "-l", "S", "DB"],
    ["checkpoint", "list", "-l", "S", "-l", "DB"],
    ["checkpoint", "list", "-l", "MISSING"],
    ["checkpoint", "list"],
    ["checkpoint", "list", "S", "--branch", "no-such-branch"],
    ["checkpoint", "list", "S", "--branch", "../up"],
    ["checkpoint", "list", "EMPTY"],
    ["checkpoint", "list", "FILE"],
    ["checkpoint", "list", "MISSING"],
    ["checkpoint", "list", "S", "--limit", "-1"],
    ["checkpoint", "list", "S", "--limit", "many"],
    ["checkpoint", "list", "S", "--limit", "+2"],
    ["checkpoint", "list", "S", "DB"],
    ["checkpoint", "list", "S", "--bogus"],
    ["checkpoint", "list", "S", "--branch"],
    ["checkpoint", "list", "S", "--json", "--json"],
    ["checkpoint", "list", "S", "-n", "1", "-n", "2"],
    ["checkpoint", "list", "--help"],
    ["checkpoint", "list", "S", "-h"],
    ["--debug", "checkpoint", "list", "MISSING"],
    ["checkpoint", "--read-only", "list", "S"],
    ["checkpoint", "list", ""],
    ["checkpoint", "lst", "S"],
]


@pytest.mark.parametrize("args", CASES, ids=[" ".join(case) or "-" for case in CASES])
@pytest.mark.parametrize("env_store", [None, "DB"])
def test_the_command_and_the_click_command_line_list_alike(
    stores: dict[str, str], tmp_path: Path, args: list[str], env_store: str | None
) -> None:
    """The same stdout bytes, stderr and exit code, listings, refusals and help alike; with
    ``$CREWPOINT_CHECKPOINT_LOCATION`` set and without (an argument still wins over it)."""
    named = {**stores, "MISSING": str(tmp_path / "missing")}
    real = [named.get(arg, arg) for arg in args]
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_CHECKPOINT_LOCATION"}
    if env_store is not None:
        env["CREWPOINT_CHECKPOINT_LOCATION"] = named[env_store]
    _run(real, env, str(tmp_path), fast=False)  # a first listing may write the JSON store's index
    ours = _run(real, env, str(tmp_path), fast=True)
    theirs = _run(real, env, str(tmp_path), fast=False)
    assert ours == theirs
    if real[:2] == ["checkpoint", "list"] and ours[0] == 0 and "--help" not in real and "-h" not in real:
        assert ours[1] or ours[2]  # a listing said something (rows, or that there are none)


def test_a_plain_listing_loads_no_click_and_anything_else_does(stores: dict[str, str], tmp_path: Path) -> None:
    def loads_click(*args: str) -> bool:
        done = subprocess.run(
            [sys.executable, "-c", LOADS, *args], cwd=tmp_path, capture_output=True, text=True, env=os.environ
        )
        return done.stderr.splitlines()[-1] == "True"

    assert not loads_click("checkpoint", "list", stores["S"])
    assert not loads_click("checkpoint", "-l", stores["DB"], "list", "--json", "-n", "2")
    assert not loads_click("checkpoint", "list", "--location", stores["S"])
    assert loads_click("checkpoint", "list", stores["S"], "--help")
    assert loads_click("checkpoint", "list", stores["S"], "--bogus")
    assert loads_click("checkpoint", "info", stores["S"])


def test_arguments_the_listing_reads_itself() -> None:
    """What the fast path takes from an argument list, and the lists it leaves to click (``None``)."""
    assert listing_args(["checkpoint", "list", "s", "-b", "x", "--limit=3", "--json"]) == ("s", "x", 3, True)
    assert listing_args(["checkpoint", "-l", "g", "list", "--branch=y"]) == ("g", "y", None, False)
    assert listing_args(["checkpoint", "--location", "g", "list", "s", "-n", "007"]) == ("s", None, 7, False)
    assert listing_args(["checkpoint", "list", "-l", "s", "--json"]) == ("s", None, None, True)
    assert listing_args(["checkpoint", "-l", "g", "list", "--location=s"]) == ("s", None, None, False)
    for other in (
        ["checkpoint"],
        ["checkpoint", "info", "list"],
        ["list", "s"],
        ["checkpoint", "list", "-n", "٣"],
        ["checkpoint", "list", "--branch", "-x"],
        ["checkpoint", "list", "-b=x"],
        ["checkpoint", "list", "--", "s"],
        ["checkpoint", "list", "s", "t"],
        ["checkpoint", "-l", "a", "-l", "b", "list"],
        ["checkpoint", "list", "--json=1"],
        ["checkpoint", "list", "-l", "s", "t"],
        ["checkpoint", "list", "-l", "s", "--location", "t"],
    ):
        assert listing_args(other) is None, other


@pytest.mark.parametrize("fast", [True, False])
def test_list_takes_its_store_with_location_as_every_other_command_does(
    stores: dict[str, str], tmp_path: Path, fast: bool
) -> None:
    """``list -l STORE`` and ``list --location STORE`` list what ``list STORE`` lists; a store named twice is
    refused in one line (exit 2)."""
    env = {k: v for k, v in os.environ.items() if k != "CREWPOINT_CHECKPOINT_LOCATION"}
    for store in (stores["S"], stores["DB"]):
        plain = _run(["checkpoint", "list", store, "--json"], env, str(tmp_path), fast)
        assert plain[0] == 0 and plain[1].startswith("[")
        assert _run(["checkpoint", "list", "-l", store, "--json"], env, str(tmp_path), fast) == plain
        assert _run(["checkpoint", "list", f"--location={store}", "--json"], env, str(tmp_path), fast) == plain
    code, out, err = _run(["checkpoint", "list", "-l", stores["S"], stores["DB"]], env, str(tmp_path), fast)
    assert (code, out) == (2, "") and len(err.splitlines()) == 1 and "not both" in err
