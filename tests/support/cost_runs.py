"""A store of real priced runs for the cost views and estimates: a 3-task crew on gpt-4o (provider openai) against
the local OpenAI-compatible test server, each task's calls reporting a known usage (:data:`USAGE`), then a fork of
its last checkpoint that replaces task 2's output, so task 3 runs again on branch ``rewrite``.

:func:`build` runs it in this process (the program is this file: ``--app`` names it); :func:`fix` rewrites a store
with ids, times and call durations that are the same on every run (snapshots and screenshots).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

TASKS = ("Research owls.", "Outline the post.", "Write the post.")
USAGE = {
    "Research owls.": {"prompt_tokens": 1200, "completion_tokens": 300},
    "Outline the post.": {"prompt_tokens": 800, "completion_tokens": 200},
    "Write the post.": {"prompt_tokens": 2000, "completion_tokens": 900},
}
"""What the server reports for each task's call, by the task's description."""
DURATIONS = {"Research owls.": 2.5, "Outline the post.": 1.5, "Write the post.": 6.0}
"""The call durations :func:`fix` writes, by task description (real ones differ run to run)."""
BASE_URL_ENV = "CREWPOINT_TEST_COST_URL"
APP = f"{Path(__file__).resolve()}:make_crew"
"""The ``--app`` spec of the program the runs use."""


def task_of(body: Any) -> str:
    """The task a chat request is for (its first user message starts ``Current task: <description>``)."""
    users = [m.get("content", "") for m in (body or {}).get("messages", []) if m.get("role") == "user"]
    first = str(users[0]) if users else ""
    return next((text for text in TASKS if first.startswith(f"Current task: {text}")), "")


def usage_server() -> Any:
    """The test server, answering each task's call with its :data:`USAGE`."""
    from llm_server import LLMServer

    class ByTask(LLMServer):
        def usage_for(self, body: Any, text: str) -> dict[str, Any] | None:
            return dict(USAGE.get(task_of(body), {"prompt_tokens": 1, "completion_tokens": 1}))

    return ByTask()


def make_crew(location: str = "store") -> Any:
    """The crew: three tasks on gpt-4o at the server named by ``$CREWPOINT_TEST_COST_URL``."""
    from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task

    llm = LLM(model="gpt-4o", base_url=os.environ[BASE_URL_ENV], provider="openai")
    writer = Agent(role="Writer", goal="Write well", backstory="A writer", llm=llm)
    tasks = [
        Task(name=f"t{i + 1}", description=text, expected_output="text", agent=writer) for i, text in enumerate(TASKS)
    ]
    return Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location=location))


def build(location: str, base_url: str, *, fork: bool = True) -> list[Any]:
    """Run the crew into ``location`` (and, with ``fork``, fork its last checkpoint with task 2's output replaced
    onto branch ``rewrite``); the store's metadata, oldest first."""
    from crewpoint.checkpoint import ops

    os.environ[BASE_URL_ENV] = base_url
    make_crew(location).kickoff()
    if fork:
        last = max(ops.list_checkpoints(location), key=lambda m: m.sequence)
        prepared = ops.prepare_run(
            last.location or last.id,
            fork=True,
            branch="rewrite",
            outputs={1: "A shorter outline."},
            location=location,
            app=APP,
        )
        prepared.kickoff()
    return sorted(ops.list_checkpoints(location), key=lambda m: (m.created_at, m.sequence))


def fixed_id(n: int) -> str:
    return f"{n:02x}" + "c057" * 7 + "aa"


def fix(raw: str, out: str) -> list[str]:
    """Copy the JSON store ``raw`` to ``out`` with fixed ids, lineage, times and call durations
    (:func:`support.stores.fix_store`); the new ids, oldest first."""
    from support.stores import fix_store

    return fix_store(raw, out, fixed_id, DURATIONS)
