"""A long production file (engine, stores, command line, app) says in ARCHITECTURE.md why it is still one job."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 500


def _long_files() -> set[str]:
    return {
        path.relative_to(ROOT).as_posix()
        for folder in ("core", "providers", "tui", "screens")
        for path in (ROOT / folder).rglob("*.py")
        if len(path.read_text(encoding="utf-8").splitlines()) > LIMIT
    }


def _explained() -> set[str]:
    text = (ROOT / "ARCHITECTURE.md").read_text(encoding="utf-8")
    section = text.split("## Long files", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    return {name for row in rows for name in re.findall(r"`([\w/]+\.py)`", row.split(" | ")[0])}


def test_every_long_file_has_a_line_saying_why() -> None:
    assert _long_files() - _explained() == set()


def test_the_long_files_table_names_only_files_that_are_long() -> None:
    assert _explained() - _long_files() == set()
