"""Which stored runs the current program can go on from, and what each would re-run: ``crewpoint checkpoint check``.

Each checkpoint is read and checked once, through its store's provider found once, and compared with the program
(loaded once per kind, its crew's task fingerprints made once): the plan a resume would get
(:mod:`crewpoint.checkpoint.changes`), summed up in one phrase. No LLM is called and nothing is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from crewpoint.checkpoint.changes import ChangePlan
from crewpoint.checkpoint.restore import read_checked
from crewpoint.checkpoint.stores import load_checked
from crewpoint.providers.base import BaseProvider, CheckpointError

UNCHANGED = "resume unchanged"


@dataclass(frozen=True)
class Checked:
    """One checkpoint against the program: its plan and the phrase it is counted under, or why it cannot resume."""

    id: str
    entity: str
    summary: str
    plan: ChangePlan | None = None
    cannot: str | None = None

    @property
    def unchanged(self) -> bool:
        return self.cannot is None and (self.plan is None or self.plan.unchanged)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "entity": self.entity,
            "summary": self.summary,
            "unchanged": self.unchanged,
            "cannot_resume": self.cannot,
            "plan": self.plan.to_json() if self.plan is not None else None,
        }


def summary_of(plan: ChangePlan | None) -> str:
    """The phrase a plan is counted under: ``resume unchanged``, ``re-run 'outline' (description changed)``…"""
    if plan is None or plan.unchanged:
        return UNCHANGED
    parts: list[str] = []
    for v in plan.verdicts:
        why = f" ({', '.join(v.reasons)})" if v.reasons else ""
        if v.verdict == "changed":
            parts.append(f"re-run {v.name!r}{why}" if v.runs else f"keep changed {v.name!r}{why}")
        elif v.verdict == "new":
            parts.append(f"run new {v.name!r}")
        elif v.verdict == "dropped":
            parts.append(f"drop {v.name!r}")
        elif v.verdict == "moved":
            parts.append(f"move {v.name!r}{why}")
    return ", ".join(parts) or UNCHANGED


class ProgramCheck:
    """The program ``app`` against checkpoint after checkpoint, each kind of entity loaded from it once."""

    def __init__(self, app: str, provider: BaseProvider | None = None) -> None:
        self.app = app
        self.provider = provider
        """The store's provider, when every checkpoint checked is of one store (each read skips finding it)."""
        self._programs: dict[str, Any] = {}
        self._prints: list[dict[str, str]] | None = None
        """The program crew's task fingerprints, made once for every checkpoint."""

    def program(self, kind: str) -> Any:
        if kind not in self._programs:
            # lazy: only a check loads the program
            from crewpoint.checkpoint.program import load_app

            self._programs[kind] = load_app(self.app, kind)
        return self._programs[kind]

    def check(self, ref: str, checkpoint_id: str, entity: str) -> Checked:
        """The plan the program would get from the checkpoint ``ref``; a checkpoint it cannot go on from is said in
        one line (a damaged body, another kind of entity)."""
        # lazy: comparing a crew loads its matching; a flow's comes from the flow engine
        from crewpoint.checkpoint.crew_changes import crew_change_plan, task_fingerprint
        from crewpoint.entities import kind_of

        try:
            # a checkpoint of the store is read as itself; any other reference is resolved first
            record, body = read_checked(ref, provider=self.provider) if self.provider else load_checked(ref)
            saved = body["entity"]
            if body["format"] != "crewpoint":
                raise CheckpointError(f"it is in {body['format']}'s format, which {body['format']} runs")
            program = self.program(saved["kind"])
            if kind_of(saved["kind"]).has_tasks:
                if self._prints is None:
                    self._prints = [task_fingerprint(program, i) for i in range(len(program.tasks))]
                tasks = list(saved["tasks"])  # type: ignore[typeddict-item]
                plan: ChangePlan | None = crew_change_plan(tasks, program, prints=self._prints)[0]
            else:
                # lazy: only a flow's (or an agent's) plan needs the resume planner, which loads describe and cost
                from crewpoint.checkpoint.plan import change_plan_of

                plan = change_plan_of(program, saved)
        except (CheckpointError, ValueError) as exc:  # (the program has no entity of the checkpoint's kind: AppError)
            reason = " ".join(str(exc).split())
            return Checked(checkpoint_id, entity, f"cannot resume: {reason}", cannot=reason)
        if plan is not None and plan.blocked is not None:
            return Checked(checkpoint_id, entity, f"cannot resume: {plan.blocked}", plan, cannot=plan.blocked)
        return Checked(record.meta.id, entity, summary_of(plan), plan)
