"""Exactly once, whatever the order: concurrent answerers (real processes), forks, copies and resumes (past a
deadline, or not) interleaved at random over one waiting run, on JSON, SQLite and PostgreSQL stores. Afterwards,
with every request still waiting answered once more, each request of each store has exactly one answer, and each
continuation ran once: the routes that ran (``ran.txt``) are as many as the ``human_feedback_received``
checkpoints, each the one child of its request on its branch."""

from __future__ import annotations

import os
import subprocess
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from support.cli import CHECKPOINT
from support.review import DEADLINED, listed, ran, wait_in

APP = ["--app", "review.py:flow"]
ROUTES = ("published", "redone")
RECEIVED = "human_feedback_received"


def cli(project: Path, *args: str) -> subprocess.Popen[str]:
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait", "NO_COLOR": "1"}
    return subprocess.Popen(
        [*CHECKPOINT, *args], cwd=project, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    _, err = proc.communicate(timeout=180)
    assert "Traceback" not in err, err
    return proc.returncode, err


def requests_of(project: Path, store: str) -> list[dict[str, Any]]:
    """Every checkpoint that holds a request, answered or not."""
    return [r for r in listed(project, store) if r["trigger"] == "human_feedback_requested"]


def continuations(rows: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """How many ``human_feedback_received`` children each (parent, branch) has."""
    return Counter((r["parent_id"], r["branch"]) for r in rows if r["trigger"] == RECEIVED)


STEPS = st.lists(
    st.tuples(st.sampled_from(["answer", "fork", "copy", "prune", "resume"]), st.integers(1, 3), st.integers(0, 99)),
    min_size=2,
    max_size=4,
)


@pytest.mark.parametrize("kind", ["json", "sqlite", "postgres"])
@settings(
    max_examples=4,
    deadline=None,
    phases=[Phase.explicit, Phase.generate],  # each example runs processes for seconds: a failure is shown as found
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(steps=STEPS, deadline=st.booleans(), outcomes=st.lists(st.sampled_from(["approved", "rejected"]), min_size=3))
def test_every_request_ends_with_one_answer_and_its_continuation_ran_once(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest, steps: list[Any], deadline: bool, outcomes: list[str]
) -> None:
    project = tmp_path / uuid.uuid4().hex[:8]
    if kind == "postgres":
        request.getfixturevalue("pg_location")  # the server (or the skip without its binaries)
        from pg_server import store_url

        store = store_url(project.name)
    else:
        store = "store" if kind == "json" else "store.db"
    wait_in(project, store)
    if deadline:  # the same program, its request past its deadline from here on
        (project / "review.py").write_text(DEADLINED)
    stores = [store]
    side_routes = 0
    for n, (step, many, pick) in enumerate(steps):
        where = stores[pick % len(stores)]
        held = requests_of(project, where)
        row = held[pick % len(held)]
        if step == "answer":  # many people at once, each in a process of their own
            procs = [
                cli(project, "answer", row["id"], "--location", where, "--outcome", outcomes[i % len(outcomes)], *APP)
                for i in range(many)
            ]
            codes = [finish(p)[0] for p in procs]
            assert codes.count(0) <= 1 and set(codes) <= {0, 2}, codes
        elif step == "fork":
            code, err = finish(cli(project, "fork", row["id"], "--location", where, "-b", f"alt{n}", *APP))
            assert code in (0, 75), err  # a fork asks anew (past the deadline: takes the default at once)
        elif step == "copy":
            target = f"copy{n}" if n % 2 else f"copy{n}.db"
            code, err = finish(cli(project, "copy", where, target))
            assert code == 0, err
            stores.append(target)
        elif step == "prune":  # of a copy (the counts below read the stores whole): keeps the newest checkpoint
            # of each branch, and every checkpoint a request still waits at, which then takes its answer
            rows = listed(project, where)
            done = continuations(rows)
            waiting = {
                r["id"] for r in rows if r["trigger"] == "human_feedback_requested" and not done[(r["id"], r["branch"])]
            }
            pruned = f"pruned{n}.db"
            assert finish(cli(project, "copy", where, pruned))[0] == 0
            code, err = finish(cli(project, "prune", pruned, "--keep", "1"))
            assert code == 0, err
            assert waiting <= {r["id"] for r in listed(project, pruned)}, err
            for held_id in sorted(waiting)[:1]:
                code, err = finish(cli(project, "answer", held_id, "--location", pruned, "--default", *APP))
                assert code == 0, err
                side_routes += 1  # its route ran once, in a store the counts below do not read
        else:
            code, err = finish(cli(project, "resume", row["id"], "--location", where, *APP))
            assert code in (0, 2, 75), err  # goes on, is refused (answered, gone on), or asks anew

    for where in stores:  # every request still waiting gets one more answer
        rows = listed(project, where)
        done = continuations(rows)
        for row in (r for r in rows if r["trigger"] == "human_feedback_requested"):
            if not done[(row["id"], row["branch"])]:
                code, err = finish(cli(project, "answer", row["id"], "--location", where, "--default", *APP))
                assert code == 0, err
            again = finish(cli(project, "answer", row["id"], "--location", where, "--default", *APP))
            assert again[0] == 2 and "already answered by " in again[1], again

    received: set[str] = set()
    for where in stores:
        rows = listed(project, where)
        done = continuations(rows)
        assert all(count == 1 for count in done.values()), done  # one continuation per request and branch
        for row in (r for r in rows if r["trigger"] == "human_feedback_requested"):
            assert done[(row["id"], row["branch"])] == 1, (where, row["id"])
        assert not [r for r in rows if r["status"] == "waiting" and r["request"] is not None]
        received |= {r["id"] for r in rows if r["trigger"] == RECEIVED}  # a copy keeps ids: counted once
    assert received  # at least the last sweep answered one
    routes = [word for word in ran(project) if word in ROUTES]
    assert len(routes) == len(received) + side_routes, (routes, sorted(received))
    assert ran(project).count("draft") == 1  # the reviewed method ran once, before the first wait
