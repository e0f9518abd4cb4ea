"""``Task``: one unit of work an agent does, and its ``TaskOutput``."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from crewpoint.checkpoint.config import CheckpointConfig, config_from_state, config_state
from crewpoint.text import clip, interpolate, placeholders

if TYPE_CHECKING:
    from crewpoint.agent import Agent


class TaskOutput(BaseModel):
    """What a finished task produced."""

    model_config = ConfigDict(defer_build=True)

    description: str
    raw: str
    expected_output: str = ""
    name: str | None = None
    agent: str = ""
    summary: str = ""

    def __str__(self) -> str:
        return self.raw

    def to_state(self) -> dict[str, Any]:
        return {
            "description": self.description,
            "raw": self.raw,
            "expected_output": self.expected_output,
            "name": self.name,
            "agent": self.agent,
            "summary": self.summary,
        }


GuardrailResult = tuple[bool, Any]


def _callable_path(fn: Callable[..., Any]) -> str | None:
    from crewpoint.serialize import callable_path

    return callable_path(fn)


class Task(BaseModel):
    """A task for an agent. ``{placeholder}`` in the texts is filled from kickoff inputs."""

    model_config = ConfigDict(arbitrary_types_allowed=True, validate_assignment=False, defer_build=True, extra="allow")

    description: str
    expected_output: str = ""
    agent: Agent | None = None
    context: list[Task] | None = None
    callback: Callable[[TaskOutput], Any] | None = None
    guardrail: Callable[[TaskOutput], GuardrailResult] | str | None = None
    guardrail_max_retries: int = 2
    name: str | None = None
    checkpoint: CheckpointConfig | bool | None = None
    human_input: bool = False
    """After the agent's answer a person reviews it; the agent revises with their feedback until they accept."""
    output_file: str | None = None
    """A file in the project folder (relative to where the program runs) the task's output is written to when it
    finishes, as in CrewAI. The program's own setting: checkpoints do not save it."""
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    output: TaskOutput | None = None

    _interpolated: tuple[str, str] | None = PrivateAttr(default=None)
    _checked: bool = PrivateAttr(default=False)
    _fingerprint: dict[str, str] | None = PrivateAttr(default=None)
    """What decided the output, part by part (:mod:`crewpoint.checkpoint.crew_changes`): set when the task runs."""

    @model_validator(mode="before")
    @classmethod
    def _from_config(cls, data: Any) -> Any:
        """``Task(config=...)``: a YAML entry's settings fill every field not given explicitly (CrewAI's spelling)."""
        return filled_from_config(data, cls.model_fields, "Task", warn_unknown=True)

    @model_validator(mode="after")
    def _warn_unsavable(self) -> Task:
        from crewpoint.agent import warn_ignored_settings
        from crewpoint.serialize import check_savable

        if self._checked:  # pydantic re-runs after-validators when the task is passed to a Crew
            return self
        self._checked = True
        warn_ignored_settings(self, f"Task {self.label!r}")
        if self.output_file is not None and not _inside(self.output_file):
            _warn(
                f"Task {self.label!r}: output_file {self.output_file!r} is outside the project folder (absolute or "
                "through ..) and is not written; name a file inside it, like 'report.md'"
            )
            self.output_file = None
        check_savable(self.callback, "Task")
        if self.guardrail is not None and not isinstance(self.guardrail, str):
            check_savable(self.guardrail, "Task guardrail")
        return self

    # -- text ---------------------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return self.name or clip(self.description, 48)

    def placeholders(self) -> list[str]:
        return placeholders(self.description, self.expected_output)

    def interpolate_inputs(self, inputs: Mapping[str, Any]) -> None:
        self._interpolated = (
            interpolate(self.description, inputs),
            interpolate(self.expected_output, inputs),
        )

    @property
    def prompt_description(self) -> str:
        return self._interpolated[0] if self._interpolated else self.description

    @property
    def prompt_expected_output(self) -> str:
        return self._interpolated[1] if self._interpolated else self.expected_output

    @property
    def done(self) -> bool:
        return self.output is not None

    def write_output_file(self) -> None:
        """Write the finished output to ``output_file``, making its folders; a file that cannot be written is a
        warning (the task's output is in the checkpoint all the same)."""
        if self.output_file is None or self.output is None:
            return
        path = Path(self.output_file)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.output.raw, encoding="utf-8")
        except OSError as exc:
            _warn(f"Task {self.label!r}: output_file {self.output_file!r} not written: {exc.strerror or exc}")

    # -- guardrails -----------------------------------------------------------------------------------
    def check_guardrail(self, output: TaskOutput, agent: Agent) -> GuardrailResult:
        """Run the guardrail: a callable returns ``(ok, value_or_error)``; a string is judged by the LLM."""
        from crewpoint.events import (
            LLMGuardrailCompletedEvent,
            LLMGuardrailFailedEvent,
            LLMGuardrailStartedEvent,
            event_bus,
        )

        if self.guardrail is None:
            return True, output
        name = self.guardrail if isinstance(self.guardrail, str) else getattr(self.guardrail, "__name__", "guardrail")
        event_bus.emit(self, LLMGuardrailStartedEvent(guardrail=name, task_id=self.id, agent_id=agent.id))
        try:
            if isinstance(self.guardrail, str):
                verdict = agent.judge(output.raw, self.guardrail, task_id=self.id)
                result: GuardrailResult = (verdict is None, output if verdict is None else verdict)
            else:
                result = self.guardrail(output)
        except Exception as exc:
            event_bus.emit(self, LLMGuardrailFailedEvent(error=str(exc), task_id=self.id, agent_id=agent.id))
            raise
        ok, value = result
        event_bus.emit(
            self,
            LLMGuardrailCompletedEvent(
                success=bool(ok), result=None if ok else str(value), task_id=self.id, agent_id=agent.id
            ),
        )
        return bool(ok), value

    # -- state --------------------------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        # every checkpoint of a crew takes each task's state: what a task without functions does not need is not
        # done (the import), and the fingerprint is read where pydantic keeps it, without its __getattr__
        guardrail: dict[str, Any] | None = None
        if isinstance(self.guardrail, str):
            guardrail = {"text": self.guardrail}
        elif self.guardrail is not None:
            path = _callable_path(self.guardrail)
            guardrail = {"path": path} if path else {"unsaved": True}
        callback = _callable_path(self.callback) if self.callback is not None else None
        fingerprint = (self.__pydantic_private__ or {}).get("_fingerprint")
        return {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "expected_output": self.expected_output,
            "agent": self.agent.id if self.agent is not None else None,
            "context": [t.id for t in self.context] if self.context is not None else None,
            "callback": callback,
            "callback_unsaved": self.callback is not None and callback is None,
            "guardrail": guardrail,
            "guardrail_max_retries": self.guardrail_max_retries,
            "checkpoint": config_state(self.checkpoint),
            "output": self.output.to_state() if self.output is not None else None,
            "human_input": self.human_input,
            "fingerprint": dict(fingerprint) if fingerprint is not None else None,
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any], agents: Mapping[str, Agent]) -> Task:
        """Rebuild a task from its checked state (context is linked by the caller once every task exists).

        A saved callback or guardrail function comes back under the trust rule of :mod:`crewpoint.serialize`.
        """
        from crewpoint.serialize import load_callable

        label = data["name"] or clip(data["description"], 48)
        guardrail: Any = None
        g = data["guardrail"]
        if g is not None:
            if g["text"] is not None:
                guardrail = g["text"]
            elif g["path"]:
                guardrail = load_callable(g["path"], f"guardrail of task {label!r}")
            elif g["unsaved"]:
                _warn_not_saved(f"task {label!r} guardrail")
        callback = load_callable(data["callback"], f"callback of task {label!r}") if data["callback"] else None
        if data["callback_unsaved"]:
            _warn_not_saved(f"task {label!r} callback")
        output = data["output"]
        task = cls.model_construct(
            id=data["id"],
            name=data["name"],
            description=data["description"],
            expected_output=data["expected_output"],
            agent=agents.get(data["agent"]) if data["agent"] else None,
            context=None,
            callback=callback,
            guardrail=guardrail,
            guardrail_max_retries=data["guardrail_max_retries"],
            checkpoint=config_from_state(data["checkpoint"]),
            output=TaskOutput(**output) if output is not None else None,
            human_input=data["human_input"],
        )
        task._fingerprint = dict(data["fingerprint"]) if data["fingerprint"] is not None else None
        return task

    def bind_state(self, data: Mapping[str, Any]) -> None:
        """Take the saved task's id and output; keep this task's code (callback, guardrail, agent)."""
        self.id = data["id"]
        output = data["output"]
        self.output = TaskOutput(**output) if output is not None else None
        self._fingerprint = dict(data["fingerprint"]) if data["fingerprint"] is not None else None


def filled_from_config(data: Any, fields: Mapping[str, Any], kind: str, warn_unknown: bool) -> Any:
    """A model's input with a YAML entry's ``config`` settings filling every field not given explicitly, as
    CrewAI's ``Task(config=...)`` and ``Agent(config=...)`` take them; the input as it is without one."""
    if not isinstance(data, dict) or "config" not in data:
        return data
    # lazy: crewpoint.project (YAML projects) loads only when a config is given
    from crewpoint.project import fill_from_config

    return fill_from_config(data, fields, kind, warn_unknown=warn_unknown)


def _inside(name: str) -> bool:
    """Is ``name`` a path inside the folder the program runs in (relative, never through ``..``)?"""
    path = PurePath(name)
    return bool(name.strip()) and not path.is_absolute() and ".." not in path.parts and not path.drive


def _warn(message: str) -> None:
    import warnings

    from crewpoint.serialize import _caller_stacklevel

    warnings.warn(message, UserWarning, stacklevel=_caller_stacklevel())


def _warn_not_saved(what: str) -> None:
    import warnings

    warnings.warn(
        f"{what} was not saved in the checkpoint (it was not a module-level function) and is not used in this "
        "run; resume your own program to keep it",
        UserWarning,
        stacklevel=3,
    )
