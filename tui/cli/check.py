"""``crewpoint checkpoint check``: which stored runs the current program can go on from, and what each re-runs."""

from __future__ import annotations

import sys
from collections import Counter

import click

from crewpoint.tui.cli.errors import EXIT_FAILED, bad_input, emit_json, fail
from crewpoint.tui.cli.locations import location_of
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import cli_id
from crewpoint.tui.visible import visible

RESUMABLE = ("waiting", "budget", "interrupted", "crashed", "failed")
"""The run states a resume goes on from (a live run is still running; a finished one has nothing left)."""

SHOWN_IDS = 5
"""Checkpoint ids listed after a group's count (the rest counted)."""


@checkpoint.command()
@click.argument("location_arg", metavar="[STORE]", required=False)
@click.option(
    "--app", "app", metavar="FILE.py:ATTR", default=None, help="Your program (default: [tool.crewpoint] app)."
)
@click.option("--json", "as_json", is_flag=True, help="Print each checkpoint's plan and the counts as JSON.")
@click.option("--strict", is_flag=True, help="Exit 1 when any checkpoint would re-run, add or drop a task.")
@click.pass_context
def check(ctx: click.Context, location_arg: str | None, app: str | None, as_json: bool, strict: bool) -> None:
    """Which resumable checkpoints in STORE the program can go on from, and what each resume would run again.

    Every resumable checkpoint (waiting, at budget, interrupted, crashed or failed runs, each at its newest
    checkpoint) is compared with the program: the plan each resume would get, summed up.

    No LLM is called and nothing is written. Exit 0 when every checkpoint can resume; 1 when one cannot, or with
    --strict when any would not resume unchanged; 2 for bad input (no store, a program that does not load).
    """
    # lazy: the comparison loads the engine and the program, which only this command needs; the store is found
    # and listed by its own modules, not through ops (which loads describe, diff and cost for the other commands)
    from crewpoint.checkpoint.check import ProgramCheck
    from crewpoint.checkpoint.program import project_app
    from crewpoint.checkpoint.prune_plan import store_named
    from crewpoint.checkpoint.stores import list_checkpoints
    from crewpoint.providers import provider_for
    from crewpoint.tui.store_index import StoreIndex

    with bad_input(ctx):
        store = store_named(location_of(ctx, location_arg))
        program = app or project_app()
        if not program:
            raise ValueError("name your program: --app FILE.py:ATTR (or app in [tool.crewpoint] of pyproject.toml)")
        provider = provider_for(store)
        index = StoreIndex.build(list_checkpoints(store), runs=provider.read_runs(store))
        heads = []
        for segment in index.segments.values():
            state = index.state_of(segment)
            if (state is None and not segment.finished) or state in RESUMABLE:
                heads.append(segment.head)
        heads.sort(key=lambda meta: meta.created_at)
        # every checkpoint is read through the store's provider, found once (not once per checkpoint)
        checker = ProgramCheck(program, provider if all(m.location for m in heads) else None)
        if heads:  # a program that does not load at all is bad input, not a checkpoint that cannot resume
            checker.program(heads[0].entity_kind)
        results = [checker.check(m.location or m.id, m.id, f"{m.entity_kind} {m.entity_name}") for m in heads]
    counts = Counter(r.summary for r in results)
    cannot = any(r.cannot is not None for r in results)
    changed = any(not r.unchanged for r in results)
    if as_json:
        emit_json(
            {
                "store": store,
                "program": program,
                "checkpoints": [r.to_json() for r in results],
                "counts": dict(counts),
            }
        )
    else:
        noun = "checkpoint" if len(results) == 1 else "checkpoints"
        click.echo(visible(f"{len(results)} resumable {noun} in {store}, against {program}:", one_line=True))
        for summary, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
            ids = [cli_id(r.id) for r in results if r.summary == summary]
            shown = "" if summary == "resume unchanged" else ": " + ", ".join(ids[:SHOWN_IDS])
            more = f" and {len(ids) - SHOWN_IDS} more" if shown and len(ids) > SHOWN_IDS else ""
            click.echo(visible(f"  {count} {summary}{shown}{more}", one_line=True))
    if cannot:
        fail("some checkpoints cannot resume with this program (listed above)", EXIT_FAILED)
    if strict and changed:
        fail("--strict: the program changed since some checkpoints (listed above)", EXIT_FAILED)
    sys.exit(0)
