"""One answer per request, by structure: a fork asks anew, copy carries answers, a deadline's default is an
answer, a forged claim never routes, and a resume never runs an answered path a second time. Real flows paused in
real processes, answered through the command line, on JSON, SQLite and PostgreSQL stores."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.review import DEADLINED, REVIEW, answer_held_at_write, listed, ran, run, wait_in

from crewpoint.checkpoint.schema import load_body
from crewpoint.providers import JsonProvider, provider_for
from crewpoint.providers.base import CheckpointError, DamagedCheckpoint
from crewpoint.providers.claims import MAX_CLAIM_BYTES, claim_key
from crewpoint.tui.store_index import waiting_requests

APP = ["--app", "review.py:flow"]


def store_of(kind: str, tmp_path: Path, request: pytest.FixtureRequest, name: str = "store") -> str:
    if kind == "json":
        return name
    if kind == "sqlite":
        return f"{name}.db"
    return str(request.getfixturevalue("pg_location"))


def where(project: Path, store: str) -> str:
    return store if "://" in store else str(project / store)


@pytest.mark.parametrize("kind", ["json", "sqlite", "postgres"])
def test_a_fork_of_a_waiting_run_asks_anew_and_each_takes_its_own_answer(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    store = store_of(kind, tmp_path, request)
    project = tmp_path / "project"
    waiting = wait_in(project, store)["id"]
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    forked = subprocess.run(
        [
            sys.executable,
            "-m",
            "crewpoint.tui.cli",
            "checkpoint",
            "fork",
            waiting,
            "--location",
            store,
            *APP,
            "-b",
            "alt",
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert forked.returncode == 75, forked.stderr  # the fork waits for its own answer
    rows = listed(project, store)
    (fork_row,) = [r for r in rows if r["branch"] == "alt" and r["request"] is not None]
    assert {r["id"]: r["status"] for r in rows if r["request"] is not None} == {
        waiting: "waiting",
        fork_row["id"]: "waiting",
    }

    done = run("answer", fork_row["id"], "--location", store, "--outcome", "rejected", *APP, cwd=project)
    assert done.returncode == 0, done.stderr
    assert ran(project) == ["draft", "redone"]
    assert [r["id"] for r in listed(project, store) if r["status"] == "waiting" and r["request"]] == [
        waiting
    ]  # main still waits

    done = run("answer", waiting, "--location", store, "--outcome", "approved", *APP, cwd=project)
    assert done.returncode == 0, done.stderr  # main's own answer is its own, not the fork's
    assert ran(project) == ["draft", "redone", "published"]
    provider = provider_for(where(project, store))
    location = where(project, store)
    runs = {r.run_id: r.status for r in provider.read_runs(location)}
    by_id = {r["id"]: r for r in listed(project, store)}
    assert runs[by_id[waiting]["run_id"]] == "answered" and runs[by_id[fork_row["id"]]["run_id"]] == "answered"
    provider.close()


@pytest.mark.parametrize(("source", "target"), [("json", "sqlite"), ("sqlite", "postgres"), ("postgres", "json")])
def test_copy_carries_the_answer_and_a_copied_request_is_not_answered_again(
    tmp_path: Path, source: str, target: str, request: pytest.FixtureRequest
) -> None:
    src = store_of(source, tmp_path, request, "src")
    project = tmp_path / "project"
    waiting = wait_in(project, src)["id"]
    done = run("answer", waiting, "--location", src, "--outcome", "rejected", *APP, cwd=project)
    assert done.returncode == 0, done.stderr
    dst = store_of(target, tmp_path, request, "dst")
    copied = run("copy", src, dst, cwd=project)
    assert copied.returncode == 0, copied.stderr
    assert "answer carried" in copied.stderr

    again = run("answer", waiting, "--location", dst, "--outcome", "approved", *APP, cwd=project)
    assert again.returncode == 2, again.stderr
    assert "already answered by " in again.stderr and ": rejected;" in again.stderr
    assert ran(project) == ["draft", "redone"]  # the approved path never ran
    assert not [r for r in listed(project, dst) if r["status"] == "waiting" and r["request"]]


def test_copy_never_overwrites_an_answer_in_the_target_and_says_so(tmp_path: Path) -> None:
    project = tmp_path / "project"
    waiting = wait_in(project, "src")["id"]
    request_id = next(r for r in listed(project, "src") if r["id"] == waiting)["request"]["request_id"]
    done = run("answer", waiting, "--location", "src", "--outcome", "rejected", *APP, cwd=project)
    assert done.returncode == 0, done.stderr
    first = run("copy", "src", "dst.db", cwd=project)
    assert first.returncode == 0, first.stderr
    dst = str(project / "dst.db")
    key = claim_key(request_id, waiting)
    with provider_for(dst) as provider:
        kept = provider.read_claim(dst, key)
    assert kept is not None and kept["outcome"] == "rejected"

    other = tmp_path / "other"
    waiting2 = wait_in(other, "src")["id"]  # another store whose claim names another answer under a key in dst
    with provider_for(str(other / "src")) as provider:
        provider.claim(
            str(other / "src"), key, {**kept, "token": "t2", "who": "mallory@elsewhere", "outcome": "approved"}
        )
    again = run("copy", str(other / "src"), dst, cwd=project)
    assert again.returncode == 0, again.stderr
    conflicts = [line for line in again.stderr.splitlines() if line.startswith("crewpoint: claim ")]
    assert len(conflicts) == 1 and "rejected) stands" in conflicts[0] and "approved" in conflicts[0], again.stderr
    with provider_for(dst) as provider:
        assert provider.read_claim(dst, key) == kept
    assert waiting2


@pytest.mark.parametrize("kind", ["json", "sqlite", "postgres"])
def test_a_deadline_default_is_claimed_and_a_late_answer_is_refused_naming_it(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    assert DEADLINED != REVIEW
    store = store_of(kind, tmp_path, request)
    project = tmp_path / "project"
    row = wait_in(project, store, DEADLINED)

    resumed = run("resume", row["id"], "--location", store, *APP, cwd=project)
    assert resumed.returncode == 0, resumed.stderr  # past its deadline: the default outcome goes on
    assert ran(project) == ["draft", "published"]

    late = run("answer", row["id"], "--location", store, "--outcome", "rejected", *APP, cwd=project)
    assert late.returncode == 2, late.stderr
    assert "already answered by the deadline (its default outcome)" in late.stderr and ": approved;" in late.stderr
    again = run("resume", row["id"], "--location", store, *APP, cwd=project)
    assert again.returncode == 2 and "the run went on: latest " in again.stderr, again.stderr
    assert ran(project) == ["draft", "published"]


@pytest.mark.parametrize("kind", ["json", "sqlite", "postgres"])
def test_a_forged_claim_with_an_outcome_not_offered_never_routes_nor_blocks(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    store = store_of(kind, tmp_path, request)
    project = tmp_path / "project"
    row = wait_in(project, store)
    location = where(project, store)
    with provider_for(location) as provider:
        forged = {"token": "forged", "outcome": "launch-missiles", "who": "mallory"}
        provider.claim(location, claim_key(row["request"]["request_id"], row["id"]), forged)
    assert [r["id"] for r in listed(project, store) if r["status"] == "waiting" and r["request"]] == [row["id"]]

    done = run("answer", row["id"], "--location", store, "--outcome", "rejected", *APP, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "damaged claim ignored" in done.stderr and "'launch-missiles' is not offered" in done.stderr
    assert ran(project) == ["draft", "redone"]
    again = run("answer", row["id"], "--location", store, "--outcome", "approved", *APP, cwd=project)
    assert again.returncode == 2 and ": rejected;" in again.stderr, again.stderr


def test_a_request_id_that_could_never_be_answered_is_damaged_naming_the_field(tmp_path: Path) -> None:
    project = tmp_path / "project"
    row = wait_in(project, "store")
    provider = provider_for(str(project / "store"))
    body = json.loads(json.dumps(provider.read(str(project / "store"), row["id"]).body))
    body["entity"]["pending_feedback"]["request_id"] = "../../x"
    with pytest.raises(DamagedCheckpoint, match=r"pending_feedback\.request_id.*'\.\./\.\./x'"):
        load_body(body)


def test_claims_are_read_bounded_and_list_reads_only_the_waiting_requests_claims(tmp_path: Path) -> None:
    project = tmp_path / "project"
    row = wait_in(project, "store")
    location = str(project / "store")
    folder = project / "store" / ".claims"
    folder.mkdir(mode=0o700, exist_ok=True)
    huge = folder / (claim_key(row["request"]["request_id"], row["id"]) + ".json")
    with open(huge, "wb") as f:
        f.truncate(400 * 1024 * 1024)  # a 400 MB claim (sparse): told by its size, never read
    provider = provider_for(location)
    with pytest.raises(CheckpointError, match=f"damaged claim: {400 * 1024 * 1024} bytes, over {MAX_CLAIM_BYTES}"):
        provider.read_claim(location, huge.name[: -len(".json")])
    for n in range(2000):  # answers of other requests: the listing never reads them
        (folder / f"other-{n}:elsewhere.json").write_text('{"token": "t"}')
    read: list[str] = []
    real = JsonProvider.read_claim

    def counted(self: JsonProvider, location: str, key: str) -> dict[str, Any] | None:
        read.append(key)
        return real(self, location, key)

    def every_claim(self: JsonProvider, location: str) -> dict[str, dict[str, Any]]:
        raise AssertionError("the listing read every claim")

    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(JsonProvider, "read_claim", counted)
        patched.setattr(JsonProvider, "claims", every_claim)
        _, requests = waiting_requests(location, provider.read_runs(location))
    assert list(requests) == [row["id"]] and all(key.startswith(row["request"]["request_id"]) for key in read)
    assert 0 < len(read) <= 8, read  # the waiting request's keys (past the damaged one), and no other
    rows = listed(project, "store")
    assert [r["id"] for r in rows if r["status"] == "waiting" and r["request"]] == [
        row["id"]
    ]  # the damaged claim does not answer

    done = run("answer", row["id"], "--location", "store", "--outcome", "approved", *APP, cwd=project)
    assert done.returncode == 0, done.stderr
    assert "damaged claim ignored" in done.stderr and ran(project) == ["draft", "published"]


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_resume_is_refused_while_the_answer_runs_and_after_it_went_on(tmp_path: Path, kind: str) -> None:
    store = "store" if kind == "json" else "store.db"
    project = tmp_path / "project"
    waiting = wait_in(project, store)["id"]
    args = ["answer", waiting, "--location", store, "--outcome", "approved", *APP]
    child = answer_held_at_write(project, *args)
    try:
        busy = run("resume", waiting, "--location", store, *APP, cwd=project)  # the answer is still running
        assert busy.returncode == 2, busy.stderr
        assert "is live" in busy.stderr or "is going on now" in busy.stderr, busy.stderr  # refused, naming the run
        assert "goes on with that answer" not in busy.stderr
        lost = run("answer", waiting, "--location", store, "--outcome", "rejected", *APP, cwd=project)
        assert lost.returncode == 2 and "is going on now" in lost.stderr and "resume" not in lost.stderr
        assert ran(project) == ["draft"]  # nothing ran twice, nothing ran beside it
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=120)

    goes_on = run("resume", waiting, "--location", store, *APP, cwd=project)  # its process died: go on with it
    assert goes_on.returncode == 0, goes_on.stderr
    assert ran(project) == ["draft", "published"]
    after = run("resume", waiting, "--location", store, *APP, cwd=project)
    assert after.returncode == 2, after.stderr
    latest = listed(project, store)[0]["id"]
    assert f"the run went on: latest {latest[:12]}" in after.stderr
    assert ran(project) == ["draft", "published"]

    info = run("info", waiting, "--location", store, cwd=project)
    assert info.returncode == 0, info.stderr
    assert "request draft: answered by " in info.stdout and ": approved" in info.stdout
    assert "waiting for" not in info.stdout and "answer with" not in info.stdout


def test_a_sqlite_claim_over_the_cap_is_told_by_its_size_and_hides_no_other(tmp_path: Path) -> None:
    import sqlite3

    project = tmp_path / "project"
    row = wait_in(project, "store.db")
    location = str(project / "store.db")
    with provider_for(location) as provider:
        provider.claim(location, "small", {"token": "t"})  # the store has its claims table
    key = claim_key(row["request"]["request_id"], row["id"])
    with sqlite3.connect(location) as db:  # as a crafted store could hold it
        db.execute("INSERT INTO claims (key, value, created_at) VALUES (?, ?, 0)", [key, '"' + "x" * 10**6 + '"'])
    with provider_for(location) as provider:
        with pytest.raises(CheckpointError, match=f"damaged claim: {10**6 + 2} bytes, over {MAX_CLAIM_BYTES}"):
            provider.read_claim(location, key)
        assert provider.claims(location) == {"small": {"token": "t"}}
    done = run("answer", row["id"], "--location", "store.db", "--outcome", "rejected", *APP, cwd=project)
    assert done.returncode == 0 and "damaged claim ignored" in done.stderr, done.stderr
    assert ran(project) == ["draft", "redone"]


def test_a_claim_stored_before_keys_named_checkpoints_answers_only_the_checkpoint_it_names(tmp_path: Path) -> None:
    project = tmp_path / "project"
    row = wait_in(project, "store")
    location = str(project / "store")
    old = {"token": "old", "who": "ann@old", "outcome": "rejected", "at": 0.0, "checkpoint_id": "another-checkpoint"}
    with provider_for(location) as provider:
        provider.claim(location, row["request"]["request_id"], old)  # a request id alone, naming another checkpoint
    assert [r["id"] for r in listed(project, "store") if r["status"] == "waiting" and r["request"]] == [row["id"]]

    other = tmp_path / "other"
    row2 = wait_in(other, "store")
    with provider_for(str(other / "store")) as provider:
        provider.claim(str(other / "store"), row2["request"]["request_id"], {**old, "checkpoint_id": row2["id"]})
    assert not [r for r in listed(other, "store") if r["status"] == "waiting" and r["request"]]
    late = run("answer", row2["id"], "--location", "store", "--outcome", "approved", *APP, cwd=other)
    assert late.returncode == 2 and "already answered by ann@old" in late.stderr, late.stderr
