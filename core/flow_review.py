"""A flow's person in the loop: ``@human_feedback`` on a method (CrewAI's decorator), the review after such a
method returns, and :meth:`Flow.ask <crewpoint.flow.Flow.ask>` (a method asking a person for a value).

Both ask at this terminal, or make the run wait durably (the request in the flow's state, a checkpoint, a
:class:`~crewpoint.feedback.FeedbackPending`); the machinery they share with a crew task's review is
:mod:`crewpoint.feedback`. The public names are importable from :mod:`crewpoint.flow`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from crewpoint.flow import Flow
    from crewpoint.llm import BaseLLM

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class FeedbackSpec:
    """What ``@human_feedback`` asked for a method."""

    message: str
    emit: tuple[str, ...] = ()
    default_outcome: str | None = None
    llm: Any = None
    timeout: float | None = None


def human_feedback(
    message: str,
    emit: Sequence[str] | None = None,
    default_outcome: str | None = None,
    llm: BaseLLM | str | None = None,
    timeout: float | None = None,
) -> Callable[[F], F]:
    """After the flow method returns, a person reviews its output (CrewAI's ``@human_feedback``).

    Without ``emit`` the method's listeners receive a :class:`HumanFeedbackResult`; with ``emit`` the answer is
    collapsed to one of the outcomes, which routes the flow like a router's label (``@listen("approved")``), and
    the outcome's listeners receive the result. ``default_outcome`` answers an empty feedback and a request whose
    ``timeout`` (seconds) has passed when the run is resumed.
    """
    outcomes = tuple(emit or ())
    if any(not isinstance(o, str) or not o.strip() for o in outcomes) or len(set(outcomes)) != len(outcomes):
        raise ValueError("human_feedback(emit=...) takes distinct, non-empty outcome names")
    if default_outcome is not None and outcomes and default_outcome not in outcomes:
        raise ValueError(f"default_outcome {default_outcome!r} is not one of emit: {', '.join(outcomes)}")
    if timeout is not None and timeout <= 0:
        raise ValueError("human_feedback(timeout=...) takes a number of seconds above 0")
    spec = FeedbackSpec(message, outcomes, default_outcome, llm, timeout)

    def decorator(fn: F) -> F:
        fn.__crewpoint_feedback__ = spec  # type: ignore[attr-defined]
        return fn

    return decorator


def spec_of(method: Any) -> FeedbackSpec | None:
    found = getattr(method, "__crewpoint_feedback__", None)
    return found if isinstance(found, FeedbackSpec) else None


@dataclass
class HumanFeedbackResult:
    """A person's review of a method's output: the ``output`` reviewed, their ``feedback`` text, the ``outcome``
    it was collapsed to (``None`` without ``emit``), when (``answered_at``, epoch seconds) and who (``user@host``)."""

    output: Any
    feedback: str
    outcome: str | None
    answered_at: float
    answered_by: str
    method: str

    def to_state(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "feedback": self.feedback,
            "outcome": self.outcome,
            "answered_at": self.answered_at,
            "answered_by": self.answered_by,
            "method": self.method,
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> HumanFeedbackResult:
        at = data.get("answered_at")
        return cls(
            output=data.get("output"),
            feedback=str(data.get("feedback") or ""),
            outcome=data.get("outcome") if isinstance(data.get("outcome"), str) else None,
            answered_at=float(at) if isinstance(at, int | float) else 0.0,
            answered_by=str(data.get("answered_by") or ""),
            method=str(data.get("method") or ""),
        )


def text_of(value: Any) -> str | None:
    """A method's output as text (a crew's output by its raw text)."""
    if value is None:
        return None
    raw = getattr(value, "raw", None)
    return raw if isinstance(raw, str) else str(value)


def ask(flow: Flow[Any], prompt: str, timeout: float | None = None) -> str | None:
    """:meth:`Flow.ask <crewpoint.flow.Flow.ask>`: the value a person gives, from the resumed run's answer, this
    terminal, or after the run waits for it (:class:`~crewpoint.feedback.FeedbackWait`)."""
    # lazy: the ways of asking and their events load with the first question
    from crewpoint import feedback as hf

    # lazy: the ways of asking and their events load with the first question
    from crewpoint.events import (
        FlowInputReceivedEvent,
        FlowInputRequestedEvent,
        FlowPausedEvent,
        MethodExecutionPausedEvent,
        event_bus,
    )

    if flow._asking is None:
        raise RuntimeError("Flow.ask() is for a flow method while the flow runs")
    index, number, name = flow._asking
    flow._asking = (index, number + 1, name)
    key = f"{index}:{number}"
    if key in flow._given:
        return flow._given[key]
    pending = flow._pending
    request = pending if pending is not None and pending.get("key") == key else None
    given = flow._answer if request is not None else None
    flow._answer = None if given is not None else flow._answer
    if given is None and request is not None:
        given = hf.claimed_answer(flow._runtime, request) or hf.deadline_answer(flow._runtime, request)
    if given is None:
        how = hf.mode()
        if how == "wait":
            request = request or hf.new_request("input", name, prompt, "", (), None, timeout, index=index, key=key)
            flow._pending = request
            ids = {"flow_name": flow.entity_name, "flow_id": flow.id, "method_name": name}
            event_bus.emit(flow, FlowInputRequestedEvent(**ids, prompt=prompt))
            event_bus.emit(flow, MethodExecutionPausedEvent(**ids, reason="flow_input"))
            event_bus.emit(flow, FlowPausedEvent(**ids, reason="flow_input"))
            raise hf.FeedbackWait(hf.wait_here(flow._runtime, request))
        text = hf.ask_terminal(prompt, "", (), name) if how == "ask" else ""
        given = hf.Answer(text, who=hf.who_am_i())
        if how == "accept":
            hf.say_accepted(name, None, asked=True)
    value = None if given.default else given.feedback
    flow._given[key], flow._pending = value, None
    ids = {"flow_name": flow.entity_name, "flow_id": flow.id, "method_name": name}
    event_bus.emit(flow, FlowInputReceivedEvent(**ids, value=value))
    if request is not None:
        hf.write_received(flow._runtime)
    return value


def review(flow: Flow[Any], name: str, index: int, output: Any, spec: FeedbackSpec) -> HumanFeedbackResult:
    """A person reviews the output of method ``name``: the answer given to the resumed run (or claimed in the
    store by an answer that stopped before it went on), else asked at this terminal, else the run waits
    (:class:`~crewpoint.feedback.FeedbackWait`, turned into a ``FeedbackPending``)."""
    # lazy: the review's events and its ways of asking load with the first review
    from crewpoint import feedback as hf

    # lazy: the review's events and its ways of asking load with the first review
    from crewpoint.events import (
        FlowPausedEvent,
        HumanFeedbackReceivedEvent,
        HumanFeedbackRequestedEvent,
        MethodExecutionPausedEvent,
        event_bus,
    )

    done = flow._feedback.get(index)
    if done is not None:
        return done
    pending = flow._pending
    request = pending if pending is not None and pending.get("index") == index else None
    given, durable, accepted = None, False, False
    if request is not None and flow._answer is not None:
        given, durable, flow._answer = flow._answer, True, None
    elif request is not None:
        given = hf.claimed_answer(flow._runtime, request) or hf.deadline_answer(flow._runtime, request)
        durable = given is not None
    if given is None:
        how = hf.mode()
        if how == "accept":
            given, accepted = hf.Answer(who=hf.who_am_i()), True
        elif how == "ask":
            asked = hf.ask_terminal(spec.message, text_of(output) or "", spec.emit, name, spec.default_outcome)
            given = hf.Answer(asked, who=hf.who_am_i())
        else:
            if request is None:
                outcomes, default = spec.emit, spec.default_outcome
                request = hf.new_request(
                    "method", name, spec.message, text_of(output) or "", outcomes, default, spec.timeout,
                    method=name, index=index,
                )  # fmt: skip
            flow._pending = request
            ids = {"flow_name": flow.entity_name, "flow_id": flow.id, "method_name": name}
            event_bus.emit(
                flow,
                HumanFeedbackRequestedEvent(
                    **ids, message=spec.message, request_id=request["request_id"], outcomes=list(spec.emit)
                ),
            )
            event_bus.emit(flow, MethodExecutionPausedEvent(**ids, reason="human_feedback"))
            event_bus.emit(flow, FlowPausedEvent(**ids, reason="human_feedback"))
            raise hf.FeedbackWait(hf.wait_here(flow._runtime, request))
    offered = {"outcomes": list(spec.emit), "default_outcome": spec.default_outcome}
    settled = hf.resolve_answer(request or offered, given, spec.llm)
    if accepted:
        hf.say_accepted(name, settled.outcome)
    result = HumanFeedbackResult(output, settled.feedback, settled.outcome, settled.at, settled.who, name)
    flow._feedback[index] = result
    flow._pending = None
    event_bus.emit(
        flow,
        HumanFeedbackReceivedEvent(
            flow_name=flow.entity_name,
            flow_id=flow.id,
            method_name=name,
            feedback=settled.feedback,
            outcome=settled.outcome,
            who=settled.who,
            request_id=request["request_id"] if request is not None else None,
        ),
    )
    if durable:
        hf.write_received(flow._runtime)
    return result
