"""``crewpoint new NAME``: the project it writes runs with its README's command, waits at its feedback step, and
resumes with the README's other command; bad names and folders that are not empty are refused in one line."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from support.cli import CREWPOINT

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.program import project_app


def _new(name: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CREWPOINT, "new", name], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=120, check=False
    )


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CREWPOINT_FEEDBACK", "CREWPOINT_LLM")}
    return {**env, "NO_COLOR": "1", **extra}


def _readme_commands(project: Path) -> list[list[str]]:
    """The commands in the README's ``bash`` blocks, as argument lists run by this interpreter and crewpoint."""
    readme = (project / "README.md").read_text(encoding="utf-8")
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S):
        for line in block.strip().splitlines():
            words = shlex.split(line)
            words[0] = {"python": sys.executable, "crewpoint": CREWPOINT}[words[0]]
            commands.append(words)
    return commands


def _run(words: list[str], project: Path, mode: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        words, cwd=project, env=_env(CREWPOINT_FEEDBACK=mode), capture_output=True, text=True, timeout=120, check=False
    )


def test_new_writes_a_project_whose_pyproject_names_its_crew(tmp_path: Path) -> None:
    made = _new("my-notes", tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "my-notes"
    files = sorted(str(p.relative_to(project)) for p in project.rglob("*") if p.is_file())
    assert files == [
        ".gitignore",
        "README.md",
        "my_notes/__init__.py",
        "my_notes/config/agents.yaml",
        "my_notes/config/tasks.yaml",
        "my_notes/crew.py",
        "my_notes/main.py",
        "pyproject.toml",
    ]
    settings = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    assert settings["tool"]["crewpoint"]["app"] == "my_notes.crew:MyNotesCrew"
    assert project_app(project) == "my_notes.crew:MyNotesCrew"
    assert "python -m my_notes.main" in made.stdout


def test_the_readme_run_waits_at_the_feedback_step_and_its_resume_finishes(tmp_path: Path) -> None:
    assert _new("notes", tmp_path).returncode == 0
    project = tmp_path / "notes"
    run, resume = _readme_commands(project)
    assert resume[:3] == [CREWPOINT, "checkpoint", "resume"]
    waited = _run(run, project, "wait")
    assert waited.returncode == 75, waited.stderr
    assert "crewpoint checkpoint answer" in waited.stdout
    store = str(project / ".checkpoints")
    latest = ops.list_checkpoints(store)[0]
    assert latest.trigger == "human_feedback_requested" and latest.tasks_done == 1
    body = ops.load(latest.id, store).body
    assert body["inputs"] == {"topic": "tide pools"}
    assert body["origin"]["module"] == "notes.crew" and body["origin"]["attr"] == "NotesCrew"
    resumed = _run([*resume[:-1], latest.id], project, "accept")  # the README's ID is the waiting checkpoint's
    assert resumed.returncode == 0, resumed.stderr
    assert "not run:" not in resumed.stderr  # [tool.crewpoint] app: the project's own crew ran, hooks and all
    finished = ops.list_checkpoints(store)[0]
    assert finished.tasks_done == 2 and finished.parent_id == latest.id


def test_the_readme_run_finishes_when_the_draft_is_accepted(tmp_path: Path) -> None:
    assert _new("notes", tmp_path).returncode == 0
    project = tmp_path / "notes"
    run, _ = _readme_commands(project)
    done = _run(run, project, "accept")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip()
    assert ops.list_checkpoints(str(project / ".checkpoints"))[0].tasks_done == 2


def test_an_empty_folder_may_take_the_project(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    assert _new("notes", tmp_path).returncode == 0
    assert (tmp_path / "notes" / "notes" / "crew.py").is_file()


def test_a_folder_that_is_not_empty_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "mine.txt").write_text("keep", encoding="utf-8")
    refused = _new("notes", tmp_path)
    assert refused.returncode == 2
    assert (
        refused.stderr
        == "crewpoint: notes: already exists and is not an empty folder: choose another name or remove it\n"
    )
    assert [p.name for p in (tmp_path / "notes").iterdir()] == ["mine.txt"]


@pytest.mark.parametrize("name", ["1notes", "my/notes", "notes!", "no notes", "json", "class", "crewpoint"])
def test_a_name_that_cannot_name_a_package_is_refused_in_one_line(tmp_path: Path, name: str) -> None:
    work = tmp_path / "work"
    work.mkdir()
    refused = _new(name, work)
    assert refused.returncode == 2, refused.stdout
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("crewpoint: ")
    assert list(work.iterdir()) == []


def test_the_readme_projects_example_runs_as_written(tmp_path: Path) -> None:
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Projects\n", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    lines = block.strip().splitlines()
    assert lines[:2] == ["crewpoint new notes", "cd notes"]
    assert _new("notes", tmp_path).returncode == 0
    project = tmp_path / "notes"
    run = [sys.executable if w == "python" else w for w in shlex.split(lines[2])]
    waited = _run(run, project, "")  # no terminal here: the run waits for the review
    assert waited.returncode == 75, waited.stderr
    waiting = ops.list_checkpoints(str(project / ".checkpoints"))[0]
    assert waiting.trigger == "human_feedback_requested"
    answer = shlex.split(lines[3].replace("<id>", waiting.id))
    answered = _run([CREWPOINT, *answer[1:]], project, "")
    assert answered.returncode == 0, answered.stderr
    metas = ops.list_checkpoints(str(project / ".checkpoints"))
    assert metas[0].tasks_done == 2
    assert [m.trigger for m in metas].count("task_completed") == 2  # the research ran once


def test_an_answer_whose_run_waits_again_says_waiting_not_done(tmp_path: Path) -> None:
    assert _new("drafts", tmp_path).returncode == 0
    project = tmp_path / "drafts"
    run, _ = _readme_commands(project)
    assert _run(run, project, "wait").returncode == 75
    store = str(project / ".checkpoints")
    waiting = ops.list_checkpoints(store)[0].id
    answered = _run([CREWPOINT, "checkpoint", "answer", waiting, "--feedback", "shorter"], project, "wait")
    assert answered.returncode == 75, answered.stderr  # the agent revised the draft; the person reviews it again
    again = ops.list_checkpoints(store)[0]
    assert again.trigger == "human_feedback_requested" and again.id != waiting
    last = answered.stdout.strip().splitlines()[-1].split()
    assert last[0] == "waiting" and again.id.startswith(last[-3]), answered.stdout
    assert last[-2:] == ["--app", "drafts.crew:DraftsCrew"]  # the project's program, as its pyproject names it
    assert not any(line.startswith("done") for line in answered.stdout.splitlines())
