"""Real processes, real signals: kill -9 at random moments, concurrent writers, forks side by side."""

from __future__ import annotations

import itertools
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from support.waiting import wait_for

from crewpoint import CheckpointConfig, Crew
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.providers import JsonProvider, SqliteProvider, provider_for

CLI = [sys.executable, "-c", "from crewpoint.tui.cli import main; main()"]


def start_demo(location: Path, delay: float, *extra: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*CLI, "demo", "--location", str(location), "--delay", str(delay), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def checkpoint_files(location: Path) -> int:
    main = location / "main"
    return sum(1 for name in os.listdir(main) if name.endswith(".json")) if main.is_dir() else 0


def test_kill_9_at_random_moments_never_loses_or_repeats_finished_work(llm_calls: list[str]) -> None:
    """Each run is killed right after its n-th checkpoint file appears (n random), however slow the machine:
    the kill lands mid-run, sometimes mid-write of the next checkpoint."""
    reference = demo_crew(checkpoint=False).kickoff(inputs=DEMO_INPUTS)
    rng = random.Random(20261129)
    resumed = 0
    for attempt in range(16):
        location = Path(f"run{attempt}")
        proc = start_demo(location, delay=0.04)
        seen = rng.randint(1, 3)
        wait_for(
            lambda loc=location, n=seen, p=proc: checkpoint_files(loc) >= n or p.poll() is not None,  # type: ignore[misc]
            "a checkpoint",
        )
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        provider = JsonProvider()
        if not location.exists():
            continue
        metas = provider.list(str(location))
        for meta in metas:
            assert meta.damaged is None, meta.damaged
            provider.read(str(location), meta.id)  # every checkpoint on disk reads back
        crew_metas = [m for m in metas if m.entity_kind == "crew"]
        if not crew_metas:
            continue
        latest = crew_metas[0]
        crew = Crew.from_checkpoint(CheckpointConfig(restore_from=latest.location))
        pending = {t.id for t in crew.tasks if t.output is None}
        assert len(pending) == latest.tasks_total - latest.tasks_done
        llm_calls.clear()
        result = crew.kickoff()
        assert result.raw == reference.raw
        assert [t.raw for t in result.tasks_output] == [t.raw for t in reference.tasks_output]
        assert set(llm_calls) <= pending  # no finished task's LLM call repeated
        resumed += 1
    assert resumed >= 10  # the kills did land mid-run


@pytest.mark.parametrize(
    ("name", "expected_exit"), [("SIGINT", -signal.SIGINT), ("SIGTERM", 128 + 15), ("SIGHUP", 128 + 1)]
)
def test_a_stopping_signal_mid_run_writes_a_checkpoint_before_exiting(
    tmp_path: Path, name: str, expected_exit: int
) -> None:
    script = tmp_path / "slow.py"
    script.write_text(
        "from crewpoint import CheckpointConfig\n"
        "from crewpoint.demo import demo_crew, DEMO_INPUTS\n"
        f"config = CheckpointConfig(location='sig', on_events=['task_completed', '{name}'])\n"
        "demo_crew(delay=0.4, checkpoint=config).kickoff(inputs=DEMO_INPUTS)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)], stderr=subprocess.PIPE)
    wait_for(lambda: Path("sig", "main").is_dir() and any(Path("sig", "main").glob("*.json")), "a checkpoint")
    proc.send_signal(getattr(signal, name))
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == expected_exit
    if name == "SIGINT":
        assert b"KeyboardInterrupt" in err
    metas = JsonProvider().list("sig")
    assert metas[0].trigger == name
    assert metas[0].parent_id == metas[1].id
    resumed = Crew.from_checkpoint(CheckpointConfig(restore_from=metas[0].location))
    assert resumed.kickoff().raw  # the stopped run finishes from its signal checkpoint


def test_sigtstp_checkpoints_then_stops_and_sigcont_resumes(tmp_path: Path) -> None:
    script = tmp_path / "slow.py"
    script.write_text(
        "from crewpoint import CheckpointConfig\n"
        "from crewpoint.demo import demo_crew, DEMO_INPUTS\n"
        "config = CheckpointConfig(location='tstp', on_events=['task_completed', 'SIGTSTP', 'SIGCONT'])\n"
        "demo_crew(delay=0.3, checkpoint=config).kickoff(inputs=DEMO_INPUTS)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)])
    wait_for(lambda: Path("tstp", "main").is_dir() and any(Path("tstp", "main").glob("*.json")), "a checkpoint")
    proc.send_signal(signal.SIGTSTP)
    wait_for(lambda: any(m.trigger == "SIGTSTP" for m in JsonProvider().list("tstp")), "the SIGTSTP checkpoint")
    wait_for(lambda: Path(f"/proc/{proc.pid}/stat").read_text().split()[2] == "T", "the run to stop")
    proc.send_signal(signal.SIGCONT)
    assert proc.wait(timeout=60) == 0
    triggers = [m.trigger for m in JsonProvider().list("tstp")]
    assert "SIGTSTP" in triggers and "SIGCONT" in triggers
    assert triggers.count("task_completed") == 4


@pytest.mark.parametrize("store", ["shared.db", "shared_json"])
def test_two_processes_original_and_fork_write_side_by_side(store: str) -> None:
    location = Path(store)
    demo_crew(checkpoint=CheckpointConfig(location=str(location), provider=provider_for(str(location)))).kickoff(
        inputs=DEMO_INPUTS
    )
    provider = provider_for(str(location))
    first = provider.list(str(location))[-1]
    code = (
        "import sys\n"
        "from crewpoint import CheckpointConfig, Crew\n"
        "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
        "from crewpoint.providers import provider_for\n"
        "loc, mode, src = sys.argv[1:4]\n"
        "if mode == 'fork':\n"
        "    Crew.fork(CheckpointConfig(restore_from=src), branch='experiment').kickoff()\n"
        "else:\n"
        "    demo_crew(delay=0.01, checkpoint=CheckpointConfig(location=loc, provider=provider_for(loc)))"
        ".kickoff(inputs=DEMO_INPUTS)\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(location), mode, first.location])
        for mode in ("fork", "again", "fork", "again")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    metas = provider.list(str(location))
    assert len(metas) == 4 + 2 * 4 + 2 * 3  # first run, two more runs, two forks of the 3 remaining tasks
    assert len({m.id for m in metas}) == len(metas)
    for meta in metas:
        provider.read(str(location), meta.id)
    forks = [m for m in metas if m.branch == "experiment"]
    roots = [m for m in forks if m.parent_id == first.id]
    assert len(roots) == 2  # each fork's first checkpoint has the source as parent
    for root in roots:  # each fork continues its own chain from its first checkpoint
        chain = [root]
        while (child := next((m for m in forks if m.parent_id == chain[-1].id), None)) is not None:
            chain.append(child)
        assert len(chain) == 3


def test_linear_run_is_one_parent_chain() -> None:
    demo_crew(checkpoint=CheckpointConfig(location="chain", on_events=["*"])).kickoff(inputs=DEMO_INPUTS)
    metas = JsonProvider().list("chain")
    crew_metas = sorted((m for m in metas if m.entity_kind == "crew"), key=lambda m: m.sequence)
    assert [m.sequence for m in crew_metas] == list(range(1, len(crew_metas) + 1))
    assert crew_metas[0].parent_id is None
    for parent, child in itertools.pairwise(crew_metas):
        assert child.parent_id == parent.id
    parents = [m.parent_id for m in crew_metas]
    assert len(parents) == len(set(parents))  # never two children of one parent


def test_sqlite_store_on_the_stdlib_sqlite_really_writes() -> None:
    demo_crew(checkpoint=CheckpointConfig(location="s.db", provider=SqliteProvider())).kickoff(inputs=DEMO_INPUTS)
    assert len(SqliteProvider().list("s.db")) == 4
    assert os.stat("s.db").st_mode & 0o777 == 0o600


def test_looking_at_a_store_never_drops_the_locks_of_a_live_sqlite_connection() -> None:
    """Closing any descriptor of a database drops the process's POSIX locks on it; sniffing a store's kind
    while connected must not, or another process checkpoints and deletes the WAL under the live connection."""
    from crewpoint.checkpoint import ops

    # no telling suffix: the store's kind must be sniffed from the file itself
    demo_crew(checkpoint=CheckpointConfig(location="locks.bin", provider=SqliteProvider())).kickoff(inputs=DEMO_INPUTS)
    provider = provider_for("locks.bin")
    assert len(provider.list("locks.bin")) == 4
    for _ in range(3):
        code = (
            "from crewpoint import CheckpointConfig\n"
            "from crewpoint.demo import DEMO_INPUTS, demo_crew\n"
            "from crewpoint.providers import SqliteProvider\n"
            "demo_crew(checkpoint=CheckpointConfig(location='locks.bin', provider=SqliteProvider()))"
            ".kickoff(inputs=DEMO_INPUTS)\n"
        )
        ops.find_store("locks.bin")
        subprocess.run([sys.executable, "-c", code], check=True)
        ops.find_store("locks.bin")
    assert len(provider.list("locks.bin")) == 16
