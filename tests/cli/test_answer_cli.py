"""``crewpoint checkpoint answer`` and waiting runs in ``list``: a real flow pauses in one process and is answered
from another, through the command line."""

from __future__ import annotations

import os
import select
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support.cli import CHECKPOINT, one_line_error
from support.review import listed, ran, run, wait_in


def paused(tmp_path: Path, store: str = "store") -> tuple[Path, dict[str, Any]]:
    """The review flow run in its own process until it waits; its project folder and waiting row of ``list``."""
    project = tmp_path / "project"
    return project, wait_in(project, store)


def one_line_refusal(done: subprocess.CompletedProcess[str], *fragments: str) -> None:
    line = one_line_error(done)
    for fragment in fragments:
        assert fragment in line, line


@pytest.mark.parametrize("kind", ["json", "sqlite", "postgres"])
def test_a_waiting_run_is_answered_from_another_process_once(
    tmp_path: Path, kind: str, request: pytest.FixtureRequest
) -> None:
    store = {"json": "store", "sqlite": "store.db"}.get(kind) or request.getfixturevalue("pg_location")
    project, row = paused(tmp_path, store)
    assert row["status"] == "waiting" and row["trigger"] == "human_feedback_requested"
    request = row["request"]
    assert request["message"] == "Publish the [draft]?"
    assert request["method"] == "draft" and request["outcomes"] == ["approved", "rejected"]
    assert request["request_id"] and request["default_outcome"] == "approved"
    assert {r["status"] for r in listed(project, store)} == {"waiting"}
    table = run("list", store, cwd=project)
    assert "waiting" in table.stdout.splitlines()[1]

    done = run(
        "answer", row["id"][:10], "--location", store, "--outcome", "rejected", "--app", "review.py:flow", cwd=project
    )
    assert done.returncode == 0, done.stderr
    assert ran(project) == ["draft", "redone"]  # the right route, and the reviewed method did not run again

    again = run("answer", row["id"], "--location", store, "--accept", "--app", "review.py:flow", cwd=project)
    one_line_refusal(again, "already answered by ", "@", ": rejected")
    assert ran(project) == ["draft", "redone"]

    after = listed(project, store)
    assert "waiting" not in {r["status"] for r in after}
    assert all(r["request"] is None for r in after)
    assert any(r["trigger"] == "human_feedback_received" for r in after)


def test_answer_default_takes_the_default_outcome(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    done = run("answer", row["id"], "--location", "store", "--default", "--app", "review.py:flow", cwd=project)
    assert done.returncode == 0, done.stderr
    assert ran(project) == ["draft", "published"]


def test_accept_alone_on_a_request_with_outcomes_is_refused_naming_the_outcome_it_would_send(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    refused = run("answer", row["id"], "--location", "store", "--accept", "--app", "review.py:flow", cwd=project)
    one_line_refusal(refused, "approved, rejected", "would send the default, approved", "--outcome O", "--default")
    assert ran(project) == ["draft"]  # nothing claimed, nothing ran
    helped = run("answer", "--help", cwd=project)
    assert "needs --outcome O" in " ".join(helped.stdout.split())  # the rule is in the command's help
    done = run(
        "answer", row["id"], "--location", "store", "--accept", "--outcome", "rejected", "--app", "review.py:flow",
        cwd=project,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert ran(project) == ["draft", "redone"]  # the outcome named, not the default


def test_answers_a_command_refuses_in_one_line(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    waiting = row["id"]
    one_line_refusal(
        run("answer", waiting, "--location", "store", "--outcome", "maybe", cwd=project),
        "'maybe' is not offered",
        "approved, rejected",
    )
    one_line_refusal(
        run("answer", waiting, "--location", "store", "--feedback", "ok", "--accept", cwd=project),
        "--feedback or --accept",
    )
    one_line_refusal(run("answer", waiting, "--location", "store", cwd=project), "no terminal to ask in")
    earlier = row["parent_id"]
    one_line_refusal(
        run("answer", earlier, "--location", "store", "--accept", cwd=project), "is not waiting for feedback"
    )
    assert ran(project) == ["draft"]  # nothing ran
    assert [r["status"] for r in listed(project, "store")] == ["waiting", "waiting"]


def test_in_a_terminal_the_request_is_shown_literally_and_enter_sends_the_default_it_names(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    leader, follower = os.openpty()
    child = subprocess.Popen(
        [*CHECKPOINT, "answer", row["id"], "--location", "store", "--app", "review.py:flow"],
        cwd=project,
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=follower,
        text=True,
    )
    os.close(follower)
    seen = b""
    while (
        b"(Enter for the default: approved)" not in seen
    ):  # the prompt is the event waited on (the test's timeout bounds it)
        ready, _, _ = select.select([leader], [], [], 60)
        assert ready, seen
        seen += os.read(leader, 4096)
    shown = seen.decode()
    assert "Publish the [draft]?" in shown
    assert "Draft [bold]text[/bold] of the post" in shown  # the output under review, literally
    assert "approved (default), rejected" in shown
    os.write(leader, b"\n")
    _, _ = child.communicate(timeout=120)
    os.close(leader)
    assert child.returncode == 0
    assert ran(project) == ["draft", "published"]  # Enter: the default outcome, as the question said
