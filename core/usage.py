"""What a run's LLM calls used: one call's usage, the ledger a run sums them in, and pure helpers over its rows.

A call's usage (on ``llm_call_completed``, built by :func:`call_usage`) is a plain dict::

    {"input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens",  # ints
     "model", "provider", "duration_s", "estimated"}

``input_tokens`` counts every token sent, cached ones included (genai-prices' meaning): ``cache_read_tokens`` and
``cache_write_tokens`` are parts of it. The calls are summed in rows (:class:`UsageRow`), one per
(unit, agent, model, provider, estimated). A checkpoint body's ``usage`` section holds them: ``rows`` for what the
run spent, ``before`` for what its chain spent before it, ``reused`` for the rows of ``before`` whose task or method
the run took over instead of running again. A body stores a row as the list of its values in :data:`ROW_KEYS` order
(:func:`encode_row`: every checkpoint repeats every row so far, so the keys are not repeated with them); readers
get rows back (:func:`decode_row`).

An event history keeps a call's usage compact (:func:`stored_call_usage`: only what the event does not already say);
reading the event back expands it to the whole dict (:func:`expand_call_usage`).

Estimates follow one fixed rule, :func:`estimate_tokens`: ``ceil(characters / 4)``, the same every time.
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from crewpoint.providers.usage_meta import (
    MAX_SECONDS,
    ROW_KEYS,
    Groups,
    UsageRow,
    add_row,
    chain_groups,
    decode_row,
    encode_row,
    grouped,
    summary_text,
)

__all__ = [
    "CALL_KEYS",
    "CALL_KEY_SET",
    "ROW_KEYS",
    "TOKEN_KEYS",
    "UsageLedger",
    "UsageMetrics",
    "UsageRow",
    "call_usage",
    "decode_row",
    "encode_row",
    "estimate_tokens",
    "expand_call_usage",
    "finished_units",
    "group_rows",
    "stored_call_usage",
    "sum_rows",
    "usage_from_report",
]

TOKEN_KEYS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
"""The five token counts of a call's usage and of a row, in this order."""


GroupBy = Literal["unit", "agent", "model", "provider"]


def estimate_tokens(characters: int) -> int:
    """The fixed estimate for text a server did not count: ``ceil(characters / 4)``."""
    return -(-max(characters, 0) // 4)


def _count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def usage_from_report(report: Mapping[str, Any]) -> dict[str, int | None]:
    """The token counts of an OpenAI-compatible ``usage`` object (``prompt_tokens``, ``completion_tokens``, their
    ``*_details``, and Anthropic's ``cache_creation_input_tokens``/``cache_read_input_tokens`` when present);
    ``None`` for a count the server did not report. ``prompt_tokens`` already counts cached tokens (OpenAI's and
    LiteLLM's meaning); Anthropic's ``input_tokens`` does not, so the cached ones are added to it."""
    prompt = _count(report.get("prompt_tokens"))
    anthropic = prompt is None and _count(report.get("input_tokens")) is not None
    if anthropic:  # Anthropic's own ``input_tokens`` leaves the cached tokens out
        prompt = _count(report.get("input_tokens"))
    completion = _count(report.get("completion_tokens"))
    if completion is None:
        completion = _count(report.get("output_tokens"))
    prompt_details = report.get("prompt_tokens_details")
    completion_details = report.get("completion_tokens_details")
    cache_read = _count(report.get("cache_read_input_tokens"))
    if cache_read is None and isinstance(prompt_details, Mapping):
        cache_read = _count(prompt_details.get("cached_tokens"))
    cache_write = _count(report.get("cache_creation_input_tokens"))
    reasoning = _count(completion_details.get("reasoning_tokens")) if isinstance(completion_details, Mapping) else None
    if prompt is not None and (anthropic or prompt < (cache_read or 0) + (cache_write or 0)):
        prompt += (cache_read or 0) + (cache_write or 0)
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "cache_read_tokens": cache_read,
        "cache_write_tokens": cache_write,
        "reasoning_tokens": reasoning,
    }


def call_usage(
    reported: Mapping[str, int | None] | None,
    *,
    model: str,
    provider: str,
    duration_s: float,
    sent_chars: int,
    received_chars: int,
) -> dict[str, Any]:
    """One call's usage: the counts ``reported`` (by the server or the model), else the estimate (marked)."""
    reported = reported or {}
    input_tokens = reported.get("input_tokens")
    output_tokens = reported.get("output_tokens")
    estimated = input_tokens is None or output_tokens is None
    return {
        "input_tokens": estimate_tokens(sent_chars) if input_tokens is None else input_tokens,
        "output_tokens": estimate_tokens(received_chars) if output_tokens is None else output_tokens,
        "cache_read_tokens": reported.get("cache_read_tokens") or 0,
        "cache_write_tokens": reported.get("cache_write_tokens") or 0,
        "reasoning_tokens": reported.get("reasoning_tokens") or 0,
        "model": model,
        "provider": provider,
        "duration_s": round(float(duration_s), 6),
        "estimated": estimated,
    }


CALL_KEYS = (*TOKEN_KEYS, "model", "provider", "duration_s", "estimated")
"""The keys of a call's usage, in this order."""

CALL_KEY_SET = frozenset(CALL_KEYS)
_ZERO_COUNTS = ("cache_read_tokens", "cache_write_tokens", "reasoning_tokens")


def stored_call_usage(
    usage: Mapping[str, Any], *, model: object, prompt_tokens: object, completion_tokens: object
) -> dict[str, Any]:
    """``usage`` as an event history keeps it: without what the event already says or what goes without saying.
    Left out: ``input_tokens``/``output_tokens`` equal to the event's ``prompt_tokens``/``completion_tokens``,
    the event's own ``model``, counts of 0 and ``estimated`` false. :func:`expand_call_usage` puts them back."""
    said = {
        **_SAID_ALWAYS,
        "input_tokens": prompt_tokens if type(prompt_tokens) is int else None,
        "output_tokens": completion_tokens if type(completion_tokens) is int else None,
        "model": model if isinstance(model, str) else None,
    }
    # a value is left out when the event says the same, of the same type (0 is not False: kept)
    return {
        key: value
        for key, value in usage.items()
        if (known := said.get(key)) is None or type(value) is not type(known) or value != known
    }


_SAID_ALWAYS: dict[str, Any] = {"estimated": False, **dict.fromkeys(_ZERO_COUNTS, 0)}


def expand_call_usage(
    stored: Mapping[str, Any], *, model: object, prompt_tokens: object, completion_tokens: object
) -> dict[str, Any]:
    """The whole usage of a call from its :func:`stored_call_usage` form and the event's fields (a whole usage
    comes back as it is): every key of :data:`CALL_KEYS`, in that order, then any other the call had."""
    if CALL_KEY_SET.issubset(stored):
        return dict(stored)
    out: dict[str, Any] = {
        "input_tokens": stored.get("input_tokens", prompt_tokens if type(prompt_tokens) is int else 0),
        "output_tokens": stored.get("output_tokens", completion_tokens if type(completion_tokens) is int else 0),
    }
    for name in _ZERO_COUNTS:
        out[name] = stored.get(name, 0)
    out["model"] = stored.get("model", model if isinstance(model, str) else "")
    out["provider"] = stored.get("provider", "")
    out["duration_s"] = stored.get("duration_s", 0.0)
    out["estimated"] = stored.get("estimated", False)
    for key, value in stored.items():
        if key not in CALL_KEY_SET:
            out[key] = value
    return out


_INTS = {int}
_NUMBERS = frozenset({int, float})


def _types_of(values: Iterable[object]) -> set[type]:
    return set(map(type, values))


@dataclass(slots=True, eq=False)
class _Tally:
    """One row as a ledger counts it: the calls summed so far, and the row as a checkpoint last stored it."""

    at: int
    """The row's place among the ledger's rows."""
    sums: UsageRow
    """The row so far, its seconds not yet rounded."""
    changed: bool = True
    """A call was counted since the row was last stored."""
    stored: UsageRow | None = None

    def row(self) -> UsageRow:
        """The row as a checkpoint stores it: the seconds to the microsecond."""
        return self.sums._replace(duration_s=round(self.sums.duration_s, 6))


class UsageLedger:
    """One run's usage, summed per (unit, agent, model, provider, estimated) as calls complete (thread-safe), with
    the usage summary of a checkpoint's metadata (:mod:`crewpoint.providers.usage_meta`) kept up to date."""

    def __init__(self) -> None:
        self._tallies: list[_Tally] = []  # one per row, in the order their first call came
        self._at: dict[tuple[Any, ...], _Tally] = {}  # (unit, agent, model, provider, estimated) -> its tally
        self._changed = False  # a call was counted since the rows were last stored
        self._stored: list[list[Any]] = []  # each row as a checkpoint last stored it (same places)
        self.before: list[UsageRow] = []
        """What the chain spent before this run (a body's ``usage.before``): read and never changed."""
        self._before_stored: list[list[Any]] = []  # as every checkpoint of the run stores them
        self._before_groups: Groups = {}  # the same, summed for the summary
        self._groups: Groups = {}  # the stored rows, summed for the summary
        self._summary: str | None = ""  # the summary of both (None: to be made again)
        self._lock = threading.Lock()

    def start_from(self, before: Iterable[object]) -> None:
        """Start from what the chain spent before this run: ``before``, rows as a body stores them (a resume's or a
        fork's source checkpoint's ``before`` and ``rows``; one that is not a row is left out), which every
        checkpoint of the run holds (the same lists each time), and its summary's chain counts."""
        rows = [row for row in map(decode_row, before) if row is not None]
        stored = [encode_row(row) for row in rows]
        with self._lock:
            self.before = rows
            self._before_stored = stored
            self._before_groups = grouped(rows)
            self._summary = None

    def add(self, usage: Mapping[str, Any], unit: str | None, label: str, agent: str | None) -> None:
        """Count one call's ``usage`` (a :func:`call_usage` dict) for ``unit`` (shown as ``label``) and ``agent``:
        counts that are not counts (not ints, below 0) and seconds that are not (not finite, below 0) count 0."""
        get = usage.get
        model, provider, estimated = str(get("model", "")), str(get("provider", "")), bool(get("estimated"))
        counts: list[Any] = [get("input_tokens"), get("output_tokens"), get("cache_read_tokens")]
        counts += (get("cache_write_tokens"), get("reasoning_tokens"))
        if _types_of(counts) != _INTS or min(counts) < 0:  # not a call_usage dict: each count on its own
            counts = [value if type(value) is int and value > 0 else 0 for value in counts]
        duration: Any = get("duration_s")
        seconds = float(duration) if type(duration) in _NUMBERS and 0 < duration < MAX_SECONDS else 0.0
        key = (unit, agent, model, provider, estimated)
        with self._lock:
            tally = self._at.get(key)
            if tally is None:
                row = UsageRow(unit, label, agent, model, provider, estimated=estimated)
                tally = self._at[key] = _Tally(len(self._tallies), row)
                self._tallies.append(tally)
                self._stored.append([])  # (stored at the next checkpoint)
            sums = tally.sums
            tally.sums = UsageRow(
                unit=sums.unit,
                label=sums.label,
                agent=sums.agent,
                model=sums.model,
                provider=sums.provider,
                input_tokens=sums.input_tokens + counts[0],
                output_tokens=sums.output_tokens + counts[1],
                cache_read_tokens=sums.cache_read_tokens + counts[2],
                cache_write_tokens=sums.cache_write_tokens + counts[3],
                reasoning_tokens=sums.reasoning_tokens + counts[4],
                requests=sums.requests + 1,
                duration_s=sums.duration_s + seconds,
                estimated=sums.estimated,
            )
            tally.changed = self._changed = True

    def _store(self) -> None:
        """Store the rows that changed since they were last stored, and move their groups' sums by what each row
        changed, as a summary of the stored rows would count them (the lock held). In the rows' order, so that a
        new group comes where :func:`grouped` puts it."""
        for tally in self._tallies:
            if tally.changed:
                row = tally.row()
                if tally.stored is not None:
                    add_row(self._groups, tally.stored, -1)
                add_row(self._groups, row)
                tally.stored, tally.changed = row, False
                self._stored[tally.at] = encode_row(row)
        self._changed = False
        self._summary = None

    def stored_and_summary(self) -> tuple[list[list[Any]], str]:
        """The rows so far as a body stores them (:func:`encode_row`), in the order their first call came, and the
        usage summary of a checkpoint's metadata for the same rows: the chain's spend (before this run, and these
        rows) and the run's. The rows are to be read, never changed: a row that has not changed since the last call
        is the same list (a checkpoint per task makes one row: the stores' codec encodes only the rows that
        changed), and the summary is made again only after a row changed."""
        with self._lock:
            if self._changed:
                self._store()
            if self._summary is None:
                chain = chain_groups(self._before_groups, self._groups)
                self._summary = summary_text(chain, self._groups)
            return list(self._stored), self._summary

    def stored_before(self) -> list[list[Any]]:
        """What the chain spent before this run as a body stores it (the same list every time)."""
        return self._before_stored

    def stored_reused(self, finished: Container[str], ran: Container[str]) -> list[list[Any]]:
        """The rows of :attr:`before` whose unit is ``finished`` now but was not among those this run ``ran``: work
        taken over, not repeated, as a body stores them."""
        if not self.before:
            return []
        stored = self._before_stored
        return [stored[i] for i, row in enumerate(self.before) if row.unit in finished and row.unit not in ran]

    def rows(self) -> list[UsageRow]:
        """The rows so far (as a checkpoint stores them: seconds to the microsecond), in the order their first call
        came."""
        with self._lock:
            if self._changed:
                self._store()
            return [t.stored for t in self._tallies if t.stored is not None]

    def __bool__(self) -> bool:
        return bool(self._tallies)


def sum_rows(rows: Iterable[UsageRow]) -> UsageRow:
    """The totals of ``rows`` as one row: the five token counts, ``requests``, ``duration_s`` and ``estimated`` (any
    of them); its unit, label, agent, model and provider are left empty."""
    counts = [0] * 6
    duration, estimated = 0.0, False
    for row in rows:
        counts[0] += row.input_tokens
        counts[1] += row.output_tokens
        counts[2] += row.cache_read_tokens
        counts[3] += row.cache_write_tokens
        counts[4] += row.reasoning_tokens
        counts[5] += row.requests
        duration += row.duration_s
        estimated = estimated or row.estimated
    named: dict[str, Any] = dict(zip(ROW_KEYS[5:11], counts, strict=True))
    return UsageRow(**named, duration_s=duration, estimated=estimated)


def group_rows(rows: Iterable[UsageRow], by: GroupBy) -> list[UsageRow]:
    """``rows`` summed per value of ``by`` (in the order each value first comes): :func:`sum_rows` of each group with
    its ``by`` field, and its ``label`` (the first row's) when grouped by unit."""
    groups: dict[Any, list[UsageRow]] = {}
    for row in rows:
        groups.setdefault(getattr(row, by), []).append(row)
    out: list[UsageRow] = []
    for value, members in groups.items():
        named: dict[str, Any] = {by: value}
        if by == "unit":
            named["label"] = members[0].label
        out.append(sum_rows(members)._replace(**named))
    return out


def finished_units(entity: Mapping[str, Any]) -> set[str]:
    """The units an entity's saved state holds finished: its tasks with an output, its methods with a result."""
    done: set[str] = set()
    for task in entity.get("tasks") or ():
        if isinstance(task, Mapping) and task.get("output") is not None and isinstance(task.get("id"), str):
            done.add(task["id"])
    for pair in entity.get("method_outputs") or ():
        if isinstance(pair, list | tuple) and pair and isinstance(pair[0], str):
            done.add(pair[0])
    return done


@dataclass(frozen=True, slots=True)
class UsageMetrics:
    """A run's totals under CrewAI's names (``crew.usage_metrics``)."""

    total_tokens: int = 0
    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0
    successful_requests: int = 0

    @classmethod
    def of(cls, rows: Iterable[UsageRow]) -> UsageMetrics:
        total = sum_rows(rows)
        return cls(
            total_tokens=total.input_tokens + total.output_tokens,
            prompt_tokens=total.input_tokens,
            cached_prompt_tokens=total.cache_read_tokens,
            completion_tokens=total.output_tokens,
            successful_requests=total.requests,
        )
