"""The command palette's checkpoint commands: what the current screen can do with what is selected."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from crewpoint.tui.read_only import allows
from crewpoint.tui.widgets.tabs import TABS

Command = tuple[str, str, str]
"""(title, help, action)"""


@runtime_checkable
class HasCommands(Protocol):
    def palette_commands(self) -> list[Command]: ...

    def run_action(self, action: str) -> object: ...


class CheckpointCommands(Provider):
    """Fork, resume, mark, cancel, graph, filter, refresh and tabs, as the screen offers them now."""

    def _commands(self) -> list[tuple[str, str, Callable[[], object]]]:
        screen = self.screen
        if not isinstance(screen, HasCommands):
            return []
        return [
            (title, help, partial(screen.run_action, action))
            for title, help, action in screen.palette_commands()
            if allows(screen, action)
        ]

    async def discover(self) -> Hits:
        for title, help, run in self._commands():
            yield DiscoveryHit(title, run, help=help)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, help, run in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), run, help=help)


def browser_commands(chosen: str | None, ready: bool, marked: str | None, run: str) -> list[Command]:
    """What the browser can do now: with the ``chosen`` checkpoint (``ready``: loaded), the ``marked`` one, and the
    run panel's ``run`` ("going", "shown" once it ended, or "")."""
    commands: list[Command] = []
    if chosen is not None and ready:
        commands += [
            (f"Fork {chosen[:8]}", "Start a new branch from this checkpoint, with the edits made", "fork"),
            (f"Resume {chosen[:8]}", "Continue the run from this checkpoint", "resume"),
        ]
    if chosen is not None:
        label = "Clear the diff mark" if marked == chosen else f"Mark {chosen[:8]} for diff"
        commands.append((label, "The Diff tab compares other checkpoints with the marked one", "mark"))
    if run == "going":
        commands.append(("Cancel the run", "Send SIGINT: the run stops; its checkpoints stay", "cancel_run"))
    elif run == "shown":
        commands.append(("Hide the run panel", "Close the finished run's log", "hide_run"))
    commands += [
        ("Branch graph", "Show every checkpoint as a lane graph (g)", "graph"),
        ("Filter checkpoints", "By text, branch:NAME or trigger:NAME (/)", "filter"),
        ("Refresh", "Read the store again (r)", "refresh"),
    ]
    commands += [
        (f"Show the {t.title} tab", f"Switch the detail panel to {t.name}", f"show_tab('{t.name}')") for t in TABS
    ]
    return commands
