"""Which tasks an edit invalidates: the one rule, for crewpoint's crews and for other tools' forks alike.

A task reads the outputs of the tasks in its context or, with no context, of every task before it (a sequential
process). Editing a task's output, or an input its text names, invalidates every task that reads it, directly or
through others. The rule is over positions only, so the engine and the format adapters share it without either
knowing the other's task objects.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence


def reads_of(contexts: Sequence[Collection[int] | None]) -> list[frozenset[int]]:
    """What each task reads, from each task's context (positions), ``None`` meaning every task before it."""
    return [frozenset(range(j)) if context is None else frozenset(context) for j, context in enumerate(contexts)]


def readers(reads: Sequence[Collection[int]], changed: Collection[int]) -> set[int]:
    """Every task that reads a changed task, directly or through others (the changed ones themselves excluded)."""
    changed = set(changed)
    out: set[int] = set()
    frontier = set(changed)
    while frontier:
        frontier = {
            j
            for j, sources in enumerate(reads)
            if j not in out and j not in changed and not frontier.isdisjoint(sources)
        }
        out |= frontier
    return out
