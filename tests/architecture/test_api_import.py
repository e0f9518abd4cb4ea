"""The public API stays cheap to import: what only a run, a YAML config, a question to a person or a price needs
loads when that happens, not with ``from crewpoint import Agent, Crew, Task``."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

RUN_ONLY = [
    "crewpoint.feedback",
    "crewpoint.flow_review",
    "crewpoint.project",
    "crewpoint.cost",
    "crewpoint.estimate",
    "crewpoint.usage",
]


def _loaded_after(code: str) -> set[str]:
    script = f"import json, sys\n{code}\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('crewpoint'))))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_agent_crew_and_task_loads_no_run_only_module() -> None:
    loaded = _loaded_after("from crewpoint import Agent, Crew, Task")
    assert {"crewpoint.agent", "crewpoint.crew", "crewpoint.task"} <= loaded
    assert sorted(loaded.intersection(RUN_ONLY)) == []


@pytest.mark.parametrize("module", ["crewpoint.feedback", "crewpoint.project", "crewpoint.cost", "crewpoint.estimate"])
def test_importing_flow_loads_no_run_only_module(module: str) -> None:
    assert module not in _loaded_after("from crewpoint import Flow")


def test_a_config_loads_the_project_rules_and_fills_the_agent_and_task() -> None:
    code = (
        "from crewpoint import Agent, Task\n"
        "a = Agent(config={'role': 'Writer', 'goal': 'write', 'backstory': 'b'}, goal='explicit')\n"
        "t = Task(config={'description': 'd', 'expected_output': 'e'}, agent=a)\n"
        "assert (a.role, a.goal, t.description) == ('Writer', 'explicit', 'd'), (a.role, a.goal, t.description)"
    )
    assert "crewpoint.project" in _loaded_after(code)


def test_a_crew_run_loads_what_it_needs_and_finishes() -> None:
    code = (
        "from crewpoint import Agent, Crew, Task\n"
        "a = Agent(role='r', goal='g', backstory='b', llm='offline')\n"
        "c = Crew(agents=[a], tasks=[Task(description='d', expected_output='e', agent=a)], checkpoint=False)\n"
        "out = c.kickoff()\n"
        "assert out.raw and c.usage_metrics is not None and c.usage_metrics.total_tokens > 0, out"
    )
    assert {"crewpoint.feedback", "crewpoint.usage"} <= _loaded_after(code)
