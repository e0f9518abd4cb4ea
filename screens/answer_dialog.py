"""The Answer dialog: a run waits for a person at a checkpoint; this shows what it asks and takes the answer.

It shows the request's message, the output under review (literally, scrollable: it is checkpoint data, never
markup; a huge one clipped, saying so), the outcomes as buttons, a feedback editor, and the program that runs on
and its budget (as the Resume dialog has them). It answers an :class:`~crewpoint.tui.run_controller.Answer`, or None
when cancelled; the browser runs it.

It opens with the cursor in the feedback editor, so what is typed first is the feedback; Ctrl+S sends the default
answer with it (the default outcome, or without outcomes the feedback, else Accept). However many outcomes a request
offers, at most :data:`MAX_BUTTONS` are buttons (the default among them); the rest are typed into a field that
completes them, under one line saying how many there are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.suggester import SuggestFromList
from textual.widgets import Button, Footer, Input, Label, Static, TextArea

from crewpoint.estimate import pending_tasks
from crewpoint.screens.resume_confirm import RunDialog
from crewpoint.tui.run_controller import Answer
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.task_card import clip_note, clipped

ACCEPT_ID = "answer-accept"
FEEDBACK_ID = "answer-send"
CANCEL_ID = "answer-cancel"
OTHER_ID = "answer-other"
MAX_BUTTONS = 6
"""Outcomes shown as buttons; the others are typed (a request may offer thousands)."""


class AnswerScreen(RunDialog[Answer | None]):
    """Answer the ``request`` (:func:`crewpoint.tui.store_index.pending_request`) of the checkpoint ``checkpoint``.

    With outcomes, each outcome is a button (the feedback text goes with it); without (a task's review), Accept
    takes the output as it is and Send gives the feedback for a revision. Escape cancels."""

    CSS_PATH = "answer_dialog.tcss"

    BINDINGS = [Binding("escape", "cancel", "Cancel"), Binding("ctrl+s", "send", "Send the default answer")]
    AUTO_FOCUS = None  # the feedback editor is focused when mounted

    def __init__(
        self,
        checkpoint: str,
        request: dict[str, Any],
        app: str | None,
        body: Mapping[str, Any] | None = None,
        later: str | None = None,
        see_all: str = "",
        plan_at: tuple[str, str] | None = None,
        fleet: str | None = None,
    ) -> None:
        super().__init__(app, body, later, plan_at, fleet)
        self.checkpoint = checkpoint
        self.see_all = see_all
        """The command that prints the checkpoint whole, named under a clipped output."""
        self.request = request
        self.outcomes: list[str] = [str(o) for o in request.get("outcomes") or []]
        offered = set(self.outcomes)
        default = request.get("default_outcome")
        self.default: str | None = default if default in offered else self.outcomes[0] if self.outcomes else None
        """The outcome an answer without one sends (Ctrl+S, and the command line's Enter)."""
        buttons = list(range(min(len(self.outcomes), MAX_BUTTONS)))
        chosen = self.outcomes.index(self.default) if self.default is not None else None
        if chosen is not None and chosen not in buttons:
            buttons[-1] = chosen
        self.buttons = buttons
        """The outcomes (their indexes) shown as buttons: the first few, and the default."""

    def compose(self) -> ComposeResult:
        request = self.request
        label = request.get("label") or request.get("method") or ""
        with Vertical(id="answer-dialog"):
            yield Label("Answer the run", id="answer-heading")
            with VerticalScroll(id="answer-body"):  # the buttons stay in sight on a short terminal: this scrolls
                about = f"{self.checkpoint[:12]} waits for a person" + (f" at {label}" if label else "")
                yield Static(Text(visible(about, one_line=True)), markup=False, id="answer-about")
                yield Static(Text(visible(request.get("message") or "")), markup=False, id="answer-message")
                output = str(request.get("output") or "")
                clip = clipped(output)
                with VerticalScroll(id="answer-output-box"):
                    yield Static(Text(visible(output if clip is None else clip)), markup=False, id="answer-output")
                if clip is not None:
                    note = clip_note(len(output), self.see_all)
                    yield Static(Text(visible(note, one_line=True)), markup=False, id="answer-clipped")
                if len(self.outcomes) > len(self.buttons):
                    more = f"{len(self.outcomes):,} outcomes: {len(self.buttons)} are buttons, type any other here"
                    yield Static(Text(visible(more, one_line=True)), markup=False, id="answer-more")
                    yield Input(
                        placeholder="an outcome (Tab completes, Enter answers)",
                        suggester=SuggestFromList(self.outcomes, case_sensitive=False),
                        id=OTHER_ID,
                    )
                yield TextArea(id="answer-feedback", soft_wrap=True, show_line_numbers=False)
                yield from self.estimate_field("answer", pending_tasks(self.body or {}))
                yield from self.plan_field("answer")
                yield from self.run_fields("answer")
            with Horizontal(id="answer-buttons"):
                default = request.get("default_outcome")
                for n in self.buttons:
                    outcome = self.outcomes[n]
                    yield Button(
                        Text(visible(outcome, one_line=True)),
                        variant="primary" if outcome == default else "default",
                        id=f"answer-outcome-{n}",
                        compact=True,
                    )
                if not self.outcomes:
                    yield Button("Accept", variant="primary", id=ACCEPT_ID, compact=True)
                    yield Button("Send feedback", id=FEEDBACK_ID, compact=True)
                yield Button("Cancel (esc)", id=CANCEL_ID, compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#answer-feedback", TextArea).border_title = "feedback (optional with an outcome)"
        self.query_one("#answer-output-box").border_title = "output under review"
        self.query_one("#answer-feedback", TextArea).focus()  # what is typed first is the feedback

    @property
    def feedback(self) -> str:
        return self.query_one("#answer-feedback", TextArea).text.strip()

    def answer(self, outcome: str | None = None, *, accept: bool = False) -> None:
        """Give the answer: an outcome (with the feedback written), or accept, or the feedback alone."""
        chosen = self.program_and_budget()
        if chosen is None:
            return
        app, budget = chosen
        feedback = None if accept else self.feedback or None
        if outcome is None and not accept and feedback is None:
            self.query_one("#answer-feedback", TextArea).focus()
            self.notify("Write the feedback first, or Accept.", severity="warning")
            return
        answer = Answer(
            outcome=outcome, feedback=feedback, accept=accept, app=app, budget=budget, fleet=self.on_fleet()
        )
        self.dismiss(answer)

    def action_send(self) -> None:
        """The default answer, with the feedback written: the default outcome; without outcomes, the feedback, or
        Accept when none is written."""
        if self.default is not None:
            self.answer(self.default)
        else:
            self.answer(accept=not self.feedback)

    @on(Input.Submitted, f"#{OTHER_ID}")
    def _typed(self, event: Input.Submitted) -> None:
        event.stop()
        typed = event.value.strip()
        found = next((o for o in self.outcomes if o == typed), None)
        found = found or next((o for o in self.outcomes if o.casefold() == typed.casefold()), None)
        if found is None:
            said = visible(f"{typed!r} is not one of the {len(self.outcomes):,} outcomes", one_line=True)
            self.notify(said, severity="warning", markup=False)
            return
        self.answer(found)

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed)
    def _pressed(self, event: Button.Pressed) -> None:
        name = event.button.id or ""
        if name.startswith("answer-outcome-"):
            self.answer(self.outcomes[int(name.rsplit("-", 1)[1])])
        elif name == ACCEPT_ID:
            self.answer(accept=True)
        elif name == FEEDBACK_ID:
            self.answer()
        elif name == CANCEL_ID:
            self.action_cancel()
