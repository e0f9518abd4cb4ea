"""CrewAI's settings crewpoint does not use are said, never dropped in silence, and CrewAI's documented project runs
as it is written once renamed: ``Process`` and ``BaseAgent`` are where its template imports them, and a task's
``output_file`` is written (inside the project folder, never through a checkpoint)."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from support.processes import user_env

from crewpoint import Agent, Crew, Process, Task
from crewpoint.process import ProcessNotSupported

# CrewAI's `crewai create crew` template (crewai 1.15.30), its crew module and YAML files as written there.
TEMPLATE_CREW = """\
from crewai import Agent, Crew, Process, Task
from crewai.project import CrewBase, agent, crew, task
from crewai.agents.agent_builder.base_agent import BaseAgent


@CrewBase
class LatestAiDevelopment():
    \"\"\"LatestAiDevelopment crew\"\"\"

    agents: list[BaseAgent]
    tasks: list[Task]

    @agent
    def researcher(self) -> Agent:
        return Agent(
            config=self.agents_config['researcher'], # type: ignore[index]
            verbose=True
        )

    @agent
    def reporting_analyst(self) -> Agent:
        return Agent(
            config=self.agents_config['reporting_analyst'], # type: ignore[index]
            verbose=True
        )

    @task
    def research_task(self) -> Task:
        return Task(
            config=self.tasks_config['research_task'], # type: ignore[index]
        )

    @task
    def reporting_task(self) -> Task:
        return Task(
            config=self.tasks_config['reporting_task'], # type: ignore[index]
            output_file='report.md'
        )

    @crew
    def crew(self) -> Crew:
        \"\"\"Creates the LatestAiDevelopment crew\"\"\"
        return Crew(
            agents=self.agents,
            tasks=self.tasks,
            process=Process.sequential,
            verbose=True,
        )
"""

TEMPLATE_AGENTS = """\
researcher:
  role: >
    {topic} Senior Data Researcher
  goal: >
    Uncover cutting-edge developments in {topic}
  backstory: >
    You're a seasoned researcher with a knack for uncovering the latest
    developments in {topic}.

reporting_analyst:
  role: >
    {topic} Reporting Analyst
  goal: >
    Create detailed reports based on {topic} data analysis and research findings
  backstory: >
    You're a meticulous analyst with a keen eye for detail.
"""

TEMPLATE_TASKS = """\
research_task:
  description: >
    Conduct a thorough research about {topic}
    Make sure you find any interesting and relevant information given
    the current year is {current_year}.
  expected_output: >
    A list with 10 bullet points of the most relevant information about {topic}
  agent: researcher

reporting_task:
  description: >
    Review the context you got and expand each topic into a full section for a report.
  expected_output: >
    A fully fledged report with the main topics, each with a full section of information.
  agent: reporting_analyst
"""

TEMPLATE_MAIN = """\
import sys

from latest_ai_development.crew import LatestAiDevelopment

result = LatestAiDevelopment().crew().kickoff(inputs={"topic": "AI LLMs", "current_year": "2026"})
sys.stdout.write(result.raw)
"""


def renamed(source: str) -> str:
    """The rename rule of the design: the package ``crewai`` is ``crewpoint``."""
    return source.replace("crewai", "crewpoint")


def test_the_documented_crewai_project_runs_as_written_once_renamed_and_writes_its_report(tmp_path: Path) -> None:
    package = tmp_path / "latest_ai_development"
    (package / "config").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "crew.py").write_text(renamed(TEMPLATE_CREW), encoding="utf-8")
    (package / "config" / "agents.yaml").write_text(TEMPLATE_AGENTS, encoding="utf-8")
    (package / "config" / "tasks.yaml").write_text(TEMPLATE_TASKS, encoding="utf-8")
    (tmp_path / "main.py").write_text(TEMPLATE_MAIN, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error::UserWarning", "main.py"],
        cwd=tmp_path,
        env=user_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr  # no setting it uses is unknown: not one warning
    report = tmp_path / "report.md"
    assert report.read_text(encoding="utf-8") == done.stdout != ""  # the last task's output, in the project folder


def test_unused_task_and_crew_settings_are_each_said_in_one_warning() -> None:
    writer = Agent(role="Writer", goal="g", llm="offline")
    with pytest.warns(UserWarning) as said:
        post = Task(description="d", expected_output="e", agent=writer, name="post", async_execution=True, markdown=1)
        Crew(agents=[writer], tasks=[post], planning=True, max_rpm=10, manager_llm="gpt-4o")
    lines = [str(w.message) for w in said]
    assert lines == [
        "Task 'post' ignores the setting(s) async_execution, markdown: crewpoint does not use them and checkpoints "
        "do not save them",
        "Crew 'crew' ignores the setting(s) manager_llm, max_rpm, planning: crewpoint does not use them and "
        "checkpoints do not save them",
    ]


def test_a_hierarchical_process_is_refused_in_one_line_and_sequential_is_the_string() -> None:
    writer = Agent(role="Writer", goal="g", llm="offline")
    post = Task(description="d", expected_output="e", agent=writer)
    with pytest.raises(ProcessNotSupported) as caught:
        Crew(agents=[writer], tasks=[post], process=Process.hierarchical)
    assert "\n" not in str(caught.value) and "use Process.sequential" in str(caught.value)
    assert Process.sequential == "sequential"
    assert Crew(agents=[writer], tasks=[post], process=Process.sequential).process == "sequential"


def test_an_output_file_outside_the_project_folder_is_not_written(tmp_path: Path) -> None:
    writer = Agent(role="Writer", goal="g", llm="offline")
    outside = tmp_path.parent / f"{tmp_path.name}-outside.md"
    with pytest.warns(UserWarning, match="outside the project folder"):
        post = Task(description="d", expected_output="e", agent=writer, output_file=str(outside))
    with pytest.warns(UserWarning, match="outside the project folder"):
        up = Task(description="d", expected_output="e", agent=writer, output_file="../up.md")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Crew(agents=[writer], tasks=[post, up]).kickoff()
    assert not outside.exists() and not (tmp_path.parent / "up.md").exists()
    assert post.output_file is None and post.output is not None
