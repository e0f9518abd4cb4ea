"""The app marks what the program changed since a checkpoint, as the command line's dry run plans it: the Tasks tab
marks each task (changed, dropped; the program's new tasks on a line), and the Resume, Fork and Answer dialogs list
the verdicts, the Fork dialog's "Will run" from the plan.

Real parts: the user's program run to its end in its own process, then edited on disk; the app reads the plan from
a child ``crewpoint checkpoint … --dry-run --json``, so the program is never imported in the app's process.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from support.reading import choose, text_of
from support.review import wait_in
from support.waiting import settle, wait_until
from textual.pilot import Pilot
from textual.widgets import Input, Static

from crewpoint.checkpoint import ops
from crewpoint.screens.answer_dialog import AnswerScreen
from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.screens.resume_confirm import ResumeScreen
from crewpoint.tui import launcher
from crewpoint.tui.app import make_app
from crewpoint.tui.widgets.task_card import TaskCard
from crewpoint.tui.widgets.tasks_view import TasksView

SIZE = (140, 45)

PROGRAM = textwrap.dedent(
    """
    from crewpoint import Agent, CheckpointConfig, Crew, Task
    from crewpoint.llm import OfflineLLM

    writer = Agent(role="Writer", goal="write", backstory="", llm=OfflineLLM())
    research = Task(name="research", description="Research the topic.", expected_output="facts", agent=writer)
    outline = Task(name="outline", description="Outline the post.", expected_output="an outline", agent=writer)
    write = Task(name="write", description="Write the post.", expected_output="a post", agent=writer)
    crew = Crew(agents=[writer], tasks=[research, outline, write], checkpoint=CheckpointConfig(location="store"))

    if __name__ == "__main__":
        crew.kickoff()
    """
)
EDITS = [
    ("Research the topic.", "Research the topic in depth."),  # research: changed
    ("tasks=[research, outline, write]", "tasks=[research, outline, scope]"),  # write: dropped; scope: new
    (
        "crew = Crew(",
        'scope = Task(name="scope", description="Scope it.", expected_output="a scope", agent=writer)\ncrew = Crew(',
    ),
]


def _project(tmp_path: Path, bound: bool = True) -> tuple[Path, str]:
    """The program run to its end in its own process, then edited; the checkpoint after its first task."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM, encoding="utf-8")
    subprocess.run([sys.executable, "prog.py"], cwd=project, check=True, capture_output=True, timeout=120)
    source = PROGRAM
    for old, new in EDITS:
        assert old in source, old
        source = source.replace(old, new)
    (project / "prog.py").write_text(source, encoding="utf-8")
    if bound:
        (project / "pyproject.toml").write_text('[tool.crewpoint]\napp = "prog.py:crew"\n', encoding="utf-8")
    first = next(m for m in ops.list_checkpoints(str(project / "store")) if m.tasks_done == 1)
    return project, first.id


def _cards(pilot: Pilot[Any]) -> dict[str, TaskCard]:
    return {card.task_info.name: card for card in pilot.app.screen.query(TaskCard)}


async def test_the_tasks_tab_marks_what_the_bound_program_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, checkpoint = _project(tmp_path)
    monkeypatch.chdir(project)
    async with make_app(str(project / "store"), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, checkpoint)
        await pilot.press("2")  # the Tasks tab
        await wait_until(pilot, lambda: bool(pilot.app.screen.query(TaskCard)))
        view = pilot.app.screen.query_one(TasksView)
        await wait_until(pilot, lambda: view.plan is not None or view.plan_error is not None, timeout=120)
        assert view.plan_error is None
        cards = _cards(pilot)
        marks = {name: card.verdict.verdict if card.verdict else None for name, card in cards.items()}
        assert marks == {"research": "changed", "outline": "kept", "write": "dropped"}
        assert cards["research"].verdict is not None and "description changed" in cards["research"].verdict.reasons
        assert cards["research"].has_class("-program-changed") and cards["write"].has_class("-program-changed")
        assert not cards["outline"].has_class("-program-changed")
        assert "changed in the program: description changed" in text_of(cards["research"].query_one(".task-status"))
        assert "scope" in text_of(view.query_one("#tasks-verdicts", Static))  # new: it has no card of its own


async def test_the_fork_dialog_runs_what_the_plan_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project, checkpoint = _project(tmp_path)
    monkeypatch.chdir(project)
    async with make_app(str(project / "store"), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, checkpoint)
        await pilot.press("f")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ForkScreen))
        dialog = pilot.app.screen
        assert isinstance(dialog, ForkScreen)
        await wait_until(pilot, lambda: dialog.program_plan is not None or dialog.plan_error is not None, timeout=120)
        assert dialog.plan_error is None and dialog.program_plan is not None
        assert dialog.will_run() == ["research", "outline", "scope"]
        assert [(t.name, t.verdict) for t in dialog.program_plan.tasks if t.verdict != "kept"] == [
            ("research", "changed"),
            ("scope", "new"),
            ("write", "dropped"),
        ]
        assert text_of(dialog.query_one("#fork-rerun", Static)) == "Will run: research, outline, scope"
        await pilot.press("n")


async def test_without_a_bound_program_no_child_starts_until_one_is_typed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, checkpoint = _project(tmp_path, bound=False)
    monkeypatch.chdir(project)
    asked: list[list[str]] = []
    plan_command = launcher.plan_command

    def recorded(*args: Any, **kwargs: Any) -> list[str]:
        asked.append(plan_command(*args, **kwargs))
        return asked[-1]

    monkeypatch.setattr(launcher, "plan_command", recorded)
    async with make_app(str(project / "store"), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, checkpoint)
        await pilot.press("2")  # the Tasks tab
        await wait_until(pilot, lambda: bool(pilot.app.screen.query(TaskCard)))
        view = pilot.app.screen.query_one(TasksView)
        await settle(pilot)
        assert view.plan is None and view.plan_error is None and asked == []
        assert all(card.verdict is None for card in _cards(pilot).values())
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        dialog = pilot.app.screen
        assert isinstance(dialog, ResumeScreen)
        await settle(pilot)
        assert asked == [] and dialog.program_plan is None
        field = dialog.query_one("#resume-app").query_one(Input)
        assert field.value == "prog.py:crew"  # suggested, as recorded in the checkpoint: not run before it is chosen
        field.value = ""
        field.value = "prog.py:crew"  # the user names the program
        await wait_until(pilot, lambda: dialog.program_plan is not None or dialog.plan_error is not None, timeout=120)
        assert dialog.plan_error is None and dialog.program_plan is not None
        assert [a[len(launcher.CHILD)] for a in asked] == ["resume"]
        shown = text_of(dialog.query_one("#resume-plan", Static))
        assert "changed  research: description changed" in shown and "dropped  write" in shown
        assert "Will run: research, outline, scope; estimate ~$0.0000, plus 1 with no history" in shown
        field.value = ""  # no program now: the plan of the one named before is gone
        await wait_until(pilot, lambda: dialog.program_plan is None)
        assert not dialog.query_one("#resume-plan", Static).display and len(asked) == 1
        await pilot.press("n")


async def test_a_program_that_fails_is_said_in_one_line_and_nothing_is_marked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project, checkpoint = _project(tmp_path)
    (project / "prog.py").write_text("raise RuntimeError('the program is broken')\n", encoding="utf-8")
    monkeypatch.chdir(project)
    async with make_app(str(project / "store"), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, checkpoint)
        await pilot.press("2")  # the Tasks tab
        await wait_until(pilot, lambda: bool(pilot.app.screen.query(TaskCard)))
        view = pilot.app.screen.query_one(TasksView)
        await wait_until(pilot, lambda: view.plan is not None or view.plan_error is not None, timeout=120)
        assert view.plan is None and view.plan_error is not None
        assert "\n" not in view.plan_error and view.plan_error.startswith(f"no plan from {project / 'prog.py'}:crew: ")
        assert view.plan_error.endswith("RuntimeError: the program is broken")  # the child's own line, said once
        assert all(card.verdict is None for card in _cards(pilot).values())
        assert text_of(view.query_one("#tasks-verdicts", Static)) == f"✗ {view.plan_error}"


async def test_the_answer_dialog_lists_what_the_bound_flow_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    row = wait_in(project, "store")  # the review flow, waiting for a person
    source = (project / "review.py").read_text(encoding="utf-8")
    assert 'return "published"' in source
    (project / "review.py").write_text(source.replace('return "published"', 'return "published today"'))
    (project / "pyproject.toml").write_text('[tool.crewpoint]\napp = "review.py:flow"\n', encoding="utf-8")
    monkeypatch.chdir(project)
    async with make_app(str(project / "store"), watch=False).run_test(size=SIZE) as pilot:
        await choose(pilot, row["id"])
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, AnswerScreen))
        dialog = pilot.app.screen
        assert isinstance(dialog, AnswerScreen)
        await wait_until(pilot, lambda: dialog.program_plan is not None or dialog.plan_error is not None, timeout=120)
        assert dialog.plan_error is None and dialog.program_plan is not None
        changed = [(t.name, t.verdict) for t in dialog.program_plan.tasks if t.verdict != "kept"]
        assert changed == [("publish", "changed")]
        shown = text_of(dialog.query_one("#answer-plan", Static))
        assert "changed since the checkpoint" in shown and "changed  publish" in shown
        await pilot.press("escape")
