"""``crewpoint checkpoint answer``: answer the request a waiting run's checkpoint holds, and run on.

The same ids, locations, ``--app`` program and progress as ``resume`` (:mod:`crewpoint.tui.cli.runs`); before any
program loads it refuses, in one line with exit 2, a checkpoint that waits for nothing, a request someone else
answered (naming who), an outcome the request does not offer, ``--feedback`` with ``--accept``, and ``--accept``
alone on a request with outcomes (it would send the default outcome, which may well be a rejection: the outcome is
chosen with ``--outcome``, or ``--default`` says "the default" in so many words).

A run the fleet started (its lineage among the jobs of ``crewpoint submit``) does not run on here: the answer is
claimed as any answer is, and the run's continuation is queued for a worker, which resumes it from the answered
checkpoint (:mod:`crewpoint.tui.cli.fleet_engine`); the command prints the job and the command that watches it. The
app's Answer runs this command, so it does the same.
"""

from __future__ import annotations

import sys
import time
import uuid
from typing import TYPE_CHECKING, Any

import click

from crewpoint.budget import Budget
from crewpoint.feedback import Answer, already_answered, collapse, command_for, who_am_i
from crewpoint.feedback import answer as answer_request
from crewpoint.feedback_claims import answer_value, claim_answer, refusal, request_claim
from crewpoint.providers import is_postgres_location, provider_for
from crewpoint.providers.base import BaseProvider, CheckpointError
from crewpoint.tui.cli.errors import fail
from crewpoint.tui.cli.locations import location_option
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.runs import run_cli, run_options, run_options_of
from crewpoint.tui.cli.tables import cli_id
from crewpoint.tui.run_protocol import LOG, QUEUED, ProgressRecord
from crewpoint.tui.store_index import pending_request
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.ops import PreparedRun
    from crewpoint.checkpoint.run import Kickoff, Starter
    from crewpoint.providers.base import CheckpointRecord
    from crewpoint.tui.cli.fleet_engine import Job

RULE = "-" * 60


def _show_request(checkpoint_id: str, request: dict[str, Any]) -> None:
    """The request, on stderr (stdout keeps the run's result): message, the output under review, the outcomes."""
    label = request.get("label") or request.get("method") or ""
    lines = [
        RULE,
        f"{cli_id(checkpoint_id)} waits for a person" + (f" at {label}" if label else ""),
        request["message"],
        RULE,
        request["output"],
        RULE,
    ]
    if request["outcomes"]:
        default = request.get("default_outcome")
        lines.append("outcomes: " + ", ".join(f"{o} (default)" if o == default else o for o in request["outcomes"]))
    for line in lines:
        click.echo(visible(line), err=True)  # checkpoint text: control characters shown, never sent


def _default_of(request: dict[str, Any]) -> str:
    """The outcome an empty answer sends: the request's default outcome, else its first."""
    outcomes = request["outcomes"]
    default = request.get("default_outcome")
    return str(default if default in outcomes else outcomes[0])


def _prompt(request: dict[str, Any]) -> str:
    """The question, saying what an empty answer (Enter) sends."""
    if request["outcomes"]:
        return visible(f"Your feedback or an outcome (Enter for the default: {_default_of(request)})", one_line=True)
    return "Your feedback (Enter to accept the output as it is)"


def _starter(
    outcome: str | None, feedback: str | None, accept: bool, default: bool, on_fleet: Job | None = None
) -> Starter:
    """The checks of ``answer`` on the loaded checkpoint, and the run that claims the answer and goes on (queued for
    the fleet when the fleet started the run, or when ``on_fleet`` names the program and budget its worker takes)."""

    def start(record: CheckpointRecord, store: str) -> Kickoff:
        request = pending_request(record.body)
        if request is None:
            raise CheckpointError(f"checkpoint {cli_id(record.meta.id)} is not waiting for feedback")
        outcomes = request["outcomes"]
        if outcome is not None and outcome not in outcomes:
            offered = ", ".join(outcomes) or "none (this request takes feedback only)"
            raise CheckpointError(f"outcome {outcome!r} is not offered: the outcomes are {offered}")
        provider = provider_for(store)
        fleet = _fleet_job(store, record) or _on_fleet_here(store, on_fleet)
        claim, _ = request_claim(provider, store, request, record.meta.id)
        if claim is not None:
            if fleet is not None:
                raise CheckpointError(_on_fleet(claim, record.meta.id, store))
            raise CheckpointError(already_answered(claim, record.meta.id, store))
        if accept and outcome is None and outcomes:
            raise CheckpointError(
                f"this request's outcomes are {', '.join(outcomes)}: --accept alone would send the default, "
                f"{_default_of(request)}; choose with --accept --outcome O, or send it with --default"
            )
        text = feedback
        if text is None and not accept and not default and sys.stdin.isatty():
            _show_request(record.meta.id, request)
            text = click.prompt(_prompt(request), default="", show_default=False, err=True)
        elif text is None and outcome is None and not accept and not default:
            raise CheckpointError("no terminal to ask in: give --feedback TEXT, --accept, --default or --outcome O")
        token = uuid.uuid4().hex
        if fleet is not None:  # recorded here, run by a worker: nothing of the program loads in this process
            mine = Answer(text or "", outcome, who_am_i(), time.time(), default)
            _queue_answer(fleet, record, provider, store, request, mine)

        def kickoff(prepared: PreparedRun) -> Any:
            # lazy: the run's refusals load with the engine's run machinery, which only a run needs
            from crewpoint.checkpoint.run import RunRefused

            try:
                return answer_request(
                    prepared.source.location or record.meta.id,
                    feedback=text or None,
                    outcome=outcome,
                    app=prepared.entity,
                    default=default,
                    token=token,
                )
            except CheckpointError as exc:
                won, _ = request_claim(provider, store, request, record.meta.id)
                if won is not None and won.get("token") != token:  # someone else answered first
                    raise RunRefused(already_answered(won, record.meta.id, store)) from exc
                raise

        return kickoff

    return start


class QueuedOnFleet(Exception):
    """The answer to a run of the fleet is recorded and its continuation queued: nothing runs in this process."""

    def __init__(self, job_id: int, store: str) -> None:
        super().__init__(f"queued job {job_id}")
        self.job_id, self.store = job_id, store


def _fleet_job(store: str, record: CheckpointRecord) -> Job | None:
    """The job that started the checkpoint's run when the fleet started it (a PostgreSQL store with the fleet's
    tables, the run's lineage among its jobs'), else None."""
    if not is_postgres_location(store):
        return None
    # lazy: the fleet's engine is the PostgreSQL extra's, read only for a store on PostgreSQL
    from crewpoint.tui.cli.fleet_engine import FleetError, started

    try:
        return started(store, record.meta.lineage)
    except FleetError as exc:
        raise CheckpointError(str(exc)) from None


def _on_fleet_here(store: str, job: Job | None) -> Job | None:
    """``--on-fleet``'s job for a run the fleet did not start: only on a store on PostgreSQL."""
    if job is not None and not is_postgres_location(store):
        raise CheckpointError(f"--on-fleet needs the team's store on PostgreSQL, and {store} is not")
    return job


def _on_fleet(claim: dict[str, Any], checkpoint_id: str, store: str) -> str:
    """The one line refusing a second answer to a run of the fleet: who answered, and the job that goes on."""
    # lazy: the fleet's engine is the PostgreSQL extra's, read only for a store on PostgreSQL
    from crewpoint.tui.cli.fleet_engine import continuation, watch_command

    job = continuation(store, checkpoint_id)
    going = f"job {job} of the fleet goes on with it" if job is not None else "its run goes on on the fleet"
    return refusal(claim, f"{going}; watch it with: {watch_command(store)}")


def _queue_answer(
    fleet: Job, record: CheckpointRecord, provider: BaseProvider, store: str, request: dict[str, Any], mine: Answer
) -> None:
    """Claim ``mine`` for the request (one answer wins; a second is refused naming the first), then queue the run's
    continuation from this checkpoint for a worker, and raise :class:`QueuedOnFleet`. The claim names no process:
    the worker's resume goes on with it. An outcome left to the answer's words is settled here by their words
    (the program's model, which a worker has, is not this process's)."""
    # lazy: the fleet's engine is the PostgreSQL extra's, read only for a store on PostgreSQL
    from crewpoint.tui.cli.fleet_engine import FleetError, Job, go_on

    offered = [str(o) for o in request.get("outcomes") or []]
    outcome = mine.outcome
    if outcome is None and offered:
        outcome = collapse("" if mine.default else mine.feedback, offered, request.get("default_outcome"), "offline")
    value = {**answer_value(mine, outcome, record.meta, None, uuid.uuid4().hex), "pid": None, "host": None}
    won, claimed = claim_answer(provider, store, request, record.meta, value)
    if not won:
        raise CheckpointError(_on_fleet(claimed, record.meta.id, store))
    try:
        job_id = go_on(store, Job(fleet.program, {}, fleet.budget, resume=record.meta.id), record.meta.lineage)
    except FleetError as exc:
        resume = command_for("resume", record.meta.id, store, fleet.program)
        raise CheckpointError(
            f"the answer is recorded but its run was not queued ({exc}): go on with `{resume}`"
        ) from None
    raise QueuedOnFleet(job_id, store)


def _say_queued(queued: QueuedOnFleet, progress: str) -> None:
    """The job that goes on, and the command that watches it (for the app's run panel, a log record, then the
    protocol's ``queued`` end)."""
    # lazy: the fleet's engine is the PostgreSQL extra's, read only for a store on PostgreSQL
    from crewpoint.tui.cli.fleet_engine import watch_command

    said = f"queued job {queued.job_id}: a worker goes on with the answered run"
    watch = f"watch it with: {watch_command(queued.store)}"
    if progress != "json":
        click.echo(f"{said}\n{watch}")
        return
    click.echo(ProgressRecord(LOG, text=watch).to_json())
    click.echo(ProgressRecord(QUEUED, text=said).to_json())  # the run's last record: nothing ran here


@checkpoint.command()
@click.argument("ref", metavar="ID")
@location_option
@click.option("--outcome", "-o", default=None, metavar="O", help="The outcome chosen (one the request offers).")
@click.option("--feedback", "-m", default=None, metavar="TEXT", help="Feedback for the reviewed output.")
@click.option(
    "--accept",
    is_flag=True,
    help="Accept the output as it is. A request with outcomes needs --outcome O with it (alone it is refused: it "
    "would send the default outcome, which may be a rejection).",
)
@click.option(
    "--default", "use_default", is_flag=True, help="Answer with the request's default outcome, whichever it is."
)
@click.option(
    "--on-fleet",
    is_flag=True,
    help="Queue the answered run's continuation for the store's fleet (a worker started with --app APP goes on) "
    "instead of running it here. A run the fleet started always goes on there.",
)
@run_options
@click.pass_context
def answer(
    ctx: click.Context,
    ref: str,
    location: str | None,
    outcome: str | None,
    feedback: str | None,
    accept: bool,
    use_default: bool,
    on_fleet: bool,
    app: str | None,
    budget_usd: float | None,
    budget_tokens: int | None,
    progress: str,
    keep: tuple[str, ...],
    rerun: tuple[str, ...],
    strict: bool,
) -> None:
    """Answer the run waiting for a person at checkpoint ID, then run on from there as resume does.

    ID is a checkpoint id or unique prefix (looked up in --location), a checkpoint file, or DB#ID. Without
    --feedback, --accept or --default, and with a terminal, the request is shown and asked (Enter sends the
    default outcome, named in the question; without outcomes it accepts the output as it is). On a request with
    outcomes, --accept takes --outcome O (`--accept --outcome approved`); --default sends the default outcome.
    One answer wins per request: a second is refused, naming who answered. Exit 2 for a checkpoint that waits
    for nothing, an answered request or an outcome not offered; 1 if the run fails; 75 if it waits again; 76 if it
    stops at its budget (--budget, --budget-tokens).
    """
    chosen = (("--feedback", feedback is not None), ("--accept", accept), ("--default", use_default))
    given = [name for name, on in chosen if on]
    if len(given) > 1:
        fail(f"give one of {' or '.join(given)}, not both")
    budget = Budget.of(budget_usd, budget_tokens)
    if on_fleet and not (app or "").strip():
        fail("--on-fleet needs --app APP: a worker runs only the programs it was started with")
    if on_fleet and budget_tokens is not None:
        fail("--on-fleet takes a budget in dollars (--budget), which the fleet's job carries")
    fleet = None
    if on_fleet:
        # lazy: the fleet's engine is the PostgreSQL extra's, read only when the answer goes to the fleet
        from crewpoint.tui.cli.fleet_engine import Job

        fleet = Job((app or "").strip(), {}, budget_usd)
    start = _starter(outcome, feedback, accept, use_default, fleet)
    options = run_options_of(
        ctx, ref, location, app=app, budget=budget, start=start, keep=keep, rerun=rerun, strict=strict
    )
    try:
        run_cli(ctx, options, progress)
    except QueuedOnFleet as queued:  # a run of the fleet: a worker goes on with it
        _say_queued(queued, progress)
