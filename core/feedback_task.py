"""A crew task's review (``Task(human_input=True)``, CrewAI's semantics): after the agent's answer a person may
give feedback, the agent revises with it in its prompt, until the person accepts (an empty answer). Asked at a
terminal, or waited for durably like a flow method's review (see :mod:`crewpoint.feedback`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from crewpoint.feedback import (
    Answer,
    FeedbackWait,
    ask_terminal,
    claimed_answer,
    deadline_answer,
    mode,
    new_request,
    say_accepted,
    wait_here,
    who_am_i,
    write_received,
)

if TYPE_CHECKING:
    from crewpoint.runtime import RuntimeState


TASK_MESSAGE = "Review the task's answer: give feedback to have it revised, or accept it"


class ReviewedCrew(Protocol):
    """What :func:`review_task` needs of a crew."""

    id: str
    name: str

    @property
    def runtime_state(self) -> RuntimeState | None: ...

    def pending_request(self) -> dict[str, Any] | None: ...

    def _take_answer(self) -> Answer | None: ...

    def _set_pending(self, request: dict[str, Any] | None, answered: dict[str, Any] | None = None) -> None: ...


def review_task(crew: ReviewedCrew, index: int, task: Any, candidate: str, revise: Callable[[str, str], str]) -> str:
    """CrewAI's ``human_input``: after the agent's answer a person may give feedback, the agent revises with it,
    until the person accepts (an empty answer). Returns the accepted answer; raises :class:`FeedbackWait` when
    the run waits (the candidate answer is kept in the request, so the agent does not answer again)."""
    # lazy: the review's events load with the first review (pydantic)
    from crewpoint.events import HumanFeedbackReceivedEvent, HumanFeedbackRequestedEvent, event_bus

    pending = crew.pending_request()
    request = pending if pending is not None and pending.get("task_index") == index else None
    if request is not None:
        candidate = str(request.get("output") or "")
    ids = {"method_name": task.label, "task_id": task.id, "crew_id": crew.id}
    while True:
        given, durable = None, False
        if request is not None:
            given = crew._take_answer() or claimed_answer(crew.runtime_state, request)
            given = given or deadline_answer(crew.runtime_state, request)
            durable = given is not None
        if given is None:
            how = mode()
            if how == "accept":
                given = Answer(who=who_am_i())
                say_accepted(task.label, None)
            elif how == "ask":
                given = Answer(ask_terminal(TASK_MESSAGE, candidate, (), task.label), who=who_am_i())
            else:
                if request is None:
                    request = new_request(
                        "task", task.label, TASK_MESSAGE, candidate, task_index=index, task_id=task.id
                    )
                crew._set_pending(request)
                event_bus.emit(
                    crew,
                    HumanFeedbackRequestedEvent(**ids, message=TASK_MESSAGE, request_id=request["request_id"]),
                )
                raise FeedbackWait(wait_here(crew.runtime_state, request))
        text = "" if given.default else given.feedback.strip()
        request_id = request["request_id"] if request is not None else None
        crew._set_pending(
            None,
            {"task_index": index, "task": task.label, "output": candidate, "feedback": text, "who": given.who,
             "answered_at": given.at, "request_id": request_id},
        )  # fmt: skip
        event_bus.emit(
            crew,
            HumanFeedbackReceivedEvent(**ids, feedback=text, outcome=None, who=given.who, request_id=request_id),
        )
        if durable:
            write_received(crew.runtime_state)
        if not text:
            return candidate
        candidate = revise(candidate, text)
        request = None


def revision_prompt(previous: str, feedback: str) -> str:
    """What the agent is told when a person asks for a revision."""
    return (
        f"Your previous answer:\n{previous}\n\nA person reviewed it and gave this feedback:\n{feedback}\n\n"
        "Revise your answer to address the feedback."
    )
