"""The terminal app ``crewpoint checkpoint``: a thin App that opens the browser screen on a store."""

from __future__ import annotations

from textual.app import App
from textual.binding import Binding

from crewpoint.screens.browser import BrowserScreen
from crewpoint.screens.help import HelpScreen, keys_of
from crewpoint.tui.widgets.palette import CheckpointCommands


class CheckpointApp(App[None]):
    """Browse, inspect, edit, resume and fork checkpoints; watch runs live."""

    TITLE = "crewpoint"
    CSS_PATH = "app.tcss"
    COMMANDS = App.COMMANDS | {CheckpointCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help", key_display="?"),
        Binding("ctrl+p", "command_palette", "Commands", show=False),
    ]

    def __init__(self, location: str, *, follow: bool = True) -> None:
        super().__init__()
        self.location = location
        self.follow = follow

    def on_mount(self) -> None:
        self.push_screen(BrowserScreen(self.location, follow=self.follow))

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        keys = keys_of(list(BrowserScreen.BINDINGS)) + keys_of(list(self.BINDINGS))
        keys += [("ctrl+p", "Command palette: every action, themes"), ("↑ ↓ ← → enter", "Move and open in the tree")]
        self.push_screen(HelpScreen(keys))


def make_app(location: str, *, watch: bool = True) -> App[None]:
    """The app on the store at ``location``; ``watch=False`` turns off following changes on disk (tests)."""
    return CheckpointApp(location, follow=watch)
