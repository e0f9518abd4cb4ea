"""Fault 9 in the app: the fork dialog applies the same branch-name rule as the API and the command line."""

from __future__ import annotations

from pathlib import Path

from test_app import SIZE, browser, choose, settle, sorted_metas, store, template_store, wait_until
from textual.widgets import Input, Static

from crewpoint.screens.fork_confirm import ForkScreen
from crewpoint.tui.app import make_app

__all__ = ["store", "template_store"]


async def test_the_fork_dialog_refuses_what_the_api_refuses_and_accepts_what_it_accepts(store: Path) -> None:
    app = make_app(str(store), watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        source = sorted_metas(screen, "main")[0]  # one task done: the fork runs the other three
        await choose(pilot, source.id)
        screen.ckpt_tree.focus()
        await pilot.press("f")
        await pilot.pause()
        fork_screen = pilot.app.screen
        assert isinstance(fork_screen, ForkScreen)
        branch = fork_screen.query_one("#fork-branch", Input)
        error = fork_screen.query_one("#fork-branch-error", Static)
        branch.focus()
        for bad in ("a b", "../x", ".hidden"):
            branch.value = bad
            await pilot.press("enter")
            await pilot.pause()
            assert pilot.app.screen is fork_screen
            assert "invalid branch name" in str(error.render())
        branch.value = "team/what-if"  # a slash is allowed everywhere
        await pilot.press("enter")
        await pilot.pause()
        assert pilot.app.screen is screen
        await wait_until(pilot, lambda: not screen.run_panel.running and screen.run_panel.has_class("-ok"))
        await settle(pilot)
        forked = sorted_metas(screen, "team/what-if")
        assert len(forked) == 3 and forked[0].parent_id == source.id
