"""A project's YAML files are read within bounds: a "billion laughs" file (aliases of aliases), a file of many
aliases and one of megabytes are refused at once, in one line naming the file, by the project's own class and
through the command line; a file with a few anchors and aliases still reads as written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support.cli import CHECKPOINT
from support.processes import user_env, words
from test_project import AGENTS, TASKS, _first_id, _load, killed_project

from crewpoint.project import ProjectError
from crewpoint.project_yaml import ALIAS_LIMIT, VALUE_LIMIT

__all__ = ["killed_project"]  # the fixture: a @CrewBase project killed after its first checkpoint


def laughs(levels: int = 9) -> str:
    """The billion-laughs YAML: each level lists the one before nine times (9**9 values once expanded)."""
    lines = ['lol0: &lol0 "lol"']
    for n in range(1, levels + 1):
        lines.append(f"lol{n}: &lol{n} [{', '.join([f'*lol{n - 1}'] * 9)}]")
    return AGENTS + "\n".join(lines) + "\n"


def shown(path: Path) -> str:
    return os.path.relpath(path)


def test_a_billion_laughs_is_refused_in_one_line_naming_the_file(tmp_path: Path) -> None:
    module = _load(tmp_path, agents=laughs())
    with pytest.raises(ProjectError) as caught:
        module.MyCrew().researcher()
    text = str(caught.value)
    assert text == (
        f"{shown(tmp_path / 'config' / 'agents.yaml')}: refused: its aliases expand to more than "
        f"{VALUE_LIMIT:,} values; write the settings out"
    )


def test_more_aliases_than_the_limit_are_refused(tmp_path: Path) -> None:
    many = 'shared: &shared "x"\n' + "".join(f"a{n}: [*shared]\n" for n in range(ALIAS_LIMIT + 1))
    module = _load(tmp_path, tasks=TASKS + many)
    with pytest.raises(ProjectError) as caught:
        module.MyCrew().research_task()
    assert str(caught.value) == (
        f"{shown(tmp_path / 'config' / 'tasks.yaml')}: refused: more than {ALIAS_LIMIT} aliases (*name); "
        "write the settings out"
    )


def test_a_file_of_megabytes_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    module = _load(tmp_path, agents=AGENTS + "# " + "x" * (2 * 1024 * 1024) + "\n")
    with pytest.raises(ProjectError) as caught:
        module.MyCrew().researcher()
    assert str(caught.value) == (
        f"{shown(tmp_path / 'config' / 'agents.yaml')}: refused: more than 1.0 MiB; a project's YAML holds "
        "settings, not data"
    )


def test_a_few_anchors_and_aliases_read_as_written(tmp_path: Path) -> None:
    anchored = AGENTS.replace("  backstory: You read a lot.", "  backstory: &story You read a lot.")
    anchored = anchored.replace("  backstory: You write well.", "  backstory: *story")
    module = _load(tmp_path, agents=anchored)
    project = module.MyCrew()
    assert project.writer().backstory == "You read a lot."


def test_a_resume_through_the_command_line_says_it_in_one_line(killed_project: Path) -> None:
    agents = killed_project / "proj" / "config" / "agents.yaml"
    agents.write_text(laughs(), encoding="utf-8")
    command = [*CHECKPOINT, "resume", _first_id(killed_project), "--location", "store", "--app", "proj.crew:MyCrew"]
    proc = subprocess.run(command, cwd=killed_project, env=user_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    assert proc.stderr == (
        "crewpoint: --app 'proj.crew:MyCrew': making the crew of MyCrew failed: "
        f"{os.path.join('proj', 'config', 'agents.yaml')}: refused: its aliases expand to more than "
        f"{VALUE_LIMIT:,} values; write the settings out\n"
    )
    assert words(killed_project / "hooks.log") == ["before"]  # nothing ran
