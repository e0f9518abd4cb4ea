"""Reading what the app holds, not what a terminal of some width happens to show after wrapping."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.content import Content
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import RichLog

from crewpoint.screens.browser import BrowserScreen
from support.waiting import settle


def browser(pilot: Pilot[Any]) -> BrowserScreen:
    """The app's browser screen (the test fails when another screen is on top)."""
    screen = pilot.app.screen
    assert isinstance(screen, BrowserScreen), screen
    return screen


def text_of(widget: Widget) -> str:
    """The text a widget was given to show (a ``Static``'s or ``Label``'s content), before any wrapping."""
    content = getattr(widget, "content", None)
    if content is None:
        content = widget.render()
    if isinstance(content, Text | Content):
        return content.plain
    return str(content)


def log_text(log: RichLog) -> str:
    """Everything a ``RichLog`` holds, its wrapped lines joined back into one line of words."""
    return " ".join(" ".join("".join(segment.text for segment in strip) for strip in log.lines).split())


def screen_text(pilot: Pilot[Any]) -> str:
    """What the terminal shows now, as plain text lines (the screen and any toast or modal on top).

    For short fixed words only (a status mark, a button's label): text that holds a path or anything of
    varying length may wrap or be cut, so read it from its widget with :func:`text_of`."""
    strips = pilot.app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


async def choose(pilot: Pilot[Any], checkpoint_id: str) -> BrowserScreen:
    """Put the tree's cursor on ``checkpoint_id`` once the app has settled, and let its detail load: the browser,
    showing that checkpoint (the test fails when the tree has no such checkpoint)."""
    await settle(pilot)
    screen = browser(pilot)
    assert screen.ckpt_tree.reveal(checkpoint_id)
    await settle(pilot)
    assert screen.detail.meta is not None and screen.detail.meta.id == checkpoint_id
    return screen


def notifications(app: Any) -> list[str]:
    """Every message the app notifies from now on, in order. A toast leaves ``app._notifications`` when its time
    is up, which on a busy machine can come before the test looks; this list keeps them."""
    said: list[str] = []
    notify = app.notify

    def recording(message: Any, *args: Any, **kwargs: Any) -> Any:
        said.append(str(message))
        return notify(message, *args, **kwargs)

    app.notify = recording
    return said
