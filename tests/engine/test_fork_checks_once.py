"""A fork reads its checkpoint once and checks its body once: plan, restore, fork check and describe share the
checked pair."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from click.testing import CliRunner
from support.stores import make_store

from crewpoint.checkpoint import ops, restore, schema
from crewpoint.providers import JsonProvider
from crewpoint.tui.cli import main


@pytest.fixture
def validations(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The source of every body passed through the schema's one door (``load_body``) from now on."""
    seen: list[str] = []
    door = schema.load_body

    def counted(raw: Any, source: str = "checkpoint") -> Any:
        seen.append(source)
        return door(raw, source)

    monkeypatch.setattr(schema, "load_body", counted)
    monkeypatch.setattr(restore, "load_body", counted)
    return seen


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str | None]:
    """The id of every checkpoint body read from the JSON store from now on."""
    seen: list[str | None] = []
    read: Callable[..., Any] = JsonProvider.read

    def counted(self: JsonProvider, location: str, checkpoint_id: str | None = None) -> Any:
        seen.append(checkpoint_id or location)
        return read(self, location, checkpoint_id)

    monkeypatch.setattr(JsonProvider, "read", counted)
    return seen


def _second_checkpoint() -> str:
    store = make_store()
    crew = sorted(ops.list_checkpoints(store), key=lambda m: m.sequence)
    return crew[1].id


def test_a_fork_checks_its_body_once(validations: list[str], reads: list[str | None]) -> None:
    source = _second_checkpoint()
    validations.clear()
    reads.clear()
    args = ["checkpoint", "fork", source[:12], "--set-output", "2=A shorter outline.", "--branch", "shorter"]
    result = CliRunner().invoke(main, [*args, "--progress", "json"])
    assert result.exit_code == 0, result.output
    assert [m.branch for m in ops.list_checkpoints(".checkpoints") if m.branch == "shorter"], "the fork ran"
    assert validations == [source]
    assert len(reads) == 1


def test_a_dry_run_fork_checks_its_body_once(validations: list[str]) -> None:
    source = _second_checkpoint()
    validations.clear()
    result = CliRunner().invoke(main, ["checkpoint", "fork", source[:12], "--set-output", "2=Shorter.", "--dry-run"])
    assert result.exit_code == 0, result.output
    assert "dry run: would fork" in result.stdout
    assert validations.count(source) == 1  # (the estimate reads what ran after it: the newest descendant)
