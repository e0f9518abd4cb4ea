"""The Inputs tab: the kickoff inputs and every ``{placeholder}``, each in an editable field."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import Input, Label, Static

from crewpoint.checkpoint.ops import CheckpointInfo
from crewpoint.tui.read_only import is_read_only
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import EditedDetail
from crewpoint.tui.widgets.overview_view import shown
from crewpoint.tui.widgets.tab_view import ViewFilled


class InputsView(VerticalScroll):
    """The inputs of ``edited`` (with its changed ones), redrawn when it changes. Posts
    :class:`InputsView.InputsEdited` with the inputs as edited (all of them) and which changed."""

    DEFAULT_CSS = """
    InputsView { padding: 0 1; }
    InputsView > #inputs-summary { margin-bottom: 1; }
    InputsView .input-row { height: auto; margin-bottom: 1; }
    InputsView .input-row Label { text-style: bold; }
    InputsView .input-row.-changed Label { color: $warning; }
    """

    @dataclass
    class InputsEdited(Message):
        checkpoint_id: str
        inputs: dict[str, Any]
        changed: dict[str, str]

    edited: reactive[EditedDetail | None] = reactive(None, init=False, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.original: dict[str, Any] = {}
        self.keys: list[str] = []
        self.changed: dict[str, str] = {}
        self.checkpoint_id: str | None = None
        self._generation = 0

    def compose(self) -> ComposeResult:
        yield Static("", id="inputs-summary", markup=False)

    async def watch_edited(self, edited: EditedDetail | None) -> None:
        if edited is not None:
            await self.show(edited.detail.info, edited.detail.status, edited.edits.inputs)
            self.post_message(ViewFilled(self, edited))

    async def show(self, info: CheckpointInfo | None, message: str = "", changed: dict[str, str] | None = None) -> None:
        self._generation += 1
        self.checkpoint_id = info.meta.id if info is not None else None
        self.changed = dict(changed or {})
        await self.remove_children(".input-row")
        summary = self.query_one("#inputs-summary", Static)
        if info is None:
            self.original, self.keys = {}, []
            summary.update(Text(message or "No inputs.", style="dim"))
            return
        self.original = dict(info.inputs)
        self.keys = list(dict.fromkeys([*info.inputs, *info.placeholders]))
        if not self.keys:
            summary.update(Text("This checkpoint takes no inputs.", style="dim"))
            return
        hint = " (read-only)" if is_read_only(self) else " Edit, then fork (f)."
        summary.update(Text(f"Inputs from the original kickoff, plus every {{placeholder}}.{hint}"))
        rows = []
        for position, key in enumerate(self.keys):
            value = shown(self.original[key]) if key in self.original else ""
            value = self.changed.get(key, value)
            rows.append(
                Vertical(
                    Label(Text(visible(key, one_line=True))),
                    Input(
                        value=value,
                        placeholder=f"{{{key}}}",
                        disabled=is_read_only(self),
                        select_on_focus=False,
                        id=f"input-{self._generation}-{position}",
                    ),
                    classes="input-row -changed" if key in self.changed else "input-row",
                )
            )
        await self.mount_all(rows)

    def current(self) -> dict[str, Any]:
        """The inputs as edited: the originals with every changed field applied."""
        return {**self.original, **self.changed}

    @on(Input.Changed)
    def _changed(self, event: Input.Changed) -> None:
        event.stop()
        if (
            event.input.id is None
            or self.checkpoint_id is None
            or not event.input.id.startswith(f"input-{self._generation}-")
        ):
            return  # a field of a checkpoint shown before
        key = self.keys[int(event.input.id.rsplit("-", 1)[1])]
        before = shown(self.original[key]) if key in self.original else ""
        if event.value == before:
            self.changed.pop(key, None)
        else:
            self.changed[key] = event.value
        row = event.input.parent
        if row is not None:
            row.set_class(key in self.changed, "-changed")
        self.post_message(self.InputsEdited(self.checkpoint_id, self.current(), dict(self.changed)))
