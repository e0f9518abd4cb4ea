"""A checkpoint's usage in its metadata: what its chain and its run spent, by model, in one short JSON text.

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
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

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
MAX_TEXT = 200
"""The longest model or provider name a summary keeps (a longer one is cut)."""


ROW_KEYS = ("unit", "label", "agent", "model", "provider", *TOKEN_FIELDS, "requests", "duration_s", "estimated")
"""A usage row's keys, in the order a body stores its values (a row is stored as the list of its values)."""
_EMPTY_ROW: dict[str, Any] = {
    "unit": None,
    "label": "",
    "agent": None,
    "model": None,  # (a row without a model is no row: a summary leaves it out, a reader too)
    "provider": "",
    **dict.fromkeys(TOKEN_FIELDS, 0),
    "requests": 0,
    "duration_s": 0.0,
    "estimated": False,
}


def row_list(row: Mapping[str, Any] | Sequence[Any]) -> list[Any]:
    """A usage row as a body stores it: its values in :data:`ROW_KEYS` order (a missing one as an empty row has it);
    a row stored so already comes back as a copy."""
    if isinstance(row, Mapping):
        return [row.get(key, _EMPTY_ROW[key]) for key in ROW_KEYS]
    return list(row)


def row_dict(stored: object) -> dict[str, Any] | None:
    """A stored usage row (a list in :data:`ROW_KEYS` order, or an older body's dict) as a dict; None for anything
    else. Its values are not checked here: whoever reads them checks them (the schema, ``cost.usage_rows``)."""
    if isinstance(stored, list | tuple) and len(stored) == len(ROW_KEYS):
        return dict(zip(ROW_KEYS, stored, strict=True))
    return dict(stored) if isinstance(stored, Mapping) else None


Groups = dict[tuple[str, str, bool], list[int]]
"""(model, provider, estimated) -> the six counts and the seconds in whole microseconds, summed so far (integers:
a sum does not depend on the order it was made in, and taking a row out again is exact)."""
_MODEL, _PROVIDER = ROW_KEYS.index("model"), ROW_KEYS.index("provider")
_COUNTS = slice(ROW_KEYS.index("input_tokens"), ROW_KEYS.index("requests") + 1)
_SECONDS, _ESTIMATED = ROW_KEYS.index("duration_s"), ROW_KEYS.index("estimated")
_MICROS = 1_000_000


def _add_row(groups: Groups, row: Sequence[Any]) -> None:
    """Add a stored row (:func:`row_list`) to its group: a row that is not one is left out, a count that is not a
    count counts 0, and its seconds count in whole microseconds."""
    if type(row) is not list or len(row) != len(ROW_KEYS):
        return
    model, provider = row[_MODEL], row[_PROVIDER] or ""
    if not isinstance(model, str) or not isinstance(provider, str):
        return
    key = (model[:MAX_TEXT], provider[:MAX_TEXT], bool(row[_ESTIMATED]))
    sums = groups.get(key)
    if sums is None:
        sums = groups[key] = [0, 0, 0, 0, 0, 0, 0]
    counts = row[_COUNTS]
    if set(map(type, counts)) != _INTS or min(counts) < 0:  # not a row of counts: each on its own
        counts = [value if type(value) is int and value > 0 else 0 for value in counts]
    count_into(sums, counts, micros(row[_SECONDS]))


def micros(seconds: Any) -> int:
    """A row's seconds as a summary counts them: whole microseconds, 0 for what is not a duration."""
    return round(seconds * _MICROS) if type(seconds) in (int, float) and 0 < seconds < MAX_SECONDS else 0


def count_into(sums: list[int], counts: Sequence[int], microseconds: int) -> None:
    """Add a row's six counts and its microseconds to its group's ``sums`` (or, given differences, move them)."""
    sums[0] += counts[0]
    sums[1] += counts[1]
    sums[2] += counts[2]
    sums[3] += counts[3]
    sums[4] += counts[4]
    sums[5] += counts[5]
    sums[6] += microseconds


_INTS = {int}
MAX_SECONDS = 1e12
"""Seconds a row's duration stays below to be counted (a larger one, like one that is not a number, counts 0)."""


def grouped(rows: Iterable[Sequence[Any]]) -> Groups:
    """Stored rows summed per (model, provider, estimated), in the order each group first comes."""
    groups: Groups = {}
    for row in rows:
        _add_row(groups, row)
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
            count_into(known, sums, sums[6])
    return chain


def usage_summary(
    chain: Iterable[Mapping[str, Any] | Sequence[Any]], run: Iterable[Mapping[str, Any] | Sequence[Any]]
) -> str:
    """The summary text of a checkpoint whose chain spent ``chain`` rows (before and this run) and whose run spent
    ``run`` rows (dicts, or lists as a body's ``usage`` section stores them); "" when there is none."""
    return summary_text(grouped(map(row_list, chain)), grouped(map(row_list, run)))


def _entry(raw: object) -> dict[str, Any] | None:
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
    row: dict[str, Any] = {"unit": None, "label": "", "agent": None, "model": model, "provider": provider}
    row.update(zip((*TOKEN_FIELDS, "requests"), counts, strict=True))
    row["duration_s"] = float(seconds)
    row["estimated"] = estimated
    return row


def read_usage_summary(text: object) -> dict[str, list[dict[str, Any]]] | None:
    """``{"chain": rows, "run": rows}`` (rows in the shape of a body's usage rows, without unit, agent or duration)
    of a summary text, or None for "", :data:`TOO_LONG` and anything that is not a summary (never raises)."""
    if not isinstance(text, str) or not text or len(text) > MAX_USAGE_TEXT:
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    out: dict[str, list[dict[str, Any]]] = {}
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
