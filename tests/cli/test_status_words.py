"""STATUS says what a run record says: every checkpoint of a finished run reads ``done`` in every store the run
wrote to, as soon as its process has exited, and a checkpoint with no run record is never guessed live. The
seed's own pattern: an event handler calling ``state.checkpoint("./my_checkpoints")`` beside the crew's
``CheckpointConfig(location="./store")``, run in its own process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from support.cli import CHECKPOINT
from support.processes import user_env

from crewpoint.providers import CheckpointMeta, CheckpointRecord, provider_for
from crewpoint.providers.runs import read_runs
from crewpoint.tui.store_index import StoreIndex

SEED = textwrap.dedent(
    """
    import sys
    from typing import Any

    from crewpoint import Agent, CheckpointConfig, Crew, Task
    from crewpoint.events import LLMCallCompletedEvent, event_bus

    STORE, HANDLERS = sys.argv[1], sys.argv[2]


    @event_bus.on(LLMCallCompletedEvent)
    def on_llm_done(source: Any, event: LLMCallCompletedEvent, state) -> None:
        path = state.checkpoint(HANDLERS)
        print(f"Saved checkpoint: {path}")


    researcher = Agent(role="Researcher", goal="Research", backstory="Expert")
    writer = Agent(role="Writer", goal="Write", backstory="Expert")
    crew = Crew(
        agents=[researcher, writer],
        tasks=[
            Task(description="Research AI trends", agent=researcher, expected_output="bullets"),
            Task(description="Write a summary", agent=writer, expected_output="paragraph"),
        ],
        checkpoint=CheckpointConfig(location=STORE),
    )
    crew.kickoff()
    """
)


def listed(store: str, cwd: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        [*CHECKPOINT, "list", store, "--json"], cwd=cwd, env=user_env(), capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


@pytest.mark.parametrize(
    ("store", "handlers"), [("./store", "./my_checkpoints"), ("./store.db", "./my_checkpoints.db")]
)
def test_a_finished_run_reads_done_in_every_store_it_wrote_to_once_it_exited(
    tmp_path: Path, store: str, handlers: str
) -> None:
    (tmp_path / "seed.py").write_text(SEED)
    run = subprocess.run(
        [sys.executable, "seed.py", store, handlers], cwd=tmp_path, env=user_env(), capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.count("Saved checkpoint: ") == 2
    for where in (store, handlers):
        rows = listed(where, tmp_path)
        assert len(rows) == 2
        assert [row["status"] for row in rows] == ["done", "done"], (where, rows)
        # the app's tree marks come from the same index: every branch of the run reads finished
        location = str(tmp_path / where)
        index = StoreIndex.build(provider_for(location).list(location), "", read_runs(location))
        assert {index.state_of(segment) for segment in index.segments.values()} == {"finished"}


def test_a_checkpoint_with_no_run_record_reads_no_status(tmp_path: Path) -> None:
    """How recent a checkpoint is says nothing of whether its run goes on, and a body saying the work is complete
    says nothing of how its run ended: with no record of the run, an unfinished checkpoint written a moment ago
    reads ``—`` (it once read ``live`` for the seconds after it was written), and so does one whose checkpoint
    says the work is complete (it once read ``done``)."""
    store = str(tmp_path / "store")
    provider = provider_for(store)
    now = time.time()
    for n, (done, total, lineage) in enumerate([(1, 3, "a" * 32), (3, 3, "b" * 32)]):
        meta = CheckpointMeta(str(n) * 32, None, "main", lineage, 1, now, "task_completed", "crew", "c", done, total)
        provider.write(store, CheckpointRecord(meta, {"n": n}))
    assert read_runs(store) == []
    rows = {row["id"]: row["status"] for row in listed(store, tmp_path)}
    assert rows == {"0" * 32: None, "1" * 32: None}
    shown = subprocess.run([*CHECKPOINT, "list", store], cwd=tmp_path, env=user_env(), capture_output=True, text=True)
    words = {line.split()[0]: line.split()[-1] for line in shown.stdout.splitlines()[1:]}
    assert words == {"0" * 12: "-", "1" * 12: "-"}
    index = StoreIndex.build(provider.list(store), "", [])
    assert index.live_branches() == set()
    assert {index.state_of(segment) for segment in index.segments.values()} == {None}, "the app's tree alike"
