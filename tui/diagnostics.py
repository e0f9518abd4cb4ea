"""Exit codes, and the one-line messages that tell a user what a location holds when it holds no checkpoints.
Headless: the standard library only."""

from __future__ import annotations

import os
from collections import Counter
from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    FAILED = 1
    """The run or command failed."""
    BAD_INPUT = 2
    """A wrong path, an unknown id, a damaged or newer-version checkpoint, a refused edit."""
    WAITING = 75
    """The run waits for a person's feedback (EX_TEMPFAIL: come back later): its checkpoint holds the request,
    and ``crewpoint checkpoint answer REF`` (or ``kickoff(from_checkpoint=REF, feedback=...)``) goes on."""
    BUDGET = 76
    """The run stopped at its budget, before an LLM call: its ``budget_exceeded`` checkpoint holds it, and
    ``crewpoint checkpoint resume ID --budget USD`` (a larger budget) goes on from there without repeating paid
    work."""
    INTERRUPTED = 130


def ending(returncode: int) -> tuple[str, str, bool]:
    """How a run that exited with ``returncode`` ended, as a display says it: its mark, its words, and whether it
    failed. A run that waits for feedback or stopped at its budget did not fail: it goes on from its checkpoint."""
    if returncode == ExitCode.OK:
        return "✓", "finished", False
    if returncode == ExitCode.WAITING:
        return "◷", "waiting for feedback", False
    if returncode == ExitCode.BUDGET:
        return "■", "stopped at budget", False
    if returncode == ExitCode.INTERRUPTED:
        return "■", "cancelled", False
    return "✗", f"failed (exit {returncode})", True


HOW_TO_GO_ON = (
    "write checkpoints with Crew(..., checkpoint=True) or `crewpoint demo`, "
    "or point --location at a store (a checkpoint folder or a .db file)"
)
SCAN_LIMIT = 10_000
"""Files looked at when describing a folder."""


def what_is_there(location: str) -> str:
    """What ``location`` holds, said in one line, for when no checkpoint was found there."""
    if not os.path.exists(location):
        return f"{location}: no such file or folder"
    if not os.path.isdir(location):
        return f"{location} is a file but not a checkpoint store"
    kinds: Counter[str] = Counter()
    folders = 0
    seen = 0
    for root, dirs, files in os.walk(location):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        folders += len(dirs)
        for name in files:
            if name.startswith("."):
                continue
            kinds[os.path.splitext(name)[1].lower() or "(no extension)"] += 1
            seen += 1
        if seen >= SCAN_LIMIT or root.count(os.sep) - location.count(os.sep) >= 2:
            dirs[:] = []
    if not kinds:
        return f"{location} is an empty folder" if not folders else f"{location} holds only empty folders"
    parts = [f"{count} {ext} file{'s' if count != 1 else ''}" for ext, count in kinds.most_common(3)]
    rest = sum(kinds.values()) - sum(count for _, count in kinds.most_common(3))
    if rest:
        parts.append(f"{rest} other file{'s' if rest != 1 else ''}")
    return f"{location} holds {', '.join(parts)}, none of them crewpoint checkpoints"


def no_checkpoints(location: str) -> str:
    """The line for a location with no checkpoints: what is there, and how to go on."""
    return f"{what_is_there(location)}: {HOW_TO_GO_ON}"


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """``1 checkpoint``, ``2 checkpoints``."""
    return f"{count:,} {noun if count == 1 else nouns or noun + 's'}"
