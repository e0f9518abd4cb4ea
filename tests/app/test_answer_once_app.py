"""In the app, Answer on a request someone has answered says who answered, when and what, instead of nothing."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from support.review import run
from support.waiting import wait_until
from test_answer_app import SIZE, choose
from test_answer_cli import paused
from textual.widgets import Button

from crewpoint.screens.answer_dialog import AnswerScreen
from crewpoint.tui.app import make_app


async def test_answer_on_an_answered_request_names_who_answered_when_and_what(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    waiting = row["id"]
    done = run(
        "answer", waiting, "--location", "store", "--outcome", "rejected", "--app", "review.py:flow", cwd=project
    )
    assert done.returncode == 0, done.stderr
    app = make_app(str(project / "store"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await choose(pilot, waiting)
        await pilot.press("a")

        def said() -> list[str]:
            return [n.message for n in app._notifications if "was answered by " in n.message]

        await wait_until(pilot, lambda: bool(said()))
        (line,) = said()
        assert line.startswith("This request was answered by ") and "@" in line and line.endswith(": rejected.")
        assert not isinstance(app.screen, AnswerScreen) and not app.screen.query(Button).filter("#answer-outcome-0")
        assert screen.run_panel.request is None  # nothing ran


async def test_answer_reads_the_claim_off_the_screens_thread(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import crewpoint.feedback_claims as claims

    project, row = paused(tmp_path)
    read_on: list[threading.Thread] = []
    answer_at = claims.answer_at

    def watched(*args: Any) -> Any:
        read_on.append(threading.current_thread())
        return answer_at(*args)

    monkeypatch.setattr(claims, "answer_at", watched)
    app = make_app(str(project / "store"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, row["id"])
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))  # unanswered: the dialog asks
        assert read_on and threading.main_thread() not in read_on
        await pilot.press("escape")
