"""Imports are at the top of each module (engine, stores, CLI and app). One inside a function is there to keep a
command or ``import crewpoint`` cheap, which the import hygiene tests hold (``test_import_hygiene.py``,
``test_package_line.py``): moving it up fails them. A local import of a module the file already imports at the top
keeps nothing cheap, and is refused here."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


def _modules(node: ast.Import | ast.ImportFrom) -> list[str]:
    """The modules an import loads: ``from a import b`` loads ``a.b`` too when ``b`` is a module of its own."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level or not node.module:
        return []
    submodules = [f"{node.module}.{a.name}" for a in node.names if node.module.startswith("crewpoint")]
    return [node.module, *(m for m in submodules if _is_module(m))]


def _top_level_modules(tree: ast.Module) -> set[str]:
    """The first-party modules a file imports when it loads (not those only type checkers read)."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.update(m for m in _modules(node) if m.split(".")[0] == "crewpoint")
    return found


def _redundant_local_imports(source: str) -> list[int]:
    tree = ast.parse(source)
    at_top = _top_level_modules(tree)
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for inner in ast.walk(node):
            if isinstance(inner, ast.Import | ast.ImportFrom) and at_top.issuperset(_modules(inner) or [""]):
                lines.append(inner.lineno)
    return sorted(set(lines))


def test_the_scan_finds_a_local_import_of_a_module_already_imported_at_the_top() -> None:
    source = "from crewpoint.cost import price\n\ndef f():\n    from crewpoint.cost import usd\n    return usd\n"
    assert _redundant_local_imports(source) == [4]
    assert _redundant_local_imports("def f():\n    from crewpoint.cost import usd\n") == []


def test_no_function_imports_a_module_its_file_already_imports() -> None:
    found = []
    for folder in ("core", "providers", "tui", "screens"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            found += [f"{path.relative_to(ROOT)}:{n}" for n in _redundant_local_imports(path.read_text("utf-8"))]
    assert found == [], "import these at the top of the module:\n" + "\n".join(found)
