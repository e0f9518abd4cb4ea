"""Build large, realistic checkpoint stores fast: demo-crew checkpoints cloned along chains of runs."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import Any

from crewpoint.providers.base import BaseProvider, CheckpointRecord


def demo_records() -> list[CheckpointRecord]:
    """The four records one demo crew run captures (nothing written)."""
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.demo import DEMO_INPUTS, demo_crew
    from crewpoint.runtime import RuntimeState

    records: list[CheckpointRecord] = []
    original = RuntimeState.submit

    def keep(self: RuntimeState, record: CheckpointRecord, config: Any) -> None:
        records.append(record)

    RuntimeState.submit = keep  # type: ignore[method-assign]
    try:
        demo_crew(checkpoint=CheckpointConfig(location="unused")).kickoff(inputs=DEMO_INPUTS)
    finally:
        RuntimeState.submit = original  # type: ignore[method-assign]
    return records


def fill_store(provider: BaseProvider, location: str, count: int) -> list[str]:
    """Write ``count`` checkpoints: runs of four on ``main``, with every tenth run forked onto its own branch."""
    records = demo_records()
    ids: list[str] = []
    now = 1_790_000_000.0
    run = 0
    while len(ids) < count:
        lineage = uuid.uuid4().hex
        branch = "main" if run % 10 else f"fork-{run // 10}"
        parent = ids[-3] if branch != "main" and len(ids) >= 3 else None
        for seq, record in enumerate(records, start=1):
            if len(ids) >= count:
                break
            checkpoint_id = uuid.uuid4().hex
            meta = replace(
                record.meta,
                id=checkpoint_id,
                parent_id=parent,
                branch=branch,
                lineage=lineage,
                sequence=seq,
                created_at=now,
            )
            body = dict(record.body)
            body["lineage"] = {**body["lineage"], "id": checkpoint_id, "parent_id": parent, "branch": branch}
            provider.write(location, CheckpointRecord(meta=meta, body=body))
            ids.append(checkpoint_id)
            parent = checkpoint_id
            now += 1.0
        run += 1
    return ids
