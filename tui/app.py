"""The terminal app ``crewpoint checkpoint``: a thin App that opens the browser screen on a store."""

from __future__ import annotations

import gc
from collections.abc import Mapping
from importlib import resources

from rich.text import Text
from textual import on
from textual.actions import ActionParseResult
from textual.app import App
from textual.binding import Binding, BindingType
from textual.dom import DOMNode
from textual.screen import Screen

from crewpoint.providers import is_postgres_location
from crewpoint.screens.browser import BrowserScreen
from crewpoint.screens.confirm import ConfirmScreen
from crewpoint.screens.help import HelpScreen, keys_of
from crewpoint.tui.feed import StoreReader
from crewpoint.tui.fleet_view import Fleet
from crewpoint.tui.messages import StoreListed
from crewpoint.tui.read_only import NOTICE, WRITE_ACTIONS, allows
from crewpoint.tui.widgets.palette import CheckpointCommands


class CheckpointApp(App[None]):
    """Browse, inspect, edit, resume and fork checkpoints; watch runs live."""

    TITLE = "crewpoint"
    CSS_PATH = ["app.tcss", str(resources.files("crewpoint.screens") / "browser.tcss")]
    """The browser's sheet too, found by its package: it is the app's first screen, and textual loads a screen's
    own sheet only for screens opened later."""
    COMMANDS = App.COMMANDS | {CheckpointCommands}
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark,f1", "help", "Help", key_display="?"),
        Binding("ctrl+p", "command_palette", "Command palette", show=False),
    ]

    def __init__(
        self,
        location: str,
        *,
        follow: bool = True,
        read_only: bool = False,
        reader: StoreReader | None = None,
        fleet: Fleet | None = None,
    ) -> None:
        """``reader`` (``make_app``'s) reads the store from the moment the app loads; without it the screen reads
        the store once it is up. ``fleet``: the store's fleet (``make_app``'s, on a PostgreSQL store). Nothing
        starts here."""
        super().__init__()
        self.location = location
        self.follow = follow
        self.read_only = read_only
        if read_only:
            self.title = f"{self.TITLE} (read-only)"
        self._first_read = reader
        self.fleet = fleet
        self._collector_paused = False

    def on_load(self) -> None:
        # Starting up allocates tens of thousands of objects (widgets, the store's metadata) that all stay: the
        # cyclic collector would walk them again and again for nothing. It resumes once the tree is drawn.
        if self._first_read is not None:
            self._first_read.start()  # the first read goes on while the app is drawn
        if gc.isenabled():
            gc.disable()
            self._collector_paused = True

    def get_default_screen(self) -> Screen[None]:
        return BrowserScreen(self.location, follow=self.follow, first_read=self._first_read, fleet=self.fleet)

    @on(StoreListed)
    def _listed(self) -> None:
        if self._collector_paused:
            self.call_after_refresh(self._resume_collector)

    def _resume_collector(self) -> None:
        if self._collector_paused:
            self._collector_paused = False
            gc.enable()

    def on_unmount(self) -> None:
        self._resume_collector()

    async def run_action(
        self,
        action: str | ActionParseResult,
        default_namespace: DOMNode | None = None,
        namespaces: Mapping[str, DOMNode] | None = None,
    ) -> bool:
        """Every key, palette command and click runs its action through here: read-only refuses the writing ones."""
        name = action if isinstance(action, str) else action[1]
        if not allows(self, name):
            self.notify(NOTICE, severity="warning")
            return False
        return await super().run_action(action, default_namespace, namespaces)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        keys = [
            ("↑ ↓", "Move in the tree; the detail follows"),
            ("← →", "Close a branch or go to its parent; open a branch or go into it"),
            ("shift+↑ shift+↓", "Previous or next sibling in the tree"),
            ("shift+← shift+→", "To the parent; to the parent's next sibling"),
            ("space", "Open or close a branch"),
            ("shift+space", "Open or close everything under a branch"),
            ("enter", "On a checkpoint: edit its outputs (Tasks tab) or inputs (Inputs tab)"),
            ("tab shift+tab", "Move between the tree, the tabs and the editors"),
        ]
        bindings = [b for b in BrowserScreen.BINDINGS if not (self.read_only and _action_of(b) in WRITE_ACTIONS)]
        keys += keys_of(bindings) + keys_of(list(self.BINDINGS))
        self.push_screen(HelpScreen(keys))

    async def action_quit(self) -> None:
        """Quit; first ask when edits are unsaved or a run this app started is going."""
        screen = self.screen
        if not isinstance(screen, BrowserScreen):
            self.exit()
            return
        worries = []
        unsaved = screen.edits.quit_worry()
        if unsaved is not None:
            worries.append(unsaved)
        if screen.run_panel.running:
            worries.append("a run started here is going (it is stopped with SIGINT; its checkpoints stay)")
        if not worries:
            self.exit()
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.exit()

        question = Text("Quit with " + " and ".join(worries) + "?")
        self.push_screen(ConfirmScreen("Quit crewpoint", question, yes="Quit"), answered)


def _action_of(binding: BindingType) -> str:
    return binding.action if isinstance(binding, Binding) else binding[1]


def make_app(location: str, *, watch: bool = True, read_only: bool = False) -> App[None]:
    """The app on the store at ``location``; ``watch=False`` turns off following changes on disk (tests);
    ``read_only`` turns off resume, fork, edit, cancel and prune."""
    return CheckpointApp(
        location, follow=watch, read_only=read_only, reader=StoreReader(location), fleet=fleet_of(location)
    )


def fleet_of(location: str) -> Fleet | None:
    """The fleet of a store on PostgreSQL (whether it has one is read later, off the app's thread); None elsewhere."""
    if not is_postgres_location(location):
        return None
    # lazy: the fleet's engine is the PostgreSQL extra's (procrastinate loads only when a job is queued or stopped)
    from crewpoint.tui.cli.fleet_link import FleetLink

    return FleetLink(location)
