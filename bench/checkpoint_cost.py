"""What a checkpoint after every task costs a 30-task crew, measured the same way for each installed version.

Each version's Python runs :data:`CREW` as a whole process, with checkpoints (a JSON store in a fresh folder, each
write durable) and without; no model is configured, so the crew runs on the offline model, the run itself takes
next to nothing and the difference is what checkpointing adds (the store's modules it imports included). The
processes of a round run in turn, their order turned round every round; a version's cost per task is the median
over the rounds of (with - without) / tasks, so that a load that comes and goes falls on both runs of a pair alike.
The process's CPU seconds are taken the same way (a loaded machine stretches them less than wall time), and the
process prints its kickoff's own time (kickoff to return, writes durable), the figure the store bench gives.
"""

from __future__ import annotations

import resource
import shutil
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

TASKS = 30

CREW = """
import logging, sys, time
logging.disable(logging.WARNING)
from crewpoint import Agent, Crew, Task, CheckpointConfig
from crewpoint.providers import JsonProvider

agent = Agent(role="Writer", goal="Write", backstory="Experienced")
tasks = [Task(description=f"Step {i} on {{topic}}", expected_output="One line", agent=agent) for i in range(TASKS)]
store = sys.argv[1]
config = CheckpointConfig(location=store, provider=JsonProvider()) if store else False
crew = Crew(agents=[agent], tasks=tasks, checkpoint=config)
start = time.perf_counter()
crew.kickoff(inputs={"topic": "tides"})  # returns after every checkpoint is written and fsync'd
print(time.perf_counter() - start)
""".replace("TASKS", str(TASKS))


@dataclass(frozen=True)
class Cost:
    """Seconds a checkpoint adds per task: to the whole process (wall, CPU), and to the kickoff alone (wall)."""

    whole: float
    cpu: float
    kickoff: float


def _run(python: str, store: str, env: dict[str, str]) -> tuple[float, float, float]:
    """Wall and CPU seconds of one whole process and its kickoff's own seconds; ``store`` empty: no checkpoints."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([python, "-c", CREW, store], capture_output=True, text=True, check=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, float(done.stdout.strip().splitlines()[-1])


def per_task(pythons: dict[str, str], workdir: Path, env: dict[str, str], runs: int) -> dict[str, Cost]:
    """Each named Python's :class:`Cost` over ``runs`` rounds, after a first round that writes the bytecode."""
    stores = workdir / "crew-stores"
    stores.mkdir(parents=True, exist_ok=True)
    jobs = [(name, checkpoints) for name in pythons for checkpoints in (False, True)]
    got: dict[tuple[str, bool], list[tuple[float, float, float]]] = {job: [] for job in jobs}
    for round_ in range(runs + 1):
        for name, checkpoints in jobs if round_ % 2 == 0 else jobs[::-1]:
            store = stores / f"{name}-{round_}"
            timing = _run(pythons[name], str(store) if checkpoints else "", env)
            shutil.rmtree(store, ignore_errors=True)
            if round_:
                got[name, checkpoints].append(timing)
    costs = {}
    for name in pythons:
        pairs = list(zip(got[name, False], got[name, True], strict=True))
        costs[name] = Cost(*(statistics.median(w[i] - wo[i] for wo, w in pairs) / TASKS for i in range(3)))
    return costs
