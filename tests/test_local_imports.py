"""Imports are at the top of each module (engine, stores, CLI and app): one inside a function says why."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _unexplained_local_imports() -> list[str]:
    found = []
    for folder in ("core", "providers", "tui", "screens"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            lines = path.read_text(encoding="utf-8").splitlines()
            for node in ast.walk(ast.parse("\n".join(lines))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                for inner in ast.walk(node):
                    if not isinstance(inner, ast.Import | ast.ImportFrom):
                        continue
                    names = [inner.module or ""] if isinstance(inner, ast.ImportFrom) else [a.name for a in inner.names]
                    first_party = any(n.split(".")[0] == "crewpoint" for n in names) or (
                        isinstance(inner, ast.ImportFrom) and inner.level > 0
                    )
                    if first_party and "# lazy:" not in lines[inner.lineno - 2]:
                        found.append(f"{path.relative_to(ROOT)}:{inner.lineno}")
    return found


def test_each_first_party_import_inside_a_function_says_why() -> None:
    assert _unexplained_local_imports() == []
