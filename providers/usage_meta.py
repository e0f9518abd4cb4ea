"""A usage row (:class:`UsageRow`) and the forms it is stored in: a body's list of its values, and the summary of a
checkpoint's metadata, what its chain and its run spent, by model, in one short JSON text. Only this module reads or
writes those forms; everything else holds rows.

Listing prices a checkpoint without reading its body from this summary (``CheckpointMeta.usage``)::

    {"chain": [[model, provider, input, output, cache_read, cache_write, reasoning, requests, seconds, estimated],
               ...],
     "run": [...]}

``chain`` is the chain's spend up to the checkpoint (the body's ``usage.before`` and ``usage.rows``), ``run`` the
run's own (``usage.rows``): each one line per (model, provider, estimated). "" means nothing was recorded (or an
older record). A summary is data: :func:`read_usage_summary` takes only well-formed entries and ignores anything
else. One that would be longer than :data:`MAX_USAGE_TEXT` is written as :data:`TOO_LONG`, which reads as no
summary: a reader goes to the body's rows instead.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, NamedTuple

MAX_USAGE_TEXT = 4096
"""The longest usage summary a store keeps (characters); a longer one is left out, never cut."""
MAX_RUN_ID = 64
"""The longest run id a store keeps."""
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
PARTS = ("chain", "run")
TOO_LONG = '{"too_long":true}'
"""The summary of a checkpoint whose usage was too varied to summarise: its body has the rows."""
DAMAGED = '{"damaged":true}'
"""The summary a store keeps of a checkpoint whose metadata's summary says other than its body's usage rows: a
listing shows it as damage (never a figure), and a store's cost counts that checkpoint for nothing."""
_MAX_COUNT = 10**15
MAX_USD = 1_000_000_000.0
"""The largest budget in dollars (a billion): a larger one is a typo, refused where it is read (``Budget``,
``--budget``, the app's Budget field, a checkpoint's saved budget). Declared here, beside the usage a budget is
counted in, so that checking a saved budget loads no budget code."""
MAX_TOKENS = 10**15
"""The largest budget in tokens."""
MAX_TEXT = 200
"""The longest model or provider name a summary keeps (a longer one is cut)."""


class UsageRow(NamedTuple):
    """What the calls of one (unit, agent, model, provider, estimated) used, summed: the one shape a usage row has
    in memory. A body stores a row as the list of its values in this order (:func:`encode_row`, :func:`decode_row`)."""

    unit: str | None = None
    """The task id or flow method the calls ran in (None: outside any)."""
    label: str = ""
    """The unit as a person reads it (a task's name, a method's)."""
    agent: str | None = None
    model: str = ""
    provider: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0
    requests: int = 0
    duration_s: float = 0.0
    estimated: bool = False
    """Some counts are the fixed estimate (the server reported none)."""


ROW_KEYS = UsageRow._fields
"""A usage row's keys, in the order a body stores its values."""
_TEXTS = ("unit", "label", "agent", "model", "provider")
_OPTIONAL = frozenset({"unit", "agent"})
_COUNT_KEYS = (*TOKEN_FIELDS, "requests")


def encode_row(row: UsageRow) -> list[Any]:
    """A usage row as a body stores it: the list of its values in :data:`ROW_KEYS` order."""
    return list(row)


def _names(row: UsageRow) -> tuple[str, ...]:
    return (row.unit or "", row.label, row.agent or "", row.model, row.provider)


def decode_row(stored: object, cut: int | None = None) -> UsageRow | None:
    """The usage row a body stored (a list in :data:`ROW_KEYS` order, an older body's object, or a row already), or
    None for anything that is not a well-formed row: names that are not text (``unit`` and ``agent`` may be null),
    counts that are not whole numbers from 0 to 10**15, seconds that are not a finite number (below 0 read as 0),
    ``estimated`` that is not true or false. ``cut`` cuts the names to that many characters (for showing)."""
    if type(stored) is UsageRow and (cut is None or max(map(len, _names(stored))) <= cut):
        return stored
    if isinstance(stored, list | tuple):
        if len(stored) != len(ROW_KEYS):
            return None
        raw: Mapping[str, Any] = dict(zip(ROW_KEYS, stored, strict=True))
    elif isinstance(stored, Mapping):
        raw = stored
    else:
        return None
    values: dict[str, Any] = {}
    for name in _TEXTS:
        value = raw.get(name, UsageRow._field_defaults[name] if name != "model" else None)
        if value is None and name in _OPTIONAL:
            values[name] = None
        elif isinstance(value, str):
            values[name] = value if cut is None else value[:cut]
        else:
            return None
    for name in _COUNT_KEYS:
        value = values[name] = raw.get(name, 0)
        if type(value) is not int or not 0 <= value <= _MAX_COUNT:
            return None
    duration, estimated = raw.get("duration_s", 0.0), raw.get("estimated", False)
    if type(duration) not in (int, float) or not math.isfinite(duration) or type(estimated) is not bool:
        return None
    return UsageRow(**values, duration_s=max(float(duration), 0.0), estimated=estimated)


Groups = dict[tuple[str, str, bool], list[int]]
"""(model, provider, estimated) -> the six counts and the seconds in whole microseconds, summed so far (integers:
a sum does not depend on the order it was made in, and taking a row out again is exact)."""
_MICROS = 1_000_000


def group_key(row: UsageRow) -> tuple[str, str, bool]:
    """The summary's line a row counts in: its model and provider (cut to :data:`MAX_TEXT`) and ``estimated``."""
    return row.model[:MAX_TEXT], row.provider[:MAX_TEXT], row.estimated


def add_row(groups: Groups, row: UsageRow, sign: int = 1) -> None:
    """Count ``row`` in its group (``sign`` -1: take it out again)."""
    key = group_key(row)
    sums = groups.get(key)
    if sums is None:
        sums = groups[key] = [0, 0, 0, 0, 0, 0, 0]
    sums[0] += sign * row.input_tokens
    sums[1] += sign * row.output_tokens
    sums[2] += sign * row.cache_read_tokens
    sums[3] += sign * row.cache_write_tokens
    sums[4] += sign * row.reasoning_tokens
    sums[5] += sign * row.requests
    sums[6] += sign * micros(row.duration_s)


def micros(seconds: Any) -> int:
    """A row's seconds as a summary counts them: whole microseconds, 0 for what is not a duration."""
    return round(seconds * _MICROS) if type(seconds) in (int, float) and 0 < seconds < MAX_SECONDS else 0


MAX_SECONDS = 1e12
"""Seconds a row's duration stays below to be counted (a larger one, like one that is not a number, counts 0)."""


def grouped(rows: Iterable[UsageRow]) -> Groups:
    """Rows summed per (model, provider, estimated), in the order each group first comes."""
    groups: Groups = {}
    for row in rows:
        add_row(groups, row)
    return groups


def _entries(groups: Groups) -> list[list[Any]]:
    return [
        [model, provider, *sums[:6], sums[6] / _MICROS, estimated]
        for (model, provider, estimated), sums in groups.items()
    ]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def summary_text(chain: Groups, run: Groups, encode: Callable[[Any], str] = _dumps) -> str:
    """The summary text of a chain's and a run's groups: ``{"chain":[...],"run":[...]}`` as compact JSON
    (``encode`` makes the same text as :func:`_dumps`, faster where it is already loaded); "" for none."""
    if not chain and not run:
        return ""
    run_text = encode(_entries(run))
    chain_text = run_text if chain is run else encode(_entries(chain))
    text = '{"chain":' + chain_text + ',"run":' + run_text + "}"
    return text if len(text) <= MAX_USAGE_TEXT else TOO_LONG


def chain_groups(before: Groups, run: Groups) -> Groups:
    """The chain's groups: what it spent before the run, then the run's (``run`` itself when nothing came before),
    in the order :func:`grouped` gives for the rows before and the run's rows."""
    if not before:
        return run
    chain = {key: sums.copy() for key, sums in before.items()}
    for key, sums in run.items():
        known = chain.get(key)
        if known is None:
            chain[key] = sums.copy()
        else:
            for i, value in enumerate(sums):
                known[i] += value
    return chain


def usage_summary(chain: Iterable[object], run: Iterable[object]) -> str:
    """The summary text of a checkpoint whose chain spent ``chain`` rows (before and this run) and whose run spent
    ``run`` rows (rows, or as a body stores them: :func:`decode_row`; one that is not a row is left out); "" when
    there is none."""
    return summary_text(grouped(_rows_of(chain)), grouped(_rows_of(run)))


def _rows_of(stored: Iterable[object]) -> Iterator[UsageRow]:
    for raw in stored:
        row = decode_row(raw)
        if row is not None:
            yield row


def _entry(raw: object) -> UsageRow | None:
    if not isinstance(raw, list) or len(raw) != 10:
        return None
    model, provider, *counts, seconds, estimated = raw
    if type(seconds) not in (int, float) or not 0 <= seconds < 1e12:
        return None
    if not isinstance(model, str) or not isinstance(provider, str) or type(estimated) is not bool:
        return None
    if len(model) > MAX_TEXT or len(provider) > MAX_TEXT:
        return None
    if any(type(c) is not int or not 0 <= c <= _MAX_COUNT for c in counts):
        return None
    named = dict(zip(_COUNT_KEYS, counts, strict=True))
    return UsageRow(model=model, provider=provider, **named, duration_s=float(seconds), estimated=estimated)


def read_usage_summary(text: object) -> dict[str, list[UsageRow]] | None:
    """``{"chain": rows, "run": rows}`` (one row per line: no unit, label or agent)
    of a summary text, or None for "", :data:`TOO_LONG` and anything that is not a summary (never raises)."""
    if not isinstance(text, str) or not text or len(text) > MAX_USAGE_TEXT:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, list[UsageRow]] = {}
    for part in PARTS:
        raw = data.get(part)
        if not isinstance(raw, list):
            return None
        out[part] = [entry for entry in map(_entry, raw) if entry is not None]
    return out


def usage_problem(run_id: object, usage: object) -> str | None:
    """Why a record's ``run_id`` or ``usage`` field cannot be kept (one line), or None."""
    if type(run_id) is not str or len(run_id) > MAX_RUN_ID:
        return "invalid run id"
    if type(usage) is not str or len(usage) > MAX_USAGE_TEXT:
        return "invalid usage summary"
    return None


def checked_usage(usage: str, body: object) -> str:
    """``usage`` when it is what ``body``'s usage rows summarise (or "": nothing recorded, checked by no one),
    else :data:`DAMAGED`. A checkpoint's cost has one source, its body: the metadata's summary is only a copy."""
    if not usage or usage == DAMAGED:
        return usage
    section = body.get("usage") if isinstance(body, Mapping) else None
    before = section.get("before", []) if isinstance(section, Mapping) else None
    rows = section.get("rows", []) if isinstance(section, Mapping) else None
    if not isinstance(before, list) or not isinstance(rows, list):
        return DAMAGED
    derived = usage_summary(before + rows, rows)
    if TOO_LONG in (usage, derived):
        return usage if usage == derived else DAMAGED
    return usage if read_usage_summary(usage) == read_usage_summary(derived) else DAMAGED
