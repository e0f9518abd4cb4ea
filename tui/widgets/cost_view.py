"""What runs cost, drawn: the Cost tab (cost per task as a bar chart, per branch), the Overview's figures (spent,
this run, saved, a per-task table) and the estimate the Resume, Fork and Answer dialogs show for what will run.

Every figure comes from :mod:`crewpoint.estimate` (``chain_cost``, ``estimate_rerun``), priced when shown
(:mod:`crewpoint.cost`); a model no price covers shows its tokens and "price unknown", an estimated count "~". Text
from a checkpoint (task labels) is shown literally, and a hostile usage section is data like any other: its
malformed rows are left out, never drawn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from crewpoint.checkpoint.stores import body_or_none
from crewpoint.cost import PRICE_UNKNOWN, CostSummary, Prices, PricesError, load_prices, table_version
from crewpoint.estimate import (
    NO_HISTORY,
    ChainCost,
    Estimate,
    chain_cost,
    cost_text,
    estimate_rerun,
    summary_cost,
    time_text,
    tokens_text,
    units_to_run,
)
from crewpoint.providers.base import CheckpointMeta
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.branch_graph import Graph
from crewpoint.tui.widgets.detail_state import Detail

BAR_WIDTH = 30
BRANCH_NOTE = "No branch's newest checkpoint carries a usage summary: open a checkpoint to see what its chain cost."

_prices: Prices | None = None


def prices_now() -> Prices:
    """The price overrides of the working folder, read once per process (:class:`PricesError` for a bad file)."""
    global _prices
    if _prices is None:
        _prices = load_prices()
    return _prices


def _cell(text: str) -> Text:
    return Text(visible(text, one_line=True))


def figures_table(chain: ChainCost) -> Table:
    """Spent (the chain), this run and saved: tokens, cost and time, one row each."""
    table = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
    for name in ("", "cost", "tokens", "time"):
        table.add_column(name, no_wrap=True)
    for name, summary in (("spent", chain.spent), ("this run", chain.this_run), ("saved", chain.saved)):
        table.add_row(Text(name, style="bold"), _cell(cost_text(summary)), _cell(tokens_text(summary)), _time(summary))
    return table


def _time(summary: CostSummary) -> Text:
    return _cell(time_text(summary.duration_s) if summary.rows else "-")


def units_table(chain: ChainCost) -> Table:
    """What each task (or method) of the chain cost, every run of it summed."""
    table = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
    for name in ("task", "cost", "tokens", "calls", "time"):
        table.add_column(name, no_wrap=name != "task", overflow="fold")
    for unit in chain.units:
        s = unit.summary
        table.add_row(
            _cell(unit.label), _cell(cost_text(s)), _cell(tokens_text(s)), _cell(str(s.tokens["requests"])), _time(s)
        )
    return table


def bar_chart(bars: Sequence[tuple[str, CostSummary]]) -> Table:
    """A horizontal bar per item, as long as its cost against the largest (its tokens when no price is known)."""

    priced = any(s.priced for _, s in bars)

    def size(summary: CostSummary) -> Decimal:
        if priced:
            return summary.usd if summary.priced else Decimal(0)
        return Decimal(summary.tokens["input_tokens"] + summary.tokens["output_tokens"])

    largest = max((size(s) for _, s in bars), default=Decimal(0))
    table = Table(box=None, padding=(0, 1), show_header=False, show_edge=False)
    table.add_column(no_wrap=True, overflow="ellipsis", max_width=32)
    table.add_column(no_wrap=True)
    table.add_column(no_wrap=True)
    for label, summary in bars:
        length = int((size(summary) / largest) * BAR_WIDTH) if largest else 0
        bar = Text("█" * length or "▏", style="green" if summary.priced else "yellow")
        table.add_row(_cell(label), bar, _cell(cost_text(summary) if priced else tokens_text(summary)))
    return table


def estimate_table(estimate: Estimate) -> Table:
    """One row per task that will run (its last recorded run on the chain, or no history), then the total."""
    table = Table(box=None, padding=(0, 2), show_edge=False, header_style="bold")
    for name in ("will run", "cost", "tokens", "time"):
        table.add_column(name, no_wrap=name != "will run", overflow="fold")
    for unit in estimate.units:
        s = unit.summary
        if unit.has_history:
            table.add_row(_cell(unit.label), _cell(cost_text(s)), _cell(tokens_text(s)), _time(s))
        else:
            table.add_row(_cell(unit.label), Text(NO_HISTORY, style="italic"), Text(""), Text(""))
    if len(estimate.units) > 1 or estimate.open_ended:
        total = estimate.total
        history = total.rows > 0
        table.add_row(
            Text("total", style="bold"),
            _cell(cost_text(total) if history else NO_HISTORY),
            _cell(tokens_text(total) if history else ""),
            _time(total),
        )
    return table


def estimate_parts(estimate: Estimate) -> list[RenderableType]:
    """The estimate as the dialogs show it: a heading, the table, and what has no history."""
    parts: list[RenderableType] = [Text("Estimate, from each one's last run on this chain or after it", style="bold")]
    if not estimate.units:
        parts.append(Text(estimate.total_line().removeprefix("estimate: "), style="italic"))
        return parts
    parts.append(estimate_table(estimate))
    if estimate.open_ended:
        parts.append(Text(f"methods not run before may run too: {NO_HISTORY}", style="italic"))
    parts.append(Text(f"prices: {table_version()}", style="dim"))
    return parts


class EstimateView(Static):
    """What the tasks that will run cost when they last ran on the checkpoint's chain, in a dialog. Priced in a
    thread when mounted; :attr:`estimate` holds the figures once drawn (None while pricing, or with :attr:`problem`
    when the prices cannot be read)."""

    DEFAULT_CSS = """
    EstimateView { height: auto; margin: 1 0 0 0; }
    """

    def __init__(
        self,
        body: Mapping[str, Any],
        rerun: Sequence[int],
        *,
        later: str | None = None,
        models: Mapping[str, tuple[str, str]] | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(Text("Estimating what will run…", style="italic"), id=id, markup=False)
        self.body = body
        self.rerun = list(rerun)
        self.later = later
        """Where the newest checkpoint after this one is (its chain holds what ran after it), None for none."""
        self.models = dict(models or {})
        """Agent role → the model and provider the run will call: its recorded tokens are priced there (an agent
        not named here, at the model that spent them)."""
        self.estimate: Estimate | None = None
        self.problem: str | None = None

    def on_mount(self) -> None:
        self.run_worker(self._price, thread=True, exclusive=True, group="estimate", exit_on_error=False)

    def _price(self) -> None:
        try:
            units, open_ended = units_to_run(self.body, self.rerun)
            later = body_or_none(self.later)  # what ran after the checkpoint, read in this thread
            estimate = estimate_rerun(
                self.body, units, prices_now(), open_ended=open_ended, later=later, models=self.models
            )
        except PricesError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        self.app.call_from_thread(self._show, estimate)

    def _show(self, estimate: Estimate) -> None:
        self.estimate = estimate
        self.update(Group(*estimate_parts(estimate)))

    def _failed(self, problem: str) -> None:
        self.problem = problem
        self.update(Text(visible(f"No estimate: {problem}", one_line=True), style="italic"))


def chain_parts(body: Mapping[str, Any]) -> tuple[ChainCost | None, list[RenderableType]]:
    """The Overview's part: spent, this run, saved and the per-task table (or why there is none)."""
    try:
        chain = chain_cost(body, prices_now())
    except PricesError as exc:
        return None, [Text("\nCost", style="bold underline"), _cell(f"prices cannot be read: {exc}")]
    parts: list[RenderableType] = [Text("\nCost", style="bold underline")]
    if not chain.recorded:
        parts.append(Text("no usage recorded", style="dim"))
        return chain, parts
    parts += [figures_table(chain), Text(""), units_table(chain)]
    if chain.spent.unknown_models:
        parts.append(_cell(f"{PRICE_UNKNOWN}: {', '.join(chain.spent.unknown_models)}"))
    parts.append(Text(f"prices: {table_version()}", style="dim"))
    return chain, parts


def branch_bars(metas: Sequence[CheckpointMeta], prices: Prices) -> list[tuple[str, CostSummary]]:
    """Each branch's chain cost at its newest checkpoint (from the listing's usage summaries), most expensive first;
    branches whose newest checkpoint carries no summary are left out."""
    heads: dict[tuple[str, str, str], CheckpointMeta] = {}
    for meta in metas:
        key = (meta.entity_kind, meta.entity_name, meta.branch)
        known = heads.get(key)
        if meta.damaged is None and (
            known is None or (meta.created_at, meta.sequence) > (known.created_at, known.sequence)
        ):
            heads[key] = meta
    bars: list[tuple[str, CostSummary]] = []
    for (kind, name, branch), head in heads.items():
        summary = summary_cost(head.usage, "chain", prices)
        if summary is not None:
            bars.append((f"{kind} {name} ⎇ {branch}", summary))
    bars.sort(key=lambda bar: (-bar[1].usd, bar[0]))
    return bars


class CostView(VerticalScroll):
    """The Cost tab: what the chosen checkpoint's chain cost per task, as bars, and what each branch of the store
    cost (its chain at its newest checkpoint). Redraws when ``detail`` or ``graph`` (the store's checkpoints)
    changes; :attr:`chain` and :attr:`branches` hold the figures drawn."""

    DEFAULT_CSS = """
    CostView { padding: 0 1; }
    CostView > #cost-branches { margin-top: 1; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)
    graph: reactive[Graph | None] = reactive(None, init=False, always_update=True)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.chain: ChainCost | None = None
        self.branches: list[tuple[str, CostSummary]] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="cost-body", markup=False)
        yield Static(Text(BRANCH_NOTE, style="dim"), id="cost-branches", markup=False)

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is None:
            return
        body = detail.record.body if detail.ready and detail.record is not None else None
        target = self.query_one("#cost-body", Static)
        self.chain = None
        if body is None:
            target.update(Text(detail.status or "nothing to show", style="dim"))
            return
        try:
            chain = chain_cost(body, prices_now())
        except PricesError as exc:
            target.update(_cell(f"prices cannot be read: {exc}"))
            return
        self.chain = chain
        parts: list[RenderableType] = [Text("Cost per task (this chain)", style="bold underline")]
        if chain.recorded:
            parts.append(bar_chart([(u.label, u.summary) for u in chain.units]))
            said = (
                f"spent {cost_text(chain.spent)}, this run {cost_text(chain.this_run)}, saved {cost_text(chain.saved)}"
            )
            parts.append(_cell(said))
        else:
            parts.append(Text("no usage recorded", style="dim"))
        parts.append(Text(f"prices: {table_version()}", style="dim"))
        target.update(Group(*parts))

    def watch_graph(self, graph: Graph | None) -> None:
        if graph is None:
            return
        target = self.query_one("#cost-branches", Static)
        try:
            self.branches = branch_bars(graph.metas, prices_now())
        except PricesError as exc:
            target.update(_cell(f"prices cannot be read: {exc}"))
            return
        parts: list[RenderableType] = [
            Text("Cost per branch (its chain, at its newest checkpoint)", style="bold underline")
        ]
        if self.branches:
            parts.append(bar_chart(self.branches))
        else:
            parts.append(Text(BRANCH_NOTE, style="dim"))
        target.update(Group(*parts))
