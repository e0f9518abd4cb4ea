"""Copying a whole store into a crewpoint store: from CrewAI's JSON or SQLite, or between crewpoint's own.

Every checkpoint is copied oldest first with its lineage (parent, branch, run, order); bodies are copied as they
are read (a CrewAI checkpoint as its crewpoint reading, with the masked original under ``crewai``) and every key
is masked on the way. CrewAI's ids hold ``_``, which crewpoint's ids do not: it becomes ``-`` in ids, parents
and runs alike. Damaged checkpoints are skipped and counted; ids already in the target are left as they are,
so copying again adds only what is new.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from crewpoint.formats.crewai.adapter import CREWAI
from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointError, CheckpointRecord
from crewpoint.providers.crewai.common import mask_value


@dataclass
class CopyReport:
    source: str
    target: str
    copied: list[str] = field(default_factory=list)
    existing: list[str] = field(default_factory=list)
    damaged: list[str] = field(default_factory=list)


def crewpoint_id(checkpoint_id: str) -> str:
    return checkpoint_id.replace("_", "-")


def copy_store(source: str, target: str) -> CopyReport:
    """Copy every checkpoint of the store ``source`` into the crewpoint store ``target`` (made if missing)."""
    if os.path.abspath(source) == os.path.abspath(target):
        raise CheckpointError("source and target are the same store")
    if CREWAI.provider_for(target) is not None:
        raise CheckpointError(f"{target} is a CrewAI store, which crewpoint does not write: copy into a new store")
    reader = provider_for(source)
    writer = provider_for(target)
    metas = sorted(reader.list(source), key=lambda m: (m.created_at, m.sequence))
    try:
        present = {m.id for m in writer.list(target)}  # a store that is not there yet raises: nothing present
    except CheckpointError:
        present = set()
    report = CopyReport(source, target)
    for meta in metas:
        if meta.damaged:
            report.damaged.append(meta.id)
            continue
        new = crewpoint_id(meta.id)
        if new in present:
            report.existing.append(new)
            continue
        try:
            record = reader.read(meta.location or source, meta.id)
        except CheckpointError:
            report.damaged.append(meta.id)
            continue
        body = mask_value(record.body)
        lineage = body.get("lineage")
        if isinstance(lineage, dict):
            for key in ("id", "parent_id", "lineage", "resumed_from"):
                if isinstance(lineage.get(key), str):
                    lineage[key] = crewpoint_id(lineage[key])
        copied = record.meta.with_(
            id=new,
            parent_id=crewpoint_id(meta.parent_id) if meta.parent_id else None,
            lineage=crewpoint_id(meta.lineage or meta.id),
            version=f"copy of {meta.version}" if meta.version.startswith("crewai ") else meta.version,
            size=0,
            location="",
            damaged=None,
        )
        writer.write(target, CheckpointRecord(copied, body))
        present.add(new)
        report.copied.append(new)
    writer.flush()
    return report
