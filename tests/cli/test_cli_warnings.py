"""A warning the command line shows is one line, ``crewpoint: warning: ...``, never Python's ``file:line:
UserWarning:`` with a source line; the same warning from a plain script keeps Python's form. Real processes."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

from support.cli import CHECKPOINT

SAID = "Task callback cannot be saved in a checkpoint: pass a module-level function"

APP = textwrap.dedent(
    """
    from crewpoint import Agent, CheckpointConfig, Crew, Task

    writer = Agent(role="Writer", goal="write", backstory="writes")
    crew = Crew(
        agents=[writer],
        tasks=[
            Task(description="Outline", expected_output="an outline", agent=writer, callback=lambda output: None),
            Task(description="Draft", expected_output="a draft", agent=writer),
        ],
        checkpoint=CheckpointConfig(location="store"),
    )

    if __name__ == "__main__":
        crew.kickoff()
    """
)


def test_the_cli_shows_a_warning_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(APP)
    script = subprocess.run([sys.executable, "app.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert script.returncode == 0, script.stderr
    assert re.search(rf"app\.py:\d+: UserWarning: {SAID}", script.stderr)  # a plain script: Python's own form

    listed = subprocess.run(
        [*CHECKPOINT, "list", "store", "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    first = json.loads(listed.stdout)[-1]["id"]
    resumed = subprocess.run(
        [*CHECKPOINT, "resume", first, "--location", "store", "--app", "app.py:crew"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 0, resumed.stderr
    lines = resumed.stderr.splitlines()
    assert f"crewpoint: warning: {SAID}" in lines
    assert [line for line in lines if "callback" in line] == [f"crewpoint: warning: {SAID}"]
    assert "UserWarning" not in resumed.stderr and "app.py:" not in resumed.stderr
