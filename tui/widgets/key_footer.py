"""The footer of key bindings, rebuilt only when the keys it shows change.

Textual's footer rebuilds its keys on every focus change and screen update; each rebuild mounts a widget per key.
This one compares what it would show with what it shows and skips the rebuild when nothing changed, and makes
its keys in the footer's style from the start. Only Textual's public API is used: a key is any widget the footer
composes that has a ``compact`` reactive.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import Footer


class KeyFooter(Footer):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shown: tuple[tuple[str, str, bool, str], ...] | None = None

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            compact = getattr(type(widget), "compact", None)
            if isinstance(compact, Reactive):  # a key, born in the footer's style: no restyle of each key on mount
                widget.set_reactive(compact, self.compact)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        keys = tuple(
            (binding.key, binding.description, enabled, tooltip)
            for (_node, binding, enabled, tooltip) in screen.active_bindings.values()
            if binding.show or binding.key == self.app.COMMAND_PALETTE_BINDING
        )
        if keys == self._shown:  # set only below, just before the footer first draws its keys
            return
        if self.app.app_focus:  # a blurred app (a browser tab in the background) draws its keys once focused
            self._shown = keys
        super().bindings_changed(screen)
