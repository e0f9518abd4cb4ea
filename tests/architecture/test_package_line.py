"""Packages follow the headless/Textual line: list computes STATUS without the app's widgets, the render helpers
and the status index load no textual, no module of the app reaches a screen's stylesheet by a relative path, and
the import graph between tui/ and screens/ has no cycle."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import grimp
import pytest
from support.stores import make_store

ROOT = Path(__file__).resolve().parents[2]


def test_list_shows_status_without_loading_the_apps_widgets_screens_or_textual(tmp_path: Path) -> None:
    make_store()
    code = (
        "import sys\n"
        "from crewpoint.tui.cli import main\n"
        "try:\n"
        "    main(['checkpoint', 'list'])\n"
        "except SystemExit as exc:\n"
        "    assert exc.code == 0, exc.code\n"
        "shown = [m for m in sys.modules if m.split('.')[0] == 'textual' or m.startswith("
        "('crewpoint.tui.widgets', 'crewpoint.screens'))]\n"
        "print('loaded:', sorted(shown))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    header, *rows = out.stdout.splitlines()[:-1]
    assert header.split()[-1] == "STATUS"
    assert [row.split()[-1] for row in rows] == ["done"] * 4, out.stdout  # the demo crew ran to its end
    assert out.stdout.splitlines()[-1] == "loaded: []"


def test_info_and_list_load_no_pydantic_event_or_entity_class(tmp_path: Path) -> None:
    """Reading a checkpoint's metadata and body needs neither the event catalogue nor the crew classes: both pull in
    pydantic, which would make every ``info`` and ``list`` start slower."""
    make_store()
    for argv in (["checkpoint", "list"], ["checkpoint", "info"]):
        code = (
            "import sys\n"
            "from crewpoint.tui.cli import main\n"
            "try:\n"
            f"    main({argv!r})\n"
            "except SystemExit as exc:\n"
            "    assert exc.code == 0, exc.code\n"
            "heavy = ('pydantic', 'crewpoint.events.base', 'crewpoint.crew', 'crewpoint.flow', 'crewpoint.agent')\n"
            "print('loaded:', sorted(m for m in sys.modules if m in heavy))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert "research-crew" in out.stdout  # it did read the store
        assert out.stdout.splitlines()[-1] == "loaded: []", argv


@pytest.mark.parametrize("module", ["crewpoint.tui.store_index", "crewpoint.tui.render", "crewpoint.tui.progress"])
def test_status_and_render_helpers_load_no_textual(module: str) -> None:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.split('.')[0] == 'textual'))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == "[]"


def test_no_widget_or_screen_takes_a_render_helper_from_the_tree_widget() -> None:
    pattern = re.compile(r"from crewpoint\.tui\.widgets\.checkpoint_tree import (?!CheckpointTree\b)")
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("tui", "screens")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_no_stylesheet_is_found_by_a_path_across_packages() -> None:
    offenders = [
        str(path.relative_to(ROOT))
        for folder in ("tui", "screens")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if re.search(r"""["']\.\./[^"']*\.tcss["']""", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_browser_stylesheet_the_app_loads_is_the_screens_own_file() -> None:
    from crewpoint.screens import browser
    from crewpoint.tui.app import CheckpointApp

    sheets = [Path(p) for p in CheckpointApp.CSS_PATH] if isinstance(CheckpointApp.CSS_PATH, list) else []
    own = Path(browser.__file__).with_name(str(browser.BrowserScreen.CSS_PATH))
    assert own.is_file()
    assert [p for p in sheets if p.is_absolute() and p.resolve() == own.resolve()], sheets


def test_no_import_chain_leads_from_tui_to_screens_and_back() -> None:
    graph = grimp.build_graph("crewpoint")
    screens = {m for m in graph.modules if m.startswith("crewpoint.screens")}
    helpers = {m for m in graph.modules if m.startswith("crewpoint.tui.")} - {
        m for m in graph.modules if m.startswith(("crewpoint.tui.app", "crewpoint.tui.serve", "crewpoint.tui.cli"))
    }
    used_by_screens = {t for s in screens for t in graph.find_modules_directly_imported_by(s)} & helpers
    assert used_by_screens, "the screens use the app's helpers and widgets"
    back = [m for m in sorted(used_by_screens) if graph.chain_exists(m, "crewpoint.screens", as_packages=True)]
    assert back == []
    assert not graph.chain_exists("crewpoint.screens", "crewpoint.tui.app", as_packages=True)
