"""The Answer dialog takes what is typed first as the feedback, and no view holds a huge text whole: a request with
20,000 outcomes gets a few buttons and a field that completes the rest; an output of megabytes is clipped, read-only,
in the Answer dialog and the Tasks tab, with a line naming the command that prints all of it (which works)."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

from llm_server import LLMServer
from rich.console import Console
from support.cli import CHECKPOINT
from support.reading import choose, text_of
from support.waiting import settle, wait_until
from textual.app import App
from textual.pilot import Pilot
from textual.widgets import Button, Input, Static, TextArea

from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.screens.answer_dialog import MAX_BUTTONS, AnswerScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.run_controller import Answer
from crewpoint.tui.widgets.task_card import VIEW_LIMIT, TaskCard

SIZE = (120, 40)


class DialogApp(App[None]):
    """An app that opens one Answer dialog and keeps what it answers."""

    def __init__(self, request: dict[str, Any], see_all: str = "") -> None:
        super().__init__()
        self.request = request
        self.see_all = see_all
        self.answers: list[Answer | None] = []

    def on_mount(self) -> None:
        self.push_screen(
            AnswerScreen("0123456789abcdef", self.request, None, see_all=self.see_all), self.answers.append
        )


def review(outcomes: list[str], default: str | None, output: str = "Draft of the post") -> dict[str, Any]:
    return {
        "request_id": "r1",
        "kind": "method",
        "label": "draft",
        "method": "draft",
        "message": "Publish the draft?",
        "output": output,
        "outcomes": outcomes,
        "default_outcome": default,
    }


async def opened(pilot: Pilot[None]) -> AnswerScreen:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, AnswerScreen))
    await settle(pilot)
    dialog = pilot.app.screen
    assert isinstance(dialog, AnswerScreen)
    return dialog


async def test_what_is_typed_first_is_the_feedback_and_ctrl_s_sends_it_with_the_default_outcome() -> None:
    app = DialogApp(review(["approved", "rejected"], "rejected"))
    async with app.run_test(size=SIZE) as pilot:
        dialog = await opened(pilot)
        editor = dialog.query_one("#answer-feedback", TextArea)
        assert app.focused is editor
        await pilot.press(*"Say why", "enter", *"it matters")
        assert editor.text == "Say why\nit matters"  # typed into the editor, nothing dropped
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: bool(app.answers))
    answer = app.answers[0]
    assert answer is not None and (answer.outcome, answer.feedback) == ("rejected", "Say why\nit matters")


async def test_a_task_review_sends_the_feedback_typed_or_accepts_when_there_is_none() -> None:
    app = DialogApp(review([], None))
    async with app.run_test(size=SIZE) as pilot:
        dialog = await opened(pilot)
        assert app.focused is dialog.query_one("#answer-feedback", TextArea)
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: bool(app.answers))
    answer = app.answers[0]
    assert answer is not None and answer.accept and answer.feedback is None


async def test_twenty_thousand_outcomes_give_a_few_buttons_and_a_field_for_the_rest() -> None:
    outcomes = [f"outcome-{n}" for n in range(20_000)]
    app = DialogApp(review(outcomes, "outcome-15000"))
    async with app.run_test(size=SIZE) as pilot:
        dialog = await opened(pilot)
        labels = [str(b.label) for b in dialog.query("#answer-buttons Button").results(Button)]
        assert len(labels) == MAX_BUTTONS + 1 and labels[-1] == "Cancel (esc)"
        assert labels[:-2] == outcomes[: MAX_BUTTONS - 1] and labels[-2] == "outcome-15000"  # the default is there
        assert text_of(dialog.query_one("#answer-more")) == "20,000 outcomes: 6 are buttons, type any other here"
        field = dialog.query_one("#answer-other", Input)
        field.focus()
        await pilot.press(*"outcome-nope", "enter")
        await settle(pilot)
        assert app.screen is dialog and any("not one of the 20,000 outcomes" in n.message for n in app._notifications)
        field.value = ""
        await pilot.press(*"OUTCOME-19999", "enter")
        await wait_until(pilot, lambda: bool(app.answers))
    answer = app.answers[0]
    assert answer is not None and answer.outcome == "outcome-19999"


async def test_a_huge_output_under_review_is_clipped_saying_how_to_see_it_all() -> None:
    output = "tide " * 400_000  # 2,000,000 characters
    app = DialogApp(review(["approved", "rejected"], "approved", output), see_all="crewpoint checkpoint info X --json")
    async with app.run_test(size=SIZE) as pilot:
        dialog = await opened(pilot)
        assert len(text_of(dialog.query_one("#answer-output"))) <= VIEW_LIMIT
        note = text_of(dialog.query_one("#answer-clipped"))
        assert note.startswith(f"✂ clipped: the first {VIEW_LIMIT:,} of 2,000,000 characters shown")
        assert note.endswith("all of it: crewpoint checkpoint info X --json")


async def test_the_tasks_tab_clips_a_huge_output_read_only_and_its_command_prints_it_all(tmp_path: Path) -> None:
    huge = ("The tide comes in. " * 200_000).strip()  # 3,799,999 characters from a real model server
    with LLMServer() as server:
        server.reply = huge
        llm = LLM(model="gpt-4o-mini", base_url=server.base_url, provider="openai")
        writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
        tasks = [Task(name=name, description="Write.", expected_output="text", agent=writer) for name in ("a", "b")]
        Crew(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location="store")).kickoff()
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    app = make_app(str(tmp_path / "store"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await choose(pilot, newest.id)
        assert not list(screen.query(TaskCard))  # the Tasks tab is built when it first opens
        await pilot.press("2")
        await settle(pilot)
        cards = list(screen.query(TaskCard))
        assert len(cards) == 2
        for card in cards:
            editor = card.query_one(TextArea)
            assert len(editor.text) <= VIEW_LIMIT and huge.startswith(editor.text)
            assert editor.read_only  # an edit of a part would replace the whole
        note = text_of(cards[0].query_one(".task-clipped"))
        assert note.startswith(f"✂ clipped: the first {VIEW_LIMIT:,} of {len(huge):,} characters shown, read-only")
        command = note.split("all of it: ", 1)[1]
    assert command.startswith("crewpoint checkpoint info ") and command.endswith(" --json")
    words = shlex.split(command)  # run as pasted here, through this interpreter's crewpoint
    printed = subprocess.run([*CHECKPOINT, *words[2:]], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert printed.returncode == 0, printed.stderr
    assert [t["output"] for t in json.loads(printed.stdout)["tasks"]] == [huge, huge]


async def test_a_short_output_stays_whole_and_editable(tmp_path: Path) -> None:
    with LLMServer() as server:
        server.reply = "A short post."
        llm = LLM(model="gpt-4o-mini", base_url=server.base_url, provider="openai")
        writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
        post = Task(name="post", description="Write.", expected_output="text", agent=writer)
        Crew(agents=[writer], tasks=[post], checkpoint=CheckpointConfig(location="store")).kickoff()
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    app = make_app(str(tmp_path / "store"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await choose(pilot, newest.id)
        await pilot.press("2")
        await settle(pilot)
        (card,) = list(screen.query(TaskCard))
        assert card.query_one(TextArea).text == "A short post." and not card.query_one(TextArea).read_only
        assert not list(card.query(".task-clipped"))


HUGE_FLOW = """
from crewpoint import CheckpointConfig
from crewpoint.flow import Flow, start


class Big(Flow):
    @start()
    def dump(self):
        return "wave " * 200_000


Big(checkpoint=CheckpointConfig(location="store")).kickoff()
"""


async def test_the_overview_clips_a_huge_method_output_saying_how_to_see_it_all(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text(HUGE_FLOW, encoding="utf-8")
    done = subprocess.run([sys.executable, "big.py"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    app = make_app(str(tmp_path / "store"), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        screen = await choose(pilot, newest.id)
        body = screen.query_one("#overview-body", Static)
        console = Console(width=200, record=True, file=io.StringIO(), color_system=None)
        console.print(body.content)
        shown = console.export_text()
    assert len(shown) < 2 * VIEW_LIMIT  # not the 1,000,000 characters of the output
    flat = "".join(shown.split())
    assert "".join(f"✂ clipped: the first {VIEW_LIMIT:,} of 1,000,000 characters shown".split()) in flat
    assert "".join(f"all of it: crewpoint checkpoint info --location {tmp_path / 'store'}".split()) in flat
