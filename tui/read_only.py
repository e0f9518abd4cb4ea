"""Read-only mode (``crewpoint checkpoint --read-only``, and ``serve --read-only`` for browsers): look, change
nothing. The app checks it where its actions start: bindings, the command palette and the editable fields."""

from __future__ import annotations

from textual.actions import parse
from textual.dom import DOMNode

WRITE_ACTIONS = frozenset({"resume", "fork", "answer", "edit", "cancel_run", "prune"})
"""Actions that start a run, change a run, or change the store."""

NOTICE = "Read-only: resume, fork, answer, edit, cancel and prune are turned off."


def is_read_only(node: DOMNode) -> bool:
    """Is the app ``node`` belongs to (or ``node``, an app) read-only?"""
    try:
        app = node.app
    except Exception:  # not attached to a running app
        return False
    return bool(getattr(app, "read_only", False))


def allows(node: DOMNode, action: str) -> bool:
    """May ``action`` (an action name or string such as ``"fork"``) run in ``node``'s app?"""
    return not (is_read_only(node) and parse(action)[1] in WRITE_ACTIONS)
