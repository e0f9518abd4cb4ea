"""Pruning a store: the one path behind ``prune``, its dry run, and ``max_checkpoints``.

What is deleted is a :class:`~crewpoint.providers.prune.PruneStrategy`; the store's provider plans it and deletes
it under the store's lock (or in one transaction), so a dry run answers exactly as the real run would.
"""

from __future__ import annotations

from typing import Any

from crewpoint.checkpoint.stores import _provider, find_store
from crewpoint.providers import is_url, shown_location, split_ref
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.prune import PrunePlan, PruneStrategy

__all__ = ["PrunePlan", "PruneStrategy", "prune", "prune_store"]


def prune(location: str, strategy: PruneStrategy, dry_run: bool = False) -> PrunePlan:
    """Prune the store ``location`` names (a folder, a database, a URL) by ``strategy``; nothing else is touched.

    ``location`` must name a store itself: a checkpoint file or ``db#id`` is refused (a prune of "this file"
    would delete in the store around it, which the user did not name), and so is a file that is not a checkpoint.
    Emits ``checkpoint_pruned`` when something was deleted.
    """
    store = store_named(location)
    return prune_store(_provider(store), store, strategy, dry_run)


def prune_store(
    provider: Any, store: str, strategy: PruneStrategy, dry_run: bool = False, source: Any = None
) -> PrunePlan:
    """Prune ``store`` through its ``provider`` (and tidy what interrupted writes left); emits
    ``checkpoint_pruned`` with the ids removed when something was deleted."""
    plan: PrunePlan = provider.prune(store, strategy, dry_run)
    if not dry_run:
        provider.clean(store)
        if plan.doomed:
            # lazy: info loads no events (pydantic)
            from crewpoint.events import CheckpointPrunedEvent, event_bus

            event_bus.emit(
                source,
                CheckpointPrunedEvent(
                    location=shown_location(store),
                    branch=strategy.branch,
                    removed_ids=plan.ids,
                ),
            )
    return plan


def store_named(location: str | None) -> str:
    """The store ``location`` names (None: the one in the current folder); a reference to one checkpoint, or a
    file that is not a store, is refused with one line (a prune deletes only in the store the user named)."""
    import os

    store = find_store(location)
    if location is None:
        return store
    path, fragment = split_ref(location)
    if fragment is not None:
        raise CheckpointError(f"{location} names one checkpoint: name its store ({path}) to prune it")
    if not is_url(path) and os.path.normpath(os.path.realpath(store)) != os.path.normpath(os.path.realpath(path)):
        raise CheckpointError(f"{location} is not a checkpoint store: name the store itself ({store}) to prune it")
    return store
