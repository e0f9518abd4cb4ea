"""The edits model: unsaved edits per checkpoint (changed inputs, edited task outputs) until a fork takes them or
the user discards them. The screen owns one; the detail panel and its tabs read it; quitting asks it. Headless."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Edits:
    """Unsaved edits of one checkpoint: changed inputs (as typed) and edited task outputs (0-based index)."""

    inputs: dict[str, str] = field(default_factory=dict)
    outputs: dict[int, str] = field(default_factory=dict)

    def __bool__(self) -> bool:
        return bool(self.inputs or self.outputs)


class EditsModel:
    """Edits kept per checkpoint id; a checkpoint without edits is not kept."""

    def __init__(self) -> None:
        self._by_id: dict[str, Edits] = {}

    def of(self, checkpoint_id: str) -> Edits:
        """The edits of ``checkpoint_id`` (empty when it has none); a copy, so changing it changes nothing kept."""
        kept = self._by_id.get(checkpoint_id)
        return Edits(dict(kept.inputs), dict(kept.outputs)) if kept is not None else Edits()

    def keep(
        self,
        checkpoint_id: str,
        *,
        inputs: Mapping[str, str] | None = None,
        outputs: Mapping[int, str] | None = None,
    ) -> None:
        """Keep the edits of a checkpoint (all its changed inputs, or all its edited outputs)."""
        edits = self._by_id.setdefault(checkpoint_id, Edits())
        if inputs is not None:
            edits.inputs = dict(inputs)
        if outputs is not None:
            edits.outputs = dict(outputs)
        if not edits:
            del self._by_id[checkpoint_id]

    def discard(self, checkpoint_id: str) -> bool:
        """Forget a checkpoint's edits; whether it had any."""
        return self._by_id.pop(checkpoint_id, None) is not None

    def fork_inputs(self, checkpoint_id: str, original: Mapping[str, Any]) -> dict[str, Any] | None:
        """The inputs a fork of ``checkpoint_id`` runs with: ``original`` with the changed ones, None when none
        changed (the fork keeps the checkpoint's own)."""
        changed = self.of(checkpoint_id).inputs
        return {**original, **changed} if changed else None

    def discard_question(self, checkpoint_id: str) -> str | None:
        """What discarding would forget, as a question; None when there is nothing to discard."""
        edits = self._by_id.get(checkpoint_id)
        if edits is None:
            return None
        return (
            f"Forget {len(edits.inputs)} changed input(s) and {len(edits.outputs)} edited output(s) "
            f"of {checkpoint_id[:12]}?"
        )

    def quit_worry(self) -> str | None:
        """What quitting now would lose, or None."""
        count = len(self._by_id)
        if not count:
            return None
        return f"{count} checkpoint{'s' if count != 1 else ''} with unsaved edits (they are lost)"

    @property
    def ids(self) -> set[str]:
        return set(self._by_id)

    def __contains__(self, checkpoint_id: object) -> bool:
        return checkpoint_id in self._by_id

    def __len__(self) -> int:
        return len(self._by_id)

    def __bool__(self) -> bool:
        return bool(self._by_id)

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._by_id))
