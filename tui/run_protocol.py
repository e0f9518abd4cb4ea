"""The run-progress protocol: what a resumed or forked run reports, one JSON object per line.

:mod:`crewpoint.tui.progress` writes these records (``--progress json``) and the app's run panel reads them: both
go through :class:`ProgressRecord`, so the two sides cannot drift apart. Every record has an ``event``:

* ``started``: ``source`` (checkpoint id), ``fork``, ``branch``, ``kind``, ``name``, ``store``, ``tasks`` (names
  in order), ``rerun`` (0-based indexes of the tasks that will run);
* one record per event of interest (``task_started``, ``task_completed``, ``method_execution_finished``, ...) with
  ``task_index`` (0-based) and ``task_name`` when it concerns a task, ``checkpoint_id`` (the run's newest
  checkpoint), ``branch``, and a shortened ``output``, ``result`` or ``error`` when there is one;
* ``checkpoint``: a checkpoint was taken (``checkpoint_id``, ``trigger``), right after the event that took it;
  ``checkpoint_completed``: it is written (``location``); ``checkpoint_failed``: it could not be written;
* last, ``finished`` (``result``), ``waiting`` (``text``), ``stopped_at_budget`` (``text``: what it spent of its
  budget), ``queued`` (``text``: the fleet's job that goes on with it), ``failed`` (``error``) or ``interrupted``.

Headless: the standard library only.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Any

STARTED = "started"
CHECKPOINT = "checkpoint"
"""A checkpoint was taken (captured at its triggering event; writing follows)."""
WRITTEN = "checkpoint_completed"
"""A checkpoint is on disk: readers of the store can see it."""
WRITE_FAILED = "checkpoint_failed"
FINISHED = "finished"
WAITING = "waiting"
"""The run stopped to wait for a person: its newest checkpoint holds the request (``text`` names the command that
answers it)."""
STOPPED_AT_BUDGET = "stopped_at_budget"
"""The run stopped at its budget before an LLM call: not a failure; its newest checkpoint holds it (``text`` says
what it spent of its budget)."""
QUEUED = "queued"
"""Nothing ran here: the answered run's continuation is queued for the fleet's workers (``text`` names the job)."""
FAILED = "failed"
INTERRUPTED = "interrupted"
LOG = "log"
"""Not a record: a line the run printed, kept as ``text``."""
STEP_STARTED = ("task_started", "method_execution_started", "lite_agent_execution_started")
STEP_DONE = ("task_completed", "method_execution_finished", "lite_agent_execution_completed")
STEP_FAILED = ("task_failed", "method_execution_failed", "lite_agent_execution_error")
ENDS = (FINISHED, WAITING, STOPPED_AT_BUDGET, QUEUED, FAILED, INTERRUPTED)


@dataclass(frozen=True, slots=True)
class ProgressRecord:
    """One line of the protocol. Unset fields are left out of the JSON."""

    event: str
    checkpoint_id: str | None = None
    branch: str | None = None
    task_index: int | None = None
    task_name: str | None = None
    agent: str | None = None
    output: str | None = None
    result: Any = None
    error: str | None = None
    trigger: str | None = None
    location: str | None = None
    text: str | None = None
    source: str | None = None
    fork: bool | None = None
    kind: str | None = None
    name: str | None = None
    store: str | None = None
    tasks: list[str] = field(default_factory=list)
    rerun: list[int] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None and not (k == "tasks" and not v)}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, default=str)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProgressRecord:
        """A record from its JSON object; unknown keys are dropped, wrongly typed ones too."""
        known: dict[str, Any] = {}
        for spec in fields(cls):
            if spec.name not in data:
                continue
            value = data[spec.name]
            if spec.name == "task_index" and not isinstance(value, int):
                continue
            if spec.name == "tasks" and not (isinstance(value, list) and all(isinstance(v, str) for v in value)):
                continue
            if spec.name == "rerun" and not (isinstance(value, list) and all(isinstance(v, int) for v in value)):
                continue
            if spec.name == "fork":
                value = bool(value)
            elif spec.name not in ("result", "task_index", "tasks", "rerun") and value is not None:
                value = str(value)
            known[spec.name] = value
        known.setdefault("event", LOG)
        return cls(**known)

    @classmethod
    def parse(cls, line: str) -> ProgressRecord:
        """A line of a run's output: a record, or the line itself as a :data:`LOG` record."""
        try:
            data = json.loads(line)
        except ValueError:
            return cls(LOG, text=line)
        if not isinstance(data, dict) or not isinstance(data.get("event"), str):
            return cls(LOG, text=line)
        return cls.from_dict(data)

    @property
    def step_label(self) -> str:
        """``2. outline`` for a task, the method's name for a flow step."""
        name = self.task_name or ""
        return f"{self.task_index + 1}. {name}" if self.task_index is not None else name
