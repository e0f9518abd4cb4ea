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
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from typing import Any

MAX_USAGE_TEXT = 4096
"""The longest usage summary a store keeps (characters); a longer one is left out, never cut."""
MAX_RUN_ID = 64
"""The longest run id a store keeps."""
TOKEN_FIELDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
PARTS = ("chain", "run")
TOO_LONG = '{"too_long":true}'
"""The summary of a checkpoint whose usage was too varied to summarise: its body has the rows."""
_MAX_COUNT = 10**15
_MAX_TEXT = 200


_COUNTED = (*TOKEN_FIELDS, "requests")
Groups = dict[tuple[str, str, bool], list[Any]]
"""(model, provider, estimated) -> the six counts and the seconds (a float), summed so far."""


def _add_row(groups: Groups, row: Mapping[str, Any]) -> None:
    model, provider = row.get("model"), row.get("provider") or ""
    if not isinstance(model, str) or not isinstance(provider, str):
        return
    key = (model[:_MAX_TEXT], provider[:_MAX_TEXT], bool(row.get("estimated")))
    sums = groups.get(key)
    if sums is None:
        sums = groups[key] = [0, 0, 0, 0, 0, 0, 0.0]
    try:
        counts = _counted(row)
    except KeyError:
        counts = ()
    if set(map(type, counts)) != _INTS or min(counts) < 0:  # not a row of counts: each on its own
        counts = tuple(value if type(value) is int and value > 0 else 0 for value in map(row.get, _COUNTED))
    sums[0] += counts[0]
    sums[1] += counts[1]
    sums[2] += counts[2]
    sums[3] += counts[3]
    sums[4] += counts[4]
    sums[5] += counts[5]
    duration = row.get("duration_s", 0.0)
    if type(duration) in (int, float) and duration > 0:
        sums[6] += duration


_counted = itemgetter(*_COUNTED)
_INTS = {int}


def _entries(groups: Groups) -> list[list[Any]]:
    return [
        [model, provider, *sums[:6], round(sums[6], 6), estimated]
        for (model, provider, estimated), sums in groups.items()
    ]


def _grouped(rows: Iterable[Mapping[str, Any]]) -> Groups:
    groups: Groups = {}
    for row in rows:
        _add_row(groups, row)
    return groups


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _text(chain: Groups, run: Groups, encode: Callable[[Any], str] = _dumps) -> str:
    """The summary text: ``{"chain":[...],"run":[...]}`` as compact JSON (``encode`` makes the same text as
    :func:`_dumps`, faster where it is already loaded)."""
    if not chain and not run:
        return ""
    run_text = encode(_entries(run))
    chain_text = run_text if chain is run else encode(_entries(chain))
    text = '{"chain":' + chain_text + ',"run":' + run_text + "}"
    return text if len(text) <= MAX_USAGE_TEXT else TOO_LONG


def usage_summary(chain: Iterable[Mapping[str, Any]], run: Iterable[Mapping[str, Any]]) -> str:
    """The summary text of a checkpoint whose chain spent ``chain`` rows (before and this run) and whose run spent
    ``run`` rows (rows as a body's ``usage`` section holds them); "" when there is none."""
    return _text(_grouped(chain), _grouped(run))


class RunSummaries:
    """``usage_summary(before + rows, rows)`` for each checkpoint of one run, summed from the first row that is
    not the very object the previous checkpoint had (a run's rows are read, never changed, and a row that did not
    change is the same copy): the same text, without summing every row again at every checkpoint."""

    def __init__(self) -> None:
        # lazy: the C encoder of the store writers (loads hashlib and zlib, which a listing never needs)
        from crewpoint.providers.chunks import encode_json

        self._encode = encode_json
        self._lock = threading.Lock()
        self._before: Sequence[Mapping[str, Any]] = ()
        self._seed: Groups = {}
        self._rows: list[object] = []
        self._after: list[tuple[Groups, Groups]] = []  # the chain's and the run's groups after each row

    def summary(self, before: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> str:
        with self._lock:  # checkpoints captured on several threads at once take their turns
            return self._summary(before, rows)

    def _summary(self, before: Sequence[Mapping[str, Any]], rows: Sequence[Mapping[str, Any]]) -> str:
        if before is not self._before and (before or self._before):  # (any empty list is the same)
            self._before, self._seed, self._rows, self._after = before, _grouped(before), [], []
        known = self._rows
        start = len(known)
        if start > len(rows) or rows[:start] != known:  # (a run's rows only grow: usually all are known)
            start = 0
            while start < len(known) and start < len(rows) and rows[start] is known[start]:
                start += 1
        chain, run = self._after[start - 1] if start else (self._seed, {})
        del self._after[start:]
        for row in rows[start:]:
            run = _copy(run)
            _add_row(run, row)
            if self._seed:
                chain = _copy(chain)
                _add_row(chain, row)
            else:  # nothing before the run: the chain's spend is the run's
                chain = run
            self._after.append((chain, run))
        self._rows = list(rows)
        return _text(chain, run, self._encode)


def _copy(groups: Groups) -> Groups:
    return {key: sums.copy() for key, sums in groups.items()}


def _entry(raw: object) -> dict[str, Any] | None:
    if not isinstance(raw, list) or len(raw) != 10:
        return None
    model, provider, *counts, seconds, estimated = raw
    if type(seconds) not in (int, float) or not 0 <= seconds < 1e12:
        return None
    if not isinstance(model, str) or not isinstance(provider, str) or type(estimated) is not bool:
        return None
    if len(model) > _MAX_TEXT or len(provider) > _MAX_TEXT:
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
