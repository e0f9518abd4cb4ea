"""The checkpoint body: one typed schema, its version, the migration chain and the one door every reader uses.

:func:`load_body` is that door. It migrates a raw body up to :data:`SCHEMA_VERSION` (a body from a newer
crewpoint is refused, never half-read) and validates it in full against :data:`BODY`: meta facts, lineage, the
entity's state (crew, agents, tasks, flow, agent), events and origin. It returns the body as a
:class:`CheckpointBody` (typed dicts, every field the schema knows filled in) for readers to read by name. A body
that does not validate is damaged, and :class:`DamagedBody` names the first field that is wrong
(``entity.tasks.2.output: expected an object, not a string``) so a command says it in one line and exits 2 before
anything acts on the checkpoint.

Fields are typed strictly (a number is never taken for text, nor ``0`` for ``false``); keys the schema does not
name are kept, so a body translated from CrewAI's format, which carries fewer fields and some of its own,
validates and comes back whole. Beyond types, the checks crewpoint's runtime needs before it runs anything are
made here too: a crew's tasks name its own agents and tasks, a flow names its class, an agent run holds its
messages. A body in another tool's ``format`` (``crewai``) is only read by crewpoint, never run by it.

What the schema leaves open is said where it is: inputs, flow state and method outputs are the user's data; an
LLM's, tool's or knowledge source's ``fields`` are checked by their own class when the program rebuilds it, and
each event by its event class before a run takes the history on (:func:`check_events`); what such a class refuses
is named as a field of the body too (:func:`refused_by_class`).

The schema is plain data checked by plain code, so reading a checkpoint (``info``) imports no model library.
To change the body: change its spec and its typed dict here; if old bodies need rewriting, bump
:data:`SCHEMA_VERSION` and add the step to :data:`MIGRATIONS`.

Version history:

* 0 — early shape: ``state`` (the entity), ``event_history``, and lineage as top-level ``checkpoint_id``,
  ``parent_id``, ``branch``; no ``lineage`` block, no ``sequence``.
* 1 — ``entity``, ``events``, a ``lineage`` block with ``id``, ``parent_id``, ``branch``, ``lineage`` and
  ``sequence``. Later, with no version bump (an optional section: a body without it reads as spending nothing):
  ``usage`` with ``rows``, ``before`` and ``reused`` (:data:`USAGE`).
* 2 — a usage row is stored as the list of its values in ``ROW_KEYS`` order (every checkpoint repeats every row
  of its run, so its keys are not repeated with it); a version-1 row, a dict, reads the same.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

from crewpoint.budget import MAX_TOKENS, MAX_USD
from crewpoint.providers.base import DamagedCheckpoint, UnsupportedSchema
from crewpoint.providers.claims import REQUEST_ID_RE
from crewpoint.providers.formats import format_names
from crewpoint.providers.usage_meta import ROW_KEYS, UsageRow

if TYPE_CHECKING:
    from pydantic import ValidationError

SCHEMA_VERSION = 2
"""The body schema this crewpoint writes and reads; the one place it is set."""

Body = dict[str, Any]
Path = tuple[str | int, ...]


# -- the body, as readers see it -----------------------------------------------------------------------------


class MessageState(TypedDict):
    role: str
    content: str


class TaskOutputState(TypedDict):
    description: str
    raw: str
    expected_output: str
    name: str | None
    agent: str
    summary: str


class PendingFeedbackState(TypedDict):
    """A request a person has not answered yet: the run waits on it (see :mod:`crewpoint.feedback`)."""

    request_id: str
    kind: Literal["method", "task", "input"]
    label: str
    message: str
    output: str
    outcomes: list[str]
    default_outcome: str | None
    requested_at: float
    deadline: float | None
    run_id: str | None
    branch: str | None
    """The run and branch that wrote the checkpoint holding the request (a fork's copy names its source's)."""


class TaskState(TypedDict):
    id: str
    name: str | None
    description: str
    expected_output: str
    agent: str | None
    context: list[str] | None
    callback: str | None
    callback_unsaved: bool
    guardrail: dict[str, Any] | None
    guardrail_max_retries: int
    checkpoint: dict[str, Any] | bool | None
    output: TaskOutputState | None
    human_input: bool


class AgentState(TypedDict):
    kind: Literal["agent"]
    id: str
    role: str
    goal: str
    backstory: str
    llm: dict[str, Any] | str | None
    tools: list[dict[str, Any]]
    memory: bool
    conversation: dict[str, Any] | None
    knowledge_sources: list[dict[str, Any]]
    checkpoint: dict[str, Any] | bool | None
    max_iter: int
    step_callback: str | None
    step_callback_unsaved: bool
    pending: list[MessageState] | None
    result: str | None


class CrewState(TypedDict):
    kind: Literal["crew"]
    id: str
    name: str
    process: Literal["sequential"]
    memory: bool
    agents: list[AgentState]
    tasks: list[TaskState]
    crew_memory: dict[str, Any] | None
    knowledge_sources: list[dict[str, Any]]
    task_callback: str | None
    task_callback_unsaved: bool
    checkpoint: dict[str, Any] | bool | None
    pending_feedback: PendingFeedbackState | None
    human_feedback: list[dict[str, Any]]


FlowState = TypedDict(
    "FlowState",
    {
        "kind": Literal["flow"],
        "id": str,
        "name": str,
        "class": str | None,
        "state_class": str | None,
        "state": dict[str, Any] | None,
        "method_outputs": list[list[Any]],
        "finished": bool,
        "result": Any,
        "checkpoint": dict[str, Any] | bool | None,
        "pending_feedback": PendingFeedbackState | None,
        "human_feedback": list[dict[str, Any]],
        "flow_inputs": dict[str, str | None],
    },
)

EntityState = CrewState | FlowState | AgentState


class LineageState(TypedDict):
    id: str
    parent_id: str | None
    branch: str
    lineage: str
    sequence: int
    resumed_from: str | None


class OriginState(TypedDict):
    file: str | None
    module: str | None
    attr: str | None


class UsageSection(TypedDict):
    """A body's ``usage``; each row read as the one row type (:class:`~crewpoint.providers.usage_meta.UsageRow`)."""

    rows: list[UsageRow]
    before: list[UsageRow]
    reused: list[UsageRow]


class CheckpointBody(TypedDict):
    """A whole checkpoint body at :data:`SCHEMA_VERSION`, as :func:`load_body` returns it."""

    schema_version: int
    version: str
    format: str
    """``crewpoint``, or the registered format a body was translated from (the original sits under its name)."""
    entity: EntityState
    inputs: dict[str, Any]
    events: list[dict[str, Any]]
    lineage: LineageState
    trigger: str
    created_at: float
    origin: OriginState | None
    usage: UsageSection


# -- checking, in plain code ---------------------------------------------------------------------------------


class _Bad(Exception):
    """A value at ``path`` that does not fit; ``problem`` says how, in a few words. ``kind_taken``: the value was of
    the right kind and failed on its value (a count below its least), which says more than its kind would."""

    def __init__(self, path: Path, problem: str, *, kind_taken: bool = False) -> None:
        super().__init__(problem)
        self.path, self.problem, self.kind_taken = path, problem, kind_taken


def _type_name(value: Any) -> str:
    names = {type(None): "null", bool: "true/false", int: "a number", float: "a number", str: "a string"}
    names.update({list: "a list", tuple: "a list", dict: "an object"})
    return names.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, (int, float, str)) and len(repr(value)) <= 24 else _type_name(value)


class Spec:
    """What a value must be: :meth:`check` returns it (objects with their defaults filled in) or raises."""

    expected = "a value"

    def check(self, value: Any, path: Path) -> Any:
        raise NotImplementedError

    def refuse(self, value: Any, path: Path) -> _Bad:
        return _Bad(path, f"expected {self.expected}, not {_type_name(value)}")


class _Scalar(Spec):
    def __init__(self, expected: str, fits: Callable[[Any], bool]) -> None:
        self.expected, self._fits = expected, fits

    def check(self, value: Any, path: Path) -> Any:
        if not self._fits(value):
            raise self.refuse(value, path)
        return value


class _Anything(Spec):
    expected = "any value"

    def check(self, value: Any, path: Path) -> Any:
        return value


STR = _Scalar("a string", lambda v: isinstance(v, str))
INT = _Scalar("a whole number", lambda v: type(v) is int)
NUM = _Scalar("a number", lambda v: type(v) in (int, float))
BOOL = _Scalar("true/false", lambda v: type(v) is bool)
ANY = _Anything()


class Count(Spec):
    def __init__(self, least: int = 0) -> None:
        self.least = least
        self.expected = "a whole number" if least == 0 else f"a whole number from {least}"

    def check(self, value: Any, path: Path) -> Any:
        if type(value) is not int:
            raise self.refuse(value, path)
        if value < self.least:
            raise _Bad(path, f"expected a whole number from {self.least}, not {value}", kind_taken=True)
        return value


class OneOf(Spec):
    """A value that fits one of ``specs``; when none takes it, the first that failed inside the value (an object
    or a list of the right kind with a wrong field) names that field, else the value is named here."""

    def __init__(self, *specs: Spec) -> None:
        self.specs = specs
        self.expected = " or ".join(dict.fromkeys(s.expected for s in specs))

    def check(self, value: Any, path: Path) -> Any:
        deeper: _Bad | None = None
        for spec in self.specs:
            try:
                return spec.check(value, path)
            except _Bad as bad:  # a member that took the value's kind and failed inside says most
                if deeper is None and (len(bad.path) > len(path) or bad.kind_taken):
                    deeper = bad
        raise deeper if deeper is not None else self.refuse(value, path)


def Nullable(spec: Spec) -> Spec:
    return OneOf(spec, NULL)


class _Null(Spec):
    expected = "null"

    def check(self, value: Any, path: Path) -> Any:
        if value is not None:
            raise self.refuse(value, path)
        return None


NULL = _Null()


class OneValue(Spec):
    def __init__(self, *values: str) -> None:
        self.values = values
        self.expected = " or ".join(repr(v) for v in values)

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, str) or value not in self.values:
            raise _Bad(path, f"expected {self.expected}, not {_shown(value)}")
        return value


class KnownFormat(Spec):
    """crewpoint's format or one registered with :func:`crewpoint.providers.formats.register_format`."""

    def check(self, value: Any, path: Path) -> Any:
        names = format_names()
        if not isinstance(value, str) or value not in names:
            raise _Bad(path, f"expected {' or '.join(repr(n) for n in names)}, not {_shown(value)}")
        return value


class ListOf(Spec):
    expected = "a list"

    def __init__(self, item: Spec, least: int = 0) -> None:
        self.item, self.least = item, least

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, (list, tuple)):
            raise self.refuse(value, path)
        if len(value) < self.least:
            raise _Bad(path, f"expected a list of at least {self.least}, not an empty one")
        return [self.item.check(v, (*path, i)) for i, v in enumerate(value)]


class Pair(Spec):
    expected = "a list of two"

    def __init__(self, first: Spec, second: Spec) -> None:
        self.first, self.second = first, second

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self.refuse(value, path) if not isinstance(value, (list, tuple)) else _Bad(path, "expected a pair")
        return [self.first.check(value[0], (*path, 0)), self.second.check(value[1], (*path, 1))]


class MapOf(Spec):
    expected = "an object"

    def __init__(self, item: Spec) -> None:
        self.item = item

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise self.refuse(value, path)
        return {k: self.item.check(v, (*path, k)) for k, v in value.items()}


REQUIRED: Any = object()
"""A field's default when the field must be there."""


class Obj(Spec):
    """An object with known fields (``name: (spec, default)``; a default may be a callable making it) and any
    other keys, kept as they are. ``checks`` run on the filled-in object (cross-field rules)."""

    expected = "an object"

    def __init__(self, fields: Mapping[str, tuple[Spec, Any]], *checks: Callable[[dict[str, Any], Path], None]):
        self.fields, self.checks = fields, checks

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise self.refuse(value, path)
        out = dict(value)
        for name, (spec, default) in self.fields.items():
            if name in value:
                out[name] = spec.check(value[name], (*path, name))
            elif default is REQUIRED:
                raise _Bad((*path, name), "missing")
            else:
                out[name] = default() if callable(default) else default
        for rule in self.checks:
            rule(out, path)
        return out


class ByKind(Spec):
    """An object whose ``kind`` picks its spec."""

    expected = "an object"

    def __init__(self, kinds: Mapping[str, Obj]) -> None:
        self.kinds = kinds

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise self.refuse(value, path)
        kind = value.get("kind")
        if not isinstance(kind, str) or kind not in self.kinds:
            names = ", ".join(list(self.kinds)[:-1]) + " or " + list(self.kinds)[-1]
            raise _Bad((*path, "kind"), f"expected {names}, not {_shown(kind)}")
        return self.kinds[kind].check(value, path)


# -- the spec ------------------------------------------------------------------------------------------------

OPT_STR = Nullable(STR)
CHECKPOINT_SETTING = OneOf(
    Obj(
        {
            "location": (OPT_STR, None),
            "on_events": (ListOf(STR), lambda: ["task_completed"]),
            "provider": (OPT_STR, None),
            "max_checkpoints": (Nullable(Count()), None),
        }
    ),
    BOOL,
    NULL,
)
MESSAGE = Obj({"role": (STR, REQUIRED), "content": (STR, REQUIRED)})
CLASS_AND_FIELDS = {"class": (STR, REQUIRED), "fields": (MapOf(ANY), dict)}
LLM = Obj(CLASS_AND_FIELDS)
TOOL = Obj(
    {
        "kind": (STR, "class"),
        "path": (OPT_STR, None),
        "name": (STR, "tool"),
        "description": (STR, ""),
        "cache_function": (OPT_STR, None),
        "cache_function_unsavable": (BOOL, False),
        "fields": (MapOf(ANY), dict),
        "unsaved_fields": (ListOf(STR), list),
    }
)
KNOWLEDGE_SOURCE = Obj(
    {
        "class": (STR, ""),
        "fields": (MapOf(ANY), dict),
        "chunks": (Nullable(ListOf(STR)), None),
        "contents": (Nullable(MapOf(STR)), None),
    }
)
MEMORY_ITEM = Obj(
    {"value": (STR, REQUIRED), "metadata": (MapOf(ANY), dict), "sequence": (INT, REQUIRED), "created_at": (NUM, 0.0)}
)
GUARDRAIL = Obj({"text": (OPT_STR, None), "path": (OPT_STR, None), "unsaved": (BOOL, False)})
TASK_OUTPUT = Obj(
    {
        "description": (STR, ""),
        "raw": (STR, REQUIRED),
        "expected_output": (STR, ""),
        "name": (OPT_STR, None),
        "agent": (STR, ""),
        "summary": (STR, ""),
    }
)
TASK = Obj(
    {
        "id": (STR, REQUIRED),
        "name": (OPT_STR, None),
        "description": (STR, ""),
        "expected_output": (STR, ""),
        "agent": (OPT_STR, None),
        "context": (Nullable(ListOf(STR)), None),
        "callback": (OPT_STR, None),
        "callback_unsaved": (BOOL, False),
        "guardrail": (Nullable(GUARDRAIL), None),
        "guardrail_max_retries": (Count(), 2),
        "checkpoint": (CHECKPOINT_SETTING, None),
        "output": (Nullable(TASK_OUTPUT), None),
        "human_input": (BOOL, False),
    }
)


class _RequestId(Spec):
    """A request id: part of the key its answer is claimed under, so one that could not be claimed is damaged."""

    expected = "a request id (1 to 64 of A-Z a-z 0-9 _ . -)"

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, str) or REQUEST_ID_RE.fullmatch(value) is None:
            raise _Bad(path, f"expected {self.expected}, not {_shown(value)}")
        return value


REQUEST_ID = _RequestId()
PENDING_FEEDBACK = Nullable(
    Obj(
        {
            "request_id": (REQUEST_ID, REQUIRED),
            "kind": (OneValue("method", "task", "input"), REQUIRED),
            "label": (STR, ""),
            "message": (STR, ""),
            "output": (STR, ""),
            "outcomes": (ListOf(STR), list),
            "default_outcome": (OPT_STR, None),
            "requested_at": (NUM, 0.0),
            "deadline": (Nullable(NUM), None),
            "run_id": (OPT_STR, None),
            "branch": (OPT_STR, None),
        }
    )
)
"""The request a waiting run holds (optional: a body without one is not waiting; no migration needed)."""
ANSWERED_FEEDBACK = ListOf(MapOf(ANY))
"""Each answered review of the run (feedback, outcome, who, when), oldest first."""


class _Dollars(Spec):
    """A number of dollars above 0, up to the largest budget (a budget's ``usd``)."""

    expected = f"a number of dollars above 0, up to {MAX_USD:,.0f}"

    def check(self, value: Any, path: Path) -> Any:
        if type(value) not in (int, float):
            raise self.refuse(value, path)
        if not 0 < value <= MAX_USD:  # NaN fails this too
            raise _Bad(path, f"expected {self.expected}, not {_shown(value)}", kind_taken=True)
        return value


class _Tokens(Count):
    """A whole number of tokens from 1, up to the largest budget (a budget's ``tokens``)."""

    def check(self, value: Any, path: Path) -> Any:
        super().check(value, path)
        if value > MAX_TOKENS:
            raise _Bad(path, f"expected a whole number of tokens up to {MAX_TOKENS:,}, not {value}", kind_taken=True)
        return value


BUDGET = Nullable(Obj({"usd": (Nullable(_Dollars()), None), "tokens": (Nullable(_Tokens(1)), None)}))
"""What a run of the entity may spend (:class:`crewpoint.budget.Budget`); a rebuild from the checkpoint alone keeps
it (optional: an entity without one has no limit)."""
AGENT = Obj(
    {
        "kind": (OneValue("agent"), "agent"),
        "id": (STR, REQUIRED),
        "role": (STR, REQUIRED),
        "goal": (STR, ""),
        "backstory": (STR, ""),
        "llm": (OneOf(LLM, STR, NULL), None),
        "tools": (ListOf(TOOL), list),
        "memory": (BOOL, True),
        "conversation": (Nullable(Obj({"messages": (ListOf(MESSAGE), list)})), None),
        "knowledge_sources": (ListOf(KNOWLEDGE_SOURCE), list),
        "checkpoint": (CHECKPOINT_SETTING, None),
        "max_iter": (Count(1), 5),
        "step_callback": (OPT_STR, None),
        "step_callback_unsaved": (BOOL, False),
        "pending": (Nullable(ListOf(MESSAGE)), None),
        "result": (OPT_STR, None),
        "budget": (BUDGET, None),
    }
)


def _references_resolve(crew: dict[str, Any], path: Path) -> None:
    """Every task's agent and context name a member of this crew, so a rebuild never meets a dangling id."""
    agents = {a["id"] for a in crew["agents"]}
    tasks = {t["id"] for t in crew["tasks"]}
    for i, task in enumerate(crew["tasks"]):
        if task["agent"] and agents and task["agent"] not in agents:
            raise _Bad((*path, "tasks", i, "agent"), f"names agent {task['agent']!r}, which this crew does not have")
        for j, ref in enumerate(task["context"] or []):
            if ref not in tasks:
                raise _Bad((*path, "tasks", i, "context", j), f"names task {ref!r}, which this crew does not have")


CREW = Obj(
    {
        "kind": (OneValue("crew"), "crew"),
        "id": (STR, REQUIRED),
        "name": (STR, "crew"),
        "process": (OneValue("sequential"), "sequential"),
        "memory": (BOOL, False),
        "agents": (ListOf(AGENT), REQUIRED),
        "tasks": (ListOf(TASK, least=1), REQUIRED),
        "crew_memory": (Nullable(Obj({"items": (ListOf(MEMORY_ITEM), list)})), None),
        "knowledge_sources": (ListOf(KNOWLEDGE_SOURCE), list),
        "task_callback": (OPT_STR, None),
        "task_callback_unsaved": (BOOL, False),
        "checkpoint": (CHECKPOINT_SETTING, None),
        "pending_feedback": (PENDING_FEEDBACK, None),
        "human_feedback": (ANSWERED_FEEDBACK, list),
        "budget": (BUDGET, None),
    },
    _references_resolve,
)
FLOW = Obj(
    {
        "kind": (OneValue("flow"), "flow"),
        "id": (STR, ""),
        "name": (STR, ""),
        "class": (OPT_STR, None),
        "state_class": (OPT_STR, None),
        "state": (Nullable(MapOf(ANY)), None),
        "method_outputs": (ListOf(Pair(STR, ANY)), list),
        "finished": (BOOL, False),
        "result": (ANY, None),
        "checkpoint": (CHECKPOINT_SETTING, None),
        "pending_feedback": (PENDING_FEEDBACK, None),
        "human_feedback": (ANSWERED_FEEDBACK, list),
        "flow_inputs": (MapOf(OPT_STR), dict),
        "budget": (BUDGET, None),
    }
)
EVENT = Obj(
    {
        "type": (STR, "event"),
        "event_id": (STR, ""),
        "timestamp": (NUM, 0.0),
        "sequence": (INT, 0),
        **{
            name: (OPT_STR, None)
            for name in (
                "source_type",
                "source_id",
                "parent_event_id",
                "started_event_id",
                "triggered_by_event_id",
                "crew_id",
                "flow_id",
                "agent_id",
                "task_id",
            )
        },
    }
)
"""An event's common fields; the rest of an event is checked by its event class (:func:`check_events`)."""


def _runnable(body: dict[str, Any], path: Path) -> None:
    """In crewpoint's own format events have crewpoint's common event fields, every task of a crew is done by one
    of its agents, a flow names its class and an agent run holds the messages it was given (a translated body
    keeps its tool's own events and may leave the rest unknown: CrewAI runs it, not crewpoint)."""
    if body["format"] != "crewpoint":
        return
    for i, event in enumerate(body["events"]):  # checked, and kept as recorded (views show them as they are)
        EVENT.check(event, ("events", i))
    entity = body["entity"]
    if entity["kind"] == "crew":
        agents = {a["id"] for a in entity["agents"]}
        for i, task in enumerate(entity["tasks"]):
            if task["agent"] not in agents:
                raise _Bad(
                    ("entity", "tasks", i, "agent"),
                    f"expected the id of one of the crew's agents, not {_shown(task['agent'])}",
                )
    elif entity["kind"] == "flow" and not entity["class"]:
        raise _Bad(("entity", "class"), f"expected the flow's class path, not {_shown(entity['class'])}")
    elif entity["kind"] == "agent" and entity["pending"] is None:
        raise _Bad(("entity", "pending"), "expected the list of messages the agent was given, not null")


class _Bounded(Spec):
    """A string of at most ``limit`` characters, a whole number from 0 to ``limit``, or a number from 0 to ``limit``
    (``kind``: ``"str"``, ``"int"``, ``"num"``): a figure of the usage section, of a size a real run records."""

    def __init__(self, kind: Literal["str", "int", "num"], limit: int) -> None:
        self.kind, self.limit = kind, limit
        self.expected = {"str": "a string", "int": "a whole number", "num": "a number"}[kind]

    def check(self, value: Any, path: Path) -> Any:
        if self.kind == "str":
            if not isinstance(value, str):
                raise self.refuse(value, path)
            if len(value) > self.limit:
                raise _Bad(path, f"expected a string of at most {self.limit} characters, not {len(value)}")
            return value
        if type(value) is not int and (self.kind == "int" or type(value) is not float):
            raise self.refuse(value, path)
        if not 0 <= value <= self.limit:  # NaN fails this too
            raise _Bad(path, f"expected {self.expected} from 0 to {self.limit}, not {_shown(value)}")
        return value


class _Rows(Spec):
    """A list of at most ``limit`` usage rows."""

    expected = "a list"

    def __init__(self, row: Spec, limit: int) -> None:
        self.row, self.limit = row, limit

    def check(self, value: Any, path: Path) -> Any:
        if isinstance(value, (list, tuple)) and len(value) > self.limit:
            raise _Bad(path, f"expected at most {self.limit} rows, not {len(value)}")
        return ListOf(self.row).check(value, path)


_NAME = _Bounded("str", 500)
_TOKENS = _Bounded("int", 10**15)
USAGE_ROW = Obj(
    {
        "unit": (Nullable(_NAME), None),
        "label": (_NAME, ""),
        "agent": (Nullable(_NAME), None),
        "model": (_NAME, ""),
        "provider": (_NAME, ""),
        **{
            name: (_TOKENS, 0)
            for name in ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens", "reasoning_tokens")
        },
        "requests": (_TOKENS, 0),
        "duration_s": (_Bounded("num", 10**9), 0.0),
        "estimated": (BOOL, False),
    }
)


class _StoredRow(Spec):
    """A usage row as a body stores it, the list of its values in ``ROW_KEYS`` order (an older body's dict is read
    too), checked as the object :data:`USAGE_ROW` and read as a :class:`UsageRow`."""

    expected = f"a list of {len(ROW_KEYS)} values or an object"

    def check(self, value: Any, path: Path) -> Any:
        if isinstance(value, list):
            if len(value) != len(ROW_KEYS):
                raise _Bad(path, f"expected a list of {len(ROW_KEYS)} values, not {len(value)}")
            value = dict(zip(ROW_KEYS, value, strict=True))
        checked = USAGE_ROW.check(value, path)
        return UsageRow._make(checked[name] for name in ROW_KEYS)


USAGE_ROWS = _Rows(_StoredRow(), 100_000)
USAGE = Obj({"rows": (USAGE_ROWS, list), "before": (USAGE_ROWS, list), "reused": (USAGE_ROWS, list)})
"""The ``usage`` section: what the run spent (``rows``), what its chain spent before it (``before``) and the rows
of ``before`` whose task or method the run took over instead of running again (``reused``)."""

BODY = Obj(
    {
        "schema_version": (INT, SCHEMA_VERSION),
        "version": (STR, ""),
        "format": (KnownFormat(), "crewpoint"),
        "entity": (ByKind({"crew": CREW, "flow": FLOW, "agent": AGENT}), REQUIRED),
        "inputs": (MapOf(ANY), dict),
        "events": (ListOf(MapOf(ANY)), list),  # crewpoint's own: EVENT each (see _runnable); others: their own
        "lineage": (
            Obj(
                {
                    "id": (STR, ""),
                    "parent_id": (OPT_STR, None),
                    "branch": (STR, "main"),
                    "lineage": (STR, ""),
                    "sequence": (Count(), 0),
                    "resumed_from": (OPT_STR, None),
                }
            ),
            REQUIRED,
        ),
        "trigger": (STR, ""),
        "created_at": (NUM, 0.0),
        "origin": (Nullable(Obj({"file": (OPT_STR, None), "module": (OPT_STR, None), "attr": (OPT_STR, None)})), None),
        "usage": (USAGE, lambda: {"rows": [], "before": [], "reused": []}),
    },
    _runnable,
)
"""The whole body at :data:`SCHEMA_VERSION` (what :class:`CheckpointBody` types)."""


# -- migration ---------------------------------------------------------------------------------------------


def _v0_to_v1(body: Body) -> Body:
    out = {k: v for k, v in body.items() if k not in ("state", "event_history", "checkpoint_id", "parent_id", "branch")}
    checkpoint_id = body.get("checkpoint_id") or ""
    out["entity"] = body.get("state", {})
    out["events"] = body.get("event_history", [])
    sequence = body.get("sequence")
    out["lineage"] = {
        "id": checkpoint_id,
        "parent_id": body.get("parent_id"),
        "branch": body.get("branch") or "main",
        "lineage": body.get("lineage_id") or checkpoint_id,
        "sequence": sequence if type(sequence) is int else 0,
        "resumed_from": None,
    }
    out.pop("lineage_id", None)
    out.pop("sequence", None)
    out["schema_version"] = 1
    return out


def _v1_to_v2(body: Body) -> Body:
    # Version 2 stores a usage row as the list of its values; a version-1 row (a dict) reads the same.
    return {**body, "schema_version": 2}


MIGRATIONS: dict[int, Callable[[Body], Body]] = {0: _v0_to_v1, 1: _v1_to_v2}
"""``MIGRATIONS[n]`` turns a version-n body into a version-(n+1) body."""


def migrate(body: Body, source: str = "checkpoint") -> Body:
    """Bring ``body`` up to :data:`SCHEMA_VERSION`, or raise :class:`UnsupportedSchema` (no validation here:
    :func:`load_body` validates what this returns)."""
    if not isinstance(body, dict):
        raise DamagedBody(source, "", f"expected an object, not {_type_name(body)}")
    # A body translated from another format (CrewAI's) is made by this crewpoint as it reads, so it is current;
    # crewpoint's own bodies carry their version, the oldest (0) told by its shape too (``state``, no ``entity``).
    if body.get("format", "crewpoint") != "crewpoint":
        raw = body.get("schema_version", SCHEMA_VERSION)
    elif "schema_version" in body or "state" in body:
        raw = body.get("schema_version", 0)
    else:
        raise DamagedBody(source, "schema_version", "missing")
    if type(raw) is not int or raw < 0:
        raise DamagedBody(source, "schema_version", f"expected a version number, not {_shown(raw)}")
    if raw > SCHEMA_VERSION:
        raise UnsupportedSchema(
            f"{source} was written by a newer crewpoint (schema {raw}, this one reads up to {SCHEMA_VERSION}): "
            "upgrade crewpoint to read it"
        )
    version = raw
    while version < SCHEMA_VERSION:
        body = MIGRATIONS[version](body)
        version += 1
    return body


# -- the door ----------------------------------------------------------------------------------------------


class DamagedBody(DamagedCheckpoint):
    """A body that does not validate. ``field`` is the dotted path of the first wrong field (``""``: the body
    itself); the message is one line: ``checkpoint <id> is damaged: <field>: <what is wrong>``."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source, self.field, self.problem = source, field, problem
        where = f"{field}: " if field else ""
        super().__init__(f"checkpoint {source} is damaged: {where}{problem}")


def _dotted(parts: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in parts)


def load_body(raw: Any, source: str = "checkpoint") -> CheckpointBody:
    """The one door: migrate ``raw`` and validate all of it, or raise :class:`DamagedBody` naming the field
    (:class:`UnsupportedSchema` for a newer schema). ``source`` names the checkpoint in messages (its id).

    The body returned is a checked copy with every field the schema knows filled in; ``raw`` is left as it is.
    """
    body = migrate(raw, source)
    try:
        return cast(CheckpointBody, BODY.check(body, ()))
    except _Bad as bad:
        raise DamagedBody(source, _dotted(bad.path), bad.problem) from None
    except RecursionError:
        raise DamagedBody(source, "", "nested too deeply to read") from None


def check_events(body: CheckpointBody, source: str) -> None:
    """Check each event against its event class, as a run does before it takes the history on; a field the
    class refuses is named as ``events.<n>.<field>``."""
    from pydantic import ValidationError

    # lazy: info and list load no event classes (pydantic)
    from crewpoint.events.types import parse_event

    for i, event in enumerate(body["events"]):
        try:
            parse_event(event)
        except ValidationError as exc:
            raise refused_by_class(exc, source, ("events", i)) from None


# -- what a class refuses, named as a field of the body ------------------------------------------------------

_EXPECTED = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true/false",
    "bool_parsing": "true/false",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
    "tuple_type": "a list",
    "none_required": "null",
}


def refused_by_class(error: ValidationError, source: str, where: Sequence[str | int]) -> DamagedBody:
    """Data the schema leaves to a class (a flow's state, an LLM's or tool's fields, an event) that the class
    refuses, as a damaged body naming the field below ``where`` (``entity.state.count``)."""
    first = error.errors()[0]
    kind = first["type"]
    if kind == "missing":
        problem = "missing"
    elif kind in _EXPECTED:
        problem = f"expected {_EXPECTED[kind]}, not {_type_name(first.get('input'))}"
    else:
        text = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        problem = text[:1].lower() + text[1:]
    return DamagedBody(source, _dotted((*where, *first["loc"])), problem)


def owner_of(error: ValidationError, body: Body) -> Path | None:
    """Where in ``body`` the fields a class refused sit: the one ``{"class": ..., "fields": {...}}`` entry naming
    a class called ``error.title`` whose fields hold the refused value (its path ending in ``fields``), or None."""
    first = error.errors()[0]
    loc = tuple(first["loc"])
    if not loc:
        return None
    found: list[Path] = []

    def walk(value: Any, here: Path) -> None:
        if isinstance(value, dict):
            name, fields = value.get("class"), value.get("fields")
            if isinstance(name, str) and isinstance(fields, dict) and name.rpartition(".")[2] == error.title:
                there, present = _value_at(fields, loc)
                if first["type"] == "missing" or (present and there == first["input"]):
                    found.append((*here, "fields"))
            for key, inner in value.items():
                walk(inner, (*here, key))
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                walk(inner, (*here, i))

    walk(body, ())
    return found[0] if len(found) == 1 else None


def _value_at(data: Any, path: Sequence[str | int]) -> tuple[Any, bool]:
    here = data
    for part in path:
        if isinstance(here, dict) and part in here:
            here = here[part]
        elif isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        else:
            return None, False
    return here, True
