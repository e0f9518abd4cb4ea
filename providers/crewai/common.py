"""CrewAI 1.15 checkpoints as its stores hold them: masking keys, parsing a dump, and the facts a listing reads.

CrewAI writes a ``RuntimeState`` dump per checkpoint: ``crewai_version``, ``parent_id``, ``branch``, ``trigger``,
``entities`` (dumps with ``entity_type`` crew, flow or agent; a crew's agent executors follow it as flows) and
``event_record`` (``nodes``: ``{event_id: {"event": {...}, "edges": {...}}}``). Its ids are
``<YYYYmmddTHHMMSS>_<uuid8>``.

Keys are masked on the way in (:func:`mask_text`): nothing read from a CrewAI store shows an ``api_key`` or a
key-looking string. Turning a dump into a body in crewpoint's schema is the CrewAI format's job, above the schema
(:mod:`crewpoint.formats.crewai`); the stores reach it through the format registry (:func:`to_body`).
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.formats import format_named

MASK = "••••"
FORMAT = "crewai"
"""The name CrewAI's format is registered under (:mod:`crewpoint.providers.formats`)."""

FILE_RE = re.compile(r"(\d{8}T\d{6})_([0-9a-f]{8})_p-(none|\d{8}T\d{6}_[0-9a-f]{8})\.json")

_SECRET_NAME = re.compile(
    r"(?:api[_\-]?key|secret|password|passwd|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token"
    r"|platform[_\-]?token|private[_\-]?key|authorization|bearer)$",
    re.IGNORECASE,
)
_SECRET_NAMES = (
    r"[A-Za-z0-9_\-]*(?:api[_\-]?key|secret|password|passwd|access[_\-]?token|auth[_\-]?token|refresh[_\-]?token"
    r"|platform[_\-]?token|private[_\-]?key|authorization|bearer)"
)
_SECRET_FIELD = re.compile(r'("' + _SECRET_NAMES + r'"\s*:\s*)"(?:[^"\\]|\\.)*"', re.IGNORECASE)
_ESCAPED_SECRET_FIELD = re.compile(r'(\\"' + _SECRET_NAMES + r'\\"\s*:\s*)\\"(?:[^"\\]|\\[^"])*\\"', re.IGNORECASE)
_ESCAPED_HINTS = ('key\\"', 'secret\\"', 'password\\"', 'passwd\\"', 'token\\"', 'authorization\\"', 'bearer\\"')
# Key-looking strings, each behind a literal prefix so a search skips text without it at C speed.
_KEY_PATTERNS = (
    ("sk-", re.compile(r"sk-(?:ant-|proj-|or-)?[A-Za-z0-9_\-]{16,}")),
    ("AKIA", re.compile(r"AKIA[0-9A-Z]{16}")),
    ("gh", re.compile(r"gh[pousr]_[A-Za-z0-9]{30,}")),
    ("github_pat_", re.compile(r"github_pat_[A-Za-z0-9_]{30,}")),
    ("xox", re.compile(r"xox[abposr]-[A-Za-z0-9\-]{10,}")),
    ("AIza", re.compile(r"AIza[0-9A-Za-z_\-]{35}")),
    ("hf_", re.compile(r"hf_[A-Za-z0-9]{30,}")),
    ("gsk_", re.compile(r"gsk_[A-Za-z0-9]{30,}")),
)
_BEARER = re.compile(r"(Bearer )[A-Za-z0-9._~+/\-]{16,}=*")
_secret_names: dict[str, bool] = {}


def _mask_keys_in(text: str) -> str:
    for literal, pattern in _KEY_PATTERNS:
        if literal in text:
            text = pattern.sub(MASK, text)
    if "Bearer " in text:
        text = _BEARER.sub(lambda m: m.group(1) + MASK, text)
    if '\\"' in text:
        lower = text.lower()
        if any(hint in lower for hint in _ESCAPED_HINTS):
            text = _ESCAPED_SECRET_FIELD.sub(lambda m: m.group(1) + '\\"' + MASK + '\\"', text)
    return text


def is_secret_name(name: str) -> bool:
    known = _secret_names.get(name)
    if known is None:
        known = _secret_names[name] = _SECRET_NAME.search(name) is not None
    return known


def _hide_secret_fields(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {k: (MASK if isinstance(v, str) and v and is_secret_name(k) else v) for k, v in pairs}


def mask_text(text: str) -> str:
    """``text`` (JSON or plain) with secret fields' values and key-looking strings replaced by ``••••``."""
    text = _mask_keys_in(text)
    if '"' in text:
        text = _SECRET_FIELD.sub(lambda m: m.group(1) + '"' + MASK + '"', text)
    return text


def loads_masked(text: str) -> Any:
    """Parse JSON ``text`` with every key masked: key-looking strings anywhere, and the value of every field
    whose name says it holds a secret (``api_key``, ``OPENAI_API_KEY``, ``Authorization``, ``client_secret``…)."""
    return json.loads(_mask_keys_in(text), object_pairs_hook=_hide_secret_fields)


def mask_value(value: Any) -> Any:
    """A copy of a JSON-ready ``value`` with every key masked (see :func:`loads_masked`)."""
    return loads_masked(json.dumps(value, ensure_ascii=False))


MAX_DEPTH = 64
"""Deepest nesting a CrewAI dump may have (CrewAI's own reach about 12): a deeper one is damaged, not drawn."""


def parse_json(text: str | bytes, masked: bool = False) -> Any:
    """JSON ``text`` as Python values, keys masked when ``masked``. Raises ValueError for text that is not JSON
    or nests deeper than :data:`MAX_DEPTH` (never RecursionError, however deep a crafted file goes)."""
    try:
        value = loads_masked(text if isinstance(text, str) else text.decode("utf-8")) if masked else json.loads(text)
    except RecursionError:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep") from None
    if too_deep(value):
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    return value


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Does ``value`` nest lists and dicts deeper than ``limit``? (No recursion: a stack of containers.)"""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_stamp(stamp: str) -> float:
    """``YYYYmmddTHHMMSS`` (UTC, as CrewAI writes it) as seconds since the epoch; 0 when it does not parse."""
    try:
        if len(stamp) < 15 or stamp[8] != "T" or not stamp[9:15].isdigit():
            raise ValueError(stamp)
        hour, minute, second = int(stamp[9:11]), int(stamp[11:13]), int(stamp[13:15])
        if not (hour < 24 and minute < 60 and second < 62):
            raise ValueError(stamp)
        return _midnight(stamp[0:8]) + hour * 3600 + minute * 60 + second
    except ValueError:
        return 0.0


@functools.lru_cache(maxsize=4096)
def _midnight(day: str) -> float:
    """``YYYYmmdd`` (UTC) as seconds since the epoch; a store's checkpoints share a few days."""
    import calendar

    if not day.isdigit():
        raise ValueError(day)
    year, month, date = int(day[0:4]), int(day[4:6]), int(day[6:8])
    if not (1 <= month <= 12 and 1 <= date <= 31):
        raise ValueError(day)
    return float(calendar.timegm((year, month, date, 0, 0, 0, 0, 0, 0)))


def main_entity(dump: dict[str, Any]) -> dict[str, Any]:
    """The entity a checkpoint is about: the first crew, else the first entity (agent executors follow a crew as
    flows, so the first one wins)."""
    entities = [e for e in dump.get("entities") or [] if isinstance(e, dict)]
    if not entities:
        raise ValueError("the CrewAI checkpoint holds no entities")
    for entity in entities:
        if entity.get("entity_type") == "crew":
            return entity
    return entities[0]


def events_of(dump: dict[str, Any]) -> list[dict[str, Any]]:
    """The recorded events, in emission order."""
    record = dump.get("event_record") or {}
    nodes = record.get("nodes") if isinstance(record, dict) else None
    if not isinstance(nodes, dict):
        return []
    events = [n["event"] for n in nodes.values() if isinstance(n, dict) and isinstance(n.get("event"), dict)]
    return sorted(events, key=lambda e: (e.get("emission_sequence") or 0, str(e.get("timestamp") or "")))


def context_ids(task: dict[str, Any]) -> list[str] | None:
    """The ids of the tasks ``task`` names as context; None when it takes the crew's default (every task before
    it in a sequential crew, CrewAI's ``NOT_SPECIFIED``)."""
    context = task.get("context")
    if not isinstance(context, list):
        return None
    return [str(c.get("id")) if isinstance(c, dict) else str(c) for c in context]


def flow_name(entity: dict[str, Any], events: list[dict[str, Any]]) -> str:
    if entity.get("name"):
        return str(entity["name"])
    for event in events:
        if event.get("flow_name"):
            return str(event["flow_name"])
    return "flow"


def progress(entity: dict[str, Any], events: list[dict[str, Any]] | None = None) -> tuple[int, int]:
    """(done, total): a crew's tasks, a flow's finished methods, an agent's one run."""
    kind = entity.get("entity_type")
    if kind == "crew":
        tasks = [t for t in entity.get("tasks") or [] if isinstance(t, dict)]
        return sum(1 for t in tasks if t.get("output") is not None), len(tasks)
    if kind == "flow":
        done = len(entity.get("checkpoint_completed_methods") or [])
        return done, done
    finished = any(
        e.get("type") in ("lite_agent_execution_completed", "agent_execution_completed") for e in events or []
    )
    return int(finished), 1


def entity_name(entity: dict[str, Any], events: list[dict[str, Any]]) -> str:
    kind = entity.get("entity_type")
    if kind == "flow":
        return flow_name(entity, events)
    if kind == "agent":
        return str(entity.get("role") or "agent")
    return str(entity.get("name") or kind or "")


MODEL_NOT_RECORDED = "(model not recorded by CrewAI)"
"""The model of the usage CrewAI's ``usage_metrics`` carries: its totals name none, so no price is known."""


def usage_of(entity: Any) -> list[dict[str, Any]]:
    """CrewAI's ``usage_metrics`` on a crew (its run's totals: prompt, cached prompt and completion tokens,
    successful requests) as usage rows; none when it recorded none. CrewAI names no model there."""
    metrics = entity.get("usage_metrics") if isinstance(entity, dict) else None
    if not isinstance(metrics, dict):
        return []

    def count(name: str) -> int:
        value = metrics.get(name)
        return value if type(value) is int and 0 <= value <= 10**15 else 0

    counts = {
        "input_tokens": count("prompt_tokens"),
        "output_tokens": count("completion_tokens"),
        "cache_read_tokens": min(count("cached_prompt_tokens"), count("prompt_tokens")),
        "cache_write_tokens": 0,
        "reasoning_tokens": 0,
        "requests": count("successful_requests"),
    }
    if not any(counts.values()):
        return []
    row = {"unit": None, "label": "", "agent": None, "model": MODEL_NOT_RECORDED, "provider": ""}
    return [{**row, **counts, "duration_s": 0.0, "estimated": False}]


def member_after(text: str, at: int, key: str) -> Any:
    """The value of member ``key`` among the members that follow, from ``at`` (just after a member's value), in
    the same object; None when the object, or ``text`` (the file's head), ends first."""
    try:
        while True:
            at = _skip_space(text, at)
            if text[at] != ",":
                return None
            name, at = _DECODER.raw_decode(text, _skip_space(text, at + 1))
            at = _skip_space(text, at)
            if not isinstance(name, str) or text[at] != ":":
                return None
            value, at = _DECODER.raw_decode(text, _skip_space(text, at + 1))
            if name == key:
                return value
    except (ValueError, IndexError, RecursionError):
        return None


_DECODER = json.JSONDecoder()


def _skip_space(text: str, at: int) -> int:
    while text[at] in " \t\r\n":
        at += 1
    return at


def to_body(dump: dict[str, Any], meta: CheckpointMeta) -> dict[str, Any]:
    """A masked dump as a body in crewpoint's schema, by the CrewAI format registered above the schema (a store
    only reads: the translation is the format's, :mod:`crewpoint.formats.crewai.body`)."""
    return format_named(FORMAT).to_body(dump, meta)
