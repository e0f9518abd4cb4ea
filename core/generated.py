"""Files crewpoint writes from its own source (the event index, the checkpoint body's types): written by a command,
or only checked with ``--check``; a test fails until each matches its source."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path


def write_or_check(path: Path, text: str, command: str, argv: Sequence[str]) -> int:
    """Write ``text`` to ``path`` unless it holds it already; with ``--check`` in ``argv`` only say that it does not
    (exit 1, naming ``command``, which writes it)."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return 0
    if "--check" in argv:
        print(f"{path} is out of date: run {command}", file=sys.stderr)
        return 1
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0
