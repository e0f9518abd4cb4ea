"""Running a checkpoint: resume, fork or answer, from one :class:`RunOptions` to one :class:`Outcome`.

The command line (``crewpoint checkpoint resume|fork|answer``) and the app's runs (the same command as a child
process, reporting JSON lines) go through :func:`plan_run` and :func:`run_checkpoint`: which checkpoint, what it
refuses before anything runs, how the run ended and the command that goes on. Saying it (lines, exit codes) is
the caller's. Headless: nothing here imports click or textual.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Protocol

from crewpoint.budget import Budget, BudgetExceeded
from crewpoint.checkpoint.describe import resolve_task
from crewpoint.checkpoint.plan import PreparedRun, check_fork, prepare_run
from crewpoint.checkpoint.stores import (
    body_or_none,
    children,
    find_store,
    list_checkpoints,
    load_checked,
    newest_descendant,
    store_of,
)
from crewpoint.feedback_claims import AnswerTaken, resume_refusal
from crewpoint.providers.base import CheckpointError, CheckpointRecord
from crewpoint.providers.refs import short_id

if TYPE_CHECKING:
    from crewpoint.checkpoint.schema import CheckpointBody
    from crewpoint.estimate import Estimate

Kickoff = Callable[[PreparedRun], Any]
"""What runs a prepared run (``prepared.kickoff()`` for resume and fork)."""

Starter = Callable[[CheckpointRecord, str], Kickoff]
"""A command's own checks of the checkpoint (its record and store), before any program loads: it raises a
one-line error (bad input), or answers what runs the prepared run (``answer``'s claim and its run)."""

OutcomeKind = Literal["finished", "waiting", "budget", "interrupted", "failed"]

ID_WIDTH = 12
"""Characters of an id the printed lines show (a prefix every command takes)."""


class RunRefused(Exception):
    """Raised by a :data:`Kickoff` before its run started anything (someone else answered first): a refusal of
    the user's input, not a failed run."""


def shown_id(checkpoint_id: str) -> str:
    """An id as the lines a run prints show it, in a form a user can type back into any command."""
    return short_id(checkpoint_id, ID_WIDTH, typeable=True)


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How to run a checkpoint: which one, as a resume or a fork with its edits, with which program and budget."""

    ref: str
    """A checkpoint id or unique prefix (looked up in ``location``), a checkpoint file, or ``DB#ID``."""
    location: str | None = None
    """The store ``ref`` is looked up in; None: the one found in the working folder."""
    fork: bool = False
    branch: str | None = None
    """A fork's new branch (None: named when it starts)."""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """Kickoff inputs a fork changes."""
    outputs: Mapping[str, str] = field(default_factory=dict)
    """Finished task outputs a fork replaces, by task (a number from 1, a name or an id prefix)."""
    app: str | None = None
    """The user's program (``FILE.py:attr`` or ``module:attr``); None: the project's, else rebuilt."""
    budget: Budget | None = None
    """Stops the run before an LLM call once spent (the program's own budget gives way to it)."""
    force: bool = False
    """Resume even beside a live run of the same branch."""
    start: Starter | None = None
    """``answer``'s checks and run, in place of a plain resume."""
    keep: tuple[str, ...] = ()
    """Changed tasks (names or numbers from 1) whose saved output is used anyway."""
    rerun: tuple[str, ...] = ()
    """Tasks run again though their saved output could be used."""
    strict: bool = False
    """Refuse, before anything runs, when the program changed since the checkpoint (any verdict but kept)."""

    def argv(self, progress: str | None = None) -> list[str]:
        """The command line's arguments for this run (``resume ID ...`` or ``fork ID ...``; ``start`` aside), with
        ``--progress`` when given: what the app's child process runs."""
        args = ["fork" if self.fork else "resume", self.ref]
        if self.location is not None:
            args += ["--location", self.location]
        if self.branch:
            args += ["--branch", self.branch]
        for key, value in self.inputs.items():
            args += ["--input", f"{key}={value}"]
        for task, text in self.outputs.items():
            args += ["--set-output", f"{task}={text}"]
        if progress is not None:
            args += ["--progress", progress]
        if self.app and self.app.strip():
            args += ["--app", self.app.strip()]
        if self.budget is not None:
            args += self.budget.options()
        if self.force:
            args.append("--force")
        for task in self.keep:
            args += ["--keep", task]
        for task in self.rerun:
            args += ["--rerun", task]
        if self.strict:
            args.append("--strict")
        return args


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a run ended, with the one line that says so and the command that goes on (None: nothing to go on)."""

    kind: OutcomeKind
    message: str
    command: str | None = None
    result: Any = None
    """What the run returned (finished, waiting)."""
    error: BaseException | None = None
    """What stopped a failed run."""
    refused: bool = False
    """A failed run refused before it started anything (someone else answered first): bad input."""
    lost: str | None = None
    """The run ended, but not every checkpoint reached the store: what was lost."""


class Reporter(Protocol):
    """What shows a run's progress while it runs (the command line's rich or JSON progress)."""

    def __enter__(self) -> Any: ...

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...

    def finished(self, result: Any) -> None: ...

    def failed(self, error: BaseException) -> None: ...

    def stopped_at_budget(self, spent: str) -> None: ...

    def interrupted(self) -> None: ...


@dataclass
class PlannedRun:
    """A run read, checked and prepared once: what a dry run prints and what :func:`run_checkpoint` runs."""

    options: RunOptions
    app: str | None
    """The program the run loads: the one given, else the project's."""
    record: CheckpointRecord
    body: CheckpointBody
    prepared: PreparedRun
    kickoff: Kickoff

    def estimate(self) -> Estimate:
        """What the tasks the plan runs cost when they last ran on the checkpoint's chain or after it, in the
        newest checkpoint that descends from it, priced at the models the run calls."""
        # lazy: estimating prices usage with genai-prices, which only a dry run needs
        from crewpoint.estimate import estimate_rerun, units_to_run

        prepared = self.prepared
        try:
            newest = newest_descendant(list_checkpoints(prepared.store), self.record.meta.id)
        except (CheckpointError, OSError, ValueError):  # what ran after it cannot be listed: the chain alone
            newest = None
        later = body_or_none(newest.location if newest is not None else None)
        if prepared.task_ids:  # a crew: the program's tasks, each under the id its saved task had (or its own)
            units: list[str | None] = [prepared.task_ids[i] for i in prepared.plan.rerun]
            labels = {prepared.task_ids[i]: f"{i + 1}. {name}" for i, name in enumerate(prepared.task_names)}
            open_ended = False
        else:
            units, open_ended = units_to_run(self.record.body, prepared.plan.rerun)
            labels = {}
        return estimate_rerun(
            self.record.body, units, open_ended=open_ended, later=later, models=prepared.models, labels=labels
        )


def _kickoff(prepared: PreparedRun) -> Any:
    return prepared.kickoff()


def plan_run(options: RunOptions) -> PlannedRun:
    """Read the checkpoint once, check it once, refuse what the run refuses and prepare the entity: nothing runs
    and nothing is written. Raises :class:`CheckpointError` or :class:`ValueError` with one line."""
    # lazy: finding the user's program loads the engine; only a run needs it
    from crewpoint.checkpoint.program import is_demo_checkpoint, project_app

    app = options.app or project_app()
    record, body = load_checked(options.ref, options.location)  # the one read and the one check of the body
    store = store_of(record)
    if not options.fork and options.start is None and not options.force:  # never the same tasks twice, side by side
        refusal = live_run_refusal(record, store, options)
        if refusal is not None:
            raise CheckpointError(refusal)
    kickoff = options.start(record, store) if options.start is not None else _kickoff
    if is_demo_checkpoint(record):  # the bundled demo's crew, tools and flow: for its own checkpoints only
        # lazy: importing the bundled demo registers its crew, tools and flow for its own checkpoints
        import crewpoint.demo  # noqa: F401
    inputs = dict(options.inputs)
    outputs = {resolve_task(record, key, body): text for key, text in options.outputs.items()}
    prepared = prepare_run(
        record.meta.location or options.ref,
        fork=options.fork,
        branch=options.branch,
        inputs=inputs or None,
        outputs=outputs or None,
        location=options.location,
        record=record,
        body=body,
        app=app,
        keep=options.keep,
        rerun=options.rerun,
    )
    changes = prepared.changes
    if options.strict and changes is not None and not changes.unchanged:
        what = "; ".join(f"{v.name}: {v.verdict}" for v in changes.verdicts if v.verdict != "kept")
        raise CheckpointError(
            f"--strict: the program changed since checkpoint {shown_id(record.meta.id)} ({what or changes.blocked}); "
            "see the plan with --dry-run, or resume without --strict"
        )
    if options.fork:
        check_fork(record, prepared.plan, inputs, body=body)
    if options.budget is not None:
        prepared.entity.budget = options.budget  # the program's own budget gives way to the one asked for here
    return PlannedRun(options, app, record, body, prepared, kickoff)


def run_checkpoint(
    options: RunOptions,
    report: Callable[[PreparedRun], Reporter] | None = None,
    say: Callable[[str], None] | None = None,
    planned: PlannedRun | None = None,
) -> Outcome:
    """Plan (unless ``planned``), refuse what a resume may not do, run, and say how it ended. ``report`` makes
    what shows the progress; ``say`` takes a note for the user (a resume beside a later checkpoint).

    What is refused before the run starts raises :class:`CheckpointError` or :class:`ValueError` (one line); an
    interrupt while planning is an ``interrupted`` outcome too."""
    try:
        if planned is None:
            planned = plan_run(options)
        _may_go_on(planned, say)
    except KeyboardInterrupt:
        return interrupted(options, planned.prepared if planned is not None else None)
    prepared = planned.prepared
    reporter = report(prepared) if report is not None else None
    try:
        return _run(planned, reporter)
    except KeyboardInterrupt:
        return interrupted(options, prepared)


def _may_go_on(planned: PlannedRun, say: Callable[[str], None] | None) -> None:
    """A plain resume is refused when its request's answer goes, or went, on elsewhere (it would do the work twice);
    beside a later checkpoint of its branch it goes on, saying so."""
    options, prepared = planned.options, planned.prepared
    if options.fork or options.start is not None:  # (an answer's checkpoint is claimed: a second is refused)
        return
    refused = resume_refusal(planned.record, prepared.store)
    if refused is not None:
        raise CheckpointError(refused)
    later = [m for m in children(prepared.store, prepared.source.id) if m.branch == prepared.branch]
    if later and say is not None:
        say(
            f"note: {shown_id(prepared.source.id)} already continues on branch {prepared.branch} "
            f"(next: {shown_id(later[0].id)}); this run writes beside it. Use fork for a separate branch."
        )


def _run(planned: PlannedRun, reporter: Reporter | None) -> Outcome:
    prepared, options = planned.prepared, planned.options
    try:
        if reporter is not None:
            reporter.__enter__()
        try:
            result = planned.kickoff(prepared)
        except KeyboardInterrupt:
            if reporter is not None:
                reporter.interrupted()
            raise
        except (RunRefused, AnswerTaken) as exc:  # (its answer goes on elsewhere: refused, not failed)
            if reporter is not None:
                reporter.failed(exc)
            return Outcome("failed", _one_line(exc), error=exc, refused=True)
        except BudgetExceeded as exc:
            if reporter is not None:
                reporter.stopped_at_budget(f"spent {exc.spent()} of {exc.budget}")
            return _at_budget(exc, options, prepared)
        except Exception as exc:
            if reporter is not None:
                reporter.failed(exc)
            return Outcome("failed", f"the run failed: {_one_line(exc)}", error=exc)
        if reporter is not None:
            reporter.finished(result)
    finally:
        if reporter is not None:
            reporter.__exit__(None, None, None)
    state = prepared.state
    lost = state.failure_summary() if state is not None else None
    # lazy: the engine's feedback module is loaded by the run that just ended; list and info never need it
    from crewpoint.feedback import FeedbackPending

    if isinstance(result, FeedbackPending):  # the run waits for a person again: come back later
        said = f"waiting for feedback; answer with: {result.command}"
        return Outcome("waiting", said, command=result.command, result=result, lost=lost)
    return Outcome("finished", "finished", result=result, lost=lost)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def interrupted(options: RunOptions, prepared: PreparedRun | None = None) -> Outcome:
    """An interrupted run (or its planning), with the resume of its newest checkpoint."""
    latest = prepared.latest_id if prepared is not None else options.ref
    command = go_on_command(latest, options, prepared)
    return Outcome("interrupted", f"interrupted; resume with: {command}", command=command)


def _at_budget(stopped: BudgetExceeded, options: RunOptions, prepared: PreparedRun) -> Outcome:
    """The run stopped at its budget: what it spent, its budget, and the resume with a larger one."""
    said = f"stopped at its budget: spent {stopped.spent()} of {stopped.budget}{stopped.why()}"
    if stopped.checkpoint_id is None:
        return Outcome("budget", f"{said}; no checkpoint holds it: {stopped.problem or 'nothing was written'}")
    hint = go_on_command(stopped.checkpoint_id, options, prepared)
    command = " ".join([hint, *map(shlex.quote, stopped.budget.larger().options())])
    return Outcome("budget", f"{said}; go on with: {command}", command=command)


def go_on_command(
    latest: str, options: RunOptions, prepared: PreparedRun | None, verb: str = "resume", store: str | None = None
) -> str:
    """``crewpoint checkpoint resume ID`` (or ``verb``) with the store (unless found by default) and the program
    the run ran: it works pasted into a shell in the working folder."""
    # lazy: finding the user's program loads the engine; only a run names one
    from crewpoint.checkpoint.program import command_app

    where = options.location
    command = f"crewpoint checkpoint {verb} {latest}"
    store = where if where is not None else store if store is not None else prepared.store if prepared else None
    if store is not None and (where is not None or not _found_by_default(store)):
        command += f" --location {shlex.quote(store)}"
    state = prepared.state if prepared is not None else None
    program = command_app(state.origin if state is not None else None, options.app)
    if program is not None:  # the program this run ran, which the resume must run too
        command += f" --app {shlex.quote(program)}"
    return command


def _found_by_default(store: str) -> bool:
    """Would ``crewpoint checkpoint`` find ``store`` without ``--location``?"""
    try:
        return os.path.abspath(find_store(None)) == os.path.abspath(store)
    except CheckpointError:
        return False


def live_run_refusal(record: CheckpointRecord, store: str, options: RunOptions) -> str | None:
    """Why a resume of ``record`` is refused when a live run (fresh beat, its process alive) writes its branch now
    (it would run the remaining tasks a second time beside it), naming the run and offering a fork; else None."""
    # lazy: run records are read only by a resume, when it starts
    from crewpoint.providers import provider_for
    from crewpoint.providers.runs import classify

    meta = record.meta
    try:
        runs = provider_for(store).read_runs(store)
    except CheckpointError:  # a store that cannot tell keeps no live run to refuse beside
        return None
    run = next(
        (r for r in runs if (r.lineage, r.branch) == (meta.lineage, meta.branch) and classify(r) == "running"), None
    )
    if run is None:
        return None
    fork = go_on_command(shown_id(meta.id), options, None, verb="fork", store=store)
    return (
        f"run {meta.lineage[:8]} of {meta.entity_kind} {meta.entity_name} on branch {meta.branch} is live "
        f"(pid {run.pid} on {run.host}): resuming {shown_id(meta.id)} would run its tasks a second time beside "
        f"it; fork it instead: `{fork}` (or resume with --force)"
    )
