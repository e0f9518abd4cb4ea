"""A request for a person's answer is never pruned away: ``prune --keep``, ``prune --older-than`` and a program's
``max_checkpoints`` keep every checkpoint an unanswered request waits at (the dry run says so, as the prune acts),
so the answer command a waiting run printed still works. Real review flows in their own processes, real stores."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.review import REVIEW, listed, ran, run, run_until_waiting, write_review

MARK = "(a request waits here for an answer)"


def _write(project: Path, max_checkpoints: int | None = None) -> None:
    source = REVIEW
    if max_checkpoints is not None:
        source = source.replace(
            "CheckpointConfig(location=", f"CheckpointConfig(max_checkpoints={max_checkpoints}, location="
        )
        assert source != REVIEW
    write_review(project, source)


def _waiting(project: Path, store: str) -> list[str]:
    """Ids of the checkpoints that hold a request, as ``list --json`` shows them (newest first)."""
    return [row["id"] for row in listed(project, store) if row["request"] is not None]


def _answer(project: Path, store: str, checkpoint_id: str) -> None:
    done = run(
        "answer", checkpoint_id, "--location", store, "--outcome", "approved", "--app", "review.py:flow", cwd=project
    )
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("store", ["store", "store.db"])
def test_prune_keeps_what_unanswered_requests_wait_at_and_the_dry_run_says_so(tmp_path: Path, store: str) -> None:
    project = tmp_path / "project"
    _write(project)
    run_until_waiting(project, store)
    run_until_waiting(project, store)
    waiting = _waiting(project, store)
    assert len(waiting) == 2
    before = {row["id"] for row in listed(project, store)}

    dry = run("prune", store, "--keep", "1", "--dry-run", cwd=project)
    assert dry.returncode == 0, dry.stderr
    assert {row["id"] for row in listed(project, store)} == before  # a dry run deletes nothing
    kept = [line for line in dry.stdout.splitlines() if line.endswith(MARK)]
    assert [line.split()[1] for line in kept] == [waiting[1][:12]]  # the newest counts as the one kept
    assert "kept 1 waiting for an answer" in dry.stderr

    real = run("prune", store, "--keep", "1", cwd=project)
    assert real.returncode == 0, real.stderr
    assert real.stdout.replace("deleted", "would delete") == dry.stdout  # it acts exactly as its dry run said
    aged = run("prune", store, "--older-than", "0s", cwd=project)
    assert aged.returncode == 0, aged.stderr
    assert sorted(line.split()[1] for line in aged.stdout.splitlines() if line.endswith(MARK)) == sorted(
        w[:12] for w in waiting
    )
    assert _waiting(project, store) == waiting

    for checkpoint_id in waiting:  # each printed answer command still finds its checkpoint
        _answer(project, store, checkpoint_id)
    assert ran(project).count("published") == 2


def test_max_checkpoints_never_deletes_another_runs_request_nor_does_answering_one(tmp_path: Path) -> None:
    """Two runs of a program with ``max_checkpoints=2`` wait; the second run's pruning and the first answer's
    continuation both keep the other run's request, which is then answered as printed."""
    project = tmp_path / "project"
    _write(project, max_checkpoints=2)
    run_until_waiting(project, "store")
    first = _waiting(project, "store")
    run_until_waiting(project, "store")
    both = _waiting(project, "store")
    assert len(both) == 2 and first[0] in both
    second = next(w for w in both if w != first[0])

    _answer(project, "store", second)
    assert _waiting(project, "store") == first  # the answered run went on; the other still waits
    _answer(project, "store", first[0])
    assert ran(project).count("published") == 2
    assert _waiting(project, "store") == []
    # answered, the requests' checkpoints are ordinary ones again: the bound holds
    again = run("prune", "store", "--keep", "2", "--dry-run", cwd=project)
    assert MARK not in again.stdout


def test_a_crew_tasks_request_survives_the_next_runs_max_checkpoints(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Task(human_input=True)``: a second run of the crew with ``max_checkpoints=1`` keeps the first run's
    request, which is then answered and finishes."""
    from crewpoint import Agent, CheckpointConfig, Crew, Task
    from crewpoint.feedback import FeedbackPending

    monkeypatch.setenv("CREWPOINT_FEEDBACK", "wait")
    store = str(tmp_path / "store")

    def crew() -> Crew:
        writer = Agent(role="Writer", goal="write well", llm="offline")
        tasks = [
            Task(description="Outline a post", expected_output="an outline", agent=writer, name="outline"),
            Task(description="Write the post", expected_output="a post", agent=writer, name="post", human_input=True),
        ]
        return Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location=store, max_checkpoints=1))

    first, second = crew().kickoff(inputs={}), crew().kickoff(inputs={})
    assert isinstance(first, FeedbackPending) and isinstance(second, FeedbackPending)
    from crewpoint.checkpoint import ops

    kept = {m.id for m in ops.list_checkpoints(store)}
    assert {first.checkpoint_id, second.checkpoint_id} <= kept
    done = crew().kickoff(from_checkpoint=first.ref, feedback="")
    assert not isinstance(done, FeedbackPending) and done.raw
    assert second.checkpoint_id in {m.id for m in ops.list_checkpoints(store)}  # still there to be answered
