"""A run that waits for feedback or stops at its budget did not fail, and no display says it did: the app's run
panel (its title, its mark, its colour), the command line's progress and its JSON records. Real runs in real
processes: a crew on a local model server stopped by its budget, a task review that waits again."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.cli import CHECKPOINT
from support.reading import text_of
from support.waiting import wait_until
from textual.app import App, ComposeResult
from textual.widgets import Label, RichLog

from crewpoint.checkpoint import ops
from crewpoint.tui.diagnostics import ExitCode, ending
from crewpoint.tui.run_controller import RunRequest
from crewpoint.tui.run_protocol import ProgressRecord
from crewpoint.tui.widgets.run_panel import RunPanel

BUDGETED = """
from crewpoint import LLM, Agent, Budget, CheckpointConfig, Crew, Task

llm = LLM(model="gpt-4o", base_url="{base_url}", provider="openai")
writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
tasks = [Task(name=f"t{{i}}", description=f"Step {{i}}.", expected_output="text", agent=writer) for i in (1, 2, 3)]
crew = Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location="store"), budget=Budget(usd=0.5))

if __name__ == "__main__":
    crew.kickoff()
"""

REVIEWED = """
from crewpoint import Agent, CheckpointConfig, Crew, Task

writer = Agent(role="Writer", goal="write well", llm="offline")
post = Task(description="Write about tides", expected_output="a post", agent=writer, name="post", human_input=True)
crew = Crew(agents=[writer], tasks=[post], checkpoint=CheckpointConfig(location="store"))

if __name__ == "__main__":
    crew.kickoff(inputs={})
"""


class PanelApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RunPanel(id="run-panel")


@pytest.fixture
def server() -> LLMServer:
    with LLMServer() as running:
        running.usage = {"prompt_tokens": 100_000, "completion_tokens": 50_000}  # $0.75 a call for gpt-4o
        yield running


def stopped_at_budget(tmp_path: Path, server: LLMServer) -> str:
    """The budgeted crew run until its budget stops it after task 1 (exit 76 is the CLI's; a script raises)."""
    (tmp_path / "crew.py").write_text(BUDGETED.format(base_url=server.base_url))
    done = subprocess.run([sys.executable, "crew.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert "BudgetExceeded" in done.stderr, done.stderr
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    assert newest.trigger == "budget_exceeded"
    return newest.id


def waiting_review(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The reviewed crew run until it waits for a person; its waiting checkpoint."""
    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    (tmp_path / "crew.py").write_text(REVIEWED)
    done = subprocess.run([sys.executable, "crew.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    assert newest.trigger == "human_feedback_requested"
    return newest.id


async def run_in_panel(checkpoint_id: str) -> tuple[RunPanel, str, str]:
    """Resume ``checkpoint_id`` in the run panel, as the app does; the panel, its title and its log once ended."""
    argv = [*CHECKPOINT, "resume", checkpoint_id, "--location", "store", "--app", "crew.py:crew", "--progress", "json"]
    app = PanelApp()
    async with app.run_test(size=(100, 30)) as pilot:
        panel = app.query_one(RunPanel)
        panel.start(RunRequest(argv, "resume abc on main", "main", 2, checkpoint_id))
        await wait_until(pilot, lambda: title_of(panel) != "", 60)  # started ("▶"), or already ended if quick
        await wait_until(pilot, lambda: not title_of(panel).startswith("▶") and not panel.running, 120)
        log = "\n".join(line.text for line in panel.query_one(RichLog).lines)
        return panel, title_of(panel), log


def title_of(panel: RunPanel) -> str:
    titles = list(panel.query("#run-title").results(Label))
    return text_of(titles[0]) if titles else ""


async def test_a_budget_stop_in_the_run_panel_reads_stopped_at_budget_not_failed(
    tmp_path: Path, server: LLMServer
) -> None:
    checkpoint_id = stopped_at_budget(tmp_path, server)
    panel, title, log = await run_in_panel(checkpoint_id)
    assert title == "■ resume abc on main: stopped at budget; resume (e) with a larger budget to go on"
    assert "failed" not in title and "exit" not in title
    assert panel.has_class("-paused") and not panel.has_class("-failed")
    assert "■ stopped at budget: spent $0.0000" in log  # its first call, bounded by task 1 ($0.75), was not made


async def test_a_run_that_waits_again_in_the_run_panel_reads_waiting_for_feedback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint_id = waiting_review(tmp_path, monkeypatch)
    panel, title, log = await run_in_panel(checkpoint_id)
    assert title == "◷ resume abc on main: waiting for feedback; answer it (a) to go on"
    assert panel.has_class("-paused") and not panel.has_class("-failed")
    assert "◷ waiting for feedback" in log


def test_the_command_line_says_a_budget_stop_as_such_in_its_progress_and_its_records(
    tmp_path: Path, server: LLMServer
) -> None:
    checkpoint_id = stopped_at_budget(tmp_path, server)
    command = [*CHECKPOINT, "resume", checkpoint_id, "--location", "store", "--app", "crew.py:crew"]
    shown = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert shown.returncode == ExitCode.BUDGET, shown.stderr
    assert "stopped at budget  spent $0.0000" in shown.stderr  # the call that would pass $0.50 was not made
    assert "fail" not in shown.stderr and "interrupted" not in shown.stderr
    recorded = subprocess.run([*command, "--progress", "json"], cwd=tmp_path, capture_output=True, text=True)
    assert recorded.returncode == ExitCode.BUDGET, recorded.stderr
    last = ProgressRecord.parse(recorded.stdout.strip().splitlines()[-1])
    assert last.event == "stopped_at_budget" and (last.text or "").startswith("spent $0.0000")


def test_each_exit_code_ends_a_run_in_its_own_words() -> None:
    assert ending(ExitCode.WAITING) == ("◷", "waiting for feedback", False)
    assert ending(ExitCode.BUDGET) == ("■", "stopped at budget", False)
    assert ending(ExitCode.OK) == ("✓", "finished", False)
    assert ending(ExitCode.FAILED) == ("✗", "failed (exit 1)", True)
