"""A store of real priced runs for the cost views and estimates: a 3-task crew on gpt-4o (provider openai) against
the local OpenAI-compatible test server, each task's calls reporting a known usage (:data:`USAGE`), then a fork of
its last checkpoint that replaces task 2's output, so task 3 runs again on branch ``rewrite``.

:func:`build` runs it in this process (the program is this file: ``--app`` names it); :func:`fix` rewrites a store
with ids, times and call durations that are the same on every run (snapshots and screenshots).
"""

from __future__ import annotations

import json
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
"""The call durations :func:`fix` writes (real ones differ run to run)."""
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


BASE_TIME = 1_704_164_645.0  # 2024-01-02 03:04:05 UTC


def fixed_id(n: int) -> str:
    return f"{n:02x}" + "c057" * 7 + "aa"


def _fix_rows(rows: Any, labels: dict[str, str]) -> Any:
    if not isinstance(rows, list):
        return rows
    return [{**row, "duration_s": DURATIONS.get(labels.get(row.get("unit"), ""), 1.0)} for row in rows]


def fix(raw: str, out: str) -> list[str]:
    """Copy the JSON store ``raw`` to ``out`` with fixed ids, lineage, times and call durations; the new ids,
    oldest first."""
    from crewpoint.checkpoint import ops
    from crewpoint.providers import JsonProvider
    from crewpoint.providers.base import CheckpointRecord

    metas = sorted(ops.list_checkpoints(raw), key=lambda m: (m.created_at, m.sequence))
    ids = {meta.id: fixed_id(n) for n, meta in enumerate(metas, 1)}
    provider = JsonProvider(fsync=False)
    for n, meta in enumerate(metas, 1):
        record = provider.read(meta.location)
        stamp = BASE_TIME + 60 * n
        new_meta = meta.with_(
            id=ids[meta.id],
            parent_id=ids.get(meta.parent_id or ""),
            lineage="5eed" * 8,
            created_at=stamp,
            location="",
            size=0,
        )
        body = dict(record.body)
        lineage = dict(body["lineage"])
        lineage.update(id=new_meta.id, parent_id=new_meta.parent_id, lineage=new_meta.lineage)
        if lineage.get("resumed_from"):
            lineage["resumed_from"] = ids.get(lineage["resumed_from"], lineage["resumed_from"])
        body["lineage"] = lineage
        body["created_at"] = stamp
        body.pop("origin", None)
        for i, event in enumerate(body.get("events", [])):
            event["timestamp"] = stamp + i / 8
            event["sequence"] = i + 1
            usage = event.get("usage")
            if isinstance(usage, dict) and "duration_s" in usage:
                usage["duration_s"] = 1.0
        labels = {t["id"]: t["description"] for t in body["entity"].get("tasks", [])}
        body["usage"] = {key: _fix_rows(rows, labels) for key, rows in body.get("usage", {}).items()}
        body = json.loads(json.dumps(body).replace(raw, "/raw"))  # the temporary folder's name differs run to run
        provider.write(out, CheckpointRecord(meta=new_meta, body=body))
    return [ids[m.id] for m in metas]
