"""The layers of DESIGN.md §2 as import-linter contracts (pyproject.toml ``[tool.importlinter]``, run by ``make lint``).

These tests show the contracts hold on this tree, cover every engine module, and break when a layer reaches up.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")
FOLDERS = {"crewpoint": "core", **{f"crewpoint/{name}": name for name in ("providers", "tui", "screens")}}


def contracts() -> list[dict[str, Any]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found: list[dict[str, Any]] = config["tool"]["importlinter"]["contracts"]
    return found


def contract(starting: str) -> dict[str, Any]:
    (found,) = [c for c in contracts() if c["name"].startswith(starting)]
    return found


def lint_imports(cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)} if site else None
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_contracts_hold_on_this_tree() -> None:
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(contracts())} kept, 0 broken." in done.stdout


def test_the_engine_contract_names_every_module_of_core() -> None:
    core = ROOT / "core"
    expected = {"crewpoint"}
    expected |= {f"crewpoint.{path.stem}" for path in core.glob("*.py") if path.stem != "__init__"}
    for folder in core.iterdir():
        if (folder / "__init__.py").is_file():
            expected |= {f"crewpoint.{folder.name}", f"crewpoint.{folder.name}.**"}
    assert set(contract("the engine")["source_modules"]) == expected, "name the new core/ module in the contract"


def test_every_module_of_tui_has_its_layer() -> None:
    """A module of tui/ is the App's (app, serve) or a helper below the screens, named in the widgets contract."""
    helpers = {f"crewpoint.tui.{path.stem}" for path in (ROOT / "tui").glob("*.py")}
    helpers -= {"crewpoint.tui.__init__", "crewpoint.tui.app", "crewpoint.tui.serve"}
    sources = set(contract("widgets and the app's helpers")["source_modules"])
    assert sources - {"crewpoint.tui.widgets"} == helpers, "name the new tui/ module in pyproject's contracts"


def test_every_layer_rule_of_the_design_has_a_contract() -> None:
    forbidden = [c for c in contracts() if c["type"] == "forbidden"]
    rules = {(src, bad) for c in forbidden for src in c["source_modules"] for bad in c["forbidden_modules"]}
    assert ("crewpoint.providers", "crewpoint.*") in rules
    assert ("crewpoint.providers", "textual") in rules
    assert {("crewpoint.agent", "crewpoint.tui"), ("crewpoint.agent", "crewpoint.screens")} <= rules
    assert ("crewpoint.runtime", "textual") in rules
    assert {(layer, "crewpoint.formats.crewai") for layer in ("crewpoint.checkpoint", "crewpoint.tui")} <= rules
    assert ("crewpoint.tui.widgets", "crewpoint.screens") in rules
    assert ("crewpoint.tui.cli.**", "textual") in rules
    (layers,) = [c["layers"] for c in contracts() if c["type"] == "layers"]
    assert layers == ["crewpoint.tui.app : crewpoint.tui.serve", "crewpoint.screens", "crewpoint.tui.widgets"]


# -- the contracts break when a layer reaches up ------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the four code folders laid out as the installed package, with this pyproject beside it."""
    for target, folder in FOLDERS.items():
        ignore = shutil.ignore_patterns("__pycache__")
        shutil.copytree(ROOT / folder, tmp_path / "site" / target, ignore=ignore, dirs_exist_ok=True)
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


@pytest.mark.parametrize(
    ("module", "line", "broken"),
    [
        ("crewpoint/providers/refs.py", "from crewpoint.crew import Crew", "providers import nothing above them"),
        ("crewpoint/providers/refs.py", "from crewpoint import Crew", "providers import no name from the crewpoint"),
        ("crewpoint/providers/files.py", "import textual", "providers import nothing above them"),
        ("crewpoint/providers/crewai/json_store.py", "from crewpoint.formats.crewai import body", "providers import"),
        ("crewpoint/checkpoint/plan.py", "from crewpoint.formats.crewai.fork import plan_body", "formats sit above"),
        ("crewpoint/tui/cli/runs.py", "def _later():\n    import crewpoint.formats.crewai.runner", "formats sit above"),
        ("crewpoint/text.py", "import textual.app", "the engine (core/) imports"),
        ("crewpoint/runtime.py", "def _later():\n    from crewpoint.tui import diagnostics", "the engine (core/)"),
        ("crewpoint/events/bus.py", "from crewpoint.screens import help", "the engine (core/) imports"),
        ("crewpoint/tui/widgets/raw_view.py", "from crewpoint.screens import help", "widgets and the app"),
        ("crewpoint/tui/feed.py", "from crewpoint.screens import browser", "widgets and the app's helpers"),
        ("crewpoint/screens/help.py", "from crewpoint.tui.app import make_app", "screens import neither"),
        ("crewpoint/screens/help.py", "from crewpoint.tui.serve import serve_app", "no cycle between tui and screens"),
        ("crewpoint/tui/widgets/tabs.py", "from crewpoint.screens import help", "no cycle between tui and screens"),
        ("crewpoint/tui/cli/listing.py", "def _later():\n    import textual", "headless code"),
        ("crewpoint/tui/progress.py", "from crewpoint.tui.widgets import raw_view", "headless code"),
    ],
)
def test_a_layer_that_reaches_up_breaks_its_contract(tree: Path, module: str, line: str, broken: str) -> None:
    assert lint_imports(tree, tree / "site").returncode == 0  # the copy holds, as this tree does
    path = tree / "site" / module
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + line + "\n", encoding="utf-8")
    done = lint_imports(tree, tree / "site")
    assert done.returncode == 1
    verdicts = [text for text in done.stdout.splitlines() if " BROKEN" in text]
    assert [text for text in verdicts if text.startswith(broken)], done.stdout
    assert module.removesuffix(".py").replace("/", ".") in done.stdout
