"""The command palette's checkpoint commands: what the current screen can do with what is selected."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Protocol, runtime_checkable

from textual.command import DiscoveryHit, Hit, Hits, Provider

from crewpoint.tui.read_only import allows


@runtime_checkable
class HasCommands(Protocol):
    def palette_commands(self) -> list[tuple[str, str, str]]: ...

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
