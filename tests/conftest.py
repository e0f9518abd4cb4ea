"""Shared test set-up: every test runs in its own empty folder with an isolated home.

A test that needs a system part this machine lacks (Chromium, the PostgreSQL server binaries) is skipped with the
command that installs it, counted in pytest's closing line; under CI (``CI=true``) it fails instead, since CI
installs everything first (``scripts/system-packages``).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.systems import MissingPart, under_ci


def _missing_part(error: BaseException) -> MissingPart | None:
    """The :class:`MissingPart` behind ``error``, also when it comes inside an exception group."""
    if isinstance(error, MissingPart):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            found = _missing_part(inner)
            if found is not None:
                return found
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, None]:
    """A test stopped by a missing system part is reported as skipped, with the part and how to install it."""
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    missing = _missing_part(call.excinfo.value) if call.excinfo is not None else None
    if missing is None or under_ci() or report.outcome != "failed":
        return
    path, line, _name = item.reportinfo()
    report.outcome = "skipped"
    report.longrepr = (str(path), (line or 0) + 1, f"Skipped: {missing}")


def pytest_configure(config: pytest.Config) -> None:
    """Compile crewpoint's modules once, before any test starts a process. The tests start hundreds of ``crewpoint``
    and user programs; where ``PYTHONDONTWRITEBYTECODE`` is set, each would compile every module it imports again
    (about a second apiece on a busy machine). The bytecode goes where Python keeps it (``__pycache__`` beside the
    modules the import system finds, ignored by git) and is checked against each source as usual, so an edited
    module is compiled afresh. Done by the process that starts the run, not by each pytest-xdist worker."""
    if hasattr(config, "workerinput"):
        return
    import compileall

    import crewpoint

    compileall.compile_dir(Path(crewpoint.__file__).parent, quiet=1)


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
    """A location for a new store on this worker's PostgreSQL server (started on first use; skipped when the
    machine has no PostgreSQL binaries, except under CI; a server that cannot start is a failure)."""
    from pg_server import store_url

    return store_url(tmp_path.name)
