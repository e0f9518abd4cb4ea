"""What a resume or fork will cost before it runs: for each task (or flow method) it will run, its last recorded run
on this checkpoint's chain or after it (tokens by kind, cost priced now, time), and which have no history to go on.
What ran after the checkpoint is in the chain of the newest checkpoint that descends from it (``later``).

The chain's record is the body's ``usage`` section: ``before`` (what earlier runs of the chain spent, oldest first)
then ``rows`` (what the run that wrote the checkpoint spent). Each run's ledger holds one row per (unit, agent,
model, provider, estimated), so a unit's last recorded run is the last unbroken stretch of its rows in that order,
ending (read backwards) where another unit's row comes between or one of its rows repeats (an earlier run's ledger).

The units that will run are the plan's (:func:`units_to_run`): a crew's tasks by the fork plan's ``rerun`` indexes,
exactly the list ``--dry-run`` prints; a flow's methods that are not done at the checkpoint and ran before on this
chain (its routers decide what else runs: :attr:`Estimate.open_ended`). Headless: no textual, and genai-prices is
loaded only when something is priced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from crewpoint.cost import PRICE_UNKNOWN, CostSummary, Prices, format_usd, load_prices, price_rows, usage_rows
from crewpoint.providers.usage_meta import UsageRow, read_usage_summary
from crewpoint.usage import finished_units

__all__ = [
    "NO_HISTORY",
    "ChainCost",
    "Estimate",
    "UnitCost",
    "UnitEstimate",
    "chain_cost",
    "cost_text",
    "estimate_rerun",
    "last_run",
    "pending_tasks",
    "summary_cost",
    "time_text",
    "tokens_text",
    "units_to_run",
]

NO_HISTORY = "no history to go on"
"""What is said of a task that will run but never ran on this chain."""


def cost_text(summary: CostSummary) -> str:
    """A cost as a cell: ``$0.0123``; ``~$0.0123`` when some tokens were estimated; ``price unknown`` when no row
    has a price; ``$0.0123 + price unknown`` when some have none."""
    if summary.rows and not summary.priced:
        return PRICE_UNKNOWN
    text = ("~" if summary.estimated else "") + format_usd(summary.usd)
    return text if summary.complete else f"{text} + {PRICE_UNKNOWN}"


def tokens_text(summary: CostSummary) -> str:
    """Tokens as a cell: ``1,200 in / 300 out`` (with cache and reasoning counts when there are any)."""
    t = summary.tokens
    parts = [f"{t['input_tokens']:,} in", f"{t['output_tokens']:,} out"]
    if t["cache_read_tokens"]:
        parts.append(f"{t['cache_read_tokens']:,} cached")
    if t["cache_write_tokens"]:
        parts.append(f"{t['cache_write_tokens']:,} cache-write")
    if t["reasoning_tokens"]:
        parts.append(f"{t['reasoning_tokens']:,} reasoning")
    return ("~" if summary.estimated else "") + " / ".join(parts)


def time_text(seconds: float) -> str:
    """A duration for people: ``0.4s``, ``12s``, ``3m 05s``."""
    if seconds < 10:
        return f"{seconds:.1f}s"
    if seconds < 60:
        return f"{seconds:.0f}s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes}m {rest:02d}s"


def last_run(chain: Sequence[UsageRow], unit: str | None) -> list[UsageRow]:
    """The rows of ``unit``'s last recorded run in ``chain`` (``before`` then ``rows``, oldest first)."""
    found: list[UsageRow] = []
    keys: set[tuple[Any, ...]] = set()
    for row in reversed(chain):
        if row.unit != unit:
            if found:
                break  # another unit's row between: the stretch before it is an earlier run
            continue
        key = (row.agent, row.model, row.provider, row.estimated)
        if key in keys:
            break  # the same row again: an earlier run's ledger
        keys.add(key)
        found.append(row)
    found.reverse()
    return found


@dataclass(frozen=True)
class UnitEstimate:
    """One task (or method) that will run, and what its last recorded run on the chain took."""

    unit: str | None
    label: str
    rows: tuple[UsageRow, ...]
    summary: CostSummary

    @property
    def has_history(self) -> bool:
        return bool(self.rows)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"unit": self.unit, "label": self.label, "history": self.has_history}
        if self.has_history:
            out.update(self.summary.to_json())
        return out


@dataclass(frozen=True)
class Estimate:
    """What the units that will run cost when they last ran on this chain, each and in total."""

    units: tuple[UnitEstimate, ...]
    total: CostSummary
    """The sum over the units with history."""
    open_ended: bool = False
    """A flow: methods that never ran on this chain may run too (its routers decide), with no history to go on."""

    @property
    def missing(self) -> list[str]:
        """The labels of the units with no history to go on."""
        return [u.label for u in self.units if not u.has_history]

    def total_line(self) -> str:
        """One line: ``estimate: ~$0.0123, 1,200 in / 300 out, 4.2s`` and what has no history."""
        with_history = [u for u in self.units if u.has_history]
        if not self.units:
            said = "nothing will run" if not self.open_ended else f"methods not run before: {NO_HISTORY}"
            return f"estimate: {said}"
        if not with_history:
            return f"estimate: {NO_HISTORY} (none of them ran before on this chain)"
        total = self.total
        line = f"estimate: {cost_text(total)}, {tokens_text(total)}, {time_text(total.duration_s)}"
        missing = len(self.units) - len(with_history)
        if missing:
            line += f", plus {missing} with {NO_HISTORY}"
        if self.open_ended:
            line += f" (methods not run before may run too: {NO_HISTORY})"
        return line

    def unit_lines(self) -> list[str]:
        """One line per unit: ``3. draft: $0.0042, 1,200 in / 300 out, 4.2s`` or ``no history to go on``."""
        lines = []
        for u in self.units:
            if u.has_history:
                s = u.summary
                lines.append(f"{u.label}: {cost_text(s)}, {tokens_text(s)}, {time_text(s.duration_s)}")
            else:
                lines.append(f"{u.label}: {NO_HISTORY}")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "units": [u.to_json() for u in self.units],
            "total": self.total.to_json(),
            "no_history": self.missing,
            "open_ended": self.open_ended,
        }


def _task_labels(body: Mapping[str, Any]) -> dict[str, str]:
    entity = body.get("entity")
    tasks = entity.get("tasks") if isinstance(entity, Mapping) else None
    labels: dict[str, str] = {}
    for i, task in enumerate(tasks if isinstance(tasks, list) else ()):
        if isinstance(task, Mapping) and isinstance(task.get("id"), str):
            name = task.get("name") or task.get("description") or task["id"]
            labels[task["id"]] = f"{i + 1}. {str(name)[:80]}"
    return labels


def units_to_run(body: Mapping[str, Any], rerun: Iterable[int]) -> tuple[list[str | None], bool]:
    """The units a resume or fork of ``body`` runs, by its plan's ``rerun`` (0-based task indexes, as the fork
    plan and ``--dry-run`` list them), and whether more may run that no plan names (a flow). A crew: its tasks at
    those indexes. Anything else: the units recorded on the chain that are not done at the checkpoint."""
    entity = body.get("entity")
    entity = entity if isinstance(entity, Mapping) else {}
    tasks = entity.get("tasks")
    if isinstance(tasks, list) and tasks:
        ids = [t.get("id") if isinstance(t, Mapping) else None for t in tasks]
        return [ids[i] for i in rerun if 0 <= i < len(ids) and isinstance(ids[i], str)], False
    done = finished_units(entity)
    units: list[str | None] = []
    for row in (*usage_rows(body, "before"), *usage_rows(body, "rows")):
        unit = row.unit
        if unit not in done and unit not in units:
            units.append(unit)
    return units, "method_outputs" in entity


def estimate_rerun(
    body: Mapping[str, Any],
    units_to_run: Sequence[str | None],
    prices: Prices | None = None,
    *,
    open_ended: bool = False,
    later: Mapping[str, Any] | None = None,
    models: Mapping[str, tuple[str, str]] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Estimate:
    """The estimate for running ``units_to_run`` (task ids or flow method names) from the checkpoint ``body``: each
    unit's last recorded run on its chain, priced now (``prices``, else the working folder's overrides, which may
    raise :class:`crewpoint.cost.PricesError`). ``later`` is the body of a checkpoint after this one (the newest that
    descends from it, :func:`crewpoint.checkpoint.ops.newest_descendant`): its chain holds this one's and what ran
    after it, so forking task 2 of a finished run estimates tasks 3 and 4 from that run. ``models`` (agent role →
    model and provider, :func:`crewpoint.checkpoint.plan.run_models`) are what the run will call: an agent's
    recorded tokens are priced at its model there, not at the one that spent them. A body is data: malformed usage
    rows are left out. ``labels`` (unit → label) name the units as the program has them (a task moved since)."""
    chain = [*usage_rows(body, "before"), *usage_rows(body, "rows")]
    if later is not None:  # this chain's rows, then what ran after the checkpoint (the newest run of a unit wins)
        chain = [*usage_rows(later, "before"), *usage_rows(later, "rows")] or chain
    labels = {**_task_labels(body), **(labels or {})}
    if prices is None:
        prices = load_prices()
    units: list[UnitEstimate] = []
    history: list[UsageRow] = []
    for unit in units_to_run:
        rows = [_as_called(row, models) for row in last_run(chain, unit)]
        history += rows
        label = labels.get(unit or "") or (rows[-1].label if rows and rows[-1].label else str(unit or "?"))
        units.append(UnitEstimate(unit, label, tuple(rows), price_rows(rows, prices)))
    return Estimate(tuple(units), price_rows(history, prices), open_ended)


def _as_called(row: UsageRow, models: Mapping[str, tuple[str, str]] | None) -> UsageRow:
    """``row`` with the model and provider its agent will call, when ``models`` names them."""
    called = models.get(row.agent or "") if models else None
    return row._replace(model=called[0], provider=called[1]) if called is not None else row


def pending_tasks(body: Mapping[str, Any]) -> list[int]:
    """The tasks a plain resume (or an answer, which runs on as a resume does) runs: those without an output at the
    checkpoint, 0-based, as a crew's ``rerun()`` lists them."""
    entity = body.get("entity")
    tasks = entity.get("tasks") if isinstance(entity, Mapping) else None
    return [i for i, task in enumerate(tasks if isinstance(tasks, list) else ()) if not _has_output(task)]


def _has_output(task: object) -> bool:
    return isinstance(task, Mapping) and task.get("output") is not None


@dataclass(frozen=True)
class UnitCost:
    """What one task (or method) cost on the chain, every run of it summed."""

    unit: str | None
    label: str
    summary: CostSummary


@dataclass(frozen=True)
class ChainCost:
    """What a checkpoint's chain cost: ``spent`` (earlier runs and this one), ``this_run``, ``saved`` (what a
    resume or fork reused instead of paying again) and ``units``, spent per task or method in the order first run."""

    spent: CostSummary
    this_run: CostSummary
    saved: CostSummary
    units: tuple[UnitCost, ...]

    @property
    def recorded(self) -> bool:
        """Did the chain record any usage?"""
        return bool(self.spent.rows or self.saved.rows)


def chain_cost(body: Mapping[str, Any], prices: Prices | None = None) -> ChainCost:
    """The figures of a checkpoint's chain, priced now, from its body's ``usage`` (malformed rows left out)."""
    if prices is None:
        prices = load_prices()
    rows, before = usage_rows(body, "rows"), usage_rows(body, "before")
    labels = _task_labels(body)
    chain = [*before, *rows]
    by_unit: dict[str | None, list[UsageRow]] = {}
    for row in chain:
        by_unit.setdefault(row.unit, []).append(row)
    units = tuple(
        UnitCost(unit, labels.get(unit or "") or members[-1].label or str(unit or "?"), price_rows(members, prices))
        for unit, members in by_unit.items()
    )
    return ChainCost(
        price_rows(chain, prices), price_rows(rows, prices), price_rows(usage_rows(body, "reused"), prices), units
    )


def summary_cost(usage: object, part: str = "chain", prices: Prices | None = None) -> CostSummary | None:
    """What a checkpoint's metadata usage summary (``CheckpointMeta.usage``) says its ``chain`` or its ``run``
    spent, priced now; None when the metadata has no summary (an older record, or nothing recorded)."""
    summary = read_usage_summary(usage)
    if summary is None or not summary.get(part):
        return None
    return price_rows(summary[part], prices if prices is not None else load_prices())
