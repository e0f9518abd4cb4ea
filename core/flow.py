"""``Flow``: methods wired by ``@start``, ``@listen`` and ``@router``, with a dict or pydantic state.

A flow is checkpointed like a crew; on resume, methods that already ran are not run again: their saved
outputs are passed on to the listeners, so the flow continues where it stopped.
"""

from __future__ import annotations

import inspect
import sys
import typing
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from pydantic import BaseModel

from crewpoint.budget import Budget, BudgetExceeded, budget_from_state, budget_state
from crewpoint.checkpoint.config import CheckpointConfig, resolve
from crewpoint.checkpoint.flow_changes import (
    flow_change_plan,
    flow_fingerprints,
    plan_lines,
    rerun_set,
    state_keys_written,
)
from crewpoint.entities import CheckpointedEntity, Entity, in_thread
from crewpoint.flow_review import FeedbackSpec, HumanFeedbackResult, ask, review, spec_of
from crewpoint.flow_review import human_feedback as human_feedback
from crewpoint.flow_review import text_of as _text
from crewpoint.text import a_or_an

if TYPE_CHECKING:
    from crewpoint.feedback import Answer
    from crewpoint.runtime import RuntimeState

StateT = TypeVar("StateT", bound=dict[str, Any] | BaseModel)
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Condition:
    """Which finished methods or router labels wake a listener: ``mode`` "or" (any) or "and" (all)."""

    names: tuple[str, ...]
    mode: str = "or"


def _names(*conditions: Any) -> tuple[str, ...]:
    out: list[str] = []
    for c in conditions:
        if isinstance(c, Condition):
            out.extend(c.names)
        elif isinstance(c, str):
            out.append(c)
        elif callable(c):
            out.append(c.__name__)
        else:
            raise TypeError(f"cannot listen to {c!r}: pass a method, a method name or a router label")
    return tuple(out)


def or_(*conditions: Any) -> Condition:
    return Condition(_names(*conditions), "or")


def and_(*conditions: Any) -> Condition:
    return Condition(_names(*conditions), "and")


def _as_condition(condition: Any) -> Condition:
    return condition if isinstance(condition, Condition) else Condition(_names(condition))


def start(condition: Any = None) -> Callable[[F], F]:
    """Mark a method as an entry point (optionally also woken by ``condition``)."""

    def decorator(fn: F) -> F:
        fn.__crewpoint_start__ = True  # type: ignore[attr-defined]
        if condition is not None:
            fn.__crewpoint_listen__ = _as_condition(condition)  # type: ignore[attr-defined]
        return fn

    return decorator


def listen(condition: Any) -> Callable[[F], F]:
    """Run the method after ``condition``: a method, its name, a router label, ``or_()`` or ``and_()``."""

    def decorator(fn: F) -> F:
        fn.__crewpoint_listen__ = _as_condition(condition)  # type: ignore[attr-defined]
        return fn

    return decorator


def router(condition: Any) -> Callable[[F], F]:
    """Like ``listen``, and the method's return value is a label that ``@listen("label")`` methods follow."""

    def decorator(fn: F) -> F:
        fn.__crewpoint_listen__ = _as_condition(condition)  # type: ignore[attr-defined]
        fn.__crewpoint_router__ = True  # type: ignore[attr-defined]
        return fn

    return decorator


def to_jsonable(value: Any) -> Any:
    """A JSON-ready form of a method output (pydantic models dumped, crew outputs as their text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, BaseModel):
        raw = getattr(value, "raw", None)
        return raw if isinstance(raw, str) else value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [to_jsonable(v) for v in value]
    return str(value)


class Flow(CheckpointedEntity, Generic[StateT]):
    """Subclass, decorate methods, ``kickoff()``. The state is a dict unless ``initial_state`` (or the
    generic parameter, ``Flow[MyState]``) names a pydantic model."""

    KIND: ClassVar[str] = "flow"
    SAYS_CHANGES: ClassVar[bool] = True
    """A flow says what changed since its checkpoint when its resumed run starts (a script resuming its own
    edited flow hears it too), so a command that runs it says nothing more."""
    initial_state: Any = None
    name: str | None = None
    budget: Budget | None = None
    """What a run may spend (:mod:`crewpoint.budget`): a class attribute, or ``Flow(budget=...)``."""

    _starts: tuple[str, ...] = ()
    _listeners: tuple[tuple[str, Condition], ...] = ()
    _routers: frozenset[str] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        starts: list[str] = []
        listeners: list[tuple[str, Condition]] = []
        routers: set[str] = set()
        seen: set[str] = set()
        for klass in reversed(cls.__mro__):
            for attr, fn in vars(klass).items():
                if not callable(fn) or (attr in seen and not hasattr(fn, "__crewpoint_listen__")):
                    continue
                if getattr(fn, "__crewpoint_start__", False) and attr not in starts:
                    starts.append(attr)
                cond = getattr(fn, "__crewpoint_listen__", None)
                if cond is not None:
                    listeners = [(n, c) for n, c in listeners if n != attr]
                    listeners.append((attr, cond))
                if getattr(fn, "__crewpoint_router__", False):
                    routers.add(attr)
                seen.add(attr)
        cls._starts = tuple(starts)
        cls._listeners = tuple(listeners)
        cls._routers = frozenset(routers)

    def __init__(
        self, checkpoint: CheckpointConfig | bool | None = None, *, budget: Budget | None = None, **state: Any
    ) -> None:
        from crewpoint.events import FlowCreatedEvent, event_bus

        problem = _self_trigger(type(self))
        if problem is not None:
            raise ValueError(problem)
        self.checkpoint = checkpoint
        if budget is not None:
            self.budget = budget
        self.id = uuid.uuid4().hex[:16]
        self._state: Any = self._initial_state()
        if state:
            self._apply(state)
        self._log: list[tuple[str, Any]] = []
        self._replay: list[tuple[str, Any]] = []
        self._result: Any = None
        self._finished = False
        self._inputs: dict[str, Any] | None = None
        self._runtime: RuntimeState | None = None
        self._finished_events: dict[str, str] = {}
        self._edited_inputs: dict[str, Any] | None = None
        self._pending: dict[str, Any] | None = None
        """The request a person has not answered yet (the run waits on it)."""
        self._feedback: dict[int, HumanFeedbackResult] = {}
        """Each answered review, by the position of its method's output in the run."""
        self._answer: Answer | None = None
        self._given: dict[str, str | None] = {}
        """What :meth:`ask` was answered, by ``<method position>:<ask number>``."""
        self._asking: tuple[int, int, str] | None = None
        """While a method runs: its position in the run, how many times it has asked, its name."""
        self._rerun: frozenset[str] | None = None
        """On a resume after the program changed: the completed methods that run again (the others' saved outputs
        are taken by name); None: the saved outputs are replayed in their order."""
        self._taken: set[int] = set()
        self._saved_reviews: dict[int, HumanFeedbackResult] = {}
        self._pending_at: int | None = None
        self._to_say: list[str] = []
        """What changed since the checkpoint bound to this flow, said once on stderr when the resumed run starts."""
        self._writers: dict[str, list[str]] = {}
        """The state keys each method set, by method, for a plan to name when that method is dropped."""
        self._ran_here = False
        """This object's own kickoff ran to the end: the next kickoff is a new run (as in CrewAI), unless the
        flow was restored from a checkpoint since."""
        event_bus.emit(self, FlowCreatedEvent(flow_name=self.entity_name, flow_id=self.id))

    # -- state ----------------------------------------------------------------------------------------
    def _state_class(self) -> type[BaseModel] | None:
        init = type(self).initial_state
        if isinstance(init, type) and issubclass(init, BaseModel):
            return init
        if isinstance(init, BaseModel):
            return type(init)
        for base in getattr(type(self), "__orig_bases__", ()):
            if typing.get_origin(base) is Flow:
                (arg,) = typing.get_args(base)
                if isinstance(arg, type) and issubclass(arg, BaseModel):
                    return arg
        return None

    def _initial_state(self) -> Any:
        init = type(self).initial_state
        if isinstance(init, BaseModel):
            return init.model_copy(deep=True)
        if isinstance(init, Mapping):
            return dict(init)
        cls = self._state_class()
        return cls() if cls is not None else {}

    @property
    def state(self) -> StateT:
        return typing.cast(StateT, self._state)

    def _apply(self, values: Mapping[str, Any]) -> None:
        if isinstance(self._state, BaseModel):
            data = {**self._state.model_dump(), **values}
            self._state = type(self._state).model_validate(data)
        else:
            self._state.update(values)

    def _state_dump(self) -> Any:
        if isinstance(self._state, BaseModel):
            return self._state.model_dump(mode="json")
        return to_jsonable(self._state)

    @property
    def human_feedback(self) -> HumanFeedbackResult | None:
        """The newest answered review of a ``@human_feedback`` method (None before any)."""
        return self._feedback[max(self._feedback)] if self._feedback else None

    @property
    def human_feedback_history(self) -> list[HumanFeedbackResult]:
        """Every answered review of this run, oldest first."""
        return [self._feedback[i] for i in sorted(self._feedback)]

    def pending_request(self) -> dict[str, Any] | None:
        """The request the run waits on (see :mod:`crewpoint.feedback`), or None."""
        return self._pending

    def accept_answer(self, answer: Answer) -> None:
        """The answer to the pending request: the resumed run takes it instead of asking."""
        self._answer = answer

    @property
    def method_outputs(self) -> list[tuple[str, Any]]:
        """``(method, output)`` for each method run so far, in order."""
        return list(self._log)

    # -- running ----------------------------------------------------------------------------------------
    def kickoff(
        self,
        inputs: Mapping[str, Any] | None = None,
        *,
        from_checkpoint: CheckpointConfig | str | Path | None = None,
        feedback: str | None = None,
        outcome: str | None = None,
        budget: Budget | None = None,
    ) -> Any:
        """Run the flow; returns the last method's output, or a :class:`FeedbackPending` when the run waits for a
        person. ``feedback``/``outcome`` with ``from_checkpoint`` answer the request that checkpoint waits on.
        Raises :class:`BudgetExceeded` when the run stops at its ``budget`` (given here, it replaces self.budget)."""
        if budget is not None:
            self.budget = budget
        if from_checkpoint is not None and (feedback is not None or outcome is not None):
            # lazy: crewpoint.feedback's answering reads stores and the runtime
            from crewpoint.feedback import answer

            return answer(from_checkpoint, feedback=feedback, outcome=outcome, app=self)
        if from_checkpoint is not None:
            self._bind_checkpoint(from_checkpoint)
            return self.kickoff(inputs)
        from crewpoint.events import FlowFinishedEvent, FlowStartedEvent, event_bus
        from crewpoint.feedback import FeedbackWait
        from crewpoint.runtime import RuntimeState, current_state, running

        if self._ran_here:
            self._log, self._replay, self._result, self._finished = [], [], None, False
            self._runtime, self._ran_here = None, False
            self._pending, self._feedback, self._answer, self._given = None, {}, None, {}
            self._rerun, self._writers = None, {}
        if self._finished and inputs is None and self._replay == self._log:
            return self._result
        for line in self._to_say:
            print(line, file=sys.stderr)
        self._to_say = []
        if inputs:
            self._apply(inputs)
            self._inputs = {**(self._inputs or {}), **inputs}
        if self._runtime is None:
            parent = current_state()
            config = resolve(self.checkpoint, parent.config if parent is not None else None)
            self._runtime = RuntimeState(self, config, self._inputs)
        self._runtime.inputs = dict(self._inputs or {})
        self._replay, self._log, self._taken = list(self._log), [], set()
        if self._rerun is not None:  # after a change, a kept review follows its method to its place in this run
            self._saved_reviews, self._feedback = self._feedback, {}
            self._pending_at = self._pending.get("index") if self._pending is not None else None
        self._finished = False
        with running(self._runtime):
            event_bus.emit(self, FlowStartedEvent(flow_name=self.entity_name, flow_id=self.id, inputs=self._inputs))
            try:
                result = self._walk()
            except FeedbackWait as wait:
                return wait.pending
            self._result, self._finished = result, True
            event_bus.emit(self, FlowFinishedEvent(flow_name=self.entity_name, flow_id=self.id, result=_text(result)))
        self._ran_here = True
        return result

    akickoff = kickoff_async = in_thread(kickoff)

    def _walk(self) -> Any:
        queue: list[tuple[str, Any, bool, str | None]] = [(name, None, False, None) for name in self._starts]
        fired: set[str] = set()
        last: Any = None
        while queue:
            name, arg, has_arg, trigger = queue.pop(0)
            output = self._call(name, arg, has_arg, trigger)
            last = output
            fired.add(name)
            triggers = [name]
            label = output if name in self._routers and isinstance(output, str) else None
            if isinstance(output, HumanFeedbackResult) and output.outcome is not None:
                label = output.outcome  # a reviewed method with ``emit`` routes like a router
            if label is not None:
                if label in self._condition_of(name).names:  # a label made at run time the build could not see
                    raise ValueError(_loops(type(self), name, label))
                triggers.append(label)
                fired.add(label)
            for listener, cond in self._listeners:
                if not any(t in cond.names for t in triggers):
                    continue
                if cond.mode == "and" and not all(n in fired for n in cond.names):
                    continue
                queue.append((listener, output, True, self._finished_events.get(name)))
        return last

    def _condition_of(self, name: str) -> Condition:
        return next((cond for listener, cond in self._listeners if listener == name), Condition(()))

    def _call(self, name: str, arg: Any, has_arg: bool, trigger: str | None = None) -> Any:
        import asyncio

        from crewpoint.events import (
            MethodExecutionFailedEvent,
            MethodExecutionFinishedEvent,
            MethodExecutionStartedEvent,
            event_bus,
        )
        from crewpoint.feedback import FeedbackWait

        index = len(self._log)
        saved = self._saved_place(name, index)
        if saved is not None:
            output = self._replay[saved][1]
            self._log.append((name, output))
            if self._rerun is not None:
                self._carry_review(saved, index)
            spec = spec_of(getattr(type(self), name, None))
            return output if spec is None else self._review(name, index, output, spec)
        if self._rerun is None:
            self._replay = self._replay[:index]
        method = getattr(self, name)
        before = self._state_dump()
        event_bus.emit(
            self,
            MethodExecutionStartedEvent(
                flow_name=self.entity_name, flow_id=self.id, method_name=name, triggered_by_event_id=trigger
            ),
        )
        try:
            params = [
                p
                for p in inspect.signature(method).parameters.values()
                if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            ]
            args = (arg,) if has_arg and params else ()
            self._asking = (index, 0, name)
            try:
                output = method(*args)
                if inspect.isawaitable(output):
                    output = asyncio.run(_await(output))
            finally:
                self._asking = None
        except (FeedbackWait, BudgetExceeded):
            raise  # the method asked and the run waits, or it stopped at its budget: on resume it runs again
        except Exception as exc:
            event_bus.emit(
                self,
                MethodExecutionFailedEvent(
                    flow_name=self.entity_name, flow_id=self.id, method_name=name, error=str(exc)
                ),
            )
            raise
        self._log.append((name, to_jsonable(output)))
        self._writers[name] = state_keys_written(before, self._state_dump())
        finished = event_bus.emit(
            self,
            MethodExecutionFinishedEvent(
                flow_name=self.entity_name, flow_id=self.id, method_name=name, result=_text(output)
            ),
        )
        self._finished_events[name] = finished.event_id
        spec = spec_of(method)
        return output if spec is None else self._review(name, index, output, spec)

    def _saved_place(self, name: str, index: int) -> int | None:
        """Where the saved output this call of ``name`` takes is in the replay, or None when the method runs: the
        same place when nothing changed; after a change, the method's next saved output unless it runs again."""
        if self._rerun is None:
            return index if index < len(self._replay) and self._replay[index][0] == name else None
        if name in self._rerun:
            return None
        place = next((i for i, (n, _) in enumerate(self._replay) if n == name and i not in self._taken), None)
        if place is not None:
            self._taken.add(place)
        return place

    def _carry_review(self, saved: int, index: int) -> None:
        """The review (answered, or the request the run waits on) of the saved output at ``saved``, moved to the
        place ``index`` that output takes in this run."""
        if saved in self._saved_reviews:
            self._feedback[index] = self._saved_reviews[saved]
        if self._pending is not None and self._pending_at == saved:
            self._pending, self._pending_at = {**self._pending, "index": index}, None

    def ask(self, prompt: str, timeout: float | None = None) -> str | None:
        """Ask a person for a value from inside a flow method: at this terminal, or the run waits for it (the
        method runs again when the run is resumed with the answer, and this call returns it). ``None``: the
        request's ``timeout`` (seconds) passed before an answer."""
        return ask(self, prompt, timeout)

    def _review(self, name: str, index: int, output: Any, spec: FeedbackSpec) -> HumanFeedbackResult:
        return review(self, name, index, output, spec)

    # -- checkpoint entity protocol (crewpoint.entities.Entity) --------------------------------------------
    @property
    def entity_name(self) -> str:
        return self.name or type(self).__name__

    def progress(self) -> tuple[int, int]:
        methods = set(self._starts) | {n for n, _ in self._listeners}
        return min(len({n for n, _ in self._log}), len(methods)), len(methods)

    def to_state(self) -> dict[str, Any]:
        from crewpoint.agent import _config_state
        from crewpoint.serialize import class_path

        cls = self._state_class()
        return {
            "kind": self.KIND,
            "id": self.id,
            "name": self.entity_name,
            "class": class_path(type(self)),
            "state_class": class_path(cls) if cls is not None else None,
            "state": self._state_dump(),
            "method_outputs": [[n, o] for n, o in self._log],
            "finished": self._finished,
            "result": to_jsonable(self._result),
            "checkpoint": _config_state(self.checkpoint),
            "pending_feedback": self._pending,
            "flow_inputs": dict(self._given),
            "method_fingerprints": flow_fingerprints(type(self)),
            "state_writers": dict(self._writers),
            "human_feedback": [
                {**r.to_state(), "output": to_jsonable(r.output), "index": i} for i, r in sorted(self._feedback.items())
            ],
            **budget_state(self.budget),
        }

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Self:
        from crewpoint.agent import _config_from_state
        from crewpoint.events import event_bus

        with event_bus.scoped_handlers():
            flow = cls.__new__(cls)
            Flow.__init__(flow, checkpoint=_config_from_state(data["checkpoint"]))
        if flow.budget is None:  # the class's own budget, else the one the run had
            flow.budget = budget_from_state(data)
        flow._apply_run_state(data)
        return flow

    def _apply_run_state(self, data: Mapping[str, Any]) -> None:
        self.id = str(data["id"])
        saved = data["state"] or {}
        state_cls = self._state_class()
        self._state = state_cls.model_validate(saved) if state_cls is not None else dict(saved)
        self._log = [(n, o) for n, o in data["method_outputs"]]
        self._replay = list(self._log)
        self._finished = data["finished"]
        self._result = data["result"]
        pending = data["pending_feedback"]
        self._pending = dict(pending) if pending is not None else None
        self._feedback = {
            r["index"]: HumanFeedbackResult.from_state(r) for r in data["human_feedback"] if type(r.get("index")) is int
        }
        self._answer = None
        self._given = dict(data["flow_inputs"])
        self._writers = {str(n): list(keys) for n, keys in data["state_writers"].items()}
        self._rerun = None
        self._ran_here = False

    def shape_mismatch(self, data: Mapping[str, Any]) -> str | None:
        """Why the saved flow ``data`` is not one of this flow's class, or None when it is."""
        saved = str(data.get("class", ""))
        mine = type(self).__qualname__
        if saved.rpartition(".")[2] != mine:
            return f"the checkpoint holds a flow of class {saved or '?'}; this flow is {a_or_an(mine)}"
        return None

    def bind_state(self, data: Mapping[str, Any]) -> None:
        """Take the saved flow's id, state and method outputs; keep this flow's methods and settings."""
        problem = self.shape_mismatch(data)
        if problem is not None:
            from crewpoint.providers.base import CheckpointError

            raise CheckpointError(f"cannot resume this flow from the checkpoint: {problem}")
        self._apply_run_state(data)
        self._runtime = None
        plan = flow_change_plan(data, self)
        self._rerun = rerun_set(plan)
        if self._rerun is not None:
            self._finished = False  # a finished run whose methods changed goes on with what runs again
        self._to_say = plan_lines(self.entity_name, plan)

    def attach_runtime(self, runtime: RuntimeState, inputs: dict[str, Any]) -> None:
        self._runtime, self._inputs, self._ran_here = runtime, inputs, False

    # -- resuming and forking: the interface Crew, Flow and Agent share ----------------------------------
    @classmethod
    def check_edits(
        cls, data: Mapping[str, Any], inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
    ) -> None:
        if outputs:
            raise ValueError("task outputs can be edited in crew checkpoints only; this one holds a flow")

    def apply_edits(self, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None) -> None:
        """Inputs are applied to the state when the resumed run starts."""
        self._edited_inputs = dict(inputs) if inputs else None

    def rerun(self) -> list[int]:
        return []

    def resume(self) -> Any:
        return self.kickoff(self._edited_inputs)

    @classmethod
    def planning_copy(cls, data: Mapping[str, Any], inputs: Mapping[str, Any]) -> None:
        return None


_: type[Entity] = Flow  # mypy checks the class against everything the protocol declares


def _loops(cls: type[Any], method: str, label: str) -> str:
    what = "listens to itself" if label == method else f"listens to {label!r}, a label it returns itself,"
    return (
        f"flow {cls.__name__}: method {method!r} {what} and would run forever; "
        "let another method take that label, or loop with a counter in the state"
    )


_checked: dict[type[Any], str | None] = {}


def _self_trigger(cls: type[Any]) -> str | None:
    """Why the flow class ``cls`` would run a method that triggers itself, forever, or None. A method that
    listens to its own name, and a router that listens to a label it returns (read from its ``Literal`` return
    type and the string constants it returns), are found when the flow is built; a label made at run time is
    refused when the router returns it."""
    if cls in _checked:
        return _checked[cls]
    problem: str | None = None
    for name, cond in cls._listeners:
        if name in cond.names:
            problem = _loops(cls, name, name)
            break
        if name in cls._routers:
            looped = [label for label in _router_labels(getattr(cls, name)) if label in cond.names]
            if looped:
                problem = _loops(cls, name, looped[0])
                break
    _checked[cls] = problem
    return problem


def _router_labels(fn: Any) -> set[str]:
    """The labels a router can return, as far as can be told without running it."""
    import ast
    import textwrap

    labels: set[str] = set()
    try:
        hints = typing.get_type_hints(fn)
    except Exception:
        hints = {}
    returned = hints.get("return")
    if typing.get_origin(returned) is typing.Literal:
        labels |= {arg for arg in typing.get_args(returned) if isinstance(arg, str)}
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return labels

    def constants(node: ast.expr | None) -> set[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return {node.value}
        if isinstance(node, ast.IfExp):
            return constants(node.body) | constants(node.orelse)
        if isinstance(node, ast.BoolOp):
            return set().union(*(constants(value) for value in node.values))
        return set()

    def visit(node: ast.AST, top: bool) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef) and not top:
            return  # a nested function's returns are not the router's
        if isinstance(node, ast.Return):
            labels.update(constants(node.value))
        for child in ast.iter_child_nodes(node):
            visit(child, False)

    for node in tree.body:
        visit(node, True)
    return labels


async def _await(awaitable: Any) -> Any:
    return await awaitable
