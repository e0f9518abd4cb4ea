"""A fork run on the fleet: a job carries the fork (its checkpoint, its new branch, its edits: data only), a worker
runs it on that branch, and only the tasks after the edit are asked of the model again. Real PostgreSQL, a real worker
process, a real model server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.fleet import kill_worker, model_calls, start_worker, submitted
from support.waiting import wait_for

from crewpoint.checkpoint.stores import list_checkpoints
from crewpoint.tui.cli.fleet_engine import FleetError, Fork, Job, status, submit


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def test_a_fork_job_runs_on_its_branch_with_its_edit_and_asks_only_the_tasks_after_it(
    pg_location: str, tmp_path: Path, server: LLMServer
) -> None:
    from crewpoint.checkpoint import ops

    env = submitted(pg_location, tmp_path, server)
    worker = start_worker(pg_location, tmp_path, env)
    try:
        wait_for(lambda: [j.status for j in status(pg_location)[1]] == ["succeeded"], "the first run finished")
        second = next(m for m in list_checkpoints(pg_location) if m.branch == "main" and m.tasks_done == 2)
        fork = Fork(second.id, "edited-outline", outputs={"2": "AN EDITED OUTLINE"})
        job_id = submit(pg_location, Job("crew_app.py:crew", {}, None, fork=fork))
        wait_for(
            lambda: next(j for j in status(pg_location)[1] if j.id == job_id).status == "succeeded",
            "the fork's job finished",
        )
    finally:
        kill_worker(worker)
    forked = [m for m in list_checkpoints(pg_location) if m.branch == "edited-outline"]
    newest = max(forked, key=lambda m: m.sequence)
    assert newest.tasks_done == 4 and newest.lineage == second.lineage
    tasks = ops.describe(ops.load(newest.id, pg_location)).tasks
    assert tasks[1].output == "AN EDITED OUTLINE"
    assert "AN EDITED OUTLINE" in (tasks[2].output or "")  # the next task read the edit
    asked = model_calls(server)
    assert asked == {"step 1 of t": 1, "step 2 of t": 1, "step 3 of t": 2, "step 4 of t": 2}, asked


@pytest.mark.parametrize(
    ("fork", "said"),
    [
        ({"source": "abc", "branch": "b", "code": "os.system"}, "is not a checkpoint, a branch and edits"),
        ({"source": "", "branch": "b"}, "does not name its checkpoint and branch"),
        ({"source": "abc", "branch": "b", "outputs": {"1": 7}}, "outputs are not texts by task"),
        ({"source": "abc", "branch": "b", "inputs": [1]}, "inputs are not named values"),
    ],
)
def test_a_fork_job_carrying_anything_but_data_is_refused(fork: dict[str, object], said: str) -> None:
    with pytest.raises(FleetError, match=said):
        Job.of({"program": "crew_app.py:crew", "inputs": {}, "fork": fork})
    with pytest.raises(FleetError, match="both resumes and forks"):
        Job.of({"program": "p", "inputs": {}, "resume": "abc", "fork": {"source": "abc", "branch": "b"}})
