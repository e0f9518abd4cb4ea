"""``crewpoint checkpoint resume`` and ``fork``, for crewpoint's stores and other tools' (CrewAI's)."""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from crewpoint.budget import MAX_TOKENS, MAX_USD, Budget
from crewpoint.entities import kind_of
from crewpoint.providers import split_ref
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.formats import ForeignRunRequest, format_of_store
from crewpoint.tui.cli.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    bad_input,
    emit_json,
    fail,
    wants_traceback,
)
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import cli_id
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.ops import PreparedRun
    from crewpoint.checkpoint.run import Outcome, RunOptions
    from crewpoint.estimate import Estimate
    from crewpoint.providers.formats import Format


PROGRESS_HELP = "rich: a progress display on stderr; json: one JSON object per event on stdout."
APP_HELP = (
    "Your program, whose crew, flow or agent runs with the checkpoint's state: FILE.py:attr or module:attr "
    "(a Crew/Flow/Agent, its class, or a function making one). Default: [tool.crewpoint] app in pyproject.toml; "
    "without one, the entity is rebuilt from the checkpoint alone."
)

JSON_HELP = "With --dry-run: the plan as one JSON object (each task's verdict, reasons and estimate)."
DRY_RUN_HELP = (
    "Print what would run (the checkpoint, the store written to, the program, each task's verdict against the"
    " program, the tasks to run and their estimate) and exit 0;"
    " refuses exactly what the run refuses, and runs and writes nothing."
)


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--app``, ``--budget``, ``--budget-tokens``, ``--progress`` and what runs when the program changed
    (``--keep``, ``--rerun``, ``--strict``): how a command that runs a checkpoint (resume, fork, answer) runs it."""
    fn = change_options(fn)
    fn = click.option(
        "--progress", type=click.Choice(["rich", "json"]), default="rich", show_default=True, help=PROGRESS_HELP
    )(fn)
    fn = budget_options(fn)
    return click.option("--app", "app", metavar="FILE.py:ATTR", default=None, help=APP_HELP)(fn)


def change_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--keep TASK``, ``--rerun TASK`` and ``--strict``: what a run does with tasks the program changed."""
    fn = click.option(
        "--strict",
        is_flag=True,
        help="Refuse (exit 2) when the program changed since the checkpoint: any task changed, new, dropped or moved.",
    )(fn)
    fn = click.option(
        "--rerun",
        "rerun",
        multiple=True,
        metavar="TASK",
        help="Run TASK again (a name or a number from 1) though its saved output could be used; repeatable.",
    )(fn)
    return click.option(
        "--keep",
        "keep",
        multiple=True,
        metavar="TASK",
        help="Use the saved output of TASK (a name or a number from 1) though the program changed it; repeatable.",
    )(fn)


def budget_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--budget USD`` and ``--budget-tokens N`` (resume, fork, answer): the run stops at them, exit 76."""
    fn = click.option(
        "--budget-tokens",
        "budget_tokens",
        type=click.IntRange(min=1, max=MAX_TOKENS),
        default=None,
        metavar="N",
        help="Stop the run before an LLM call once it has spent N tokens (input + output + reasoning); exit 76.",
    )(fn)
    return click.option(
        "--budget",
        "budget_usd",
        type=click.FloatRange(min=0, min_open=True, max=MAX_USD),
        default=None,
        metavar="USD",
        help="Stop the run before an LLM call once it has spent USD dollars (what this run spends); exit 76.",
    )(fn)


def run_cli(
    ctx: click.Context, options: RunOptions, progress: str, *, dry_run: bool = False, as_json: bool = False
) -> None:
    """Resume, fork or answer (``options``) with progress, and end as the run did: the result on stdout, exit 0;
    75 waiting for an answer, 76 at its budget, 130 interrupted, 1 failed (each with the command that goes on),
    2 for what is refused before anything runs. ``dry_run`` prints the plan and exits 0 (``as_json``: one JSON
    object). A run whose program changed since the checkpoint says its plan on stderr first."""
    # lazy: running a checkpoint loads the body schema, which the headless list never needs
    from crewpoint.checkpoint.run import interrupted, plan_run, run_checkpoint

    # lazy: run progress loads the event catalogue; only a run draws it
    from crewpoint.tui.progress import make_progress

    foreign = _foreign_store(options.location, options.ref)
    if foreign is not None:
        adapter, foreign_store = foreign
        if options.start is not None:
            fail(f"only crewpoint's own runs wait for an answer; {foreign_store} is a {adapter.title} store")
        if dry_run:
            fail(f"--dry-run is for crewpoint's own checkpoints; {foreign_store} is a {adapter.title} store")
        if options.keep or options.rerun or options.strict:
            fail(
                f"--keep, --rerun and --strict are for crewpoint's own runs; {foreign_store} is a {adapter.title} store"
            )
        if options.budget is not None:
            fail(f"--budget is for crewpoint's own runs; {foreign_store} is a {adapter.title} store")
        _foreign_run(ctx, adapter, foreign_store, options, progress)
        return
    with bad_input(ctx):
        if dry_run:  # planned and checked exactly as the run would be: nothing runs, nothing is written
            try:
                planned = plan_run(options)
            except KeyboardInterrupt:
                _end(ctx, interrupted(options), progress)
            estimate = planned.estimate()  # (a bad price file: exit 2, before any line of the plan)
            if as_json:
                emit_json(plan_json(planned.prepared, planned.app, estimate))  # escapes what a terminal acts on
                return
            _print_plan(planned.prepared, planned.app)
            _print_estimate(estimate)
            return
        try:
            planned = plan_run(options)
        except KeyboardInterrupt:
            _end(ctx, interrupted(options), progress)
        changes = planned.prepared.changes
        says_itself = getattr(planned.prepared.entity, "SAYS_CHANGES", False)
        if changes is not None and not says_itself:  # said before anything runs: what changed, or a note alone
            said = change_lines(planned.prepared) if not changes.unchanged else [f"note: {n}" for n in changes.notes]
            for line in said:
                click.echo(visible(line, one_line=True), err=True)
        outcome = run_checkpoint(
            options,
            lambda prepared: make_progress(progress, prepared),
            lambda note: click.echo(note, err=True),
            planned=planned,
        )
    _end(ctx, outcome, progress)


def _end(ctx: click.Context, outcome: Outcome, progress: str) -> None:
    """Say how the run ended, and exit with its code (:class:`ExitCode`)."""
    # lazy: run progress loads the event catalogue; only a run draws it
    from crewpoint.tui.progress import result_text

    if outcome.kind == "interrupted":
        click.echo(outcome.message, err=True)
        sys.exit(EXIT_INTERRUPTED)
    if outcome.kind == "budget":  # one line: what it spent, its budget, and the command that goes on
        fail(outcome.message, ExitCode.BUDGET)
    if outcome.kind == "failed":
        if outcome.error is not None and wants_traceback(ctx):
            traceback.print_exception(outcome.error)
        fail(outcome.message, EXIT_BAD_INPUT if outcome.refused else EXIT_FAILED)
    if progress != "json":
        text = result_text(outcome.result)  # it can hold outputs read from the checkpoint: escapes are shown, not sent
        click.echo(visible(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)))
    if outcome.lost is not None:  # the run finished, but not every checkpoint reached the store
        fail(outcome.lost, EXIT_FAILED)
    if outcome.kind == "waiting":  # the run waits for a person again: come back later
        click.echo(outcome.message, err=True)
        sys.exit(ExitCode.WAITING)


def run_options_of(
    ctx: click.Context,
    ref: str,
    location: str | None,
    inputs: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    **given: Any,
) -> RunOptions:
    """The :class:`RunOptions` a command's arguments give: the store (``--location``, or the root's), the parsed
    ``--input KEY=VALUE`` and ``--set-output N=TEXT`` (a bad one: exit 2), and the rest as given."""
    from crewpoint.checkpoint import ops
    from crewpoint.checkpoint.run import RunOptions

    with bad_input(ctx):
        new_inputs = ops.parse_assignments(inputs, "--input")
        edits = ops.parse_assignments(outputs, "--set-output")
    return RunOptions(ref, location_of(ctx, location), inputs=new_inputs, outputs=edits, **given)


def _run_given(ctx: click.Context, given: dict[str, Any], **fixed: Any) -> None:
    """Run what a resume or fork command was given (its click parameters, by name): the run's options as one
    :class:`RunOptions`, then the run, its plan printed instead with ``--dry-run``."""
    budget = Budget.of(given.pop("budget_usd"), given.pop("budget_tokens"))
    progress, dry_run, as_json = given.pop("progress"), given.pop("dry_run"), given.pop("as_json")
    ref, location = given.pop("ref"), given.pop("location")
    inputs, outputs = given.pop("inputs", ()), given.pop("outputs", ())
    options = run_options_of(ctx, ref, location, inputs, outputs, budget=budget, **given, **fixed)
    run_cli(ctx, options, progress, dry_run=dry_run, as_json=_json_for_dry_run(as_json, dry_run))


def _print_plan(prepared: PreparedRun, app: str | None) -> None:
    """What a resume or fork would do: the checkpoint, the store it writes to, the program and the tasks it runs."""
    source = prepared.source
    verb = "fork" if prepared.fork else "resume"
    branch = "a new branch (named when it starts)" if prepared.fork and not prepared.branch else prepared.branch
    rerun = prepared.plan.rerun
    names = prepared.task_names
    unit = kind_of(prepared.kind).noun(len(rerun) if names else 2)
    lines = [
        f"dry run: would {verb} {cli_id(source.id)} ({prepared.kind} {source.entity_name})",
        f"store:   {prepared.store} (branch {branch})",
        f"program: {app if app else 'rebuilt from the checkpoint (no --app, no [tool.crewpoint] app)'}",
    ]
    lines += change_lines(prepared)
    if names:
        listed = ", ".join(f"{i + 1}. {names[i]}" for i in rerun if 0 <= i < len(names))
        lines.append(f"{unit} to run: {listed or 'none'}")
    else:
        lines.append(f"{unit} to run: what is not done at the checkpoint")
    lines += prepared.model_lines()  # the models the run calls, and a checkpoint's other one said
    for line in lines:
        click.echo(visible(line, one_line=True))


def change_lines(prepared: PreparedRun) -> list[str]:
    """The plan's verdicts, one line a task (``  2. outline: changed, runs (description changed)``), its notes
    first; none when there is nothing to compare (an agent, a flow without fingerprints)."""
    changes = prepared.changes
    if changes is None:
        return []
    lines = [f"note: {note}" for note in changes.notes]
    lines.append("plan:" if not changes.unchanged else "plan:    unchanged since the checkpoint")
    if changes.unchanged:
        return lines
    for v in changes.verdicts:
        where = f"{v.index + 1}." if v.index is not None else "-"
        said = f" ({'; '.join(v.reasons)})" if v.reasons else ""
        lines.append(f"  {where} {v.name}: {v.verdict}{', runs' if v.runs else ''}{said}")
    return lines


def plan_json(prepared: PreparedRun, app: str | None, estimate: Estimate) -> dict[str, Any]:
    """A dry run as one JSON object: the checkpoint, the store, the program, each task's verdict with its
    estimate, the tasks to run and the total."""
    by_unit = {u.unit: u.to_json() for u in estimate.units}
    changes = prepared.changes
    tasks: list[dict[str, Any]] = []
    for v in changes.verdicts if changes is not None else ():
        unit = prepared.task_ids[v.index] if v.index is not None and v.index < len(prepared.task_ids) else None
        tasks.append({**v.to_json(), "estimate": by_unit.get(unit) if v.runs else None})
    return {
        "checkpoint": prepared.source.id,
        "action": "fork" if prepared.fork else "resume",
        "store": prepared.store,
        "program": app,
        "unchanged": changes.unchanged if changes is not None else None,
        "notes": list(changes.notes) if changes is not None else [],
        "tasks": tasks,
        "to_run": [prepared.task_names[i] for i in prepared.plan.rerun if i < len(prepared.task_names)],
        "estimate": estimate.to_json(),
    }


def _print_estimate(estimate: Estimate) -> None:
    """Under the tasks to run: each one's last recorded run on this chain or after it (or no history), then the
    total."""
    # lazy: the price table's version, read only when a cost is shown
    from crewpoint.cost import table_version

    lines = [f"estimate, from each one's last run on this chain or after it (prices: {table_version()}):"]
    lines += [f"  {line}" for line in estimate.unit_lines()]
    lines.append(estimate.total_line().replace("estimate: ", "  total: ", 1))
    for line in lines:
        click.echo(visible(line, one_line=True))


def _foreign_store(where: str | None, ref: str) -> tuple[Format, str] | None:
    """The format and store of ``ref`` (an id in ``where``, a file or ``db#id``) when it is another tool's
    checkpoint store (CrewAI's), or None for crewpoint's own."""
    from crewpoint.checkpoint import ops

    path = split_ref(ref)[0]
    candidate = ref if os.path.exists(path) else None
    try:
        store = candidate if candidate is not None else ops.find_store(where)
    except CheckpointError:
        return None
    adapter = format_of_store(store)
    return (adapter, store) if adapter.foreign else None


def _foreign_run(ctx: click.Context, adapter: Format, store: str, options: RunOptions, progress: str) -> None:
    """Resume or fork another tool's checkpoint (CrewAI's): its adapter writes a fork in that tool's format and
    the user's copy of the tool runs it.

    With ``--progress json`` (the app's run panel) notes are JSON ``log`` events on stdout, the fork is a
    ``checkpoint`` event, and the tool's own output follows line by line."""
    streaming = progress == "json"

    def say(text: str) -> None:
        if streaming:
            click.echo(json.dumps({"event": "log", "text": text}, ensure_ascii=False))
        else:
            click.echo(text, err=True)

    def forked(done: dict[str, str]) -> None:
        if streaming:
            click.echo(json.dumps({"event": "checkpoint", **done}, ensure_ascii=False))
        else:
            click.echo(done["ref"])

    try:
        with bad_input(ctx):
            request = ForeignRunRequest(
                store,
                options.ref,
                fork=options.fork,
                branch=options.branch,
                inputs=dict(options.inputs),
                outputs=dict(options.outputs),
                say=say,
                forked=forked,
            )
            outcome = adapter.run(request)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if outcome.problem is not None:
        if options.fork:  # the fork is written: the user runs it where the tool is installed
            say(f"note: {outcome.problem}")
            return
        fail(outcome.problem, EXIT_FAILED)
    if outcome.exit_code:
        fail(f"the {adapter.title} run failed (exit {outcome.exit_code})", EXIT_FAILED)


@checkpoint.command()
@click.argument("ref", metavar="ID")
@location_option
@run_options
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.option("--force", is_flag=True, help="Resume even beside a live run of the same branch (its tasks run twice).")
@click.pass_context
def resume(ctx: click.Context, /, **given: Any) -> None:
    """Continue a run from checkpoint ID; finished tasks are not run again.

    ID is a checkpoint id or unique prefix (looked up in --location), a checkpoint file, or DB#ID.
    The run's result is printed on stdout. Exit 1 if the run fails, 76 if it stops at its budget, 130 if
    interrupted. A checkpoint of a live run (its process running now) is refused with exit 2: fork it, or
    --force.
    """
    _run_given(ctx, given)


@checkpoint.command()
@click.argument("ref", metavar="ID")
@location_option
@click.option("--branch", "-b", default=None, help="Name of the new branch (default: fork-<time>-<suffix>).")
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="Change a kickoff input (repeatable).")
@click.option(
    "--set-output",
    "outputs",
    multiple=True,
    metavar="N=TEXT",
    help="Replace finished task N's output; N is a number from 1 or a task name (repeatable).",
)
@run_options
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--json", "as_json", is_flag=True, help=JSON_HELP)
@click.pass_context
def fork(ctx: click.Context, /, **given: Any) -> None:
    """Start a new branch from checkpoint ID and run it, optionally with edited inputs or task outputs.

    Tasks whose text uses a changed input, tasks whose output you replace with --set-output, and the tasks
    that depend on them are the only ones run again. The original branch is left untouched.
    """
    _run_given(ctx, given, fork=True)


def _json_for_dry_run(as_json: bool, dry_run: bool) -> bool:
    if as_json and not dry_run:
        fail("--json prints a dry run's plan: give it with --dry-run (a run's progress as JSON is --progress json)")
    return as_json
