"""Checkpoint body schema versions and the ordered migration chain.

Every body carries ``schema_version``. Reading runs each migration from the body's version up to
:data:`SCHEMA_VERSION`; a body from a newer crewpoint is refused, never half-read.

Version history:

* 0 — early shape: ``state`` (the entity), ``event_history``, and lineage as top-level ``checkpoint_id``,
  ``parent_id``, ``branch``; no ``lineage`` block, no ``sequence``.
* 1 — ``entity``, ``events``, a ``lineage`` block with ``id``, ``parent_id``, ``branch``, ``lineage`` and
  ``sequence``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from crewpoint.providers.base import DamagedCheckpoint, UnsupportedSchema

SCHEMA_VERSION = 1

Body = dict[str, Any]


def _v0_to_v1(body: Body) -> Body:
    out = {k: v for k, v in body.items() if k not in ("state", "event_history", "checkpoint_id", "parent_id", "branch")}
    checkpoint_id = body.get("checkpoint_id") or ""
    out["entity"] = body.get("state", {})
    out["events"] = body.get("event_history", [])
    out["lineage"] = {
        "id": checkpoint_id,
        "parent_id": body.get("parent_id"),
        "branch": body.get("branch") or "main",
        "lineage": body.get("lineage_id") or checkpoint_id,
        "sequence": int(body.get("sequence") or 0),
        "resumed_from": None,
    }
    out.pop("lineage_id", None)
    out["schema_version"] = 1
    return out


MIGRATIONS: dict[int, Callable[[Body], Body]] = {0: _v0_to_v1}
"""``MIGRATIONS[n]`` turns a version-n body into a version-(n+1) body."""


def migrate(body: Body, source: str = "checkpoint") -> Body:
    """Bring ``body`` up to :data:`SCHEMA_VERSION`, or raise :class:`UnsupportedSchema`."""
    raw = body.get("schema_version", 0)
    if not isinstance(raw, int) or raw < 0:
        raise UnsupportedSchema(f"{source}: schema_version {raw!r} is not a version number")
    if raw > SCHEMA_VERSION:
        raise UnsupportedSchema(
            f"{source} was written by a newer crewpoint (schema {raw}, this one reads up to {SCHEMA_VERSION}): "
            "upgrade crewpoint to read it"
        )
    version = raw
    while version < SCHEMA_VERSION:
        body = MIGRATIONS[version](body)
        version += 1
    problem = lineage_problem(body.get("lineage"))
    if problem is not None:
        raise DamagedCheckpoint(f"{source}: damaged checkpoint: {problem}")
    return body


def lineage_problem(lineage: Any) -> str | None:
    """Why a body's ``lineage`` block cannot be continued from (one line), or ``None``. A damaged block is
    refused here, so a resumed run never copies wrong-typed lineage into its new checkpoints."""
    if not isinstance(lineage, dict):
        return "its lineage block is missing" if lineage is None else "its lineage block is not an object"
    for key in ("branch", "lineage"):
        value = lineage.get(key)
        if value is not None and not isinstance(value, str):
            return f"lineage {key} must be text, not {type(value).__name__}"
    parent = lineage.get("parent_id")
    if parent is not None and not isinstance(parent, str):
        return f"lineage parent_id must be text, not {type(parent).__name__}"
    sequence = lineage.get("sequence")
    if sequence is not None and (type(sequence) is not int or sequence < 0):
        return f"lineage sequence must be a count, not {type(sequence).__name__}"
    return None
