"""One request, one waiting entry: a plain resume that waits again holds the request its source held, asked anew
at its own checkpoint, and its source's run record still says ``waiting``; ``list``, ``list --json``, the tree and
the app's title show the request waiting once, at the newest checkpoint that holds it. An answer is claimed for the
checkpoint it was given at. Real flows paused in real processes."""

from __future__ import annotations

from pathlib import Path

from support.reading import browser
from support.review import listed, ran, run
from support.waiting import wait_until
from test_answer_cli import paused

from crewpoint.tui.app import make_app
from crewpoint.tui.store_index import SegmentRef


def _waits_again(project: Path, checkpoint_id: str) -> str:
    """Resume ``checkpoint_id`` plainly (the run waits again, exit 75); the id of the checkpoint it waits at."""
    before = {row["id"] for row in listed(project, "store")}
    again = run("resume", checkpoint_id, "--location", "store", "--app", "review.py:flow", cwd=project)
    assert again.returncode == 75, again.stderr
    (new,) = [row for row in listed(project, "store") if row["id"] not in before]
    assert new["trigger"] == "human_feedback_requested"
    return str(new["id"])


def _resumed_twice(tmp_path: Path) -> tuple[Path, str, str, str]:
    """A waiting run resumed from its waiting checkpoint twice: the first resume continues its branch segment,
    the second starts one of its own. All three checkpoints hold the same request."""
    project, row = paused(tmp_path)
    first = str(row["id"])
    second = _waits_again(project, first)
    third = _waits_again(project, first)
    assert ran(project) == ["draft"]  # the reviewed method ran once; the resumes waited on its output
    return project, first, second, third


def test_list_shows_each_request_waiting_once_at_its_newest_checkpoint(tmp_path: Path) -> None:
    project, first, second, third = _resumed_twice(tmp_path)
    rows = listed(project, "store")
    held = [row for row in rows if row["request"] is not None]
    assert [row["id"] for row in held] == [third]
    assert held[0]["request"]["method"] == "draft"
    assert {row["id"] for row in rows if row["status"] == "waiting"} == {third}
    assert {row["status"] for row in rows if row["id"] in (first, second)} == {"interrupted"}

    table = run("list", "store", cwd=project)
    assert table.returncode == 0, table.stderr
    status_of = {line.split()[0]: line.split()[-1] for line in table.stdout.splitlines()[1:]}
    assert [short for short, word in status_of.items() if word == "waiting"] == [third[:12]]

    answer = ["--location", "store", "--outcome", "rejected", "--app", "review.py:flow"]
    done = run("answer", third, *answer, cwd=project)
    assert done.returncode == 0, done.stderr  # the newest checkpoint's request takes its one answer
    after = listed(project, "store")
    assert all(row["request"] is None for row in after)
    assert "waiting" not in {row["status"] for row in after}
    again = run("answer", third, *answer, cwd=project)
    assert again.returncode == 2 and "already answered by " in again.stderr, again.stderr
    assert ran(project) == ["draft", "redone"]


async def test_the_tree_and_the_title_count_the_request_once(tmp_path: Path) -> None:
    project, first, second, third = _resumed_twice(tmp_path)
    app = make_app(str(project / "store"), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: screen.feed.index.runs and screen.waiting_runs() == 1)
        assert screen.title == "crewpoint · ◷ 1 waiting"
        index = screen.feed.index
        assert index.segment_of[first] == index.segment_of[second] != index.segment_of[third]
        waiting = [key for key, segment in index.segments.items() if index.state_of(segment) == "waiting"]
        assert waiting == [index.segment_of[third]]
        label = screen.ckpt_tree._label_for(SegmentRef(index.segment_of[second])).plain
        assert "waiting" not in label
