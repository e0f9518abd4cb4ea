"""``crewpoint checkpoint resume`` and ``fork``, for crewpoint's stores and other tools' (CrewAI's)."""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from crewpoint.budget import MAX_TOKENS, MAX_USD, Budget, BudgetExceeded
from crewpoint.entities import kind_of
from crewpoint.providers import split_ref
from crewpoint.providers.base import CheckpointError
from crewpoint.providers.formats import format_of_store
from crewpoint.tui.cli.errors import (
    EXIT_BAD_INPUT,
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    bad_input,
    fail,
    fail_from,
    one_line,
)
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import cli_id
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.ops import PreparedRun
    from crewpoint.estimate import Estimate
    from crewpoint.providers.base import CheckpointRecord
    from crewpoint.providers.formats import Format

Kickoff = Callable[["PreparedRun"], Any]
"""What runs a prepared run (``prepared.kickoff()`` for resume and fork)."""

Starter = Callable[["CheckpointRecord", str], Kickoff]
"""A command's own checks of the checkpoint (its record and store), before any program loads: it raises a
one-line error (exit 2), or answers what runs the prepared run."""


class RunRefused(Exception):
    """Raised by a :data:`Kickoff` before its run started anything: one line on stderr and exit 2 (bad input)."""


PROGRESS_HELP = "rich: a progress display on stderr; json: one JSON object per event on stdout."
APP_HELP = (
    "Your program, whose crew, flow or agent runs with the checkpoint's state: FILE.py:attr or module:attr "
    "(a Crew/Flow/Agent, its class, or a function making one). Default: [tool.crewpoint] app in pyproject.toml; "
    "without one, the entity is rebuilt from the checkpoint alone."
)

DRY_RUN_HELP = (
    "Print what would run (the checkpoint, the store written to, the program, the tasks to run) and exit 0;"
    " refuses exactly what the run refuses, and runs and writes nothing."
)


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``--app``, ``--budget``, ``--budget-tokens`` and ``--progress``: how a command that runs a checkpoint (resume,
    fork, answer) runs it."""
    fn = click.option(
        "--progress", type=click.Choice(["rich", "json"]), default="rich", show_default=True, help=PROGRESS_HELP
    )(fn)
    fn = budget_options(fn)
    return click.option("--app", "app", metavar="FILE.py:ATTR", default=None, help=APP_HELP)(fn)


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


def _run(
    ctx: click.Context,
    ref: str,
    location: str | None,
    progress: str,
    *,
    fork: bool,
    branch: str | None = None,
    inputs: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    app: str | None = None,
    dry_run: bool = False,
    start: Starter | None = None,
    budget: Budget | None = None,
    force: bool = False,
) -> None:
    """Resume or fork (``fork``) the checkpoint ``ref`` with progress; ``start`` (``answer``) checks the
    checkpoint first and runs it its own way. ``budget`` stops the run at it (exit 76, :data:`ExitCode.BUDGET`).
    A resume beside a live run of the same branch is refused unless ``force``."""
    # lazy: crewpoint.checkpoint.ops loads the body schema, which the headless list never needs
    from crewpoint.checkpoint import ops

    # lazy: finding the user's program loads the engine; only resume and fork run one
    from crewpoint.checkpoint.program import is_demo_checkpoint, project_app

    # lazy: run progress loads the event catalogue; only resume and fork draw it
    from crewpoint.tui.progress import make_progress, result_text

    where = location_of(ctx, location)
    foreign = _foreign_store(where, ref)
    if foreign is not None:
        adapter, foreign_store = foreign
        if start is not None:
            fail(f"only crewpoint's own runs wait for an answer; {foreign_store} is a {adapter.title} store")
        if dry_run:
            fail(f"--dry-run is for crewpoint's own checkpoints; {foreign_store} is a {adapter.title} store")
        if budget is not None:
            fail(f"--budget is for crewpoint's own runs; {foreign_store} is a {adapter.title} store")
        _foreign_run(
            ctx, adapter, foreign_store, ref, progress, fork=fork, branch=branch, inputs=inputs, outputs=outputs
        )
        return
    prepared: PreparedRun | None = None
    stopped: BudgetExceeded | None = None
    given_app = app
    try:
        with bad_input(ctx):
            app = app or project_app()
            new_inputs = ops.parse_assignments(inputs, "--input")
            edits = ops.parse_assignments(outputs, "--set-output")
            full = ops.resolve_id(where, ref)
            record = ops.load(full, where)
            if not fork and start is None and not force:  # as the app: never the same tasks twice, side by side
                _refuse_beside_live_run(record, ops.store_of(record), where, given_app)
            kickoff: Kickoff = start(record, ops.store_of(record)) if start is not None else _kickoff
            if is_demo_checkpoint(record):  # the bundled demo's crew, tools and flow: for its own checkpoints only
                # lazy: importing the bundled demo registers its crew, tools and flow for its own checkpoints
                import crewpoint.demo  # noqa: F401
            new_outputs = {ops.resolve_task(record, key): text for key, text in edits.items()}
            prepared = ops.prepare_run(
                full,
                fork=fork,
                branch=branch,
                inputs=new_inputs or None,
                outputs=new_outputs or None,
                location=where,
                record=record,
                app=app,
            )
            if fork:
                # lazy: fork planning loads the body schema; only a fork plans
                from crewpoint.checkpoint.plan import check_fork

                check_fork(record, prepared.plan, new_inputs)
            if budget is not None:
                prepared.entity.budget = budget  # the program's own budget gives way to the one asked for here
            estimate = _estimate(record, prepared.store, prepared.plan.rerun, prepared.models) if dry_run else None
        if dry_run:  # planned and checked exactly as the run would be: nothing runs, nothing is written
            _print_plan(prepared, app)
            if estimate is not None:
                _print_estimate(estimate)
            return
        if not fork and start is None:  # (an answer's checkpoint is claimed: a second answer is refused, not beside)
            # lazy: the claims of a request are read only by a resume
            from crewpoint.feedback_claims import resume_refusal

            refused = resume_refusal(record, prepared.store)
            if refused is not None:  # its answer runs, or went on: going on here would do the work twice
                fail(refused)
            later = [m for m in ops.children(prepared.store, prepared.source.id) if m.branch == prepared.branch]
            if later:
                click.echo(
                    f"note: {cli_id(prepared.source.id)} already continues on branch {prepared.branch} "
                    f"(next: {cli_id(later[0].id)}); this run writes beside it. Use fork for a separate branch.",
                    err=True,
                )
        reporter = make_progress(progress, prepared)
        with reporter:
            try:
                result = kickoff(prepared)
            except KeyboardInterrupt:
                reporter.interrupted()
                raise
            except RunRefused as exc:
                reporter.failed(exc)
                fail_from(ctx, one_line(exc), EXIT_BAD_INPUT)
            except BudgetExceeded as exc:
                reporter.stopped_at_budget(f"spent {exc.spent()} of {exc.budget}")
                stopped = exc
            except Exception as exc:
                reporter.failed(exc)
                claims = sys.modules.get("crewpoint.feedback_claims")  # loaded by a run that could raise its refusal
                if claims is not None and isinstance(exc, claims.AnswerTaken):  # its answer goes on elsewhere
                    fail_from(ctx, one_line(exc), EXIT_BAD_INPUT)
                fail_from(ctx, f"the run failed: {one_line(exc)}", EXIT_FAILED)
            else:
                reporter.finished(result)
    except KeyboardInterrupt:
        latest = prepared.latest_id if prepared is not None else ref
        hint = _resume_hint(latest, where, prepared, given_app)
        click.echo(f"interrupted; resume with: {hint}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if stopped is not None:  # one line: what it spent, its budget, and the command that goes on
        _stopped_at_budget(stopped, where, prepared, given_app)
    if progress != "json":
        text = result_text(result)  # it can hold outputs read from the checkpoint: escapes are shown, not sent
        click.echo(visible(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str)))
    state = prepared.state if prepared is not None else None
    lost = state.failure_summary() if state is not None else None
    if lost is not None:  # the run finished, but not every checkpoint reached the store
        fail(lost, EXIT_FAILED)
    # lazy: the engine's feedback module is loaded by the run that just ended; list and info never need it
    from crewpoint.feedback import FeedbackPending

    if isinstance(result, FeedbackPending):  # the run waits for a person again: come back later
        click.echo(f"waiting for feedback; answer with: {result.command}", err=True)
        sys.exit(ExitCode.WAITING)


def _refuse_beside_live_run(record: CheckpointRecord, store: str, where: str | None, given_app: str | None) -> None:
    """One line (exit 2) when a live run (fresh beat, its process alive) writes the branch of ``record`` now:
    resuming would run its remaining tasks a second time beside it. It names the run and offers a fork."""
    # lazy: run records are read only by a resume, when it starts
    from crewpoint.providers import provider_for

    # lazy: run records are read only by a resume, when it starts
    from crewpoint.providers.runs import classify

    meta = record.meta
    try:
        runs = provider_for(store).read_runs(store)
    except CheckpointError:  # a store that cannot tell keeps no live run to refuse beside
        return
    run = next(
        (r for r in runs if (r.lineage, r.branch) == (meta.lineage, meta.branch) and classify(r) == "running"), None
    )
    if run is not None:
        fork = _resume_hint(cli_id(meta.id), where, None, given_app, verb="fork", store=store)
        fail(
            f"run {meta.lineage[:8]} of {meta.entity_kind} {meta.entity_name} on branch {meta.branch} is live "
            f"(pid {run.pid} on {run.host}): resuming {cli_id(meta.id)} would run its tasks a second time beside "
            f"it; fork it instead: `{fork}` (or resume with --force)"
        )


def _resume_hint(
    latest: str,
    where: str | None,
    prepared: PreparedRun | None,
    given_app: str | None,
    verb: str = "resume",
    store: str | None = None,
) -> str:
    """``crewpoint checkpoint resume ID`` (or ``verb``) with the store (unless found by default) and the program
    this run ran."""
    hint = f"crewpoint checkpoint {verb} {latest}"
    store = where if where is not None else store if store is not None else prepared.store if prepared else None
    if store is not None and (where is not None or not _found_by_default(store)):
        hint += f" --location {shlex.quote(store)}"
    # lazy: finding the user's program loads the engine; only resume and fork run one
    from crewpoint.checkpoint.program import command_app

    state = prepared.state if prepared is not None else None
    program = command_app(state.origin if state is not None else None, given_app)
    if program is not None:  # the program this run ran, which the resume must run too
        hint += f" --app {shlex.quote(program)}"
    return hint


def _stopped_at_budget(
    stopped: BudgetExceeded, where: str | None, prepared: PreparedRun | None, given_app: str | None
) -> None:
    """The run stopped at its budget: one line on stderr and exit 76 (:data:`ExitCode.BUDGET`)."""
    said = f"stopped at its budget: spent {stopped.spent()} of {stopped.budget}{stopped.why()}"
    if stopped.checkpoint_id is None:
        fail(f"{said}; no checkpoint holds it: {stopped.problem or 'nothing was written'}", ExitCode.BUDGET)
    hint = _resume_hint(stopped.checkpoint_id, where, prepared, given_app)
    fail(
        f"{said}; go on with: {' '.join([hint, *map(shlex.quote, stopped.budget.larger().options())])}", ExitCode.BUDGET
    )


def _kickoff(prepared: PreparedRun) -> Any:
    return prepared.kickoff()


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
    if names:
        listed = ", ".join(f"{i + 1}. {names[i]}" for i in rerun if 0 <= i < len(names))
        lines.append(f"{unit} to run: {listed or 'none'}")
    else:
        lines.append(f"{unit} to run: what is not done at the checkpoint")
    lines += prepared.model_lines()  # the models the run calls, and a checkpoint's other one said
    for line in lines:
        click.echo(visible(line, one_line=True))


def _estimate(
    record: CheckpointRecord, store: str, rerun: list[int], models: dict[str, tuple[str, str]] | None = None
) -> Estimate:
    """What the tasks the plan runs cost when they last ran on the checkpoint's chain or after it, in the newest
    checkpoint that descends from it, priced at the models the run calls (a bad price file: exit 2)."""
    # lazy: crewpoint.checkpoint.ops loads the body schema, which the headless list never needs
    from crewpoint.checkpoint import ops

    # lazy: estimating prices usage with genai-prices, which only a dry run needs
    from crewpoint.estimate import estimate_rerun, units_to_run

    try:
        newest = ops.newest_descendant(ops.list_checkpoints(store), record.meta.id)
    except (CheckpointError, OSError, ValueError):  # what ran after it cannot be listed: the chain alone
        newest = None
    later = ops.body_or_none(newest.location if newest is not None else None)
    units, open_ended = units_to_run(record.body, rerun)
    return estimate_rerun(record.body, units, open_ended=open_ended, later=later, models=models)


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
    # lazy: crewpoint.checkpoint.ops loads the body schema, which the headless list never needs
    from crewpoint.checkpoint import ops

    path = split_ref(ref)[0]
    candidate = ref if os.path.exists(path) else None
    try:
        store = candidate if candidate is not None else ops.find_store(where)
    except CheckpointError:
        return None
    adapter = format_of_store(store)
    return (adapter, store) if adapter.foreign else None


def _foreign_run(
    ctx: click.Context,
    adapter: Format,
    store: str,
    ref: str,
    progress: str,
    *,
    fork: bool,
    branch: str | None,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
) -> None:
    """Resume or fork another tool's checkpoint (CrewAI's): its adapter writes a fork in that tool's format and
    the user's copy of the tool runs it.

    With ``--progress json`` (the app's run panel) notes are JSON ``log`` events on stdout, the fork is a
    ``checkpoint`` event, and the tool's own output follows line by line."""
    # lazy: crewpoint.checkpoint.ops loads the body schema, which the headless list never needs
    from crewpoint.checkpoint import ops

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
            outcome = adapter.run(
                store,
                ref,
                fork=fork,
                branch=branch,
                inputs=ops.parse_assignments(inputs, "--input"),
                outputs=ops.parse_assignments(outputs, "--set-output"),
                say=say,
                forked=forked,
            )
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if outcome.problem is not None:
        if fork:  # the fork is written: the user runs it where the tool is installed
            say(f"note: {outcome.problem}")
            return
        fail(outcome.problem, EXIT_FAILED)
    if outcome.exit_code:
        fail(f"the {adapter.title} run failed (exit {outcome.exit_code})", EXIT_FAILED)


def _found_by_default(store: str) -> bool:
    """Would ``crewpoint checkpoint`` find ``store`` without ``--location``?"""
    # lazy: crewpoint.checkpoint.ops loads the body schema, which the headless list never needs
    from crewpoint.checkpoint import ops

    try:
        return os.path.abspath(ops.find_store(None)) == os.path.abspath(store)
    except CheckpointError:
        return False


@checkpoint.command()
@click.argument("ref", metavar="ID")
@location_option
@run_options
@click.option("--dry-run", is_flag=True, help=DRY_RUN_HELP)
@click.option("--force", is_flag=True, help="Resume even beside a live run of the same branch (its tasks run twice).")
@click.pass_context
def resume(
    ctx: click.Context,
    ref: str,
    location: str | None,
    app: str | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    progress: str,
    dry_run: bool,
    force: bool,
) -> None:
    """Continue a run from checkpoint ID; finished tasks are not run again.

    ID is a checkpoint id or unique prefix (looked up in --location), a checkpoint file, or DB#ID.
    The run's result is printed on stdout. Exit 1 if the run fails, 76 if it stops at its budget, 130 if
    interrupted. A checkpoint of a live run (its process running now) is refused with exit 2: fork it, or
    --force.
    """
    budget = Budget.of(budget_usd, budget_tokens)
    _run(ctx, ref, location, progress, fork=False, app=app, dry_run=dry_run, budget=budget, force=force)


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
@click.pass_context
def fork(
    ctx: click.Context,
    ref: str,
    location: str | None,
    branch: str | None,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    app: str | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    progress: str,
    dry_run: bool,
) -> None:
    """Start a new branch from checkpoint ID and run it, optionally with edited inputs or task outputs.

    Tasks whose text uses a changed input, tasks whose output you replace with --set-output, and the tasks
    that depend on them are the only ones run again. The original branch is left untouched.
    """
    _run(
        ctx,
        ref,
        location,
        progress,
        fork=True,
        branch=branch,
        inputs=inputs,
        outputs=outputs,
        app=app,
        dry_run=dry_run,
        budget=Budget.of(budget_usd, budget_tokens),
    )
