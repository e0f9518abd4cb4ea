"""What ``crewpoint checkpoint check`` costs on top of starting Python with crewpoint: a store of 100 stopped runs
checked against a program whose first task changed since, as a whole process a CI job runs, next to
``python -c "import crewpoint"`` measured in the same run (the two alternate, so the machine's drift lands on both).
The figure is the median of the pairs' differences (goal at most 1 s); a second row is the same over importing the
program alone (``python -c "import prog"``, which builds its crew's models): what checking the checkpoints costs.
The note gives each command's CPU time too (user and system), which a loaded machine stretches less than its wall
time."""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from run import Row, bench_env

GOAL_S = 1.0
PAIRS = 7
RUNS = 100

PROGRAM = """
import os
import sys

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.llm import BaseLLM


class Stops(BaseLLM):
    model: str = "local"

    def call(self, messages, **kwargs):
        if messages[-1]["content"].startswith("Current task: Outline"):
            raise RuntimeError("the model went away")
        return "Final Answer: facts"


def make():
    agent = Agent(role="Writer", goal="write", backstory="b", llm=Stops())
    return Crew(
        agents=[agent],
        tasks=[
            Task(name="research", description=os.environ.get("RESEARCH", "Research the topic."), agent=agent),
            Task(name="outline", description="Outline the post.", agent=agent),
        ],
        checkpoint=CheckpointConfig(location=".checkpoints"),
    )


crew = make()

if __name__ == "__main__":
    for _ in range(int(sys.argv[1])):
        try:
            make().kickoff()
        except RuntimeError:
            pass
"""


CPU: dict[str, list[float]] = {}
"""Each command's CPU time (user and system), by the command's last word, run after run."""


def _wall(args: list[str], cwd: str, env: dict[str, str]) -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    took = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - used.ru_utime + after.ru_stime - used.ru_stime
    CPU.setdefault(args[-1], []).append(cpu)
    return took


def bench_check() -> list[Row]:
    CPU.clear()
    with tempfile.TemporaryDirectory() as folder:
        Path(folder, "prog.py").write_text(PROGRAM, encoding="utf-8")
        env = bench_env()
        subprocess.run([sys.executable, "prog.py", str(RUNS)], cwd=folder, env=env, check=True, capture_output=True)
        changed = {**env, "RESEARCH": "Research the topic in depth."}
        check = [
            os.path.join(os.path.dirname(sys.executable), "crewpoint"),
            "checkpoint",
            "check",
            "--app",
            "prog.py:crew",
        ]
        floor = [sys.executable, "-c", "import crewpoint"]
        program = [sys.executable, "-c", "import prog"]
        _wall(check, folder, changed), _wall(floor, folder, env)  # warm up: bytecode written, files cached
        differences, over_program, ours, floors = [], [], [], []
        for i in range(PAIRS):
            if i % 2:
                base, took = _wall(floor, folder, env), _wall(check, folder, changed)
            else:
                took, base = _wall(check, folder, changed), _wall(floor, folder, env)
            differences.append(took - base)
            over_program.append(took - _wall(program, folder, env))
            ours.append(took)
            floors.append(base)
    cpu = {word: statistics.median(times) for word, times in CPU.items()}
    note = (
        f"check {statistics.median(ours):.2f} s, import crewpoint {statistics.median(floors):.2f} s;"
        f" CPU {cpu['prog.py:crew']:.2f} s and {cpu['import crewpoint']:.2f} s"
    )
    return [
        Row(
            f"checkpoint check, {RUNS} checkpoints, over import crewpoint",
            statistics.median(differences),
            "s",
            GOAL_S,
            note,
        ),
        Row(
            f"checkpoint check, {RUNS} checkpoints, over importing the program",
            statistics.median(over_program),
            "s",
            GOAL_S,
            f"what reading, checking and comparing the checkpoints costs; CPU over the program's"
            f" {cpu['prog.py:crew'] - cpu['import prog']:.2f} s",
        ),
    ]


def changes_benches() -> list[Callable[[], list[Row]]]:
    return [bench_check]
