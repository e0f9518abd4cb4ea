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
from collections.abc import Iterable, Mapping
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


def _entries(rows: Iterable[Mapping[str, Any]]) -> list[list[Any]]:
    groups: dict[tuple[str, str, bool], list[int]] = {}
    seconds: dict[tuple[str, str, bool], float] = {}
    for row in rows:
        model, provider = row.get("model"), row.get("provider") or ""
        if not isinstance(model, str) or not isinstance(provider, str):
            continue
        key = (model[:_MAX_TEXT], provider[:_MAX_TEXT], bool(row.get("estimated")))
        counts = groups.setdefault(key, [0] * 6)
        for i, name in enumerate((*TOKEN_FIELDS, "requests")):
            value = row.get(name, 0)
            if type(value) is int and value > 0:
                counts[i] += value
        duration = row.get("duration_s", 0.0)
        if type(duration) in (int, float) and duration > 0:
            seconds[key] = seconds.get(key, 0.0) + duration
    return [
        [model, provider, *counts, round(seconds.get((model, provider, estimated), 0.0), 6), estimated]
        for (model, provider, estimated), counts in groups.items()
    ]


def usage_summary(chain: Iterable[Mapping[str, Any]], run: Iterable[Mapping[str, Any]]) -> str:
    """The summary text of a checkpoint whose chain spent ``chain`` rows (before and this run) and whose run spent
    ``run`` rows (rows as a body's ``usage`` section holds them); "" when there is none."""
    parts = {"chain": _entries(chain), "run": _entries(run)}
    if not parts["chain"] and not parts["run"]:
        return ""
    text = json.dumps(parts, separators=(",", ":"), ensure_ascii=False)
    return text if len(text) <= MAX_USAGE_TEXT else TOO_LONG


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
