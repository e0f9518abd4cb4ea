"""``crewpoint checkpoint copy``: convert a store between providers."""

from __future__ import annotations

import click

from crewpoint.providers import is_url, provider_for
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.claims import copy_claims
from crewpoint.providers.formats import copy_store
from crewpoint.tui.cli.errors import bad_input, emit_json
from crewpoint.tui.cli.root import checkpoint


@checkpoint.command()
@click.argument("source", metavar="SRC")
@click.argument("target", metavar="DST")
@click.option("--json", "as_json", is_flag=True, help="Print what was copied as JSON.")
@click.pass_context
def copy(ctx: click.Context, source: str, target: str, as_json: bool) -> None:
    """Copy every checkpoint of the store SRC into the crewpoint store DST, keeping lineage.

    \b
    SRC is any store: crewpoint's JSON folder or SQLite file, or CrewAI's own JSON folder or SQLite file.
    DST is a crewpoint store (a folder, or a .db file for SQLite), made if missing; copying again adds only
    what is new. Answers claimed in SRC are carried; an answer already in DST stands (a conflict is said on
    stderr, never written over). Keys (api_key values and key-looking strings) are masked on the way. CrewAI ids become
    crewpoint ids with '-' for '_'.
    """
    from crewpoint.checkpoint import ops

    with bad_input(ctx):
        store = ops.store_named(source)
        _refuse_inside(store, target)
        report = copy_store(store, target)
        claims, conflicts = _copy_claims(store, target)
    for line in conflicts:  # a claim already in the target wins: the source's answer is said, never written over
        click.echo(f"crewpoint: {line}", err=True)
    if as_json:
        emit_json(
            {
                "source": report.source,
                "target": report.target,
                "copied": report.copied,
                "already_there": report.existing,
                "damaged_skipped": report.damaged,
                "claims": claims,
                "claim_conflicts": conflicts,
            }
        )
        return
    summary = f"copied {len(report.copied)} checkpoint{'s' if len(report.copied) != 1 else ''} to {target}"
    if report.existing:
        summary += f"; {len(report.existing)} already there"
    if report.damaged:
        summary += f"; skipped {len(report.damaged)} damaged: {', '.join(report.damaged[:5])}"
    if claims:
        summary += f"; {len(claims)} answer{'s' if len(claims) != 1 else ''} carried"
    click.echo(summary, err=True)


def _copy_claims(store: str, target: str) -> tuple[list[str], list[str]]:
    """The answers claimed in ``store`` carried into ``target`` (:func:`~crewpoint.providers.claims.copy_claims`);
    a target with no checkpoint copied (nothing to answer there) takes none."""
    reader, writer = provider_for(store), provider_for(target)
    if not reader.claims(store):
        return [], []
    return copy_claims(reader, store, writer, target)


def _refuse_inside(store: str, target: str) -> None:
    """A copy never writes into the store it reads (the copy would be copied again, and its files pruned or
    listed as the source's): a target that is the source, or inside it, is refused."""
    import os

    if is_url(store) or is_url(target):
        if store == target:
            raise CheckpointError(f"{target} is the source store: copy into another store")
        return
    source = os.path.realpath(store)
    dest = os.path.realpath(target)
    if dest == source:
        raise CheckpointError(f"{target} is the source store: copy into another store")
    if os.path.isdir(source) and os.path.commonpath([source, dest]) == source:
        raise CheckpointError(f"{target} is inside the source store {store}: copy into a store outside it")
