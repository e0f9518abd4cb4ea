"""Module-level callbacks that checkpoints can name by dotted path (used by the tests)."""

from __future__ import annotations

from typing import Any

CALLS: list[str] = []


def remember_output(output: Any) -> None:
    CALLS.append(output.raw)


def always_ok(output: Any) -> tuple[bool, Any]:
    return True, output
