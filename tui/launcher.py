"""The command lines of the runs the app starts: a child ``crewpoint checkpoint resume|fork|answer`` reporting
progress as JSON lines (:mod:`crewpoint.tui.run_protocol`), which runs :func:`crewpoint.checkpoint.run.run_checkpoint`
as the command line does; and the plan a dry run prints (:func:`read_plan`), which the app shows
without importing the user's program in its own process. Headless."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from crewpoint.checkpoint.run import RunOptions

CHILD = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint"]
"""The command the app's runs start, before the subcommand."""


def cli_command(*args: str, app: str = "", budget: float | None = None) -> list[str]:
    """The child command; ``app`` (a program spec) is passed as ``--app`` and ``budget`` (dollars) as ``--budget``
    when given."""
    argv = [*CHILD, *args, "--progress", "json"]
    if app.strip():
        argv += ["--app", app.strip()]
    if budget is not None:
        argv += ["--budget", f"{budget:g}"]
    return argv


def run_command(options: RunOptions) -> list[str]:
    """The child ``crewpoint checkpoint resume|fork`` that runs ``options``, reporting JSON lines."""
    return [*CHILD, *options.argv(progress="json")]


def resume_command(source_id: str, location: str, app: str = "", budget: float | None = None) -> list[str]:
    """The child resume of ``source_id`` in ``location`` with the program ``app`` (none: the project's), stopping
    at ``budget`` dollars when given."""
    # lazy: the run's options live with the engine's run, loaded only when a run starts
    from crewpoint.budget import Budget
    from crewpoint.checkpoint.run import RunOptions

    return run_command(RunOptions(source_id, location, app=app or None, budget=Budget.of(budget)))


PLAN_TIMEOUT = 60.0
"""Seconds the app waits for a dry run's plan before saying it could not get one."""


@dataclass(frozen=True, slots=True)
class TaskVerdict:
    """One task of a dry run's plan: its name, its verdict (kept, changed, new, dropped, moved), its place in the
    program (``index``) and in the checkpoint (``saved``), whether it runs, and why."""

    name: str
    verdict: str
    index: int | None
    saved: int | None
    runs: bool
    reasons: tuple[str, ...] = ()

    def line(self) -> str:
        """``changed  research: description changed`` as the dialogs list it."""
        why = f": {', '.join(self.reasons)}" if self.reasons else ""
        return f"{self.verdict}  {self.name}{why}" + ("  (runs)" if self.runs and self.verdict == "kept" else "")


@dataclass(frozen=True, slots=True)
class ProgramPlan:
    """What a resume of a checkpoint with the program ``program`` would do, from the dry run's JSON plan."""

    program: str
    tasks: tuple[TaskVerdict, ...]
    to_run: tuple[str, ...]
    notes: tuple[str, ...] = ()
    cost_usd: float | None = None
    """The estimate of what will run, in dollars, from each task's last run (None: unknown)."""
    no_history: tuple[str, ...] = ()
    """The tasks that will run and never ran before on this chain: the estimate leaves them out."""

    @property
    def unchanged(self) -> bool:
        return all(t.verdict == "kept" for t in self.tasks)

    def lines(self) -> list[str]:
        """The plan as the dialogs show it: the notes, each task that is not simply kept, and what will run."""
        lines = list(self.notes)
        if self.unchanged:
            lines.append(f"Program {self.program}: unchanged since the checkpoint.")
        else:
            lines.append(f"Program {self.program} changed since the checkpoint:")
            lines += [f"  {t.line()}" for t in self.tasks if t.verdict != "kept"]
        if self.to_run:
            lines.append(f"Will run: {', '.join(self.to_run)}; {self.estimate_words()}")
        return lines

    def estimate_words(self) -> str:
        """``estimate ~$0.0123, plus 1 with no history`` as the plan prices what will run."""
        # lazy: the dollars' words, only once a plan is shown
        from crewpoint.cost import format_usd

        said = f"estimate ~{format_usd(self.cost_usd)}"
        return said + (f", plus {len(self.no_history)} with no history" if self.no_history else "")

    def by_saved(self) -> dict[int, TaskVerdict]:
        """The verdict of each task of the checkpoint, by its place there (a new task has none)."""
        return {t.saved: t for t in self.tasks if t.saved is not None}


class PlanUnavailable(Exception):
    """The dry run gave no plan: the one line says why (the child's own error line, or what went wrong)."""


def plan_command(checkpoint_id: str, location: str, app: str, action: str = "resume") -> list[str]:
    """The child dry run that prints the plan of ``action`` (resume or fork) of ``checkpoint_id`` in ``location``
    with ``app``, as JSON."""
    where = ["--location", location] if location else []  # none: ``checkpoint_id`` is a file or ``DB#ID``
    return [*CHILD, action, checkpoint_id, *where, "--app", app.strip(), "--dry-run", "--json"]


def read_plan(
    checkpoint_id: str, location: str, app: str, *, action: str = "resume", timeout: float = PLAN_TIMEOUT
) -> ProgramPlan:
    """The plan of ``action`` (resume or fork) of ``checkpoint_id`` with the program ``app``, read from a child dry
    run: the user's program is imported there, never in the app's process. Raises :class:`PlanUnavailable` with one
    line when the child fails, times out or prints something else."""
    command = plan_command(checkpoint_id, location, app, action)
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise PlanUnavailable(f"the program's plan took over {timeout:g}s: check {app} loads quickly") from None
    except OSError as exc:
        raise PlanUnavailable(f"could not start the dry run: {exc}") from None
    if done.returncode != 0:
        said = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        why = said[-1] if said else f"the dry run ended with exit {done.returncode}"
        raise PlanUnavailable(f"no plan from {app}: {why}")
    try:
        data = json.loads(done.stdout)
        tasks = tuple(
            TaskVerdict(
                name=str(t["name"]),
                verdict=str(t["verdict"]),
                index=t.get("index"),
                saved=t.get("saved"),
                runs=bool(t.get("runs")),
                reasons=tuple(str(r) for r in t.get("reasons") or ()),
            )
            for t in data.get("tasks") or ()
        )
        estimate = data.get("estimate") or {}
        cost = (estimate.get("total") or {}).get("cost_usd")
        return ProgramPlan(
            app.strip(),
            tasks,
            tuple(str(n) for n in data.get("to_run") or ()),
            tuple(str(n) for n in data.get("notes") or ()),
            float(cost) if isinstance(cost, int | float) else None,
            tuple(str(n) for n in estimate.get("no_history") or ()),
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        raise PlanUnavailable(f"no plan from {app}: the dry run printed no JSON plan") from None
