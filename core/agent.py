"""``Agent``: a role with a goal, an LLM, tools, memory and knowledge; runs tasks or stands alone."""

from __future__ import annotations

import sys
import uuid
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from crewpoint.budget import Budget, BudgetExceeded, budget_from_state, budget_state
from crewpoint.checkpoint.config import CheckpointConfig, config_from_state, config_state, resolve
from crewpoint.entities import CheckpointedEntity, Entity, in_thread
from crewpoint.knowledge import BaseKnowledgeSource, Knowledge, knowledge_source_from_state
from crewpoint.llm import BaseLLM, llm_from_state, parse_reply, resolve_llm
from crewpoint.memory import ShortTermMemory
from crewpoint.task import Task, _warn_not_saved, filled_from_config
from crewpoint.text import interpolate
from crewpoint.tools import BaseTool, tool_from_state

if TYPE_CHECKING:
    from crewpoint.runtime import RuntimeState


class AgentOutput(BaseModel):
    """The result of a standalone ``Agent.kickoff``."""

    model_config = ConfigDict(defer_build=True)

    raw: str
    agent_role: str = ""

    def __str__(self) -> str:
        return self.raw


@dataclass(frozen=True)
class AgentStep:
    """One step of an agent's reasoning loop, passed to ``step_callback``.

    ``kind`` is ``"action"`` (a tool call: ``tool``, ``tool_input`` and the tool's ``observation``) or
    ``"final"`` (the answer, in ``output``); ``text`` is the model's reply.
    """

    kind: str
    text: str
    output: str = ""
    tool: str | None = None
    tool_input: dict[str, Any] | None = None
    observation: str | None = None


def warn_ignored_settings(model: BaseModel, what: str) -> None:
    """Warn once about keyword arguments a model accepted but does not use (they are not saved either): an agent
    is validated again each time a task or a crew takes it, and says so once."""
    import warnings

    from crewpoint.serialize import _caller_stacklevel

    extra = model.model_extra or {}
    if extra:
        names = ", ".join(sorted(extra))
        message = f"{what} ignores the setting(s) {names}: crewpoint does not use them and checkpoints do not save them"
        key = id(model)
        seen = _WARNED.get(key)
        if seen is not None and seen() is model:
            return
        _WARNED[key] = weakref.ref(model, lambda _, key=key: _WARNED.pop(key, None))  # type: ignore[misc]
        warnings.warn(message, UserWarning, stacklevel=_caller_stacklevel())


_WARNED: dict[int, weakref.ref[BaseModel]] = {}
"""The models warned about, by id, while they live (each is validated again by every task and crew taking it)."""


class Agent(BaseModel, CheckpointedEntity):
    """An agent. ``llm=None`` uses the configured default (the offline model when none is configured)."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="allow", defer_build=True)
    KIND: ClassVar[str] = "agent"

    role: str
    goal: str = ""
    backstory: str = ""
    llm: BaseLLM | str | None = None
    tools: list[BaseTool] = Field(default_factory=list)
    memory: bool = True
    knowledge_sources: list[BaseKnowledgeSource] = Field(default_factory=list)
    checkpoint: CheckpointConfig | bool | None = None
    max_iter: int = 5
    step_callback: Callable[[AgentStep], Any] | None = None
    verbose: bool = False
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    budget: Budget | None = None
    """What a standalone kickoff may spend (:mod:`crewpoint.budget`); in a crew, the crew's budget counts."""

    _llm: BaseLLM | None = PrivateAttr(default=None)
    _conversation: ShortTermMemory = PrivateAttr(default_factory=ShortTermMemory)
    _knowledge: Knowledge | None = PrivateAttr(default=None)
    _pending: list[dict[str, str]] | None = PrivateAttr(default=None)
    _result: str | None = PrivateAttr(default=None)
    _runtime: RuntimeState | None = PrivateAttr(default=None)
    _made_in: tuple[str, str] | None = PrivateAttr(default=None)
    _inputs: dict[str, Any] = PrivateAttr(default_factory=dict)
    _finished: bool = PrivateAttr(default=False)
    """This object's own kickoff ran to the end: the next kickoff is a new run, unless restored since."""

    @model_validator(mode="before")
    @classmethod
    def _from_config(cls, data: Any) -> Any:
        """``Agent(config=...)``: a YAML entry's settings fill every field not given explicitly (CrewAI's spelling)."""
        return filled_from_config(data, cls.model_fields, "Agent", warn_unknown=False)

    @model_validator(mode="after")
    def _check_settings(self) -> Agent:
        from crewpoint.serialize import check_savable, maker

        self._made_in = maker()
        check_savable(self.step_callback, "Agent step")
        warn_ignored_settings(self, f"Agent {self.role!r}")
        return self

    # -- pieces -----------------------------------------------------------------------------------------
    def get_llm(self) -> BaseLLM:
        if self._llm is None:
            self._llm = resolve_llm(self.llm)
        return self._llm

    @property
    def conversation(self) -> ShortTermMemory:
        return self._conversation

    def knowledge(self) -> Knowledge | None:
        if self._knowledge is None and self.knowledge_sources:
            self._knowledge = Knowledge(sources=list(self.knowledge_sources))
        return self._knowledge

    def interpolate_inputs(self, inputs: Mapping[str, Any]) -> None:
        self._inputs = dict(inputs)

    def system_prompt(self) -> str:
        role, goal, backstory = (interpolate(t, self._inputs) for t in (self.role, self.goal, self.backstory))
        lines = [f"You are {role}. {backstory}".strip(), f"Your personal goal is: {goal}"]
        if self.tools:
            lines.append("Tools:")
            lines.extend(f"- {t.name}: {t.description}" for t in self.tools)
            lines.append(
                'To use a tool reply "Action: <tool name>" and "Action Input: <JSON object>"; '
                'when done reply "Final Answer: <answer>".'
            )
        return "\n".join(lines)

    # -- running ----------------------------------------------------------------------------------------
    def execute_task(self, task: Task, context: str = "", extra: Sequence[str] = ()) -> str:
        """Do ``task``: emits agent_execution_* events and returns the final answer."""
        from crewpoint.events import (
            AgentExecutionCompletedEvent,
            AgentExecutionErrorEvent,
            AgentExecutionStartedEvent,
            event_bus,
        )

        event_bus.emit(self, AgentExecutionStartedEvent(agent_role=self.role, agent_id=self.id, task_id=task.id))
        try:
            prompt = [f"Current task: {task.prompt_description}"]
            if task.prompt_expected_output:
                prompt.append(f"Expected output: {task.prompt_expected_output}")
            if context:
                prompt.append(f"Context from earlier tasks:\n{context}")
            knowledge = self.knowledge()
            if knowledge is not None:
                found = knowledge.query(task.prompt_description, agent_id=self.id, task_id=task.id)
                if found:
                    prompt.append("Relevant knowledge:\n" + "\n".join(f"- {k}" for k in found))
            prompt.extend(x for x in extra if x)
            answer = self._loop(
                [
                    {"role": "system", "content": self.system_prompt()},
                    {"role": "user", "content": "\n\n".join(prompt)},
                ],
                task_id=task.id,
            )
        except BudgetExceeded:
            raise  # the run stopped before a call: no error of this agent's
        except Exception as exc:
            event_bus.emit(self, AgentExecutionErrorEvent(agent_role=self.role, agent_id=self.id, error=str(exc)))
            raise
        event_bus.emit(
            self,
            AgentExecutionCompletedEvent(agent_role=self.role, agent_id=self.id, task_id=task.id, output=answer),
        )
        return answer

    def _loop(self, messages: list[dict[str, str]], task_id: str | None = None) -> str:
        # lazy: importing the API builds no event class it does not use yet
        from crewpoint.events import ToolSelectionErrorEvent, event_bus

        llm = self.get_llm()
        tools = {t.name: t for t in self.tools}
        for message in messages:
            if message["role"] != "system" and self.memory:
                self._conversation.add(message["role"], message["content"])
        reply = ""
        for _ in range(max(1, self.max_iter)):
            reply = llm.invoke(messages, agent_id=self.id, task_id=task_id)
            kind, value, args = parse_reply(reply)
            if self.memory:
                self._conversation.add("assistant", reply)
            messages = [*messages, {"role": "assistant", "content": reply}]
            if kind == "final":
                self._step(AgentStep(kind="final", text=reply, output=value))
                return value
            tool = tools.get(value)
            if tool is None:
                observation = f"Error: there is no tool named {value!r}; available: {', '.join(tools) or 'none'}"
                event_bus.emit(
                    self,
                    ToolSelectionErrorEvent(
                        tool_name=value,
                        tool_args=args,
                        agent_role=self.role,
                        agent_id=self.id,
                        task_id=task_id,
                        error=observation.removeprefix("Error: "),
                    ),
                )
            else:
                safe = {k: v for k, v in args.items() if k not in ("agent_id", "task_id", "agent_role")}
                observation = tool.run(agent_id=self.id, task_id=task_id, **safe)
            self._step(AgentStep(kind="action", text=reply, tool=value, tool_input=args, observation=observation))
            note = f"Observation: {observation}"
            if self.memory:
                self._conversation.add("user", note)
            messages.append({"role": "user", "content": note})
        return parse_reply(reply)[1] if parse_reply(reply)[0] == "final" else reply

    def _step(self, step: AgentStep) -> None:
        if self.step_callback is not None:
            self.step_callback(step)

    def judge(self, output: str, guardrail: str, task_id: str | None = None) -> str | None:
        """Ask the LLM whether ``output`` meets ``guardrail``: ``None`` if it does, else the reason."""
        reply = self.get_llm().invoke(
            [
                {
                    "role": "system",
                    "content": "You check work against a requirement. Reply PASS, or FAIL: <reason>.",
                },
                {"role": "user", "content": f"Requirement: {guardrail}\n\nWork:\n{output}"},
            ],
            agent_id=self.id,
            task_id=task_id,
        )
        text = reply.strip()
        if text.upper().startswith("FAIL"):
            return text[4:].lstrip(": ").strip() or "the output does not meet the guardrail"
        return None

    def kickoff(
        self,
        messages: str | Sequence[Mapping[str, str]] | None = None,
        *,
        from_checkpoint: CheckpointConfig | str | Path | None = None,
    ) -> AgentOutput:
        """Run the agent on its own on ``messages``; resumable and checkpointed like a crew."""
        if from_checkpoint is not None:
            self._bind_checkpoint(from_checkpoint)
            return self.kickoff(messages)
        from crewpoint.events import (
            LiteAgentExecutionCompletedEvent,
            LiteAgentExecutionErrorEvent,
            LiteAgentExecutionStartedEvent,
            event_bus,
        )
        from crewpoint.runtime import RuntimeState, running

        if self._finished:  # a new run, as in CrewAI; a restored agent resumes instead
            self._runtime, self._result, self._finished = None, None, False
            if messages is None:
                messages = list(self._pending or []) or None
        if messages is None:
            if self._pending is None:
                raise ValueError("Agent.kickoff needs messages (or an agent restored from a checkpoint)")
            convo = list(self._pending)
        elif isinstance(messages, str):
            convo = [{"role": "user", "content": messages}]
        else:
            convo = [{"role": str(m["role"]), "content": str(m["content"])} for m in messages]
        if self._result is not None and convo == self._pending:
            return AgentOutput(raw=self._result, agent_role=self.role)
        self._pending, self._result = convo, None
        state = self._runtime or RuntimeState(self, resolve(self.checkpoint))
        self._runtime = state
        with running(state):
            event_bus.emit(self, LiteAgentExecutionStartedEvent(agent_role=self.role, agent_id=self.id))
            try:
                system = {"role": "system", "content": self.system_prompt()}
                answer = self._loop([system, *[m for m in convo if m["role"] != "system"]])
            except BudgetExceeded:
                raise
            except Exception as exc:
                event_bus.emit(
                    self, LiteAgentExecutionErrorEvent(agent_role=self.role, agent_id=self.id, error=str(exc))
                )
                raise
            self._result = answer
            event_bus.emit(
                self, LiteAgentExecutionCompletedEvent(agent_role=self.role, agent_id=self.id, output=answer)
            )
        self._finished = True
        return AgentOutput(raw=answer, agent_role=self.role)

    akickoff = in_thread(kickoff)  # type: ignore[pydantic-field]  # a method, not a field

    # -- checkpoint entity protocol (crewpoint.entities.Entity) --------------------------------------------
    @property
    def entity_name(self) -> str:
        return self.role

    def progress(self) -> tuple[int, int]:
        return (1 if self._result is not None else 0), 1

    def to_state(self) -> dict[str, Any]:
        from crewpoint.serialize import callable_path

        llm = self._llm if self._llm is not None else self.llm
        return {
            "kind": self.KIND,
            "id": self.id,
            "role": self.role,
            "goal": self.goal,
            "backstory": self.backstory,
            "llm": llm.to_state() if isinstance(llm, BaseLLM) else llm,
            "tools": [t.to_state() for t in self.tools],
            "memory": self.memory,
            "conversation": self._conversation.to_state(),
            "knowledge_sources": [s.to_state() for s in self.knowledge_sources],
            "checkpoint": _config_state(self.checkpoint),
            "max_iter": self.max_iter,
            "step_callback": callable_path(self.step_callback) if self.step_callback is not None else None,
            "step_callback_unsaved": self.step_callback is not None and callable_path(self.step_callback) is None,
            "pending": list(self._pending) if self._pending is not None else None,
            "result": self._result,
            **budget_state(self.budget),
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Self:

        from crewpoint.serialize import callbacks_trusted, load_callable

        llm_data = data["llm"]
        llm = None if llm_data is None else llm_from_state(llm_data, agent=data["role"])
        step = data["step_callback"]
        if data["step_callback_unsaved"]:
            _warn_not_saved(f"agent {data['role']!r} step_callback")
        agent = cls(
            id=data["id"],
            role=data["role"],
            goal=data["goal"],
            backstory=data["backstory"],
            llm=llm,
            tools=[tool_from_state(t) for t in data["tools"]],
            memory=data["memory"],
            knowledge_sources=[knowledge_source_from_state(s) for s in data["knowledge_sources"]],
            checkpoint=_config_from_state(data["checkpoint"]),
            # a loop bound is the program's, like a delay or a timeout: the class default unless trusted
            max_iter=data["max_iter"] if callbacks_trusted() else cls.model_fields["max_iter"].default,
            step_callback=load_callable(step, f"step_callback of agent {data['role']!r}") if step else None,
            budget=budget_from_state(data),
        )
        agent._apply_run_state(data)
        return agent

    def _apply_run_state(self, data: Mapping[str, Any]) -> None:
        if data["conversation"] is not None:
            self._conversation = ShortTermMemory.from_state(data["conversation"])
        pending = data["pending"]
        self._pending = [dict(m) for m in pending] if pending is not None else None
        self._result = data["result"]

    def shape_mismatch(self, data: Mapping[str, Any]) -> str | None:
        """Why the saved agent ``data`` is not this agent, or None when it is."""
        saved = str(data.get("role", ""))
        if saved != self.role:
            return f"the checkpoint holds agent {saved!r}; this agent is {self.role!r}"
        return None

    def bind_state(self, data: Mapping[str, Any]) -> None:
        """Take the saved agent's id, conversation and run; keep this agent's LLM, tools, callbacks, knowledge."""
        problem = self.shape_mismatch(data)
        if problem is not None:
            from crewpoint.providers.base import CheckpointError

            raise CheckpointError(problem)
        self.id = str(data["id"])
        self._apply_run_state(data)
        if self.budget is None:  # the program's own budget, else the one the run had
            self.budget = budget_from_state(data)
        self._finished = False

    def attach_runtime(self, runtime: RuntimeState, inputs: dict[str, Any]) -> None:
        self._runtime, self._finished = runtime, False

    # -- resuming and forking: the interface Crew, Flow and Agent share ----------------------------------
    @classmethod
    def check_edits(
        cls, data: Mapping[str, Any], inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
    ) -> None:
        if outputs:
            raise ValueError("task outputs can be edited in crew checkpoints only; this one holds an agent")
        if inputs:
            raise ValueError("an agent checkpoint takes no inputs; resume or fork it as it is")

    def apply_edits(self, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None) -> None:
        return None

    def rerun(self) -> list[int]:
        return []

    def resume(self) -> AgentOutput:
        return self.kickoff()

    @classmethod
    def planning_copy(cls, data: Mapping[str, Any], inputs: Mapping[str, Any]) -> None:
        return None


_config_state = config_state
_config_from_state = config_from_state


# Task's fields name Agent, which task.py imports only for type checking: give its module the name, so pydantic
# resolves it when a Task is first made (its schema is built then, not when crewpoint is imported).
vars(sys.modules[Task.__module__])["Agent"] = Agent

_: type[Entity] = Agent  # mypy checks the class against everything the protocol declares
