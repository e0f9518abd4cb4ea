"""Shared test set-up: every test runs in its own empty folder with an isolated home."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Stop the PostgreSQL server if a test started one (its watchdog stops it too if the run dies)."""
    from pg_server import stop_session_server

    stop_session_server()


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.delenv("CREWPOINT_LLM", raising=False)
    monkeypatch.delenv("CREWPOINT_DESERIALIZE_CALLBACKS", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("CREWPOINT_CHECKPOINT_LOCATION", raising=False)
    monkeypatch.chdir(tmp_path)
    from crewpoint.events import event_bus

    with event_bus.scoped_handlers():
        yield


@pytest.fixture
def llm_calls() -> Iterator[list[str]]:
    """Records the task id of every LLM call started while the test runs."""
    from crewpoint.events import LLMCallStartedEvent, event_bus

    calls: list[str] = []

    def on_call(source: object, event: LLMCallStartedEvent) -> None:
        calls.append(event.task_id or "")

    event_bus.register(LLMCallStartedEvent, on_call)
    yield calls
    event_bus.off(on_call)


@pytest.fixture
def pg_location(tmp_path: Path) -> str:
    """A location for a new store on this run's PostgreSQL server (started on first use; a test that needs it
    fails, never skips, when it cannot start)."""
    from pg_server import store_url

    return store_url(tmp_path.name)
