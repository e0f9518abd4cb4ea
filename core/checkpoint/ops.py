"""What the command line and the terminal app do with checkpoints: find, list, describe, plan, run, diff.

One import for the views; each use case lives in its own module (``stores``, ``describe``, ``plan``,
``diff``, ``prune_plan``, ``parsing``). Headless: nothing here imports textual. Task indexes are 0-based
throughout; the command line numbers tasks from 1.
"""

from __future__ import annotations

from crewpoint.checkpoint.describe import CheckpointInfo, TaskInfo, describe, resolve_task
from crewpoint.checkpoint.diff import DiffEntry, diff
from crewpoint.checkpoint.parsing import parse_age, parse_assignments, short
from crewpoint.checkpoint.plan import (
    ForkPlan,
    PreparedRun,
    flow_class,
    plan_fork,
    prepare_run,
)
from crewpoint.checkpoint.prune_plan import PrunePlan, PruneStrategy, prune, store_named
from crewpoint.checkpoint.stores import (
    DEFAULT_STORES,
    ancestors,
    body_or_none,
    children,
    find_store,
    iter_checkpoints,
    list_checkpoints,
    load,
    load_checked,
    newest_checkpoints,
    newest_descendant,
    resolve_id,
    store_of,
)

__all__ = [
    "DEFAULT_STORES",
    "CheckpointInfo",
    "DiffEntry",
    "ForkPlan",
    "PreparedRun",
    "PrunePlan",
    "PruneStrategy",
    "TaskInfo",
    "ancestors",
    "body_or_none",
    "children",
    "describe",
    "diff",
    "find_store",
    "flow_class",
    "iter_checkpoints",
    "list_checkpoints",
    "load",
    "load_checked",
    "newest_checkpoints",
    "newest_descendant",
    "parse_age",
    "parse_assignments",
    "plan_fork",
    "prepare_run",
    "prune",
    "resolve_id",
    "resolve_task",
    "short",
    "store_named",
    "store_of",
]
