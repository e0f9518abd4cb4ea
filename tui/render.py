"""Plain render helpers shared by the app's widgets and screens: run-state marks, times, label spans, problems.

Headless: rich's text only, never textual, so any module may draw with them.
"""

from __future__ import annotations

import time

from rich.text import Span, Text

from crewpoint.checkpoint.schema import SCHEMA_VERSION
from crewpoint.providers.base import CheckpointMeta

STATE_MARKS = {
    "running": ("● live", "live"),
    "waiting": ("◷ waiting", "marked"),
    "answered": ("✓ answered", "muted"),
    "budget": ("■ stopped: budget", "stopped"),
    "finished": ("✓ done", "muted"),
    "interrupted": ("■ interrupted", "stopped"),
    "crashed": ("✗ crashed", "damaged"),
    "failed": ("✗ failed", "damaged"),
    "lost": ("? lost", "stopped"),
}
"""How a branch's run state shows in its label, and with which component style."""


def format_time(stamp: float, now: float | None = None) -> str:
    """``HH:MM:SS`` today, ``MM-DD HH:MM`` on another day (local time)."""
    local = time.localtime(stamp)
    today = time.localtime(now if now is not None else time.time())
    if local[:3] == today[:3]:
        return time.strftime("%H:%M:%S", local)
    return time.strftime("%m-%d %H:%M", local)


def attach_gaps(text: Text) -> Text:
    """Let the spaces between styled parts end the part before them instead of opening the next one.

    A terminal shows both the same, but an exported screenshot draws each styled run as its own text element, and
    some renderers drop the spaces that open an element: "research-crew  2 branches" would read
    "research-crew2 branches". Touching parts of one style become one run. Changes ``text`` in place and returns
    it.
    """
    plain = text.plain
    size = len(plain)
    spans: list[Span] = []
    for start, end, style in text.spans:
        while start < end and plain[start] == " ":
            start += 1
        while end < size and plain[end] == " ":
            end += 1
        if start >= end:
            continue
        if spans and spans[-1].end == start and spans[-1].style == style:
            spans[-1] = Span(spans[-1].start, end, style)  # one run, so a wide glyph cannot eat its space
        else:
            spans.append(Span(start, end, style))
    text.spans = spans
    return text


def problem_of(meta: CheckpointMeta) -> str | None:
    """Why a checkpoint cannot be opened, if it cannot."""
    if meta.damaged:
        return meta.damaged
    if meta.schema_version > SCHEMA_VERSION:
        return f"written by a newer crewpoint (schema {meta.schema_version}); upgrade to open it"
    return None
