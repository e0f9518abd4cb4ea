"""A run that waits for a person: ``@human_feedback`` on flow methods, ``Task(human_input=True)`` on crew tasks.

After a reviewed method returns (or a task's agent answers), a person reviews the output. In an interactive
terminal the question is asked there. Otherwise the run waits durably: the pending request goes into the entity
state, a checkpoint with trigger ``human_feedback_requested`` is written (whatever ``on_events`` says), the run's
record reads ``waiting`` and ``kickoff()`` returns a :class:`FeedbackPending`. :func:`answer` (the API's
``kickoff(from_checkpoint=..., feedback=...)``, the CLI's ``answer`` and the app's Answer dialog alike) claims the
request in the store, so one answer wins, and resumes the run from that checkpoint with the answer.

``CREWPOINT_FEEDBACK``: ``wait`` always waits, ``ask`` asks on any stdin (tests), ``accept`` accepts at once.
"""

from __future__ import annotations

import os
import re
import sys
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from crewpoint.flow_review import FeedbackSpec as FeedbackSpec
from crewpoint.flow_review import HumanFeedbackResult as HumanFeedbackResult
from crewpoint.flow_review import human_feedback as human_feedback
from crewpoint.flow_review import spec_of
from crewpoint.providers.base import CheckpointError, CheckpointMeta

if TYPE_CHECKING:
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.entities import Entity
    from crewpoint.llm import BaseLLM
    from crewpoint.runtime import RuntimeState


MODE_VARIABLE = "CREWPOINT_FEEDBACK"
REQUESTED = "human_feedback_requested"
RECEIVED = "human_feedback_received"


@dataclass(frozen=True)
class FeedbackPending:
    """What ``kickoff()`` returns when the run waits for a person: the checkpoint holding the request and the
    command that answers it. A script that stops here may exit with ``ExitCode.WAITING`` (75)."""

    checkpoint_id: str
    location: str
    ref: str
    """What ``kickoff(from_checkpoint=...)`` and the command line take: a file path or ``store.db#id``."""
    message: str
    output: str
    outcomes: tuple[str, ...]
    request_id: str
    method: str | None = None
    task: str | None = None
    command: str = ""
    kind: str = "method"
    """``method`` (a ``@human_feedback`` review), ``task`` (a ``human_input`` task's review) or ``input`` (a
    value ``Flow.ask`` asked for, in ``method``)."""

    @property
    def label(self) -> str:
        return self.method or self.task or ""

    def __str__(self) -> str:
        what = {"method": f"feedback on method {self.method}", "input": f"input to method {self.method}"}
        said = what.get(self.kind, f"feedback on task {self.task!r}")
        return f"waiting for {said} ({self.message}); answer with: {self.command}"

    def __repr__(self) -> str:
        return f"FeedbackPending(checkpoint_id={self.checkpoint_id!r}, ref={self.ref!r}, command={self.command!r})"


@dataclass(frozen=True)
class Answer:
    """A person's answer to one request, as claimed in the store."""

    feedback: str = ""
    outcome: str | None = None
    who: str = ""
    at: float = field(default_factory=time.time)
    default: bool = False


class FeedbackWait(Exception):
    """Raised inside a run that stops to wait: the run's ``kickoff`` turns it into a :class:`FeedbackPending`."""

    def __init__(self, pending: FeedbackPending) -> None:
        super().__init__(str(pending))
        self.pending = pending


@runtime_checkable
class Answerable(Protocol):
    """An entity that can take an answer to its pending request before it resumes (Crew, Flow)."""

    def pending_request(self) -> dict[str, Any] | None: ...

    def accept_answer(self, answer: Answer) -> None: ...

    @property
    def runtime_state(self) -> RuntimeState | None: ...

    def resume(self) -> Any: ...


def who_am_i() -> str:
    # the user's and host's names load with the first answer, not with the API
    import getpass
    import socket

    try:
        user = getpass.getuser()
    except Exception:
        user = "someone"
    return f"{user}@{socket.gethostname()}"


# -- asking -----------------------------------------------------------------------------------------------------


def mode() -> str:
    """``ask`` (a person at this terminal), ``wait`` (durably) or ``accept`` (at once, ``CREWPOINT_FEEDBACK``)."""
    chosen = os.environ.get(MODE_VARIABLE, "").strip().lower()
    if chosen in ("wait", "ask", "accept"):
        return chosen
    try:
        interactive = sys.stdin.isatty() and sys.stdout.isatty()
    except (AttributeError, ValueError):
        interactive = False
    return "ask" if interactive else "wait"


def say_accepted(label: str, outcome: str | None, asked: bool = False) -> None:
    """One stderr line saying what ``CREWPOINT_FEEDBACK=accept`` sent for ``label`` (a method or a task): the
    outcome by name (the default outcome, which may be a rejection), the output accepted as it is, or, for
    ``asked`` (``Flow.ask``), an empty answer."""
    if asked:
        sent = "gave an empty answer to"
    elif outcome is not None:
        sent = f'accepted the default outcome "{shown(outcome)}" for'
    else:
        sent = "accepted the output as it is for"
    sys.stderr.write(f"feedback: {MODE_VARIABLE}=accept {sent} {shown(label)}\n")
    sys.stderr.flush()


_UNSEEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text: str) -> str:
    """``text`` as it is, with control and bidi characters escaped (``\\x1b``, ``\\u202e``) so a terminal shows
    exactly what the output holds; newlines and tabs stay."""
    return _UNSEEN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def ask_terminal(
    message: str, output: str, outcomes: Sequence[str], label: str, default_outcome: str | None = None
) -> str:
    """Ask the person at this terminal; an empty line (or the end of input) sends the default outcome (the
    ``default_outcome`` offered, else the first), or without outcomes accepts the output as it is."""
    out = sys.stdout
    rule = "-" * 60
    out.write(f"\n{rule}\n{shown(message)} ({shown(label)})\n{rule}\n{shown(output)}\n{rule}\n")
    if outcomes:
        default = default_outcome if default_outcome is not None and default_outcome in outcomes else outcomes[0]
        out.write(f"Outcomes: {', '.join(shown(o) for o in outcomes)}\n")
        out.write(f"Your feedback or an outcome (Enter for the default: {shown(default)}): ")
    else:
        out.write("Your feedback (Enter to accept the output as it is): ")
    out.flush()
    line = sys.stdin.readline()
    return line.rstrip("\r\n")


# -- the outcome --------------------------------------------------------------------------------------------------


def _words(text: str) -> list[str]:
    return re.findall(r"[^\W_]+", text.casefold())


def collapse(
    feedback: str, outcomes: Sequence[str], default_outcome: str | None = None, llm: BaseLLM | str | None = None
) -> str | None:
    """The outcome ``feedback`` means: ``None`` without outcomes; the default (or the first) for an empty one; an
    outcome it equals or names alone, word for word, without asking; else the one ``llm`` picks (the offline
    model: the outcome sharing the most words with it, ties by order); an answer that is no outcome: the default."""
    if not outcomes:
        return None
    fallback = default_outcome if default_outcome in outcomes else outcomes[0]
    text = feedback.strip()
    if not text:
        return fallback
    for outcome in outcomes:
        if text.casefold() == outcome.strip().casefold():
            return outcome
    named = [o for o in outcomes if re.search(rf"(?<!\w){re.escape(o.strip())}(?!\w)", text, re.IGNORECASE)]
    if len(named) == 1:
        return named[0]
    picked = _llm_pick(text, outcomes, llm)
    for outcome in outcomes:
        if picked.strip().strip("\"'.").casefold() == outcome.casefold():
            return outcome
    return fallback


def _llm_pick(text: str, outcomes: Sequence[str], llm: BaseLLM | str | None) -> str:
    # lazy: only a free-text answer asks a model (pydantic)
    from crewpoint.llm import OfflineLLM, resolve_llm

    model = resolve_llm(llm)
    if isinstance(model, OfflineLLM):
        said = set(_words(text))
        scores = [len(said & set(_words(o))) for o in outcomes]
        best = max(scores)
        return outcomes[scores.index(best)] if best else ""
    prompt = (
        "A person reviewed some work and gave this feedback:\n"
        f"{text}\n\n"
        f"Which one of these outcomes does the feedback mean: {', '.join(outcomes)}?\n"
        "Answer with the outcome only."
    )
    return model.invoke([{"role": "user", "content": prompt}])


def resolve_answer(request: Mapping[str, Any], answer: Answer, llm: BaseLLM | str | None = None) -> Answer:
    """``answer`` with its outcome settled against ``request`` (an outcome that is not offered is refused)."""
    outcomes = [str(o) for o in request.get("outcomes") or []]
    default = request.get("default_outcome")
    if answer.default:
        outcome = collapse("", outcomes, default)
        return Answer("", outcome, answer.who, answer.at, True)
    if answer.outcome is not None:
        if answer.outcome not in outcomes:
            offered = ", ".join(outcomes) if outcomes else "none (this request takes feedback only)"
            raise CheckpointError(f"outcome {answer.outcome!r} is not offered: the outcomes are {offered}")
        return answer
    return Answer(answer.feedback, collapse(answer.feedback, outcomes, default, llm), answer.who, answer.at)


def past_deadline(request: Mapping[str, Any], now: float | None = None) -> bool:
    deadline = request.get("deadline")
    return isinstance(deadline, int | float) and (time.time() if now is None else now) >= deadline


# -- waiting ------------------------------------------------------------------------------------------------------


def new_request(
    kind: str,
    label: str,
    message: str,
    output: str,
    outcomes: Sequence[str] = (),
    default_outcome: str | None = None,
    timeout: float | None = None,
    **where: Any,
) -> dict[str, Any]:
    now = time.time()
    return {
        "request_id": uuid.uuid4().hex,
        "kind": kind,
        "label": label,
        "message": message,
        "output": output,
        "outcomes": list(outcomes),
        "default_outcome": default_outcome,
        "requested_at": now,
        "deadline": now + timeout if timeout else None,
        "run_id": None,
        **where,
    }


def wait_here(state: RuntimeState | None, request: dict[str, Any]) -> FeedbackPending:
    """Write the checkpoint holding ``request`` (already in the entity state), mark the run waiting, and say how
    to answer it. A run with no store cannot wait: one line tells what to do."""
    if state is None or state.config is None:
        raise CheckpointError(
            f"{request['label']} waits for a person's feedback, but the run has no checkpoint store to wait in: "
            "pass checkpoint=True, or run it in a terminal to answer there"
        )
    # lazy: finding the program the answer command names reads pyproject.toml and folders, only when a run waits
    from crewpoint.checkpoint.program import command_app

    request["run_id"], request["branch"] = state.run_id, state.branch  # a fork's copy names its source's
    ref = state.checkpoint(trigger=REQUESTED)
    state.waiting = True
    checkpoint_id = state.written_id or ""
    kind = request["kind"]
    return FeedbackPending(
        checkpoint_id=checkpoint_id,
        location=str(state.config.location),
        ref=ref,
        message=str(request["message"]),
        output=str(request["output"]),
        outcomes=tuple(request.get("outcomes") or ()),
        request_id=str(request["request_id"]),
        method=request["label"] if kind != "task" else None,
        task=request["label"] if kind == "task" else None,
        command=command_for("answer", checkpoint_id, _store_of(state.config), command_app(state.origin)),
        kind=kind,
    )


def _store_of(config: CheckpointConfig) -> str:
    try:
        return config.provider.store_at(str(config.location))
    except CheckpointError:
        return str(config.location)


def write_received(state: RuntimeState | None) -> None:
    """The checkpoint after an answer given through the store (``human_feedback_received``), when there is one."""
    if state is not None and state.config is not None:
        state.checkpoint(trigger=RECEIVED)


# -- answering ----------------------------------------------------------------------------------------------------


SHORT_ID = 12
"""How many characters of an id a command names (as ``info`` and ``list`` show it)."""


def command_for(verb: str, checkpoint_id: str, store: str, app: str | None = None) -> str:
    """``crewpoint checkpoint VERB ID`` as a person types it, the one text every view shows: the short id when
    ``store`` is the one the command line finds by itself (``$CREWPOINT_CHECKPOINT_LOCATION``, else
    ``./.checkpoints``, else ``./.checkpoints.db``), else ``--location STORE ID`` (a URL without its password);
    then ``--app APP``, the program that runs it (:func:`crewpoint.checkpoint.program.command_app`), when given."""
    import shlex

    from crewpoint.providers import shown_location
    from crewpoint.providers.refs import short_id

    short = short_id(checkpoint_id, SHORT_ID, typeable=True)
    program = f" --app {shlex.quote(app)}" if app else ""
    if _found_by_default(store):
        return f"crewpoint checkpoint {verb} {short}{program}"
    return f"crewpoint checkpoint {verb} --location {shlex.quote(shown_location(store))} {short}{program}"


def command_at(verb: str, meta: CheckpointMeta, origin: object = None) -> str:
    """:func:`command_for` the checkpoint ``meta`` describes, in the store it lies in, naming the program its
    recorded ``origin`` (the body's ``origin``) or the project names."""
    # lazy: finding the program's spec reads pyproject.toml and folders, only when a command is named
    from crewpoint.checkpoint.program import command_app
    from crewpoint.providers import provider_for

    return command_for(verb, meta.id, provider_for(meta.location).store_of(meta), command_app(origin))


def _found_by_default(store: str) -> bool:
    from crewpoint.checkpoint.stores import DEFAULT_STORES
    from crewpoint.providers import is_url

    given = os.environ.get("CREWPOINT_CHECKPOINT_LOCATION")
    found = given or next((c for c in DEFAULT_STORES if os.path.exists(c)), None)
    if found is None:
        return False
    if is_url(found) or is_url(store):
        return found.rstrip("/") == store.rstrip("/")
    return os.path.realpath(found) == os.path.realpath(store)


def already_answered(claim: Mapping[str, Any], checkpoint_id: str, store: str) -> str:
    """The one line refusing a second answer: who answered, when, what, and where that answer is now (going on,
    gone on, or, when its process died before its first new checkpoint, the resume that goes on with it)."""
    # lazy: the claims and run records are read only for an answered request
    from crewpoint.feedback_claims import answered_line

    # lazy: the claims and run records are read only for an answered request
    from crewpoint.providers import provider_for

    return answered_line(provider_for(store), store, claim, checkpoint_id)


def answer_of(claim: Mapping[str, Any], who: str = "") -> Answer:
    """The :class:`Answer` a stored claim holds."""
    at = claim.get("at")
    return Answer(
        str(claim.get("feedback") or ""),
        claim.get("outcome") if isinstance(claim.get("outcome"), str) else None,
        str(claim.get("who") or who),
        float(at) if isinstance(at, int | float) else time.time(),
        bool(claim.get("default")),
    )


def claimed_answer(state: RuntimeState | None, request: Mapping[str, Any]) -> Answer | None:
    """The answer claimed for ``request`` at the checkpoint the run ``state`` resumes on its own branch (see
    :func:`crewpoint.feedback_claims.claimed_answer`), or None; a fork asks anew."""
    # lazy: the claims load with the first resumed request
    from crewpoint.feedback_claims import claimed_answer as claimed

    return claimed(state, request)


def deadline_answer(state: RuntimeState | None, request: Mapping[str, Any]) -> Answer | None:
    """The default answer of a request past its deadline, claimed (who: ``deadline``); None before it."""
    # lazy: the claims load with the first resumed request
    from crewpoint.feedback_claims import deadline_answer as by_deadline

    return by_deadline(state, request)


def answer(
    ref: CheckpointConfig | str | Path,
    *,
    feedback: str | None,
    outcome: str | None,
    who: str | None = None,
    app: Entity | str | None = None,
    default: bool = False,
    token: str | None = None,
) -> Any:
    """Answer the request the checkpoint ``ref`` waits on and resume the run with it; returns what the resumed
    run's ``kickoff`` returns (which may be another :class:`FeedbackPending`).

    ``app``: the program's own entity to bind the checkpoint to, or an app spec (``FILE.py:attr``); without it
    the entity is rebuilt from the checkpoint. ``default`` answers with the default outcome (``--default``).
    One answer wins per request: the store claims it atomically, and a later answer is refused in one line
    naming who answered. ``token`` lets a caller whose earlier answer crashed after its claim go on with it.
    """
    from crewpoint.checkpoint.restore import read_checked
    from crewpoint.checkpoint.restore_entities import reference_of, restore
    from crewpoint.checkpoint.stores import store_of

    source = reference_of(ref)
    record, body = read_checked(source)
    request = body["entity"].get("pending_feedback")
    if not isinstance(request, dict):
        raise CheckpointError(f"checkpoint {record.meta.id} is not waiting for feedback")
    mine = Answer(feedback or "", outcome, who or who_am_i(), time.time(), default)
    offered = [str(o) for o in request.get("outcomes") or []]
    if outcome is not None and outcome not in offered:  # refused before anything is claimed or run
        listed = ", ".join(offered) if offered else "none (this request takes feedback only)"
        raise CheckpointError(f"outcome {outcome!r} is not offered: the outcomes are {listed}")
    kind = body["entity"]["kind"]
    location = record.meta.location or source
    if app is None or isinstance(app, str):
        from crewpoint.checkpoint.plan import prepare_run

        entity: Any = prepare_run(location, app=app, record=record).entity
    else:
        restore(location, kind, fork_branch=None, target=app)
        entity = app
    if not isinstance(entity, Answerable):
        raise CheckpointError(f"a {kind} cannot take feedback")
    store = store_of(record)
    state = entity.runtime_state
    provider = state.config.provider if state is not None and state.config is not None else None
    if provider is None:
        from crewpoint.providers import provider_for

        provider = provider_for(store)
    if outcome is None and offered:  # settled before the claim: the claim says where the answer routes
        spec = spec_of(getattr(type(entity), str(request.get("method") or ""), None))
        outcome = collapse(
            "" if default else mine.feedback,
            offered,
            request.get("default_outcome"),
            spec.llm if spec is not None else None,
        )
    # lazy: the claims load with the first answer
    from crewpoint.feedback_claims import answer_value, claim_answer

    value = answer_value(mine, outcome, record.meta, state, token or uuid.uuid4().hex)
    won, claimed = claim_answer(provider, store, request, record.meta, value)
    if not won:
        raise CheckpointError(already_answered(claimed, record.meta.id, store))
    entity.accept_answer(answer_of(claimed, mine.who))
    return entity.resume()
