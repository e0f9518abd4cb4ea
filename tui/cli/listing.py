"""``crewpoint checkpoint list`` and ``info`` (the listing itself is :mod:`crewpoint.tui.cli.listing_run`)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from crewpoint.providers.base import CheckpointError, DamagedCheckpoint
from crewpoint.providers.files import looking_once
from crewpoint.text import clip
from crewpoint.tui.cli.errors import bad_input, emit_json, fail
from crewpoint.tui.cli.listing_run import LIST_CHUNK, run_list
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import aligned, cell_text, cli_id, entity_label, format_time, written_by
from crewpoint.tui.store_index import budget_lines
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.describe import CostView
    from crewpoint.checkpoint.ops import CheckpointInfo
    from crewpoint.cost import CostSummary
    from crewpoint.providers.base import CheckpointMeta


@checkpoint.command("list")
@click.argument("location_arg", metavar="[LOCATION]", required=False)
@location_option
@click.option("--branch", "-b", default=None, help="Only this branch.")
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="Show at most N checkpoints.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of checkpoint metadata.")
@click.pass_context
def list_command(
    ctx: click.Context,
    location_arg: str | None,
    location: str | None,
    branch: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """List checkpoints, newest first (reads no checkpoint bodies).

    \b
    Columns: id, time, branch, parent, trigger, entity, progress (tasks done/total), size, cost (what the chain
    had cost up to the checkpoint: ~ when some tokens were estimated, ? when a model's price is unknown, - when
    no usage was recorded), and the status of the run that wrote it (live, waiting, answered, done, interrupted,
    crashed, failed; - when unknown). With --json, each has "usage" (tokens by kind), "cost_usd" and
    "cost_estimated", and the checkpoint a waiting run waits at has a "request" (message, method or task,
    outcomes, id).
    """
    if location_arg is not None and location is not None:
        fail("list takes one store: name it as LOCATION or with --location, not both")
    run_list(ctx, location_of(ctx, location_arg if location is None else location), branch, limit, as_json, LIST_CHUNK)


# -- info ------------------------------------------------------------------------------------------------------


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    percent = f"{100 * done // total}%" if total else "-"
    return f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {percent}"


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in str(text).splitlines() or [""])


def _say(text: str = "") -> None:
    """A line of ``info``: checkpoint text with its control characters shown, not sent."""
    click.echo(visible(text))


def _print_info(
    info: CheckpointInfo,
    lineage: list[CheckpointMeta],
    lone: str | None = None,
    costs: CostView | None = None,
    damage: str | None = None,
) -> None:
    meta = info.meta
    done, total = info.progress
    # lazy: the entity registry loads pathlib and more, which the headless list never needs
    from crewpoint.entities import kind_of

    kind = kind_of(info.kind)
    unit = kind.noun(total)
    rows = [
        ("checkpoint", meta.id),
        ("location", meta.location or "-"),
        ("created", format_time(meta.created_at)),
        ("branch", f"{meta.branch} (sequence {meta.sequence})"),
        ("parent", meta.parent_id or "- (first checkpoint of its run)"),
        ("lineage", meta.lineage),
        ("trigger", meta.trigger),
        ("entity", entity_label(info.kind, info.name)),
        ("written by", written_by(meta)),
        ("progress", f"{_bar(done, total)} {unit} done"),
    ]
    for key, value in rows:
        _say(f"{key:<11} {value}")
    if lone is not None:
        _say("\na lone file, in no checkpoint store: no ancestry; resume and fork refuse it (copy it into a store")
        _say(f"first, under <store>/{meta.branch}/)")
    if len(lineage) > 1:
        _say("\nancestry (newest first)")
        ancestry = [
            [cli_id(m.id), cell_text(m.branch), cell_text(m.trigger), f"{m.tasks_done}/{m.tasks_total}"]
            for m in lineage
        ]
        click.echo("\n".join(aligned(ancestry, indent="  ")))  # one write, however long the ancestry
    _say("\ninputs")
    if info.inputs:
        for key, value in info.inputs.items():
            _say(f"  {key} = {value}")
    else:
        _say("  (none)")
    missing = [p for p in info.placeholders if p not in info.inputs]
    if missing:
        _say(f"  placeholders without a value: {', '.join(missing)}")
    if info.tasks:
        _say(f"\n{kind.noun(len(info.tasks))}")
        for task in info.tasks:
            status = "[done]   " if task.done else "[pending]"
            agent = f" ({task.agent})" if task.agent else ""
            _say(f"  {status} {task.index + 1}. {task.name}{agent}")
            if task.context is not None:
                _say(f"              context: {', '.join(str(i + 1) for i in task.context) or 'none'}")
            if task.output is not None:
                _say(_indent(clip(task.output, 400, one_line=False), "              "))
    if kind.has_state:
        _say("\nflow state")
        _say(_indent(json.dumps(info.flow_state, indent=2, ensure_ascii=False, default=str), "  "))
        _say("\nmethod outputs")
        for i, (name, value) in enumerate(info.method_outputs):
            _say(f"  {i + 1}. {name}: {clip(json.dumps(value, ensure_ascii=False, default=str), 200)}")
        if not info.method_outputs:
            _say("  (none yet)")
    for line in _cost_lines(costs) if damage is None else ["", f"cost: damaged, not priced: {damage}"]:
        _say(line)
    for line in info.feedback_lines():  # the request the run waits on, and each answer given
        _say(line)
    for line in budget_lines(meta, info.events, info.origin):  # a run stopped at its budget
        _say(line)
    _say(f"\nevents recorded: {len(info.events)}")


def _tokens(summary: CostSummary) -> str:
    tokens = summary.tokens
    text = f"{tokens['input_tokens']:,} in, {tokens['output_tokens']:,} out"
    cached = tokens["cache_read_tokens"] + tokens["cache_write_tokens"]
    return text + (f" ({cached:,} cached)" if cached else "")


def _cost_cell(summary: CostSummary) -> str:
    return ("~" if summary.estimated else "") + summary.shown()


def _cost_lines(view: CostView | None) -> list[str]:
    """A checkpoint's cost: spent (the chain up to the checkpoint), this run, saved (what a resume or fork
    reused: tokens, cost, time), a table per task, and the price table's version (None: no usage recorded)."""
    if view is None:
        return ["", "cost: no usage recorded"]
    lines = ["", "cost"]
    for label, summary in (("spent", view.spent), ("this run", view.this_run)):
        lines.append(f"  {label:<9} {_tokens(summary)}  {_cost_cell(summary)}")
    saved = view.saved
    if saved.rows:
        took = f"{saved.duration_s:.1f} s"
        lines.append(f"  {'saved':<9} {_tokens(saved)}  {_cost_cell(saved)}  {took} (reused, not run again)")
    else:
        lines.append(f"  {'saved':<9} nothing reused")
    table = [["TASK", "REQUESTS", "INPUT", "OUTPUT", "COST"]]
    for label, summary in view.tasks:
        tokens = summary.tokens
        counts = [f"{tokens[k]:,}" for k in ("requests", "input_tokens", "output_tokens")]
        table.append([cell_text(label), *counts, _cost_cell(summary)])
    lines += aligned(table, indent="  ")
    unknown = sorted({m for _, s in view.tasks for m in s.unknown_models})
    if unknown:
        lines.append(f"  price unknown: {', '.join(cell_text(m) for m in unknown)}")
    if view.spent.estimated:
        lines.append("  ~ some tokens are estimated (the server reported none)")
    lines.append(f"  prices: {view.prices}")
    return lines


@checkpoint.command()
@click.argument("ref", metavar="[PATH | DB#ID | DIR | ID]", required=False)
@location_option
@click.option("--json", "as_json", is_flag=True, help="Print the checkpoint as JSON.")
@click.pass_context
def info(ctx: click.Context, ref: str | None, location: str | None, as_json: bool) -> None:
    """Show one checkpoint: metadata, ancestry, inputs and each task's status and output.

    A folder or database shows its latest checkpoint; an id (or unique prefix) is looked up in --location.
    """
    from crewpoint.checkpoint import ops

    with bad_input(ctx), looking_once():  # reads only: each store is looked at once
        where = location_of(ctx, location)
        record = ops.load(ref if ref is not None else ops.find_store(where), where)
        described = ops.describe(record)
        lone = _lone_problem(record)
        if described.pending_feedback is not None and lone is None:
            # lazy: the request's claim is read only for a checkpoint that holds one
            from crewpoint.feedback_claims import answer_at, answered_words

            claim = answer_at(record, ops.store_of(record))
            described.answered = answered_words(claim) if claim is not None else None
        lineage = ops.ancestors(ops.store_of(record), record.meta.id) if lone is None else [record.meta]
        # lazy: pricing loads decimal, needed only by a checkpoint that recorded usage
        from crewpoint.cost import usage_damage

        damage = usage_damage(record.body, record.meta.usage)  # damaged usage is said, never priced as whole
        costs = described.costs() if damage is None and any(described.usage.values()) else None
    if as_json:
        data = described.to_dict()
        data["cost"] = costs.to_dict() if costs is not None else None
        data["cost_damaged"] = damage
        data["ancestry"] = [m.id for m in lineage]
        data["lone"] = lone
        emit_json(data)
        return
    _print_info(described, lineage, lone, costs, damage)


def _lone_problem(record: Any) -> str | None:
    """Why ``record`` (a checkpoint file) lies in no store, or None when it does: such a file is shown without
    ancestry, and resume and fork refuse it (they write only into the store a checkpoint lies in)."""
    from crewpoint.checkpoint import ops

    try:
        ops.store_of(record)
    except DamagedCheckpoint:
        raise
    except CheckpointError as exc:
        return str(exc)
    return None
