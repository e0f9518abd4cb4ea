"""Pruning by the rules of DESIGN §4: the newest N of each entity per branch, never a fork point, a fork's first
checkpoint, the checkpoint a run resumes from, a live run's checkpoints or a damaged record; only the running
program's configuration prunes; ``prune`` deletes only in the store it names, and its dry run answers as it does."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from support.cli import cli as run_cli

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.events import CheckpointCompletedEvent, CheckpointPrunedEvent, CheckpointStartedEvent, event_bus
from crewpoint.providers import CheckpointRecord, JsonProvider
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.json_provider import file_name
from crewpoint.providers.runs import RunInfo, this_host

README = Path(__file__).resolve().parents[2] / "README.md"


def cli(*args: str) -> Result:
    return run_cli(*args, catch_exceptions=False)


def crew(name: str = "research", location: str = "store", **config: Any) -> Crew:
    agent = Agent(role="Researcher", goal="Research {topic}")
    tasks = [
        Task(description=f"Step {n} on {{topic}}", expected_output="notes", agent=agent, name=f"step{n}")
        for n in range(1, 4)
    ]
    return Crew(name=name, agents=[agent], tasks=tasks, checkpoint=CheckpointConfig(location=location, **config))


def metas(location: str = "store", **match: Any) -> list[CheckpointMeta]:
    return [m for m in ops.list_checkpoints(location) if all(getattr(m, k) == v for k, v in match.items())]


def ids(location: str = "store", **match: Any) -> set[str]:
    return {m.id for m in metas(location, **match)}


def files(root: str | Path) -> dict[str, bytes]:
    """Every file under ``root`` with its bytes (run records aside: they change as runs beat)."""
    out: dict[str, bytes] = {}
    for path in sorted(Path(root).rglob("*")):
        if path.is_file() and ".runs" not in path.parts:
            out[str(path)] = path.read_bytes()
    return out


# -- max_checkpoints ------------------------------------------------------------------------------------------------


def test_max_checkpoints_bounds_repeated_runs_to_the_newest_n_of_the_crew_on_its_branch() -> None:
    """The README's ``max_checkpoints=5``: eight runs of a crew keep five checkpoints on main, not five per run."""
    for _ in range(8):
        crew(max_checkpoints=5).kickoff(inputs={"topic": "tides"})
    kept = metas(entity_name="research")
    assert len(kept) == 5
    assert kept[0].tasks_done == 3  # the newest, the last run's end


def test_max_checkpoints_never_counts_or_deletes_another_entity_or_another_branch() -> None:
    crew(name="other").kickoff(inputs={"topic": "tides"})
    others = ids(entity_name="other")
    crew().kickoff(inputs={"topic": "tides"})
    source = min(metas(entity_name="research"), key=lambda m: m.sequence)
    forked = Crew.fork(CheckpointConfig(restore_from=source.location), branch="side")
    forked.override_output(0, "another first step")
    forked.kickoff()
    side = ids(branch="side")
    assert len(side) == 2
    for _ in range(3):
        crew(max_checkpoints=1).kickoff(inputs={"topic": "tides"})
    assert others <= ids() and side <= ids()
    assert len(metas(entity_name="research", branch="main")) == 1 + 1  # the newest, and the fork's source


def test_max_checkpoints_keeps_fork_points_fork_roots_and_the_checkpoint_a_run_resumes_from() -> None:
    crew().kickoff(inputs={"topic": "tides"})
    chain = sorted(metas(), key=lambda m: m.sequence)
    fork_point = chain[0]
    forked = Crew.fork(CheckpointConfig(restore_from=fork_point.location), branch="side")
    forked.override_output(0, "a different first step")
    forked.kickoff()
    fork_root = next(m for m in metas(branch="side") if m.parent_id == fork_point.id)

    resumed_from = chain[1]
    again = crew(max_checkpoints=1)
    again.kickoff(from_checkpoint=resumed_from.location)
    assert resumed_from.id in ids()  # the run that resumed from it never deleted it
    for _ in range(2):
        crew(max_checkpoints=1).kickoff(inputs={"topic": "tides"})
    assert {fork_point.id, fork_root.id} <= ids()
    side = crew(max_checkpoints=1)
    side.kickoff(from_checkpoint=max(metas(branch="side"), key=lambda m: m.sequence).location)
    assert fork_root.id in ids()  # a fork's first checkpoint links it to its source, whatever the count


def test_max_checkpoints_never_deletes_a_live_runs_checkpoints() -> None:
    crew(name="research").kickoff(inputs={"topic": "tides"})
    theirs = metas()
    now = time.time()
    live = RunInfo(
        "someone-else", os.getpid(), this_host(), now, now, "running", "main", theirs[0].lineage,
        "crew", "research", theirs[0].id,
    )  # fmt: skip
    assert JsonProvider().write_run("store", live)
    crew(max_checkpoints=1).kickoff(inputs={"topic": "tides"})
    assert {m.id for m in theirs} <= ids()


def test_damaged_records_never_count_and_are_never_deleted_by_a_count() -> None:
    crew().kickoff(inputs={"topic": "tides"})
    newest = metas()[0]
    fake = newest.with_(id="d" * 32, parent_id=newest.id, sequence=newest.sequence + 1, created_at=time.time() + 60)
    damaged = Path("store/main") / file_name(fake)
    damaged.write_text('{"meta": {"id": "dddd", cut short here')
    plan = ops.prune("store", ops.PruneStrategy(keep=1))
    assert plan.damaged == 1
    assert damaged.exists()
    good = [m for m in metas() if m.damaged is None]
    assert [m.id for m in good] == [newest.id]  # the damaged one never took the newest good one's place


# -- a checkpoint never decides what is deleted (issue 16, item 6) --------------------------------------------------


def crafted_from_victim(max_checkpoints: int | None, entity: str = "victim") -> tuple[set[str], str]:
    """A victim run of four checkpoints, and a checkpoint claiming the victim's lineage and parent (and asking
    for ``max_checkpoints``) written beside it; returns the victim's ids and the crafted checkpoint's path."""
    victim = crew(name="victim")
    victim.tasks.append(Task(description="Step 4", expected_output="notes", agent=victim.agents[0], name="step4"))
    victim.kickoff(inputs={"topic": "tides"})
    theirs = metas(entity_name="victim")
    assert len(theirs) == 4
    crew(name="attacker", location="elsewhere").kickoff(inputs={"topic": "tides"})
    source = JsonProvider().read(metas("elsewhere")[-1].location)
    body = json.loads(json.dumps(source.body))
    head = theirs[0]
    body["lineage"].update(lineage=head.lineage, parent_id=head.id, sequence=head.sequence + 1)
    body["entity"]["name"] = entity
    body["entity"]["checkpoint"] = {
        "location": "store",
        "on_events": ["task_completed"],
        "provider": "json",
        "max_checkpoints": max_checkpoints,
    }
    meta = source.meta.with_(
        id="c" * 32,
        parent_id=head.id,
        lineage=head.lineage,
        sequence=head.sequence + 1,
        entity_name=entity,
        created_at=time.time(),
        location="",
    )
    path = JsonProvider().write("store", CheckpointRecord(meta=meta, body=body))
    return {m.id for m in theirs}, path


def test_a_crafted_checkpoint_asking_for_max_checkpoints_deletes_nothing_when_resumed() -> None:
    victims, crafted = crafted_from_victim(max_checkpoints=1)
    result = cli("checkpoint", "resume", crafted)
    assert result.exit_code == 0, result.output
    assert victims <= ids()  # all four of the victim's checkpoints are still there
    rebuilt = Crew.from_checkpoint(CheckpointConfig(restore_from=crafted))
    rebuilt.kickoff()
    assert victims <= ids()


def test_a_crafted_lineage_gives_a_program_that_prunes_no_hold_on_another_runs_checkpoints() -> None:
    victims, crafted = crafted_from_victim(max_checkpoints=None, entity="attacker")
    program = crew(name="attacker", max_checkpoints=1)  # the running program prunes its own crew's checkpoints
    program.kickoff(from_checkpoint=crafted)
    assert victims <= ids()
    assert len(metas(entity_name="attacker", branch="main")) <= 2  # its newest and the one it resumed from


def test_a_rebuilt_run_with_the_programs_max_checkpoints_trims_only_what_it_wrote() -> None:
    """Rebuilt from a checkpoint alone, the entity and branch are what the checkpoint claims: the run's pruning
    deletes none but its own checkpoints, so a crafted claim of another run's entity and lineage costs nothing."""
    victims, crafted = crafted_from_victim(max_checkpoints=None)
    Crew.from_checkpoint(CheckpointConfig(restore_from=crafted, max_checkpoints=1)).kickoff()
    assert victims <= ids()
    written = ids(entity_name="victim") - victims - {"c" * 32}
    assert len(written) == 1  # it wrote two and kept its newest
    assert metas()[0].id in written


# -- the prune command ---------------------------------------------------------------------------------------------


def test_prune_keeps_the_newest_n_of_each_entity_per_branch() -> None:
    for name in ("research", "research", "writing"):
        crew(name=name).kickoff(inputs={"topic": "tides"})
    result = cli("checkpoint", "prune", "store", "--keep", "2")
    assert result.exit_code == 0, result.output
    assert len(metas(entity_name="research")) == 2
    assert len(metas(entity_name="writing")) == 2


def test_prune_on_a_json_file_that_is_not_a_checkpoint_is_refused_and_deletes_nothing_anywhere() -> None:
    """Issue 16, item 3: ``prune ~/Downloads/notes.json --keep 1`` deleted two other projects' checkpoints."""
    for project in ("work/alpha/.checkpoints", "work/beta/.checkpoints"):
        crew(location=project).kickoff(inputs={"topic": "tides"})
    Path("work/Downloads").mkdir()
    notes = Path("work/Downloads/notes.json")
    notes.write_text('{"todo": ["buy milk"]}')
    before = files("work")
    for command in (["prune", str(notes), "--keep", "1"], ["prune", str(notes), "--keep", "1", "--dry-run"]):
        result = cli("checkpoint", *command)
        assert result.exit_code == 2
        assert len(result.stderr.strip().splitlines()) == 1
    assert files("work") == before


def test_prune_on_one_checkpoint_file_names_its_store_and_deletes_nothing() -> None:
    crew().kickoff(inputs={"topic": "tides"})
    before = files("store")
    one = metas()[-1].location
    result = cli("checkpoint", "prune", one, "--keep", "0")
    assert result.exit_code == 2
    assert "not a checkpoint store" in result.stderr and "store" in result.stderr
    assert files("store") == before


def test_a_dry_run_answers_exactly_as_the_real_prune() -> None:
    for _ in range(3):
        crew().kickoff(inputs={"topic": "tides"})
    source = sorted(metas(), key=lambda m: (m.created_at, m.sequence))[-2]  # the last run's second checkpoint
    Crew.fork(CheckpointConfig(restore_from=source.location), branch="side").kickoff()
    oldest = sorted(metas(branch="main"), key=lambda m: m.created_at)[0]
    now = time.time()
    live = RunInfo("live", os.getpid(), this_host(), now, now, "running", "main", oldest.lineage)
    assert JsonProvider().write_run("store", live)
    args = ["store", "--keep", "1", "--json"]
    dry = json.loads(cli("checkpoint", "prune", *args, "--dry-run").stdout)
    real = json.loads(cli("checkpoint", "prune", *args).stdout)
    assert dry["would_delete"] and dry["would_delete"] == real["deleted"]
    for key in ("kept_fork_points", "kept_live", "damaged"):
        assert dry[key] == real[key]
    assert dry["kept_fork_points"] == [source.id]
    assert dry["kept_live"]


def test_prune_help_and_readme_say_newest_n_of_each_entity_per_branch() -> None:
    shown = " ".join(cli("checkpoint", "prune", "--help").output.split())
    assert "newest N checkpoints of each entity per branch" in shown
    readme = README.read_text()
    assert "newest N per branch; fork points are always kept" not in readme
    assert "newest N of each entity per branch" in readme


# -- copy ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["store", "store/inner", "store/main/copy", "store/inner.db"])
def test_copy_refuses_a_target_inside_its_source(target: str) -> None:
    crew().kickoff(inputs={"topic": "tides"})
    before = files("store")
    result = cli("checkpoint", "copy", "store", target)
    assert result.exit_code == 2
    assert len(result.stderr.strip().splitlines()) == 1
    assert files("store") == before
    assert cli("checkpoint", "copy", "store", "elsewhere.db").exit_code == 0  # outside it, the copy is made
    assert ids("elsewhere.db") == ids()


# -- events --------------------------------------------------------------------------------------------------------


def test_checkpoint_started_precedes_each_written_checkpoint_and_pruned_names_what_went() -> None:
    seen: list[tuple[str, str | None]] = []
    removed: list[list[str]] = []

    @event_bus.on(CheckpointStartedEvent)
    def on_started(source: Any, event: CheckpointStartedEvent) -> None:
        seen.append(("started", event.checkpoint_id))

    @event_bus.on(CheckpointCompletedEvent)
    def on_completed(source: Any, event: CheckpointCompletedEvent) -> None:
        seen.append(("completed", event.checkpoint_id))

    @event_bus.on(CheckpointPrunedEvent)
    def on_pruned(source: Any, event: CheckpointPrunedEvent) -> None:
        removed.append(list(event.removed_ids or []))

    crew(max_checkpoints=1).kickoff(inputs={"topic": "tides"})
    started = [cid for kind, cid in seen if kind == "started"]
    completed = [cid for kind, cid in seen if kind == "completed"]
    assert len(started) == 3 and started == completed
    for cid in started:
        assert seen.index(("started", cid)) < seen.index(("completed", cid))
    assert sorted(cid for ids in removed for cid in ids) == sorted(started[:2])  # each deletion reported once

    removed.clear()
    crew().kickoff(inputs={"topic": "tides"})
    plan = ops.prune("store", ops.PruneStrategy(keep=1), dry_run=True)
    assert removed == []  # a dry run deletes nothing and says nothing was pruned
    ops.prune("store", ops.PruneStrategy(keep=1))
    assert removed == [plan.ids]


def test_the_programs_restore_config_may_bound_a_rebuilt_run_and_the_checkpoints_never_does() -> None:
    for _ in range(3):
        crew().kickoff(inputs={"topic": "tides"})
    first = min(metas(), key=lambda m: m.created_at)
    before = ids()
    Crew.from_checkpoint(CheckpointConfig(restore_from=first.location)).kickoff()
    assert before <= ids()  # no max_checkpoints in the program: nothing is deleted
    before = ids()
    Crew.from_checkpoint(CheckpointConfig(restore_from=first.location, max_checkpoints=1)).kickoff()
    after = ids()
    assert before <= after and len(after - before) == 1  # it wrote two and kept its newest (it trims its own)


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="needs Linux's /proc/locks to see a waiting lock")
def test_a_json_prune_waits_for_another_processes_prune_of_the_store() -> None:
    import fcntl
    import subprocess
    import sys

    from support.waiting import wait_for

    from crewpoint.providers.json_provider import PRUNE_LOCK

    for _ in range(2):
        crew().kickoff(inputs={"topic": "tides"})
    fd = os.open(Path("store") / PRUNE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    inode = os.fstat(fd).st_ino
    before = files("store")
    fcntl.flock(fd, fcntl.LOCK_EX)  # another process's prune holds the store
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "prune", "store", "--keep", "1"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )

        def waiting() -> bool:
            with open("/proc/locks") as locks:
                return any("->" in line and f":{inode} " in line for line in locks)

        wait_for(waiting, "the second prune to wait for the store's lock")
        assert proc.poll() is None and files("store") == before  # nothing planned or deleted meanwhile
    finally:
        os.close(fd)
    assert proc.wait(timeout=60) == 0
    assert len(metas()) == 1
