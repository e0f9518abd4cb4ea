"""The App field of the Resume, Fork and Answer dialogs refuses a program it cannot run in one place: the dialog
stays, the reason is notified once as an error (as data, not markup) and the field takes the focus."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.waiting import settle
from textual.app import App, ComposeResult
from textual.widgets import Button, Input

from crewpoint.tui.widgets.app_field import AppField


class _Dialog(App[None]):
    def __init__(self, spec: str) -> None:
        super().__init__()
        self.spec = spec

    def compose(self) -> ComposeResult:
        yield AppField(self.spec)
        yield Button("Run")


@pytest.mark.parametrize("spec", ["missing.py:crew", "[bold]nothing[/bold].py:crew", "no colon here"])
async def test_a_program_it_cannot_run_is_refused_with_its_reason_and_the_field_focused(spec: str) -> None:
    app = _Dialog(spec)
    async with app.run_test(size=(100, 20)) as pilot:
        await settle(pilot)
        field = app.query_one(AppField)
        app.query_one(Button).focus()
        reason = field.verify()
        assert reason is not None
        assert field.confirmed() is False
        await pilot.pause()
        assert app.focused is field.query_one(Input)
        assert [(n.severity, n.message, n.markup) for n in app._notifications] == [("error", reason, False)]


async def test_a_program_it_can_run_or_none_is_confirmed_quietly(tmp_path: Path) -> None:
    program = tmp_path / "prog.py"
    program.write_text("crew = None\n", encoding="utf-8")
    for spec in (f"{program}:crew", ""):
        app = _Dialog(spec)
        async with app.run_test(size=(100, 20)) as pilot:
            await settle(pilot)
            button = app.query_one(Button)
            button.focus()
            assert app.query_one(AppField).confirmed() is True
            await pilot.pause()
            assert app.focused is button and list(app._notifications) == []
