"""The run controller: what Resume, Fork, Answer and Stop do from the browser, decided without a screen.

It checks that a run may start, plans a fork with the kept edits, words the dialogs' questions, turns a confirmed
dialog into the command the run panel starts (:class:`RunRequest`), keeps which runs this app started (the tree
marks their branches live), and says how a run ended. The screen shows the dialogs and the notifications. Headless:
no textual here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from rich.text import Text

from crewpoint.budget import Budget
from crewpoint.checkpoint import ops
from crewpoint.checkpoint.ops import CheckpointInfo, ForkPlan
from crewpoint.checkpoint.plan import check_fork
from crewpoint.checkpoint.run import RunOptions
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.runs import RunInfo, this_host
from crewpoint.tui import run_control
from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.edits import EditsModel
from crewpoint.tui.launcher import cli_command, resume_command, run_command
from crewpoint.tui.store_index import Segment, run_label
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.detail_state import Detail

STOP_PROMISE = (
    "Send it SIGINT? It stops where it is; the tasks it finished stay in its checkpoints. "
    "Resume it later from its last checkpoint with e."
)
"""What stopping a run does, and no more (a checkpoint at SIGINT is written only when the run's configuration
asks for one)."""


@dataclass(slots=True)
class RunRequest:
    """A run to start: the command, what it is for, and how many tasks it will run."""

    argv: list[str]
    title: str
    branch: str
    total: int = 0
    source_id: str = ""


Severity = Literal["information", "warning", "error"]


@dataclass(frozen=True, slots=True)
class Answer:
    """A person's answer to a waiting checkpoint, as the Answer dialog gives it: an ``outcome`` (one of the
    request's), ``feedback`` text, or ``accept`` (the default outcome, or accepting a task's output as it is)."""

    outcome: str | None = None
    feedback: str | None = None
    accept: bool = False
    app: str = ""
    budget: float | None = None
    """The dollars the run may spend once answered (``--budget``); None: the budget the run had, if any."""
    fleet: bool = False
    """Queue the answered run's continuation for the store's fleet (``--on-fleet``) instead of running it here."""


def answer_command(checkpoint_id: str, location: str, answer: Answer) -> list[str]:
    """The child ``crewpoint checkpoint answer`` that records ``answer`` and runs on, reporting as resume does."""
    args = ["answer", checkpoint_id, "--location", location]
    if answer.outcome is not None:
        args += ["--outcome", answer.outcome]
    if answer.feedback:
        args += ["--feedback", answer.feedback]
    elif answer.accept or answer.outcome is None:
        args.append("--accept")
    if answer.fleet:
        args.append("--on-fleet")
    return cli_command(*args, app=answer.app, budget=answer.budget)


@dataclass(frozen=True, slots=True)
class StopPlan:
    """Stopping a live run started elsewhere: whom, and why it cannot be done (None: ask, then signal)."""

    run: RunInfo
    who: str
    refusal: str | None
    question: Text
    severity: Severity = "error"
    """How the refusal is shown (another machine's run is no error: it is stopped there)."""


class RunController:
    """Runs started from the browser of the store at ``location``, with the edits kept in ``edits``."""

    def __init__(self, location: str, edits: EditsModel) -> None:
        self.location = location
        self.edits = edits
        self.running: dict[str, tuple[float, str]] = {}
        """Runs this app started: source checkpoint id → (when, branch); the tree marks their branches live."""

    # -- starting ---------------------------------------------------------------------------------------------
    @staticmethod
    def refusal(run_going: bool, shown: Detail | None) -> str | None:
        """Why no run can start now from ``shown`` (None: one can)."""
        if run_going:
            return "A run is going: wait for it or cancel it with x."
        if shown is None or not shown.ready:
            reason = (shown.problem if shown is not None else None) or "choose a checkpoint and wait for it to load"
            return visible(f"Cannot run from here: {reason}")
        return None

    def plan_fork(self, shown: Detail) -> ForkPlan:
        """The fork of ``shown`` with its kept edits; raises CheckpointError or ValueError with one line."""
        assert shown.record is not None and shown.info is not None
        edits = self.edits.of(shown.meta.id)
        inputs = self.edits.fork_inputs(shown.meta.id, shown.info.inputs)
        plan = ops.plan_fork(shown.record, inputs, edits.outputs or None)
        check_fork(shown.record, plan, edits.inputs)
        return plan

    def fork_request(
        self,
        source_id: str,
        branch: str,
        inputs: Mapping[str, Any],
        outputs: Mapping[int, str],
        app: str,
        rerun: int,
        budget: float | None = None,
    ) -> RunRequest:
        """The run of a confirmed fork; its edits now live on in the new branch, so they are no longer kept.
        ``budget``: the dollars the run may spend (``--budget``), None for no limit."""
        options = RunOptions(
            source_id,
            self.location,
            fork=True,
            branch=branch,
            inputs=dict(inputs),
            outputs={str(index + 1): text for index, text in sorted(outputs.items())},  # counted from 1, as typed
            app=app or None,
            budget=Budget.of(budget),
        )
        argv = run_command(options)
        self.edits.discard(source_id)
        return RunRequest(argv, f"fork {source_id[:8]} → {branch}", branch, rerun, source_id)

    @staticmethod
    def resume_question(meta: CheckpointMeta, info: CheckpointInfo) -> Text:
        pending = [t for t in info.tasks if not t.done]
        question = Text(
            visible(f"Continue {meta.entity_kind} {meta.entity_name} on ⎇ {meta.branch} from {meta.id[:12]}.") + "\n"
        )
        question.append(
            f"{len(pending)} task(s) left to run; finished tasks are not run again."
            if info.tasks
            else "Finished steps are not run again."
        )
        return question

    def resume_request(
        self, meta: CheckpointMeta, info: CheckpointInfo, app: str, budget: float | None = None
    ) -> RunRequest:
        """The run of a confirmed Resume dialog; ``budget``: the dollars it may spend (``--budget``), None for no
        limit."""
        request = RunRequest(
            resume_command(meta.id, self.location, app, budget), f"resume {meta.id[:8]} on {meta.branch}", meta.branch
        )
        request.total, request.source_id = len([t for t in info.tasks if not t.done]), meta.id
        return request

    def answer_request(self, meta: CheckpointMeta, answer: Answer) -> RunRequest:
        """The run of a confirmed Answer dialog: ``crewpoint checkpoint answer``, then the run goes on as a resume."""
        said = answer.outcome or ("feedback" if answer.feedback else "accepted")
        request = RunRequest(
            answer_command(meta.id, self.location, answer),
            visible(f"answer {meta.id[:8]} ({said}) on {meta.branch}", one_line=True),
            meta.branch,
        )
        request.source_id = meta.id
        return request

    @staticmethod
    def live_question(meta: CheckpointMeta, segment: Segment, run: RunInfo | None) -> Text:
        """A resume beside a live run would run the same tasks a second time: say so, and offer a fork."""
        who = f"run {run_label(segment.lineage)} of {meta.entity_kind} {meta.entity_name} on ⎇ {segment.branch}"
        if run is not None:
            who += f" (pid {run.pid} on {run.host})"
        question = Text(visible(f"The {who} is live: it is running its tasks now.", one_line=True) + "\n")
        question.append(
            f"Resuming from {meta.id[:12]} would start the same tasks a second time beside it, on the same branch.\n"
        )
        question.append("Fork instead: a new branch from this checkpoint, leaving the live run alone.")
        return question

    def started(self, request: RunRequest) -> None:
        self.running[request.source_id] = (time.time(), request.branch)

    # -- stopping and ending ------------------------------------------------------------------------------------
    @staticmethod
    def stop_plan(run: RunInfo) -> StopPlan:
        """How a live run started outside this app is stopped (only its own verified process, on this host)."""
        who = visible(
            f"run {run_label(run.lineage)} of {run.entity_kind} {run.entity_name} on ⎇ {run.branch} "
            f"(pid {run.pid} on {run.host})",
            one_line=True,
        )
        refusal: str | None = None
        severity: Severity = "error"
        if run.host != this_host():
            refusal, severity = f"The live {who} runs on another machine: stop it there.", "information"
        else:
            reason = run_control.problem(run)  # a run record names a pid: signal only the run's own process
            if reason is not None:
                refusal = f"Cannot stop the live {who}: {visible(reason)}"
        question = Text(f"The live {who} was started outside this app.\n")
        question.append(STOP_PROMISE)
        return StopPlan(run, who, refusal, question, severity)

    @staticmethod
    def fleet_stop_question(lineage: str, state: str) -> Text:
        """Stopping a run of the fleet aborts its job, as ``crewpoint checkpoint stop`` does."""
        question = Text(visible(f"Run {run_label(lineage)} of the fleet is {state}.", one_line=True) + "\n")
        question.append(
            "Abort its job? Its worker interrupts the run, which ends interrupted with a checkpoint (a job no worker "
            "took yet is cancelled). Resume it later from its last checkpoint with e."
        )
        return question

    @staticmethod
    def stop(plan: StopPlan) -> tuple[str, bool]:
        """Send SIGINT to the planned run's process: what to tell the user, and whether it went wrong."""
        reason = run_control.interrupt(plan.run)
        if reason is not None:
            return f"Cannot stop the live {plan.who}: {visible(reason)}", True
        return f"Sent SIGINT to pid {plan.run.pid}: the run stops.", False

    def finished(
        self, request: RunRequest, returncode: int, cancelled: bool, error: str, queued: str = ""
    ) -> tuple[str, Severity]:
        """A run ended: forget it, and say how it ended, with a severity (success, cancelled or failed). ``queued``:
        what it said of the fleet's job that goes on with it, when nothing ran here."""
        self.running.pop(request.source_id, None)
        if returncode == 0 and queued:
            return visible(f"{request.title}: {queued}"), "information"
        if returncode == 0:
            return visible(f"{request.title}: finished"), "information"
        if returncode == ExitCode.WAITING:
            return visible(f"{request.title}: waits for a person's answer (a answers it)"), "information"
        if returncode == ExitCode.BUDGET:
            said = f"{request.title}: stopped at its budget (resume with e and a larger budget)"
            return visible(said), "warning"
        if cancelled or returncode == ExitCode.INTERRUPTED:
            return visible(f"{request.title}: cancelled"), "warning"
        return visible(f"{request.title}: {error or 'failed'}"), "error"
