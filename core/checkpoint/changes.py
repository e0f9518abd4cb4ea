"""What a resume or fork keeps when the program changed since the checkpoint: one verdict per task or method.

A task or flow method is fingerprinted when it runs (:func:`fingerprint`): one short hash per part that decides
its output (a task's description, expected output, agent, tools, context…; a method's source and its wiring), kept
in the body beside its output. On a resume the program's tasks are matched to the saved ones by identity, and each
gets one :class:`Verdict`; a :class:`ChangePlan` is the whole answer, said before anything runs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

VerdictWord = Literal["kept", "changed", "new", "dropped", "moved"]

FINGERPRINT_LENGTH = 16
"""Hex digits kept of each part's SHA-256: enough to tell edits apart, short enough to store per task."""


def part_hash(value: Any) -> str:
    """The short hash of one part: its canonical JSON (sorted keys; anything JSON cannot hold by its ``str``)."""
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:FINGERPRINT_LENGTH]


def fingerprint(parts: Mapping[str, Any]) -> dict[str, str]:
    """A fingerprint: each named part's short hash, so a comparison can say which parts changed."""
    return {name: part_hash(value) for name, value in sorted(parts.items())}


def changed_parts(saved: Mapping[str, str], current: Mapping[str, str]) -> list[str]:
    """The parts whose hashes differ (a part only one side has counts as changed), in name order."""
    return sorted(name for name in saved.keys() | current.keys() if saved.get(name) != current.get(name))


@dataclass(frozen=True)
class Verdict:
    """What happens to one task (or flow method) of the program, or to a saved one the program dropped.

    ``name`` is the task's name (or its description's first words) or the method's name; ``index`` its place in
    the program (None for a dropped one), ``saved`` its place in the checkpoint (None for a new one). ``reasons``
    say why in words a user reads ("description changed", "moved from 1 to 3"). ``runs``: whether it will run.
    """

    name: str
    verdict: VerdictWord
    index: int | None
    saved: int | None
    runs: bool
    reasons: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "verdict": self.verdict,
            "index": self.index,
            "saved": self.saved,
            "runs": self.runs,
            "reasons": list(self.reasons),
        }


@dataclass(frozen=True)
class ChangePlan:
    """Every verdict of one resume or fork, program order first, then what the program dropped.

    ``notes`` are one-line remarks said once (a checkpoint written before fingerprints; a task matched by position
    only). ``blocked`` is the one-line reason the program cannot go on from this checkpoint, else None.
    """

    verdicts: tuple[Verdict, ...]
    notes: tuple[str, ...] = field(default=())
    blocked: str | None = None

    @property
    def unchanged(self) -> bool:
        """Nothing changed: the program goes on from the checkpoint as it was written (every verdict ``kept``; a
        task that had not run yet at the checkpoint and is the same is ``kept`` too, with ``runs``)."""
        return self.blocked is None and all(v.verdict == "kept" for v in self.verdicts)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdicts": [v.to_json() for v in self.verdicts],
            "notes": list(self.notes),
            "blocked": self.blocked,
        }
