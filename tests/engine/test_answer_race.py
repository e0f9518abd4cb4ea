"""Two people answer one waiting run at the same moment: two real ``crewpoint checkpoint answer`` processes,
released together, on a SQLite and a PostgreSQL store. One wins and its route runs once; the other is refused in
one line naming who answered and what; the run no longer waits and ``info`` shows the one answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.races import released_together
from support.review import listed, ran, run, wait_in

from crewpoint.providers import CheckpointMeta, CheckpointRecord, SqliteProvider

ROUNDS = 3
"""Races per store, each on a fresh waiting run: a lost race shows in one of them."""

ANSWERS = {"alice": "approved", "bob": "rejected"}
"""Who answers what (``who`` is USER@host: the login name each answer process runs under)."""
ROUTES = {"approved": "published", "rejected": "redone"}


@dataclass
class Answered:
    who: str
    outcome: str
    returncode: int
    stdout: str
    stderr: str


def waiting_run(project: Path, store: str) -> dict[str, Any]:
    """The review flow run in its own process until it waits in ``store``; the waiting row of ``list``."""
    row = wait_in(project, store)
    assert row["status"] == "waiting"
    assert ran(project) == ["draft"]
    return row


def race(project: Path, store: str, checkpoint_id: str) -> list[Answered]:
    """alice answers ``approved`` and bob ``rejected``, each in a process of their own, released together."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("CREWPOINT_FEEDBACK", None)
    commands = {
        who: [
            "checkpoint",
            "answer",
            checkpoint_id,
            "--location",
            store,
            "--outcome",
            outcome,
            "--app",
            "review.py:flow",
        ]
        for who, outcome in ANSWERS.items()
    }
    return [
        Answered(e.who, ANSWERS[e.who], e.returncode, e.stdout, e.stderr)
        for e in released_together(commands, project, env)
    ]


@pytest.mark.parametrize("kind", ["sqlite", "postgres"])
def test_two_answers_at_once_one_wins_and_the_other_is_told_who(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    store = str(tmp_path / "store.db") if kind == "sqlite" else request.getfixturevalue("pg_location")
    for n in range(ROUNDS):  # one store, a fresh waiting run each round
        project = tmp_path / f"round{n}"
        row = waiting_run(project, store)
        answered = race(project, store, row["id"])

        for each in answered:
            assert "Traceback" not in each.stderr, each.stderr
        won = [a for a in answered if a.returncode == 0]
        lost = [a for a in answered if a.returncode != 0]
        assert len(won) == 1 and len(lost) == 1, [(a.who, a.returncode, a.stderr) for a in answered]
        winner, loser = won[0], lost[0]
        assert ran(project) == ["draft", ROUTES[winner.outcome]]  # the winner's route, once; the draft not again
        assert ROUTES[winner.outcome] in winner.stdout and ROUTES[loser.outcome] not in loser.stdout

        assert loser.returncode == 2, loser.stderr
        refusals = [line for line in loser.stderr.splitlines() if line.startswith("crewpoint: ")]
        assert len(refusals) == 1 and loser.stderr.strip().splitlines()[-1] == refusals[0], loser.stderr
        assert f"already answered by {winner.who}@" in refusals[0]
        assert f": {winner.outcome};" in refusals[0] and loser.who not in refusals[0]
        said = [line for line in loser.stderr.splitlines() if line.strip() and line != refusals[0]]
        assert all(line.startswith("resuming flow Review from ") for line in said), loser.stderr  # nothing ran

        rows = listed(project, store)
        assert not [r for r in rows if r["status"] == "waiting" or r["request"] is not None]
        answers = [r for r in rows if r["trigger"] == "human_feedback_received"]
        assert len(answers) == n + 1  # this round's run went on once; the loser wrote nothing
        assert len({r["run_id"] for r in rows}) == 2 * (n + 1)  # each round: the waiting run and the answer's

        assert rows[0]["run_id"] == answers[0]["run_id"]  # the newest checkpoint: where the winner's run ended
        info = run("info", rows[0]["id"], "--location", store, cwd=project)
        assert info.returncode == 0, info.stderr
        given = info.stdout.split("feedback given\n", 1)[1].split("\n\n", 1)[0].splitlines()
        assert given == [given[0]] and given[0].startswith(f"  1. draft -> {winner.outcome}: (accepted) (by ")
        assert f"(by {winner.who}@" in given[0]
        assert "waiting for feedback" not in info.stdout


READER = r"""
import sys
from crewpoint.providers import SqliteProvider
provider = SqliteProvider()
print(len(provider.list(sys.argv[1])))
provider.close()
"""


def test_a_sqlite_store_checked_before_a_run_keeps_what_the_run_writes_after_another_process_closes_it(
    tmp_path: Path,
) -> None:
    """Why a race's winner once lost its checkpoints: the check a run makes before it starts closed a descriptor
    of the database it was connected to, dropping SQLite's locks, so the loser closing the store deleted the WAL
    the winner went on writing to."""
    store = str(tmp_path / "store.db")
    provider = SqliteProvider()

    def record(n: int) -> CheckpointRecord:
        return CheckpointRecord(CheckpointMeta(f"cp{n:04d}", None, "main", "run-a", n, float(n), "t"), {"n": n})

    provider.write(store, record(1))
    provider.check_writable(store)  # as every run does before it starts, its connection open
    other = subprocess.run([sys.executable, "-c", READER, store], capture_output=True, text=True, timeout=120)
    assert other.returncode == 0 and other.stdout.split() == ["1"], other.stderr
    provider.write(store, record(2))
    shown = run("list", store, "--json", cwd=tmp_path)  # read by another process while the writer is still open
    assert shown.returncode == 0, shown.stderr
    assert sorted(row["id"] for row in json.loads(shown.stdout)) == ["cp0001", "cp0002"]
    provider.close()
