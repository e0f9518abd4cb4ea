"""``Crew``: agents working through tasks in order, checkpointed and resumable."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Collection, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from crewpoint.agent import Agent, _config_from_state, _config_state, warn_ignored_settings
from crewpoint.budget import Budget, BudgetExceeded, budget_from_state, budget_state
from crewpoint.checkpoint.config import CheckpointConfig, resolve
from crewpoint.entities import CheckpointedEntity, Entity, in_thread
from crewpoint.events.base import BaseEvent
from crewpoint.knowledge import BaseKnowledgeSource, Knowledge, knowledge_source_from_state
from crewpoint.memory import CrewMemory
from crewpoint.providers.dependencies import readers, reads_of
from crewpoint.task import Task, TaskOutput, _warn_not_saved
from crewpoint.text import clip, interpolate, placeholders, unknown_inputs

if TYPE_CHECKING:
    from crewpoint.checkpoint.changes import ChangePlan
    from crewpoint.feedback import Answer, FeedbackPending
    from crewpoint.project import KickoffHooks
    from crewpoint.runtime import RuntimeState
    from crewpoint.usage import UsageMetrics


class CrewOutput(BaseModel):
    """A finished crew run: ``raw`` is the last task's output."""

    model_config = ConfigDict(defer_build=True)

    raw: str
    tasks_output: list[TaskOutput] = Field(default_factory=list)

    def __str__(self) -> str:
        return self.raw


class Crew(BaseModel, CheckpointedEntity):
    """Agents and tasks. ``process="sequential"``: each task sees its ``context`` tasks' outputs, or else
    every earlier output."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True, extra="allow")
    KIND: ClassVar[str] = "crew"

    agents: list[Agent] = Field(default_factory=list)
    tasks: list[Task] = Field(default_factory=list)
    process: Literal["sequential"] = "sequential"
    name: str = "crew"
    memory: bool = False
    knowledge_sources: list[BaseKnowledgeSource] = Field(default_factory=list)
    task_callback: Callable[[TaskOutput], Any] | None = None
    checkpoint: CheckpointConfig | bool | None = None
    verbose: bool = False
    id: str = Field(default_factory=lambda: uuid.uuid4().hex[:16])
    budget: Budget | None = None
    """What a run may spend (:mod:`crewpoint.budget`): it stops before the call that would go past it."""

    _memory: CrewMemory = PrivateAttr(default_factory=CrewMemory)
    _knowledge: Knowledge | None = PrivateAttr(default=None)
    _inputs: dict[str, Any] | None = PrivateAttr(default=None)
    _runtime: RuntimeState | None = PrivateAttr(default=None)
    _made_in: tuple[str, str] | None = PrivateAttr(default=None)
    _finished: bool = PrivateAttr(default=False)
    """This object's own kickoff ran to the end: the next kickoff is a new run (as in CrewAI), unless the crew
    was restored from a checkpoint or its outputs edited since."""
    _hooks: KickoffHooks | None = PrivateAttr(default=None)
    """A project crew's ``@before_kickoff``/``@after_kickoff`` methods (:mod:`crewpoint.project`)."""
    _pending: dict[str, Any] | None = PrivateAttr(default=None)
    """The review of a ``human_input`` task the run waits on (see :mod:`crewpoint.feedback`)."""
    _answer: Answer | None = PrivateAttr(default=None)
    _answered: list[dict[str, Any]] = PrivateAttr(default_factory=list)
    _plan: ChangePlan | None = PrivateAttr(default=None)
    _saved_tasks: list[Mapping[str, Any]] | None = PrivateAttr(default=None)
    _compared: bool = PrivateAttr(default=False)
    _choices: tuple[tuple[str, ...], tuple[str, ...]] = PrivateAttr(default=((), ()))

    @field_validator("process", mode="before")
    @classmethod
    def _sequential(cls, value: Any) -> str:
        """``Process.sequential`` (CrewAI's spelling) or ``"sequential"``; anything else is refused in one line."""
        # lazy: the process names load with the first crew made
        from crewpoint.process import sequential_only

        return sequential_only(value)

    @model_validator(mode="after")
    def _check(self) -> Crew:
        from crewpoint.serialize import check_savable, maker

        warn_ignored_settings(self, f"Crew {self.name!r}")
        self._made_in = maker()
        check_savable(self.task_callback, "Crew task")
        for task in self.tasks:
            if task.agent is None:
                if not self.agents:
                    raise ValueError(f"task {task.label!r} has no agent and the crew has no agents")
                task.agent = self.agents[0]
            if task.agent not in self.agents:
                self.agents.append(task.agent)
        ids = {t.id for t in self.tasks}
        for task in self.tasks:
            for ctx in task.context or []:
                if ctx.id not in ids:
                    raise ValueError(f"task {task.label!r} has a context task that is not in the crew")
        return self

    # -- context and dependencies --------------------------------------------------------------------
    def context_tasks(self, index: int) -> list[Task]:
        """Tasks whose outputs task ``index`` receives: its ``context``, or else every earlier task."""
        task = self.tasks[index]
        return list(task.context) if task.context is not None else self.tasks[:index]

    def dependents(self, index: int) -> list[int]:
        """Indexes of the tasks that depend, directly or not, on task ``index`` (the rule of
        :mod:`crewpoint.providers.dependencies`, which forks of other tools' crews follow too)."""
        position = {task.id: i for i, task in enumerate(self.tasks)}
        contexts = [
            None if task.context is None else [position[t.id] for t in task.context if t.id in position]
            for task in self.tasks
        ]
        return sorted(readers(reads_of(contexts), {index}))

    def task_index(self, ref: int | str | Task) -> int:
        if isinstance(ref, Task):
            return self.tasks.index(ref)
        if isinstance(ref, int):
            if not 0 <= ref < len(self.tasks):
                raise IndexError(f"task {ref} is out of range: the crew has {len(self.tasks)} tasks")
            return ref
        for i, task in enumerate(self.tasks):
            if ref in (task.id, task.name) or task.id.startswith(ref):
                return i
        raise KeyError(f"no task named {ref!r}")

    # -- editing before resume or fork -----------------------------------------------------------------
    def override_output(self, ref: int | str | Task, text: str) -> list[int]:
        """Replace a finished task's output; the tasks that depend on it are reset. Returns their indexes."""
        i = self.task_index(ref)
        task = self.tasks[i]
        previous = task.output
        task.output = TaskOutput(
            description=previous.description if previous else task.prompt_description,
            raw=text,
            expected_output=task.prompt_expected_output,
            name=task.name,
            agent=task.agent.role if task.agent else "",
        )
        reset = self.dependents(i)
        for j in reset:
            self.tasks[j].output = None
        self._rebuild_memory()
        self._finished = False  # an edit asks the next kickoff to continue from it
        return reset

    def set_inputs(self, inputs: Mapping[str, Any]) -> list[int]:
        """Change kickoff inputs; finished tasks whose text changes, and their dependents, are reset. An input
        the crew has no ``{placeholder}`` for (and did not have) is refused with a ``ValueError``, the line
        ``crewpoint checkpoint fork --input`` prints."""
        problem = unknown_inputs(inputs, self.input_names())
        if problem is not None:
            raise ValueError(problem)
        return self._set_inputs(inputs)

    def input_names(self) -> list[str]:
        """The inputs this crew takes: every ``{placeholder}`` in its tasks and agents, then the inputs it has."""
        texts = [t.description for t in self.tasks] + [t.expected_output for t in self.tasks]
        texts += [text for a in self.agents for text in (a.role, a.goal, a.backstory)]
        return list(dict.fromkeys([*placeholders(*texts), *(self._inputs or {})]))

    def _set_inputs(self, inputs: Mapping[str, Any]) -> list[int]:
        old = dict(self._inputs or {})
        new = {**old, **inputs}
        reset: set[int] = set()
        for i, task in enumerate(self.tasks):
            if task.output is None or i in reset:
                continue
            for text in (task.description, task.expected_output):
                if interpolate(text, old) != interpolate(text, new):
                    reset.add(i)
                    reset.update(self.dependents(i))
                    break
        for j in reset:
            self.tasks[j].output = None
        self._inputs = new
        self._rebuild_memory()
        self._finished = False
        return sorted(reset)

    def _rebuild_memory(self) -> None:
        if not self.memory:
            return
        memory = CrewMemory()
        for task in self.tasks:
            if task.output is not None:
                memory.restore_item(task.output.raw, {"task": task.id})
        self._memory = memory

    def placeholders(self) -> list[str]:
        seen: dict[str, None] = {}
        for task in self.tasks:
            for name in task.placeholders():
                seen.setdefault(name, None)
        return list(seen)

    @property
    def inputs(self) -> dict[str, Any]:
        return dict(self._inputs or {})

    @property
    def usage_metrics(self) -> UsageMetrics | None:
        """What this crew's run spent on LLM calls, under CrewAI's names (None before a kickoff); a resumed run
        counts its own calls, not those of the tasks it took over."""
        # lazy: the usage ledger's names load with the first run, not with the API
        from crewpoint.usage import UsageMetrics

        return UsageMetrics.of(self._runtime.usage.rows()) if self._runtime is not None else None

    # -- running ------------------------------------------------------------------------------------------
    def kickoff(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        from_checkpoint: CheckpointConfig | str | Path | None = None,
        feedback: str | None = None,
        budget: Budget | None = None,
    ) -> CrewOutput | FeedbackPending:
        """Run the crew. With ``from_checkpoint`` the crew saved there runs instead, from where it stopped; with
        ``feedback`` too, that is the answer to the review the checkpoint waits on ("" accepts). Returns a
        :class:`FeedbackPending` when the run waits for a person; raises :class:`BudgetExceeded` when it stops at
        its ``budget`` (given here, it replaces ``self.budget``)."""
        if budget is not None:
            self.budget = budget
        if from_checkpoint is not None and feedback is not None:
            # lazy: crewpoint.feedback's answering reads stores and the runtime
            from crewpoint.feedback import answer

            return answer(from_checkpoint, feedback=feedback, outcome=None, app=self)  # type: ignore[no-any-return]
        if from_checkpoint is not None:
            self._bind_checkpoint(from_checkpoint)
            return self.kickoff(inputs)
        from crewpoint.events import (
            CrewKickoffCompletedEvent,
            CrewKickoffFailedEvent,
            CrewKickoffStartedEvent,
            event_bus,
        )
        from crewpoint.feedback import FeedbackWait
        from crewpoint.runtime import RuntimeState, current_state, running

        if self._hooks is not None:
            inputs = self._hooks.run_before(self.inputs, inputs)
        if self._finished:
            self._start_over(inputs)
        if inputs is not None and self._inputs is not None:
            self._set_inputs(inputs)  # a kickoff takes any inputs, as CrewAI's does
        elif inputs is not None or self._inputs is None:
            self._inputs = dict(inputs or {})
        run_inputs = dict(self._inputs or {})
        for task in self.tasks:
            task.interpolate_inputs(run_inputs)
        for agent in self.agents:
            agent.interpolate_inputs(run_inputs)
        if self._runtime is None:
            parent = current_state()
            config = resolve(self.checkpoint, parent.config if parent is not None else None)
            self._runtime = RuntimeState(self, config, run_inputs)
        state = self._runtime
        state.inputs = run_inputs
        with running(state):
            event_bus.emit(self, CrewKickoffStartedEvent(crew_name=self.name, crew_id=self.id, inputs=run_inputs))
            try:
                for index, task in enumerate(self.tasks):
                    if task.output is None:
                        self._run_task(index)
            except FeedbackWait as wait:
                return wait.pending
            except BudgetExceeded:
                raise  # stopped before a call, its checkpoint written: not a failure
            except Exception as exc:
                event_bus.emit(self, CrewKickoffFailedEvent(crew_name=self.name, crew_id=self.id, error=str(exc)))
                raise
            outputs = [t.output for t in self.tasks if t.output is not None]
            result = CrewOutput(raw=outputs[-1].raw if outputs else "", tasks_output=outputs)
            event_bus.emit(self, CrewKickoffCompletedEvent(crew_name=self.name, crew_id=self.id, output=result.raw))
        self._finished = True
        return self._hooks.run_after(result) if self._hooks is not None else result

    def _start_over(self, inputs: Mapping[str, Any] | None) -> None:
        """Forget the finished run: every task runs again, in a new run with its own lineage. Inputs given to
        this kickoff replace the last run's; with none, the last run's are used again."""
        for task in self.tasks:
            task.output = None
        if inputs is not None:
            self._inputs = None
        self._runtime = None
        self._pending, self._answer, self._answered = None, None, []
        self._finished = False

    akickoff = in_thread(kickoff)  # type: ignore[pydantic-field]  # a method, not a field

    def _run_task(self, index: int) -> None:
        # lazy: the fingerprint is made when a task runs
        from crewpoint.checkpoint.crew_changes import task_fingerprint
        from crewpoint.events import TaskCompletedEvent, TaskFailedEvent, TaskStartedEvent, event_bus
        from crewpoint.feedback import FeedbackWait

        task = self.tasks[index]
        agent = task.agent
        assert agent is not None
        event_bus.emit(
            self,
            TaskStartedEvent(
                task_name=task.label, description=task.prompt_description, task_id=task.id, crew_id=self.id
            ),
        )
        try:
            context = "\n\n".join(
                f"[{t.label}]\n{t.output.raw}" for t in self.context_tasks(index) if t.output is not None
            )
            extra: list[str] = []
            if self.memory:
                extra.append(self._memory.retrieve_for(task.prompt_description))
            knowledge = self.knowledge()
            if knowledge is not None:
                found = knowledge.query(task.prompt_description, agent_id=agent.id, task_id=task.id)
                if found:
                    extra.append("Crew knowledge:\n" + "\n".join(f"- {k}" for k in found))
            pending = self._pending if task.human_input else None
            if pending is not None and pending.get("task_index") == index:  # the answer under review: kept
                output = self._output(task, agent, str(pending.get("output") or ""))
            else:
                output = self._attempt(task, agent, context, extra)
            if task.human_input:
                output.raw = self._reviewed(index, output.raw, context, extra)
            task._fingerprint = task_fingerprint(self, index)  # what decided this output, for a later resume
            task.output = output
            task.write_output_file()
            if self.memory:
                self._memory.save(output.raw, {"task": task.id})
            for callback in (task.callback, self.task_callback):
                if callback is not None:
                    callback(output)
        except (FeedbackWait, BudgetExceeded):
            raise
        except Exception as exc:
            event_bus.emit(
                self, TaskFailedEvent(task_name=task.label, task_id=task.id, crew_id=self.id, error=str(exc))
            )
            raise
        event_bus.emit(
            self,
            TaskCompletedEvent(
                task_name=task.label, task_id=task.id, crew_id=self.id, agent_id=agent.id, output=output.raw
            ),
        )

    def _reviewed(self, index: int, raw: str, context: str, extra: list[str]) -> str:
        """``human_input``: a person reviews the answer; the agent revises it with their feedback until accepted."""
        # lazy: the review loop loads with the first human_input task
        from crewpoint.feedback_task import review_task, revision_prompt

        task = self.tasks[index]
        agent = task.agent
        assert agent is not None

        def revise(previous: str, feedback: str) -> str:
            return self._attempt(task, agent, context, [*extra, revision_prompt(previous, feedback)]).raw

        return review_task(self, index, task, raw, revise)

    def pending_request(self) -> dict[str, Any] | None:
        """The review the run waits on, or None."""
        return self._pending

    def accept_answer(self, answer: Answer) -> None:
        """The answer to the pending review: the resumed run takes it instead of asking."""
        self._answer = answer

    def _take_answer(self) -> Answer | None:
        answer, self._answer = self._answer, None
        return answer

    def _set_pending(self, request: dict[str, Any] | None, answered: dict[str, Any] | None = None) -> None:
        self._pending = request
        if answered is not None:
            self._answered.append(answered)

    @staticmethod
    def _output(task: Task, agent: Agent, raw: str) -> TaskOutput:
        return TaskOutput(
            description=task.prompt_description,
            raw=raw,
            expected_output=task.prompt_expected_output,
            name=task.name,
            agent=agent.role,
        )

    def _attempt(self, task: Task, agent: Agent, context: str, extra: list[str]) -> TaskOutput:
        feedback: list[str] = []
        for _ in range(task.guardrail_max_retries + 1):
            output = self._output(task, agent, agent.execute_task(task, context, [*extra, *feedback]))
            ok, value = task.check_guardrail(output, agent)
            if ok:
                if isinstance(value, TaskOutput):
                    return value
                if value is not None and not isinstance(value, bool):
                    output.raw = str(value)
                return output
            feedback = [f"Your previous answer did not pass review: {value}. Answer again."]
        raise ValueError(f"task {task.label!r} failed its guardrail {task.guardrail_max_retries + 1} times: {value}")

    def knowledge(self) -> Knowledge | None:
        if self._knowledge is None and self.knowledge_sources:
            self._knowledge = Knowledge(sources=list(self.knowledge_sources))
        return self._knowledge

    # -- checkpoint entity protocol (crewpoint.entities.Entity) --------------------------------------------
    @property
    def entity_name(self) -> str:
        return self.name

    def progress(self) -> tuple[int, int]:
        return sum(1 for t in self.tasks if t.output is not None), len(self.tasks)

    def checkpoint_config_for(self, event: BaseEvent) -> CheckpointConfig | None:
        """Task → Agent → Crew: the nearest explicit setting wins; ``False`` opts out."""
        base = super().checkpoint_config_for(event)
        task = next((t for t in self.tasks if t.id == event.task_id), None) if event.task_id else None
        agent: Agent | None = task.agent if task is not None else None
        if agent is None and event.agent_id:
            agent = next((a for a in self.agents if a.id == event.agent_id), None)
        return resolve(
            task.checkpoint if task is not None else None,
            agent.checkpoint if agent is not None else None,
            base,
        )

    def to_state(self) -> dict[str, Any]:
        from crewpoint.serialize import callable_path

        return {
            "kind": self.KIND,
            "id": self.id,
            "name": self.name,
            "process": self.process,
            "memory": self.memory,
            "agents": [a.to_state() for a in self.agents],
            "tasks": [t.to_state() for t in self.tasks],
            "crew_memory": self._memory.to_state(),
            "knowledge_sources": [s.to_state() for s in self.knowledge_sources],
            "task_callback": callable_path(self.task_callback) if self.task_callback else None,
            "task_callback_unsaved": self.task_callback is not None and callable_path(self.task_callback) is None,
            "checkpoint": _config_state(self.checkpoint),
            **({"kickoff_hooks": self._hooks.state()} if self._hooks is not None else {}),
            "pending_feedback": self._pending,
            "human_feedback": list(self._answered),
            **budget_state(self.budget),
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Crew:
        """Rebuild a crew from its checked state (``load_body``'s, every field there), code under the trust rule of
        :mod:`crewpoint.serialize`."""

        from crewpoint.serialize import load_callable

        agents = [Agent.from_state(a) for a in data["agents"]]
        by_id = {a.id: a for a in agents}
        tasks = [Task.from_state(t, by_id) for t in data["tasks"]]
        tasks_by_id = {t.id: t for t in tasks}
        for task, saved in zip(tasks, data["tasks"], strict=True):
            if saved["context"] is not None:
                task.context = [tasks_by_id[c] for c in saved["context"]]
        callback = data["task_callback"]
        if data["task_callback_unsaved"]:
            _warn_not_saved("the crew's task_callback")
        if data["kickoff_hooks"]:
            # lazy: crewpoint.project is read only for a project crew's checkpoint
            from crewpoint.project import warn_hooks_not_run

            warn_hooks_not_run(data["kickoff_hooks"])
        crew = cls.model_construct(
            agents=agents,
            tasks=tasks,
            process=data["process"],
            name=data["name"],
            memory=data["memory"],
            knowledge_sources=[knowledge_source_from_state(s) for s in data["knowledge_sources"]],
            task_callback=load_callable(callback, "crew task_callback") if callback else None,
            checkpoint=_config_from_state(data["checkpoint"]),
            verbose=False,
            id=data["id"],
            budget=budget_from_state(data),
        )
        if data["crew_memory"] is not None:
            crew._memory = CrewMemory.from_state(data["crew_memory"])
        crew._take_review_state(data)
        crew._saved_tasks = list(data["tasks"])  # rebuilt from the checkpoint alone: nothing to compare
        return crew

    def _take_review_state(self, data: Mapping[str, Any]) -> None:
        pending = data["pending_feedback"]
        self._pending = dict(pending) if pending is not None else None
        self._answered = [dict(a) for a in data["human_feedback"]]
        self._answer = None

    def _matched_agents(self, saved: list[Mapping[str, Any]]) -> tuple[list[int | None], str | None]:
        """For each of this crew's agents, the index of its saved agent (by role, in order), or None: a saved agent
        the program no longer has keeps its conversation in the checkpoint (its tasks' verdicts say what runs)."""
        free: dict[str, list[int]] = {}
        for i, saved_agent in enumerate(saved):
            free.setdefault(str(saved_agent.get("role", "")), []).append(i)
        order: list[int | None] = []
        for agent in self.agents:
            slots = free.get(agent.role)
            order.append(slots.pop(0) if slots else None)
        return order, None

    def shape_mismatch(self, data: Mapping[str, Any]) -> str | None:
        """Why the saved crew ``data`` cannot go on as this crew: never, since tasks are matched by identity (one
        verdict each, :attr:`change_plan`); a blocked plan is refused by :meth:`bind_state`."""
        return None

    @property
    def change_plan(self) -> ChangePlan | None:
        """What this crew keeps and runs of the checkpoint bound to it (None: no checkpoint bound)."""
        return self._plan

    def choose(self, keep: Collection[str] = (), rerun: Collection[str] = ()) -> ChangePlan | None:
        """Use the saved output of the ``keep`` tasks even though they changed, and run the ``rerun`` tasks again
        (names or numbers from 1); the plan is made again and the tasks bound by it. A bad name: ValueError."""
        self._choices = (tuple(keep), tuple(rerun))  # a later bind of the same checkpoint (an answer) keeps them
        if self._saved_tasks is not None:
            self._bind_tasks(self._saved_tasks, keep, rerun, compare=self._compared)
            if keep or rerun:
                self._rebuild_memory()
        return self._plan

    def _bind_tasks(
        self, saved: list[Mapping[str, Any]], keep: Collection[str], rerun: Collection[str], *, compare: bool
    ) -> None:
        # lazy: the matching loads with the first resume
        from crewpoint.checkpoint.crew_changes import crew_change_plan

        plan, order = crew_change_plan(saved, self, keep, rerun, compare=compare)
        for task, j in zip(self.tasks, order, strict=True):
            if j is not None:
                task.bind_state(saved[j])
            else:
                task.output = None
        for verdict in plan.verdicts:
            if verdict.index is not None and verdict.runs:
                self.tasks[verdict.index].output = None
        self._plan, self._saved_tasks, self._compared = plan, saved, compare
        dropped = [v.saved for v in plan.verdicts if v.saved is not None and (v.runs or v.index is None)]
        if any(saved[j]["output"] is not None for j in dropped):  # a saved output not used: the memory forgets it
            self._rebuild_memory()

    def bind_state(self, data: Mapping[str, Any]) -> None:
        """Apply a checkpoint's checked state to this crew: task outputs, ids, conversations and crew memory.

        The crew keeps its own code and reach: LLMs, tools, callbacks, guardrails and knowledge. Tasks are
        matched by identity (name, else fingerprint, else place): a changed or new task runs, with what reads it,
        and a saved output only ever lands on its own task (:attr:`change_plan` says each verdict); agents by role.
        """
        saved_agents = list(data["agents"])
        agent_order, _ = self._matched_agents(saved_agents)
        self.id = str(data["id"])
        if data["crew_memory"] is not None:
            self._memory = CrewMemory.from_state(data["crew_memory"])
        self._bind_tasks(list(data["tasks"]), *self._choices, compare=True)
        for agent, k in zip(self.agents, agent_order, strict=True):
            if k is not None:
                agent.bind_state(saved_agents[k])
        self._take_review_state(data)
        under_review = self._pending.get("task_index") if self._pending is not None else None
        if self._pending is not None and isinstance(under_review, int) and self._plan is not None:
            place = {v.saved: v.index for v in self._plan.verdicts if v.saved is not None}
            self._pending["task_index"] = place.get(under_review)  # where the task is now (None: dropped)
        if self.budget is None:  # the program's own budget, else the one the run had
            self.budget = budget_from_state(data)
        self._runtime = None
        self._finished = False  # restored: the next kickoff resumes and skips finished tasks

    def attach_runtime(self, runtime: RuntimeState, inputs: dict[str, Any]) -> None:
        self._runtime, self._inputs, self._finished = runtime, inputs, False

    # -- resuming and forking: the interface Crew, Flow and Agent share ----------------------------------
    @classmethod
    def check_edits(
        cls, data: Mapping[str, Any], inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
    ) -> None:
        """Refuse edits the saved crew ``data`` cannot take: a task that does not exist or has not run."""
        saved = list(data.get("tasks") or [])
        for index in outputs or {}:
            if not 0 <= index < len(saved):
                raise ValueError(f"task {index + 1} does not exist: the crew has tasks 1 to {len(saved)}")
            if saved[index].get("output") is None:
                label = saved[index].get("name") or clip(saved[index].get("description", ""), 48)
                raise ValueError(
                    f"task {index + 1} ({label}) has not run at this checkpoint: only finished tasks' outputs "
                    "can be edited"
                )

    def apply_edits(self, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None) -> None:
        """Change inputs and replace finished outputs; exactly the tasks that depend on them are reset."""
        if inputs:
            self.set_inputs(dict(inputs))
        for index, text in sorted((outputs or {}).items()):
            self.override_output(index, text)

    def rerun(self) -> list[int]:
        """Indexes of the tasks the next kickoff runs."""
        return [i for i, task in enumerate(self.tasks) if task.output is None]

    def resume(self) -> CrewOutput | FeedbackPending:
        return self.kickoff()

    @classmethod
    def planning_copy(cls, data: Mapping[str, Any], inputs: Mapping[str, Any]) -> Crew:
        """The saved crew without any code (LLMs, tools, callbacks, knowledge): enough to plan, never to run."""
        import copy

        plain: dict[str, Any] = copy.deepcopy(dict(data))
        plain.update(task_callback=None, task_callback_unsaved=False, knowledge_sources=[], checkpoint=None)
        plain["kickoff_hooks"] = None
        for agent in plain["agents"]:
            agent.update(llm=None, tools=[], knowledge_sources=[], checkpoint=None, step_callback=None)
            agent["step_callback_unsaved"] = False
        for task in plain["tasks"]:
            task.update(callback=None, callback_unsaved=False, guardrail=None, checkpoint=None)
        crew = cls.from_state(plain)
        crew._inputs = dict(inputs)
        return crew


_: type[Entity] = Crew  # mypy checks the class against everything the protocol declares
