"""The app and a waiting run: the tree's ◷ waiting mark, the status:waiting filter, the title's count, the Answer
dialog (its widgets, and an outcome button that runs the answer), read-only mode, and a run that starts waiting
while the app is open. Real flows paused in real processes (:mod:`test_answer_cli`)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

from chromium import Chromium, stop_group
from support.reading import browser, log_text, notifications, text_of
from support.review import REVIEW, ran
from support.stores import make_store
from support.waiting import settle, wait_until
from test_answer_cli import paused
from textual.pilot import Pilot
from textual.widgets import Button, Input, RichLog, TextArea

from crewpoint.screens.answer_dialog import AnswerScreen
from crewpoint.screens.browser import BrowserScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.read_only import allows
from crewpoint.tui.run_controller import RunRequest
from crewpoint.tui.store_index import CheckpointRef, SegmentRef
from crewpoint.tui.widgets.palette import CheckpointCommands
from crewpoint.tui.widgets.run_panel import RunPanel

SIZE = (140, 40)


def mark(screen: BrowserScreen, checkpoint_id: str) -> str:
    """The tree's line for the branch segment holding ``checkpoint_id``."""
    index = screen.feed.index
    return screen.ckpt_tree._label_for(SegmentRef(index.segment_of[checkpoint_id])).plain


def line(screen: BrowserScreen, checkpoint_id: str) -> str:
    """The tree's line for the checkpoint ``checkpoint_id``."""
    return screen.ckpt_tree._label_for(CheckpointRef(checkpoint_id)).plain


def offered(screen: BrowserScreen) -> bool:
    """Does the screen offer Answer (its key enabled, so the footer shows it)?"""
    return any(b.action == "answer" and enabled for _, b, enabled, _ in screen.active_bindings.values())


async def choose(pilot: Pilot[None], checkpoint_id: str) -> BrowserScreen:
    screen = browser(pilot)
    await wait_until(pilot, lambda: screen.ckpt_tree.reveal(checkpoint_id))

    def shown() -> bool:  # no settle: a watching app's watcher never completes
        chosen = screen.selected
        return chosen is not None and chosen.ready and chosen.meta.id == checkpoint_id

    await wait_until(pilot, shown)
    return screen


async def test_the_tree_marks_filters_counts_and_answers_a_waiting_run(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    waiting, first = row["id"], row["parent_id"]
    app = make_app(str(project / "store"), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: screen.waiting_runs() == 1)
        assert "◷ waiting" in mark(screen, waiting)
        assert screen.title == "crewpoint · ◷ 1 waiting"
        assert line(screen, waiting).startswith("◷ ") and not line(screen, first).startswith("◷")

        search = screen.query_one("#filter", Input)
        search.value = "status:waiting"
        await wait_until(pilot, lambda: screen.feed.index.query == "status:waiting")
        assert set(screen.feed.index.metas) == {waiting, first}
        search.value = "status:done"
        await wait_until(pilot, lambda: screen.feed.index.query == "status:done")
        assert not screen.feed.index.metas
        search.value = ""
        await wait_until(pilot, lambda: not screen.feed.index.query and waiting in screen.feed.index.metas)

        await choose(pilot, first)  # a checkpoint its run went on from holds no request: no Answer offered
        assert not [c for c in screen.palette_commands() if c[2] == "answer"]
        assert not offered(screen)
        await choose(pilot, waiting)
        await wait_until(pilot, lambda: offered(screen))  # the footer offers a on the checkpoint it waits at
        titles = [title for title, *_ in CheckpointCommands(screen)._commands()]
        assert f"Answer {waiting[:8]}" in titles
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
        dialog = app.screen
        assert isinstance(dialog, AnswerScreen)
        assert text_of(dialog.query_one("#answer-message")) == "Publish the [draft]?"
        assert text_of(dialog.query_one("#answer-output")) == "Draft [bold]text[/bold] of the post"  # literally
        labels = [str(button.label) for button in dialog.query("#answer-buttons Button").results(Button)]
        assert labels == ["approved", "rejected", "Cancel (esc)"]
        assert dialog.query_one("#answer-outcome-0", Button).variant == "primary"  # the default outcome
        dialog.query_one("#answer-feedback", TextArea).text = "Say why it [matters]"
        dialog.query_one("#answer-app Input", Input).value = f"{project / 'review.py'}:flow"
        budget = dialog.query_one("#answer-budget Input", Input)
        budget.value = "lots"
        dialog.query_one("#answer-outcome-1", Button).press()
        refused = "budget 'lots' is not a number of dollars (like 5 or 2.50)"  # in the dialog, in one line
        await wait_until(pilot, lambda: text_of(dialog.query_one("#answer-budget .budget-error")) == refused)
        assert app.screen is dialog and screen.run_panel.request is None
        budget.value = "3"
        before = len(screen.metas)
        dialog.query_one("#answer-outcome-1", Button).press()
        await wait_until(pilot, lambda: app.screen is screen)
        request = screen.run_panel.request
        assert request is not None and request.argv[4] == "answer"
        assert request.argv[request.argv.index("--budget") + 1] == "3"  # the run answered goes on with it
        await wait_until(pilot, lambda: screen.run_panel.has_class("-ok") and not screen.run_panel.running, 60)
        assert ran(project) == ["draft", "redone"]  # the rejected route ran; the reviewed method did not again
        await wait_until(pilot, lambda: any(m.trigger == "human_feedback_received" for m in screen.metas))
        assert len(screen.metas) > before
        await wait_until(pilot, lambda: screen.waiting_runs() == 0)
        assert screen.title is None
        assert "◷ waiting" not in mark(screen, waiting)
        assert not line(screen, waiting).startswith("◷")


async def test_at_80x24_the_answer_buttons_stay_in_sight_and_the_rest_scrolls(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    app = make_app(str(project / "store"), watch=False)
    async with app.run_test(size=(80, 24)) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: screen.waiting_runs() == 1)  # its run's record read: it waits
        await choose(pilot, row["id"])
        await wait_until(pilot, lambda: offered(screen))
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
        dialog = app.screen
        await settle(pilot)
        shown = dialog.region
        buttons = list(dialog.query("#answer-buttons Button").results(Button))
        assert [str(b.label) for b in buttons] == ["approved", "rejected", "Cancel (esc)"]
        for button in buttons:  # on the screen, whole
            assert button.region.height > 0 and shown.contains_region(button.region), str(button.label)
        budget = dialog.query_one("#answer-budget Input", Input)
        budget.focus()  # below the fold: focusing it scrolls it into sight
        await settle(pilot)
        assert budget.region.height > 0 and shown.contains_region(budget.region)


async def test_read_only_refuses_answering(tmp_path: Path) -> None:
    project, row = paused(tmp_path)
    app = make_app(str(project / "store"), watch=False, read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: screen.waiting_runs() == 1)
        await choose(pilot, row["id"])
        assert not allows(screen, "answer") and not offered(screen)
        assert not [t for t, *_ in CheckpointCommands(screen)._commands() if t.startswith("Answer")]
        await pilot.press("a")
        await settle(pilot)  # the app does not watch here: every worker completes
        assert app.screen is screen and not screen.run_panel.running
        assert ran(project) == ["draft"]


async def test_a_run_that_starts_waiting_shows_in_an_open_app(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "review.py").write_text(REVIEW)
    env = {**os.environ, "CREWPOINT_FEEDBACK": "accept"}
    done = await asyncio.create_subprocess_exec(sys.executable, "review.py", cwd=project, env=env)
    assert await done.wait() == 0  # a first run, answered at once: a store with a finished run
    app = make_app(str(project / "store"), watch=True)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: bool(screen.metas))
        assert screen.waiting_runs() == 0 and screen.title is None
        env["CREWPOINT_FEEDBACK"] = "wait"
        waiting = await asyncio.create_subprocess_exec(sys.executable, "review.py", cwd=project, env=env)
        assert await waiting.wait() == 75
        await wait_until(pilot, lambda: screen.waiting_runs() == 1)
        held = [m for m in screen.metas if m.trigger == "human_feedback_requested"]
        assert any("◷ waiting" in mark(screen, m.id) for m in held)
        assert screen.title == "crewpoint · ◷ 1 waiting"


# -- in a browser, through serve ------------------------------------------------------------------------------


async def test_a_waiting_run_is_answered_in_a_browser(tmp_path: Path) -> None:
    project, _ = paused(tmp_path)
    (project / "pyproject.toml").write_text('[tool.crewpoint]\napp = "review.py:flow"\n')  # the program runs on
    token = "-".join(["answer", "token", str(2**40)])  # a test value, assembled here only
    command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "serve", "--location", "store"]
    server = subprocess.Popen(
        [*command, "--port", "0", "--token", token],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        url = (await asyncio.wait_for(asyncio.to_thread(server.stdout.readline), 20)).decode().strip()
        assert url.startswith("http://127.0.0.1:"), url
        async with Chromium(width=1400, height=900) as page:
            await page.open(url)
            await page.wait_for_text("◷ 1 waiting")  # the title's count
            await page.wait_for_text("◷ waiting")  # the branch's mark; the cursor is on its newest checkpoint
            await page.wait_for_text("human_feedback_requested")
            await page.press("a")
            shown = await page.wait_for_text("Answer the run")
            assert "Publish the [draft]?" in shown and "Draft [bold]text[/bold] of the post" in shown
            await page.wait_for_text("rejected")
            await page.press("s", ctrl=True)  # Ctrl+S from the feedback editor: the default outcome, approved
            await page.wait_for_text("(approved) on main: finished")  # the app's word when the run ends
            await page.wait_for_text("human_feedback_received")
        assert ran(project) == ["draft", "published"]
    finally:
        stop_group(server)
        for pipe in (server.stdout, server.stderr):
            if pipe is not None:
                pipe.close()


CREW = """
import sys

from crewpoint import Agent, CheckpointConfig, Crew, Task

writer = Agent(role="Writer", goal="write well", llm="offline")
post = Task(description="Write about tides", expected_output="a post", agent=writer, name="post", human_input=True)
crew = Crew(agents=[writer], tasks=[post], checkpoint=CheckpointConfig(location="store"))

if __name__ == "__main__":
    crew.kickoff(inputs={})
"""


async def test_a_task_review_is_accepted_or_revised_from_the_dialog(tmp_path: Path) -> None:
    (tmp_path / "crew.py").write_text(CREW)
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    waited = await asyncio.create_subprocess_exec(sys.executable, "crew.py", cwd=tmp_path, env=env)
    assert await waited.wait() == 0
    app = make_app(str(tmp_path / "store"), watch=False)
    said = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await settle(pilot)
        assert screen.waiting_runs() == 1

        async def answer_dialog() -> AnswerScreen:
            await pilot.press("a")
            await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
            assert isinstance(app.screen, AnswerScreen)
            return app.screen

        dialog = await answer_dialog()
        labels = [str(button.label) for button in dialog.query("#answer-buttons Button").results(Button)]
        assert labels == ["Accept", "Send feedback", "Cancel (esc)"]  # a task's review has no outcomes
        assert app.focused is dialog.query_one("#answer-feedback", TextArea)  # what is typed is the feedback
        dialog.query_one("#answer-send", Button).press()  # no feedback written: refused, the dialog stays
        await pilot.pause()
        assert app.screen is dialog and any("feedback first" in message for message in said)
        dialog.query_one("#answer-feedback", TextArea).text = "Mention the moon."
        dialog.query_one("#answer-send", Button).press()
        await wait_until(pilot, lambda: app.screen is screen)
        await wait_until(pilot, lambda: not screen.run_panel.running and screen.run_panel.has_class("-shown"), 60)
        await settle(pilot)  # revised, the run waits for the person again: a new request on a newer checkpoint
        assert any("waits for a person's answer" in message for message in said)
        assert screen.waiting_runs() == 1
        requested = [m for m in screen.metas if m.trigger == "human_feedback_requested"]
        assert len(requested) == 2 and screen.ckpt_tree.chosen_id == max(requested, key=lambda m: m.sequence).id

        dialog = await answer_dialog()
        await pilot.press("ctrl+s")  # the default answer: with no feedback written, Accept
        await wait_until(pilot, lambda: app.screen is screen)
        await wait_until(pilot, lambda: screen.run_panel.has_class("-ok") and not screen.run_panel.running, 60)
        await settle(pilot)
        assert screen.waiting_runs() == 0 and screen.title is None


QUEUED_ANSWER = """
from crewpoint.tui.run_protocol import LOG, QUEUED, ProgressRecord
print(ProgressRecord(LOG, text="watch it with: crewpoint worker --status --location team").to_json(), flush=True)
print(ProgressRecord(QUEUED, text="queued job 7: a worker goes on with the answered run").to_json(), flush=True)
"""


async def test_an_answer_the_fleet_goes_on_with_ends_queued_in_the_panel_and_the_notice(tmp_path: Path) -> None:
    """The answer command's records for a run of the fleet (its real protocol lines, from a real child process):
    the run panel says the job, and the notice says it is queued, never that the run finished."""
    store = make_store(str(tmp_path / "store"))
    app = make_app(store, watch=False)
    said = notifications(app)
    async with app.run_test(size=SIZE) as pilot:
        screen = browser(pilot)
        await settle(pilot)
        request = RunRequest([sys.executable, "-c", QUEUED_ANSWER], "answer abc on main", "main", source_id="abc")
        screen.run_panel.start(request)
        await wait_until(pilot, lambda: any(s.startswith("answer abc on main:") for s in said), 60)
        panel = screen.query_one(RunPanel)
        assert "⇢ queued job 7: a worker goes on with the answered run" in log_text(panel.query_one(RichLog))
    assert [s for s in said if s.startswith("answer abc on main:")] == [
        "answer abc on main: queued job 7: a worker goes on with the answered run"
    ]


def test_the_answer_dialog_s_run_on_the_fleet_becomes_the_command_s_on_fleet() -> None:
    from crewpoint.tui.run_controller import Answer, answer_command

    here = answer_command("abc", "postgresql://team/db", Answer(accept=True, app="crew_app.py:crew"))
    there = answer_command("abc", "postgresql://team/db", Answer(accept=True, app="crew_app.py:crew", fleet=True))
    assert "--on-fleet" not in here
    assert [a for a in there if a not in here] == ["--on-fleet"]
    assert there[there.index("--app") + 1] == "crew_app.py:crew"
