"""One answer per request, by structure: the claims behind :func:`crewpoint.feedback.answer`.

A request is identified by its id and the checkpoint that holds it (:func:`~crewpoint.providers.claims.claim_key`):
the same request copied into a fork's checkpoint, or into a resume's that asked again, is another request, and a
claim is only ever taken by a run resuming the checkpoint it was made for, on that checkpoint's branch. A claim
is checked against the request's offer when it is made and whenever it is read: one whose outcome is not offered
is damaged, said in one line and passed over (the next key, ``.1``, ``.2``, takes the answer), so it never routes
and never leaves a request stuck. A resume that finds the request answered goes on with that answer only when the
answering process died before its first new checkpoint; while it runs, or once it went on, the resume is refused
saying so.
"""

from __future__ import annotations

import logging
import os
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from crewpoint.feedback import RECEIVED, SHORT_ID, Answer, answer_of, collapse, command_for, past_deadline
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.claims import KEY_RE, claim_key

if TYPE_CHECKING:
    from crewpoint.providers.base import BaseProvider, CheckpointMeta, CheckpointRecord
    from crewpoint.runtime import RuntimeState

log = logging.getLogger("crewpoint.feedback")

MAX_ATTEMPTS = 8
"""How many claim keys a request may try past damaged claims before it is refused as damaged."""
DEADLINE = "deadline"
"""Who a deadline's default answer is claimed by."""


class AnswerTaken(CheckpointError):
    """A resume refused because the answer to its request goes, or went, on elsewhere (one line: who answered,
    when, what, and where the answer is); the command line says it and exits 2, as any refusal."""


def claim_problem(claim: Mapping[str, Any], request: Mapping[str, Any]) -> str | None:
    """Why ``claim`` cannot be the answer to ``request`` (an outcome it does not offer), or None."""
    offered = [str(o) for o in request.get("outcomes") or []]
    outcome = claim.get("outcome")
    if outcome is not None and not isinstance(outcome, str):
        return f"its outcome is {type(outcome).__name__}, not text"
    if offered and outcome not in offered:
        return f"its outcome {outcome!r} is not offered (the outcomes are {', '.join(offered)})"
    if not offered and outcome is not None:
        return f"its outcome {outcome!r} is not offered (this request takes feedback only)"
    return None


def _damaged(where: str, problem: str) -> None:
    log.warning("crewpoint: %s: damaged claim ignored: %s", where, problem)


def request_claim(
    provider: BaseProvider, store: str, request: Mapping[str, Any], checkpoint_id: str
) -> tuple[dict[str, Any] | None, int]:
    """The claim answering ``request`` held at ``checkpoint_id`` (None: unanswered), and the attempt a new claim
    takes. A damaged claim (unreadable, too big, an outcome not offered) is said and passed over."""
    request_id = str(request.get("request_id"))
    for attempt in range(MAX_ATTEMPTS):
        key = claim_key(request_id, checkpoint_id, attempt)
        try:
            claim = provider.read_claim(store, key)
        except CheckpointError as exc:
            _damaged(key, str(exc))
            continue
        if claim is None and attempt == 0:
            claim = _claim_before_keys_named_checkpoints(provider, store, request_id, checkpoint_id)
        if claim is None:
            return None, attempt
        problem = claim_problem(claim, request)
        if problem is None:
            return claim, attempt
        _damaged(key, problem)
    raise CheckpointError(f"request {request_id} at {checkpoint_id}: {MAX_ATTEMPTS} damaged claims; none is taken")


def _claim_before_keys_named_checkpoints(
    provider: BaseProvider, store: str, request_id: str, checkpoint_id: str
) -> dict[str, Any] | None:
    """A claim stored under the request id alone (as stores kept them before), when it names this checkpoint."""
    if KEY_RE.fullmatch(request_id) is None:
        return None
    try:
        claim = provider.read_claim(store, request_id)
    except CheckpointError:
        return None
    return claim if claim is not None and claim.get("checkpoint_id") == checkpoint_id else None


def claim_request(
    provider: BaseProvider, store: str, request: Mapping[str, Any], checkpoint_id: str, value: Mapping[str, Any]
) -> dict[str, Any]:
    """Claim ``request`` held at ``checkpoint_id`` with ``value`` (its outcome checked against the offer first):
    the claim that stands, ours when its ``token`` is ours."""
    problem = claim_problem(value, request)
    if problem is not None:
        raise CheckpointError(f"this answer cannot be claimed: {problem}")
    found, first = request_claim(provider, store, request, checkpoint_id)
    if found is not None:
        return found
    request_id = str(request.get("request_id"))
    for attempt in range(first, MAX_ATTEMPTS):
        key = claim_key(request_id, checkpoint_id, attempt)
        try:
            won = provider.claim(store, key, {**value, "key": key})
        except CheckpointError as exc:
            try:
                stood = provider.read_claim(store, key)
            except CheckpointError:
                stood = {}  # a damaged value stands under this key
            if stood is None:
                raise  # nothing stands there: the store itself refused (read-only, gone)
            _damaged(key, str(exc))  # the next key takes the answer
            continue
        problem = claim_problem(won, request)
        if problem is None:
            return won
        _damaged(key, problem)
    raise CheckpointError(f"request {request_id} at {checkpoint_id}: {MAX_ATTEMPTS} damaged claims; none is taken")


def answer_value(
    answer: Answer, outcome: str | None, record_meta: CheckpointMeta, state: RuntimeState | None, token: str
) -> dict[str, Any]:
    """What a claim holds: the answer, the checkpoint and branch it was made for, and the run that goes on with
    it (its id, process and host: a resume tells from them whether it still runs)."""
    # lazy: the host's name is asked only when an answer is claimed
    from crewpoint.providers.runs import this_host

    return {
        "token": token,
        "feedback": answer.feedback,
        "outcome": outcome,
        "who": answer.who,
        "at": answer.at,
        "default": answer.default,
        "checkpoint_id": record_meta.id,
        "branch": record_meta.branch,
        "asked_by": record_meta.run_id,
        "run_id": state.run_id if state is not None else None,
        "pid": os.getpid(),
        "host": this_host(),
    }


# -- a run resuming the checkpoint that holds a request -----------------------------------------------------------


def held_here(state: RuntimeState | None, request: Mapping[str, Any]) -> tuple[BaseProvider, str, str] | None:
    """The provider, store and checkpoint id of ``request`` when the run ``state`` resumes the checkpoint that holds
    it on that checkpoint's own branch; None for a fork (which asks anew) or a run with no store."""
    if state is None or state.config is None or not state.resumed_from:
        return None
    provider = state.config.provider
    try:
        store = provider.store_at(str(state.config.location))
    except CheckpointError:
        return None
    branch = request.get("branch")
    if not isinstance(branch, str):  # a request written before requests named their branch: the checkpoint says
        try:
            branch = provider.read(store, state.resumed_from).meta.branch
        except CheckpointError:
            return None
    return (provider, store, state.resumed_from) if branch == state.branch else None


def claimed_answer(state: RuntimeState | None, request: Mapping[str, Any]) -> Answer | None:
    """The answer claimed for ``request`` at the checkpoint this run resumes (None: unanswered, or a fork). An
    answer whose process died after its claim, before its first new checkpoint, goes on here, as given by its who;
    one whose run still goes, or went on, is refused in one line saying where."""
    held = held_here(state, request)
    if held is None:
        return None
    provider, store, checkpoint_id = held
    try:
        claim, _ = request_claim(provider, store, request, checkpoint_id)
    except (CheckpointError, OSError):
        return None  # a store that cannot say: the run waits again, and the answer's retry goes on
    if claim is None:
        return None
    reason = going_on(provider, store, claim, checkpoint_id)
    if reason is not None:
        raise AnswerTaken(refusal(claim, reason))
    take_over(provider, store, claim, request, checkpoint_id, state)
    mark_answered(provider, store, claim.get("asked_by") or request.get("run_id"))
    return answer_of(claim)


def take_over(
    provider: BaseProvider,
    store: str,
    claim: Mapping[str, Any],
    request: Mapping[str, Any],
    checkpoint_id: str,
    state: RuntimeState | None,
) -> None:
    """Claim the going on of ``claim``'s answer, whose process died before its first new checkpoint: of resumes
    that found it so together, one takes it over (returns) and each other is refused naming the one that goes
    on. A taker that died too is taken over in turn, under the next key."""
    # lazy: the host's name is asked only when an answer is taken over
    from crewpoint.providers.runs import this_host

    token = uuid.uuid4().hex
    base = str(claim.get("key") or claim_key(str(request.get("request_id")), checkpoint_id))
    for turn in range(1, MAX_ATTEMPTS + 1):
        key = f"{base}.on{turn}"
        if KEY_RE.fullmatch(key) is None:  # too long with its suffix: the base by its digest
            import hashlib

            key = f"{hashlib.sha256(base.encode()).hexdigest()[:40]}.on{turn}"
        mine = {
            "token": token,
            "run_id": state.run_id if state is not None else None,
            "pid": os.getpid(),
            "host": this_host(),
            "at": time.time(),
            "key": key,
        }
        try:
            taker = provider.claim(store, key, mine)
        except CheckpointError:
            continue  # a damaged value stands under this key: the next one decides
        if taker.get("token") == token:
            return
        reason = going_on(provider, store, {**claim, **taker, "branch": claim.get("branch")}, checkpoint_id)
        if reason is not None:
            raise AnswerTaken(refusal(claim, reason))
    raise AnswerTaken(refusal(claim, f"{MAX_ATTEMPTS} resumes took it over and stopped; it is not taken again"))


def deadline_answer(state: RuntimeState | None, request: Mapping[str, Any]) -> Answer | None:
    """The default answer of ``request`` once its deadline has passed, claimed like any answer (who:
    ``deadline``), so a later answer is refused naming the deadline; None before the deadline."""
    if not past_deadline(request):
        return None
    mine = Answer(who=DEADLINE, default=True)
    held = held_here(state, request)
    if held is None:
        return mine  # a fork asks anew, and nothing else holds its request to answer it
    provider, store, checkpoint_id = held
    assert state is not None
    outcomes = [str(o) for o in request.get("outcomes") or []]
    outcome = collapse("", outcomes, request.get("default_outcome"))
    token = uuid.uuid4().hex
    meta = provider.read(store, checkpoint_id).meta
    value = answer_value(mine, outcome, meta, state, token)
    claim = claim_request(provider, store, request, checkpoint_id, value)
    if claim.get("token") != token:  # someone's answer came first: as a claimed answer it goes on, or not
        reason = going_on(provider, store, claim, checkpoint_id)
        if reason is not None:
            raise AnswerTaken(refusal(claim, reason))
        take_over(provider, store, claim, request, checkpoint_id, state)
        mark_answered(provider, store, meta.run_id)
        return answer_of(claim)
    mark_answered(provider, store, meta.run_id)
    return Answer("", outcome, DEADLINE, mine.at, True)


def going_on(provider: BaseProvider, store: str, claim: Mapping[str, Any], checkpoint_id: str) -> str | None:
    """Where the answer ``claim`` went, when it went on or still goes; None when the process that claimed it died
    before its first new checkpoint (a plain resume then goes on with it)."""
    # lazy: run records and processes are looked at only for a claimed request
    from crewpoint.providers.files import pid_alive

    # lazy: run records and processes are looked at only for a claimed request
    from crewpoint.providers.runs import STALE_AFTER, classify, this_host

    branch = claim.get("branch")
    metas = provider.list(store)
    after = [m for m in metas if m.parent_id == checkpoint_id and m.trigger == RECEIVED and branch in (None, m.branch)]
    if after:
        first = after[0]
        chain = [m for m in metas if m.lineage == first.lineage and m.branch == first.branch]
        latest = max(chain, key=lambda m: (m.sequence, m.created_at))
        return f"the run went on: latest {_short(latest.id)}"
    run_id = claim.get("run_id")
    for run in provider.read_runs(store):
        if run.run_id == run_id and classify(run) == "running":
            return f"its run {run_id} is going on now (pid {run.pid} on {run.host}): it writes the next checkpoint"
    pid, host, at = claim.get("pid"), claim.get("host"), claim.get("at")
    here = this_host()
    if type(pid) is int and host == here and pid != os.getpid() and pid_alive(pid):
        return f"the process answering it is going on now (pid {pid} on {host})"
    if isinstance(host, str) and host != here and isinstance(at, int | float) and time.time() - at < STALE_AFTER:
        return f"the process answering it on {host} is going on now"
    return None


def refusal(claim: Mapping[str, Any], reason: str) -> str:
    """The one line refusing to answer, or go on with, a request ``claim`` answered: who, when, what, and where
    the answer is (a line that suggests nothing doing the work again)."""
    return f"already {answered_words(claim)}; {reason}"


def answered_line(provider: BaseProvider, store: str, claim: Mapping[str, Any], checkpoint_id: str) -> str:
    """:func:`refusal` with where the answer is: going on, gone on, or (its process died before its first new
    checkpoint) the plain resume that goes on with it."""
    reason = going_on(provider, store, claim, checkpoint_id)
    if reason is None:
        reason = f"`{command_for('resume', checkpoint_id, store)}` goes on with that answer"
    return refusal(claim, reason)


def resume_refusal(record: CheckpointRecord, store: str) -> str | None:
    """Why a plain resume of the checkpoint ``record`` may not run: its request was answered and that answer goes,
    or went, on elsewhere. None when the resume may run (no request, unanswered, or an answer left behind)."""
    # lazy: the request as plain data, read by the same rule as the listing's
    from crewpoint.providers import provider_for

    entity = record.body.get("entity") if isinstance(record.body, dict) else None
    request = entity.get("pending_feedback") if isinstance(entity, dict) else None
    if not isinstance(request, dict):
        return None
    provider = provider_for(store)
    try:
        claim, _ = request_claim(provider, store, request, record.meta.id)
    except CheckpointError:
        return None
    if claim is None:
        return None
    reason = going_on(provider, store, claim, record.meta.id)
    return None if reason is None else refusal(claim, reason)


def claim_answer(
    provider: BaseProvider, store: str, request: Mapping[str, Any], meta: CheckpointMeta, value: Mapping[str, Any]
) -> tuple[bool, dict[str, Any]]:
    """Claim ``request``, held at the checkpoint ``meta``, for the answer ``value`` (:func:`answer_value`): whether
    it won, and the claim that counts (this one, or the one that won first). When it wins, the run that wrote the
    checkpoint reads ``answered`` from now on."""
    claimed = claim_request(provider, store, request, meta.id, value)
    won = claimed.get("token") == value["token"]
    if won:
        mark_answered(provider, store, meta.run_id)
    return won, claimed


def mark_answered(provider: BaseProvider, store: str, run_id: Any) -> None:
    """The run that wrote the request's checkpoint reads ``answered`` from now on (best effort: a record is a
    convenience)."""
    if not isinstance(run_id, str):
        return
    try:
        for run in provider.read_runs(store):
            if run.run_id == run_id:
                provider.write_run(store, run.beat(status="answered"))
                return
    except Exception:  # a run record never stops an answer
        return


def _short(checkpoint_id: str) -> str:

    # lazy: ids by the providers' rule
    from crewpoint.providers.refs import short_id

    return short_id(checkpoint_id, SHORT_ID, typeable=True)


def _when(at: Any) -> str:
    return time.strftime("%H:%M", time.localtime(at)) if isinstance(at, int | float) else "?"


def answer_at(record: CheckpointRecord, store: str) -> dict[str, Any] | None:
    """The claimed answer to the request the checkpoint ``record`` holds (who, when, what), or None: unanswered,
    no request, or a store that cannot tell."""
    # lazy: the store's provider, only for a checkpoint that holds a request
    from crewpoint.providers import provider_for

    entity = record.body.get("entity") if isinstance(record.body, dict) else None
    request = entity.get("pending_feedback") if isinstance(entity, dict) else None
    if not isinstance(request, dict):
        return None
    try:
        claim, _ = request_claim(provider_for(store), store, request, record.meta.id)
    except (CheckpointError, OSError):
        return None
    return claim


def answered_words(claim: Mapping[str, Any]) -> str:
    """``answered by WHO at HH:MM: WHAT``, as ``info`` and the app say it."""
    said = claim.get("outcome") or claim.get("feedback") or "accepted"
    who = claim.get("who") or "someone"
    by = "the deadline (its default outcome)" if who == DEADLINE else str(who)
    return f"answered by {by} at {_when(claim.get('at'))}: {said}"


def is_claimed(provider: BaseProvider, store: str, request: Mapping[str, Any], checkpoint_id: str) -> bool:
    """Has ``request`` held at ``checkpoint_id`` an answer? (A store that cannot tell has none.)"""
    try:
        return request_claim(provider, store, request, checkpoint_id)[0] is not None
    except Exception:  # a store that cannot tell has no claims: the run records stand
        return False
