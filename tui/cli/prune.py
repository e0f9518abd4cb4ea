"""``crewpoint checkpoint prune``."""

from __future__ import annotations

import click

from crewpoint.tui.cli.errors import bad_input, emit_json, fail
from crewpoint.tui.cli.locations import location_of
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import cli_id, format_time
from crewpoint.tui.visible import visible


@checkpoint.command()
@click.argument("location_arg", metavar="[LOCATION]", required=False)
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=None,
    help="Keep the newest N checkpoints of each entity per branch.",
)
@click.option(
    "--older-than",
    "older_than",
    metavar="AGE",
    default=None,
    help="Delete checkpoints older than AGE (7d, 24h, 30m, 45s).",
)
@click.option("--branch", "-b", default=None, help="Only prune this branch.")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted; delete nothing.")
@click.option("--force", is_flag=True, help="Also delete fork points (checkpoints another branch starts from).")
@click.option("--json", "as_json", is_flag=True, help="Print the deleted checkpoints as JSON.")
@click.pass_context
def prune(
    ctx: click.Context,
    location_arg: str | None,
    keep: int | None,
    older_than: str | None,
    branch: str | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Delete old checkpoints in the store LOCATION names (and nowhere else).

    \b
    --keep N keeps the newest N checkpoints of each entity (crew, flow or agent, by name) per branch;
    --older-than AGE deletes those older than AGE; with both, only checkpoints both name.
    Never deleted: damaged records (they never count either), the checkpoints of live runs, those a request
    waits at for a person's answer, and unless --force the checkpoints another branch forks from and the first
    checkpoint of each fork.
    --dry-run answers exactly as the real prune would, and deletes nothing.
    """
    from crewpoint.checkpoint import ops

    if keep is None and older_than is None:
        fail("prune needs --keep N or --older-than AGE (or both)")
    with bad_input(ctx):
        store = ops.store_named(location_of(ctx, location_arg))
        seconds = ops.parse_age(older_than) if older_than is not None else None
        strategy = ops.PruneStrategy(keep=keep, older_than=seconds, branch=branch, force=force)
        plan = ops.prune(store, strategy, dry_run=dry_run)
        deleted = len(plan.doomed)
    if as_json:
        emit_json(
            {
                "store": store,
                "dry_run": dry_run,
                "deleted": [] if dry_run else [m.to_dict() for m in plan.doomed],
                "would_delete": [m.to_dict() for m in plan.doomed] if dry_run else [],
                "kept_fork_points": sorted(plan.kept_fork_points),
                "kept_live": sorted(plan.kept_live),
                "kept_waiting": sorted(plan.kept_waiting),
                "damaged": plan.damaged,
            }
        )
        return
    verb = "would delete" if dry_run else "deleted"
    for meta in plan.doomed:
        line = f"{verb}  {cli_id(meta.id)}  {format_time(meta.created_at)}  {meta.branch}  {meta.trigger}"
        click.echo(visible(line, one_line=True))
    for meta in (m for m in ops.list_checkpoints(store) if m.id in plan.kept_waiting) if plan.kept_waiting else ():
        line = f"kept  {cli_id(meta.id)}  {format_time(meta.created_at)}  {meta.branch}  {meta.trigger}"
        click.echo(visible(line, one_line=True) + "  (a request waits here for an answer)")
    count = len(plan.doomed) if dry_run else deleted
    summary = f"{count} checkpoint{'s' if count != 1 else ''} {'would be deleted' if dry_run else 'deleted'} in {store}"
    if plan.kept_fork_points:
        n = len(plan.kept_fork_points)
        summary += f"; kept {n} fork point{'s' if n != 1 else ''} (--force deletes them)"
    if plan.kept_live:
        summary += f"; kept {len(plan.kept_live)} of running runs"
    if plan.kept_waiting:
        n = len(plan.kept_waiting)
        summary += f"; kept {n} waiting for an answer (answer {'it' if n == 1 else 'them'} first to prune)"
    if plan.damaged:
        summary += f"; {plan.damaged} damaged left as they are (see list)"
    click.echo(summary, err=True)
