"""``crewpoint checkpoint cost``: what a store's runs, or one checkpoint's chain, cost.

A store is summed run by run: each run's newest checkpoint holds what that run spent (its body's ``usage.rows``), so
a run is counted once and a chain's ``before`` (what earlier runs spent) never twice. One checkpoint shows its chain:
spent = ``before`` + ``rows``, saved = ``reused``. Costs are priced when shown (:mod:`crewpoint.cost`), so a newer
price table or an override applies to old checkpoints; bodies are read as stored, without the typed schema.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import click

from crewpoint.checkpoint.parsing import parse_age
from crewpoint.checkpoint.stores import find_store, resolve_id
from crewpoint.cost import (
    TOKEN_KINDS,
    Cost,
    CostSummary,
    Prices,
    load_prices,
    price_row,
    price_rows,
    table_version,
    usage_damage,
    usage_rows,
)
from crewpoint.providers import is_url, provider_for, split_ref
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointNotFound
from crewpoint.providers.files import looking_once
from crewpoint.providers.usage_meta import UsageRow, read_usage_summary
from crewpoint.tui.cli.errors import bad_input, emit_json, fail
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import cell_text, cli_id, format_time, print_table
from crewpoint.tui.store_index import ORDER, run_label

GROUPS = ("task", "agent", "model", "branch", "run")
STORE_ONLY = ("branch", "run")
"""Groupings that need a store's runs, not one checkpoint's chain."""


@dataclass
class _Run:
    """The newest checkpoint of one run in a store and what the run spent (since ``--since``, when given)."""

    head: CheckpointMeta
    resumed_from: str | None
    rows: list[UsageRow]


@dataclass
class _Seen:
    meta: CheckpointMeta
    key: tuple[str, str, str | None]
    rows: list[UsageRow]


@dataclass
class _Group:
    key: str
    label: str
    rows: list[UsageRow] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)


@checkpoint.command("cost")
@click.argument("ref", metavar="[STORE | ID]", required=False)
@location_option
@click.option("--by", "by", type=click.Choice(GROUPS), default="model", show_default=True, help="One line per what.")
@click.option("--since", metavar="AGE", default=None, help="Only what runs spent in the last AGE (7d, 24h, 30m).")
@click.option("--json", "as_json", is_flag=True, help="Print the sums as JSON.")
@click.pass_context
def cost(ctx: click.Context, ref: str | None, location: str | None, by: str, since: str | None, as_json: bool) -> None:
    """What recorded usage cost: tokens by kind and dollars, per task, agent, model, branch or run.

    \b
    With a store (or none: the store found here) every run is counted once, from its newest checkpoint; with one
    checkpoint (an id, a file or DB#ID) its chain: spent (earlier runs and this one) and saved (what a resume or
    fork reused instead of paying again). Prices come from genai-prices' bundled table; [tool.crewpoint.prices]
    in pyproject.toml or a TOML file named by CREWPOINT_PRICES sets a model's price in dollars per million
    tokens (input_mtok, output_mtok, cache_read_mtok, cache_write_mtok). A model no table knows shows its
    tokens and "price unknown".
    """
    with bad_input(ctx), looking_once():
        cutoff = time.time() - parse_age(since) if since is not None else None
        prices = load_prices()
        where = location_of(ctx, location)
        store = _store_named(ref) if ref is not None else find_store(where)
        if store is None:
            assert ref is not None
            reference = resolve_id(where, ref)
            if by in STORE_ONLY or cutoff is not None:
                what = f"--by {by}" if by in STORE_ONLY else "--since"
                fail(f"{what} sums a store's runs: name the store, not one checkpoint")
            record = provider_for(reference).read(reference)
            damage = usage_damage(record.body, record.meta.usage)
            if damage is not None:  # never priced as whole: rows left out would make a smaller figure
                fail(f"checkpoint {cli_id(record.meta.id)} is damaged: {damage}; its cost is not shown")
            _chain(record.meta, record.body, by, prices, as_json)
            return
        runs, unread = _runs(store, cutoff, by)
    _store(store, runs, unread, by, since, prices, as_json)


def _store_named(ref: str) -> str | None:
    """The store ``ref`` names as a whole (a folder, a database, a URL), or None when it names one checkpoint."""
    path, fragment = split_ref(os.fspath(ref).strip())
    if fragment is not None or not (is_url(path) or os.path.lexists(path)):
        return None
    if os.path.isfile(path) and path.lower().endswith(".json"):
        return None  # a checkpoint file
    try:
        store = find_store(path)
    except CheckpointNotFound:
        return None
    return store if is_url(path) or os.path.normpath(store) == os.path.normpath(path) else None


# -- a store -------------------------------------------------------------------------------------------------------


META_GROUPS = ("model", "branch", "run")
"""Groupings a checkpoint's metadata answers (its usage summary is by model); by task or agent reads bodies."""

RunHead = tuple[CheckpointMeta, str | None, str | None]
"""A run's newest checkpoint, the usage summary of its newest checkpoint before the cutoff (None: none before),
and the checkpoint the run resumed or forked from."""


def _runs(store: str, cutoff: float | None, by: str = "task") -> tuple[list[_Run], int]:
    """Each run of ``store`` with what it spent (since ``cutoff``), and how many checkpoints could not be read.

    Grouped by model, branch or run, a checkpoint that records its run and usage summary is summed from its
    metadata (no body is read; on PostgreSQL one indexed query finds each run's newest checkpoint); the others,
    and every checkpoint grouped by task or agent, from their bodies (:func:`_body_runs`)."""
    provider = provider_for(store)
    if by not in META_GROUPS:
        return _body_runs(provider, store, provider.list(store), cutoff)
    heads_of = getattr(provider, "run_heads", None)
    if heads_of is not None:
        heads, legacy = heads_of(store, cutoff)
    else:
        heads, legacy = run_heads_of(provider.list(store), cutoff)
    runs: list[_Run] = []
    unread = 0
    for head, before, resumed_from in heads:
        spent = read_usage_summary(head.usage)
        if spent is None and head.usage:  # too varied to summarise: the body has the rows
            if cutoff is not None and before is not None:
                unread += 1
                continue
            legacy.append(head)
            continue
        rows = spent["run"] if spent is not None else []
        if cutoff is not None and before:
            older = read_usage_summary(before)
            rows = _minus(rows, older["run"] if older is not None else [])
        runs.append(_Run(head, resumed_from, rows))
    body_runs, unread_bodies = _body_runs(provider, store, legacy, cutoff)
    return sorted(runs + body_runs, key=lambda r: ORDER(r.head)), unread + unread_bodies


def run_heads_of(metas: list[CheckpointMeta], cutoff: float | None) -> tuple[list[RunHead], list[CheckpointMeta]]:
    """What ``PostgresProvider.run_heads`` answers, from a listing: each run's newest checkpoint (written at or
    after ``cutoff``), the usage summary of its newest one before ``cutoff`` and the parent of its first; and the
    checkpoints that record no run (or are damaged)."""
    runs: dict[str, list[CheckpointMeta]] = {}
    legacy: list[CheckpointMeta] = []
    for meta in metas:
        if meta.damaged or not meta.run_id:
            legacy.append(meta)
        else:
            runs.setdefault(meta.run_id, []).append(meta)
    heads: list[RunHead] = []
    for written in runs.values():
        written.sort(key=ORDER)
        head = written[-1]
        if cutoff is not None and head.created_at < cutoff:
            continue
        older = [m for m in written if cutoff is not None and m.created_at < cutoff]
        heads.append((head, older[-1].usage if older else None, written[0].parent_id))
    return heads, legacy


def _body_runs(provider: Any, store: str, metas: list[CheckpointMeta], cutoff: float | None) -> tuple[list[_Run], int]:
    """Each run of ``metas`` with what it spent (since ``cutoff``) from their bodies, and how many could not be
    read. A run is the checkpoints one process wrote on one branch from one start: (lineage, branch, the
    checkpoint it resumed or forked from); its newest checkpoint is the one no later checkpoint of the same run
    continues."""
    seen: dict[str, _Seen] = {}
    unread = 0
    if cutoff is not None:  # the bodies written since, and the last one before each (what its run had spent then)
        recent = [m for m in metas if m.created_at >= cutoff]
        wanted = {m.id for m in recent} | {m.parent_id for m in recent if m.parent_id}
        metas = [m for m in metas if m.id in wanted]
    for meta in metas:
        if meta.damaged:
            unread += 1
            continue
        try:
            body = provider.read(meta.location or f"{store}#{meta.id}").body
        except CheckpointError:
            unread += 1
            continue
        if usage_damage(body, meta.usage) is not None:  # damaged usage counts for nothing, never as whole
            unread += 1
            continue
        block = body.get("lineage") if isinstance(body, Mapping) else None
        source = block.get("resumed_from") if isinstance(block, Mapping) else None
        key = (meta.lineage, meta.branch, source if isinstance(source, str) else None)
        seen[meta.id] = _Seen(meta, key, usage_rows(body))
    continued = {
        s.meta.parent_id for s in seen.values() if s.meta.parent_id in seen and seen[s.meta.parent_id].key == s.key
    }
    runs: list[_Run] = []
    for entry in sorted(seen.values(), key=lambda s: ORDER(s.meta)):
        if entry.meta.id in continued:
            continue
        rows = entry.rows
        if cutoff is not None:
            if entry.meta.created_at < cutoff:
                continue  # the run wrote nothing since
            rows = _minus(rows, _rows_before(entry, seen, cutoff))
        runs.append(_Run(entry.meta, entry.key[2], rows))
    return runs, unread


def _rows_before(head: _Seen, seen: Mapping[str, _Seen], cutoff: float) -> list[UsageRow]:
    """What the run of ``head`` had spent at its newest checkpoint written before ``cutoff`` (none: nothing)."""
    entry = head
    while (parent := seen.get(entry.meta.parent_id or "")) is not None and parent.key == head.key:
        entry = parent
        if entry.meta.created_at < cutoff:
            return entry.rows
    return []


def _minus(rows: list[UsageRow], older: list[UsageRow]) -> list[UsageRow]:
    """``rows`` less what ``older`` (an earlier checkpoint of the same run) had already counted."""
    spent = {_row_key(row): row for row in older}
    out: list[UsageRow] = []
    for row in rows:
        before = spent.get(_row_key(row))
        if before is None:
            out.append(row)
            continue
        left = row._replace(
            input_tokens=max(row.input_tokens - before.input_tokens, 0),
            output_tokens=max(row.output_tokens - before.output_tokens, 0),
            cache_read_tokens=max(row.cache_read_tokens - before.cache_read_tokens, 0),
            cache_write_tokens=max(row.cache_write_tokens - before.cache_write_tokens, 0),
            reasoning_tokens=max(row.reasoning_tokens - before.reasoning_tokens, 0),
            requests=max(row.requests - before.requests, 0),
            duration_s=max(row.duration_s - before.duration_s, 0.0),
        )
        if any(_counts(left)):
            out.append(left)
    return out


def _row_key(row: UsageRow) -> tuple[Any, ...]:
    """What tells two rows of one run apart (the ledger's aggregation), to subtract an older checkpoint's rows."""
    return row.unit, row.label, row.agent, row.model, row.provider, row.estimated


def _store_groups(runs: list[_Run], by: str) -> list[_Group]:
    entities = {r.head.entity_name for r in runs}

    def named(run: _Run, text: str) -> str:
        return f"{run.head.entity_name} / {text}" if len(entities) > 1 else text

    groups: dict[str, _Group] = {}
    for run in runs:
        if by == "run":
            head = run.head
            label = f"{run_label(head.lineage)} {head.branch} @ {cli_id(head.id)}"
            extra = {
                "checkpoint": head.id,
                "lineage": head.lineage,
                "branch": head.branch,
                "entity": head.entity_name,
                "resumed_from": run.resumed_from,
                "created_at": head.created_at,
                "last_checkpoint_at": format_time(head.created_at),
            }
            groups[head.id] = _Group(head.id, named(run, label), list(run.rows), extra)
            continue
        if by == "branch":
            key = f"{run.head.entity_name}\0{run.head.branch}"
            group = groups.setdefault(key, _Group(run.head.branch, named(run, run.head.branch)))
            group.extra = {"entity": run.head.entity_name, "branch": run.head.branch}
            group.rows.extend(run.rows)
            continue
        for row in run.rows:
            key, label = _row_group(row, by)
            if by == "task":
                key, label = f"{run.head.entity_name}\0{key}", named(run, label)
            groups.setdefault(key, _Group(key.rpartition("\0")[2], label)).rows.append(row)
    return list(groups.values())


def _row_group(row: UsageRow, by: str) -> tuple[str, str]:
    if by == "task":
        label = row.label or row.unit or "(outside any task)"
        return str(row.label or row.unit or ""), label
    if by == "agent":
        return str(row.agent or ""), row.agent or "(no agent)"
    provider = row.provider
    return f"{provider}/{row.model}", f"{row.model} ({provider})" if provider else row.model


def _store(
    store: str, runs: list[_Run], unread: int, by: str, since: str | None, prices: Prices, as_json: bool
) -> None:
    groups = _store_groups(runs, by)
    pricer = _Pricer(prices)
    priced = [(group, pricer(group.rows)) for group in groups]
    total = _merged(summary for _, summary in priced)  # the groups share out the runs' rows
    if as_json:
        emit_json(
            {
                "store": store,
                "by": by,
                "since": since,
                "runs": len(runs),
                "unreadable_checkpoints": unread,
                **total.to_json(),
                "groups": [_group_json(g, s) for g, s in priced],
                **_price_info(prices),
            }
        )
        return
    rows = [[cell_text(g.label), *_cells(s)] for g, s in priced]
    rows.append(["TOTAL", *_cells(total)])
    print_table([by.upper(), *HEADER], rows)
    scope = f" in the last {since}" if since else ""
    click.echo(f"\n{len(runs)} run{'s' if len(runs) != 1 else ''}{scope}, each counted once (its newest checkpoint)")
    if unread:
        some = f"{unread} checkpoint{'s' if unread != 1 else ''}"
        click.echo(f"{some} could not be read or {'are' if unread != 1 else 'is'} damaged, and count for nothing")
    if runs and not total.rows:
        click.echo(NO_USAGE)
    _footer([total], prices)


def _priced(row: UsageRow) -> tuple[Any, ...]:
    """What a row's price depends on: its model, provider, token counts and requests."""
    return (row.model, row.provider, *_counts(row))


def _counts(row: UsageRow) -> tuple[int, ...]:
    tokens = row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens, row.reasoning_tokens
    return (*tokens, row.requests)


class _Pricer:
    """:func:`crewpoint.cost.price_rows` for a store's many groups, each distinct row (by what its price depends
    on) priced once: a store's runs repeat the same rows (the same crew, the same calls)."""

    def __init__(self, prices: Prices) -> None:
        self.prices = prices
        self.costs: dict[tuple[Any, ...], Cost] = {}

    def __call__(self, rows: Iterable[UsageRow]) -> CostSummary:
        summary = CostSummary()
        for row in rows:
            key = _priced(row)
            cost = self.costs.get(key)
            if cost is None:
                cost = self.costs[key] = price_row(row, self.prices)
            summary.add(row, cost)
        return summary


def _merged(summaries: Iterable[CostSummary]) -> CostSummary:
    """One summary of the rows of ``summaries`` (each row in one of them), as pricing them together gives."""
    total = CostSummary()
    for summary in summaries:
        total.usd += summary.usd
        for kind, count in summary.tokens.items():
            total.tokens[kind] += count
        total.duration_s += summary.duration_s
        total.estimated = total.estimated or summary.estimated
        total.rows += summary.rows
        total.priced += summary.priced
        total.unknown_models += [m for m in summary.unknown_models if m not in total.unknown_models]
        total.notes += [n for n in summary.notes if n not in total.notes]
    return total


# -- one checkpoint's chain ----------------------------------------------------------------------------------------


def _chain(meta: CheckpointMeta, body: Any, by: str, prices: Prices, as_json: bool) -> None:
    this_run, before, reused = usage_rows(body, "rows"), usage_rows(body, "before"), usage_rows(body, "reused")
    spent_rows = before + this_run
    groups: dict[str, _Group] = {}
    for row in spent_rows:
        key, label = _row_group(row, by)
        groups.setdefault(key, _Group(key, label)).rows.append(row)
    spent = price_rows(spent_rows, prices)
    run = price_rows(this_run, prices)
    saved = price_rows(reused, prices)
    priced = [(group, price_rows(group.rows, prices)) for group in groups.values()]
    if as_json:
        emit_json(
            {
                "checkpoint": meta.id,
                "branch": meta.branch,
                "by": by,
                **spent.to_json(),
                "this_run": run.to_json(),
                "saved": saved.to_json(),
                "groups": [_group_json(g, s) for g, s in priced],
                **_price_info(prices),
            }
        )
        return
    click.echo(f"checkpoint {cli_id(meta.id)} on {cell_text(meta.branch)}: what its chain spent\n")
    rows = [[cell_text(g.label), *_cells(s)] for g, s in priced]
    rows.append(["SPENT", *_cells(spent)])
    rows.append(["  this run", *_cells(run)])
    rows.append(["SAVED (reused)", *_cells(saved)])
    print_table([by.upper(), *HEADER], rows)
    if not spent.rows:
        click.echo(f"\n{NO_USAGE}")
    _footer([spent, saved], prices)


# -- shared --------------------------------------------------------------------------------------------------------

NO_USAGE = "no usage recorded (a checkpoint written before crewpoint recorded usage carries none)"

HEADER = ["REQUESTS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "REASONING", "COST"]


def _cells(summary: CostSummary) -> list[str]:
    tokens = summary.tokens
    shown = summary.shown() + (" ~" if summary.estimated else "")
    return [f"{tokens['requests']:,}", *(f"{tokens[kind]:,}" for kind in TOKEN_KINDS), shown]


def _group_json(group: _Group, summary: CostSummary) -> dict[str, Any]:
    return {"key": group.key, "label": group.label, **group.extra, **summary.to_json()}


def _price_info(prices: Prices) -> dict[str, Any]:
    return {"prices": table_version(), "price_overrides": dict(sorted(prices.sources.items()))}


def _footer(summaries: Iterable[CostSummary], prices: Prices) -> None:
    shown: list[CostSummary] = list(summaries)
    say: Callable[[str], None] = click.echo
    unknown = sorted({m for s in shown for m in s.unknown_models})
    if unknown:
        names = ", ".join(cell_text(m) for m in unknown)
        say(f"price unknown: {names} (set a price in [tool.crewpoint.prices] or $CREWPOINT_PRICES)")
    for note in sorted({n for s in shown for n in s.notes}):
        say(f"not priced: {cell_text(note)}")
    if any(s.estimated for s in shown):
        say("~ some tokens are estimated (the server reported none)")
    if prices.sources:
        files = sorted(set(prices.sources.values()))
        say(f"price overrides: {', '.join(files)}")
    say(f"prices: {table_version()}")
