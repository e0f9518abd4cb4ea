"""The checkpoint body: one typed schema, its version, the migration chain and the one door every reader uses.

:func:`load_body` is that door. It migrates a raw body up to :data:`SCHEMA_VERSION` (a body from a newer
crewpoint is refused, never half-read) and validates it in full against :class:`CheckpointBody`: meta facts,
lineage, the entity's state (crew, agents, tasks, flow, agent), events and origin. A body that does not validate
is damaged, and :class:`DamagedBody` names the first field that is wrong (``entity.tasks.2.output: expected an
object``) so a command can say it in one line and exit 2 before anything acts on the checkpoint.

Fields are typed strictly (a number is never taken for text, nor ``0`` for ``false``); keys the schema does not
name are kept (``extra="allow"``), so a body translated from CrewAI's format, which carries fewer fields and some
of its own, validates and comes back whole. Beyond types, the checks crewpoint's runtime needs before it runs
anything are made here too: a crew's tasks name its own agents and tasks, a flow names its class, an agent run
holds its messages. A body in another tool's ``format`` (``crewai``) is only read by crewpoint, never run by it.
What the schema leaves open is said where it is: inputs, flow state and method outputs are the user's data, and
an LLM's, tool's or knowledge source's ``fields`` are checked by their own class when the program rebuilds it;
what that class refuses is named as a field of the body too (:func:`refused_by_class`).

To change the body: add the field to its model here; if old bodies need rewriting, bump :data:`SCHEMA_VERSION`
and add the step to :data:`MIGRATIONS`.

Version history:

* 0 — early shape: ``state`` (the entity), ``event_history``, and lineage as top-level ``checkpoint_id``,
  ``parent_id``, ``branch``; no ``lineage`` block, no ``sequence``.
* 1 — ``entity``, ``events``, a ``lineage`` block with ``id``, ``parent_id``, ``branch``, ``lineage`` and
  ``sequence``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    Tag,
    ValidationError,
    model_validator,
)

from crewpoint.providers.base import DamagedCheckpoint, UnsupportedSchema

SCHEMA_VERSION = 1
"""The body schema this crewpoint writes and reads; the one place it is set."""

Body = dict[str, Any]
Count = Annotated[StrictInt, Field(ge=0)]


class _Part(BaseModel):
    """A part of a body: known fields typed strictly, unknown keys kept as they are."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, defer_build=True)


# -- shared pieces -----------------------------------------------------------------------------------------


class CheckpointSettingState(_Part):
    """A ``checkpoint=`` setting saved as data (see ``crewpoint.checkpoint.config.config_state``)."""

    location: StrictStr | None = None
    on_events: list[StrictStr] = Field(default_factory=lambda: ["task_completed"])
    provider: StrictStr | None = None
    max_checkpoints: Count | None = None


CheckpointSetting = CheckpointSettingState | StrictBool | None


class Message(_Part):
    role: StrictStr
    content: StrictStr


class ConversationState(_Part):
    messages: list[Message] = Field(default_factory=list)


class MemoryItemState(_Part):
    value: StrictStr
    metadata: dict[str, Any] = Field(default_factory=dict)
    sequence: StrictInt
    created_at: StrictFloat = 0.0


class CrewMemoryState(_Part):
    items: list[MemoryItemState] = Field(default_factory=list)


class LLMState(_Part):
    """An LLM as its dotted class path and its fields (the class checks the fields when it is rebuilt)."""

    class_: StrictStr = Field(alias="class")
    fields: dict[str, Any] = Field(default_factory=dict)


class ToolState(_Part):
    kind: StrictStr = "class"
    path: StrictStr | None = None
    name: StrictStr = "tool"
    description: StrictStr = ""
    cache_function: StrictStr | None = None
    cache_function_unsavable: StrictBool = False
    fields: dict[str, Any] = Field(default_factory=dict)
    unsaved_fields: list[StrictStr] = Field(default_factory=list)


class KnowledgeSourceState(_Part):
    class_: StrictStr = Field(default="", alias="class")
    fields: dict[str, Any] = Field(default_factory=dict)
    chunks: list[StrictStr] | None = None
    contents: dict[str, StrictStr] | None = None


class GuardrailState(_Part):
    """``{"text": ...}`` (a guardrail in words), ``{"path": ...}`` (a function) or ``{"unsaved": true}``."""

    text: StrictStr | None = None
    path: StrictStr | None = None
    unsaved: StrictBool = False


# -- the entity --------------------------------------------------------------------------------------------


class TaskOutputState(_Part):
    description: StrictStr = ""
    raw: StrictStr
    expected_output: StrictStr = ""
    name: StrictStr | None = None
    agent: StrictStr = ""
    summary: StrictStr = ""


class TaskState(_Part):
    id: StrictStr
    name: StrictStr | None = None
    description: StrictStr = ""
    expected_output: StrictStr = ""
    agent: StrictStr | None = None
    context: list[StrictStr] | None = None
    callback: StrictStr | None = None
    callback_unsaved: StrictBool = False
    guardrail: GuardrailState | None = None
    guardrail_max_retries: Count = 2
    checkpoint: CheckpointSetting = None
    output: TaskOutputState | None = None


class AgentState(_Part):
    kind: Literal["agent"] = "agent"
    id: StrictStr
    role: StrictStr
    goal: StrictStr = ""
    backstory: StrictStr = ""
    llm: LLMState | StrictStr | None = None
    tools: list[ToolState] = Field(default_factory=list)
    memory: StrictBool = True
    conversation: ConversationState | None = None
    knowledge_sources: list[KnowledgeSourceState] = Field(default_factory=list)
    checkpoint: CheckpointSetting = None
    max_iter: Annotated[StrictInt, Field(ge=1)] = 5
    step_callback: StrictStr | None = None
    step_callback_unsaved: StrictBool = False
    pending: list[Message] | None = None
    result: StrictStr | None = None


class CrewState(_Part):
    kind: Literal["crew"] = "crew"
    id: StrictStr
    name: StrictStr = "crew"
    process: Literal["sequential"] = "sequential"
    memory: StrictBool = False
    agents: list[AgentState]
    tasks: Annotated[list[TaskState], Field(min_length=1)]
    crew_memory: CrewMemoryState | None = None
    knowledge_sources: list[KnowledgeSourceState] = Field(default_factory=list)
    task_callback: StrictStr | None = None
    task_callback_unsaved: StrictBool = False
    checkpoint: CheckpointSetting = None

    @model_validator(mode="after")
    def _references_resolve(self) -> CrewState:
        """Every task's agent and context name a member of this crew (checked here, so a rebuild never meets a
        dangling id halfway)."""
        agents = {a.id for a in self.agents}
        tasks = {t.id for t in self.tasks}
        for i, task in enumerate(self.tasks):
            if task.agent and agents and task.agent not in agents:
                raise _Refused(("tasks", i, "agent"), f"names agent {task.agent!r}, which this crew does not have")
            for j, ref in enumerate(task.context or []):
                if ref not in tasks:
                    raise _Refused(("tasks", i, "context", j), f"names task {ref!r}, which this crew does not have")
        return self


class FlowState(_Part):
    kind: Literal["flow"] = "flow"
    id: StrictStr = ""
    name: StrictStr = ""
    class_: StrictStr | None = Field(default=None, alias="class")
    state_class: StrictStr | None = None
    state: dict[str, Any] | None = None
    """The flow's state: the user's data, checked by the flow's own state class when the flow is rebuilt."""
    method_outputs: list[tuple[StrictStr, Any]] = Field(default_factory=list)
    finished: StrictBool = False
    result: Any = None
    checkpoint: CheckpointSetting = None


def _kind_of(value: Any) -> str | None:
    kind = value.get("kind") if isinstance(value, Mapping) else getattr(value, "kind", None)
    return kind if isinstance(kind, str) else None


EntityState = Annotated[
    Annotated[CrewState, Tag("crew")] | Annotated[FlowState, Tag("flow")] | Annotated[AgentState, Tag("agent")],
    Discriminator(_kind_of, custom_error_type="entity_kind", custom_error_message="expected crew, flow or agent"),
]


# -- the body ----------------------------------------------------------------------------------------------


class LineageState(_Part):
    id: StrictStr = ""
    parent_id: StrictStr | None = None
    branch: StrictStr = "main"
    lineage: StrictStr = ""
    sequence: Count = 0
    resumed_from: StrictStr | None = None


class OriginState(_Part):
    """Where the run's entity came from: a script (``file``) or a module, and the attribute."""

    file: StrictStr | None = None
    module: StrictStr | None = None
    attr: StrictStr | None = None


class CheckpointBody(_Part):
    """A whole checkpoint body at :data:`SCHEMA_VERSION`."""

    schema_version: StrictInt = SCHEMA_VERSION
    version: StrictStr = ""
    format: Literal["crewpoint", "crewai"] = "crewpoint"
    """``crewpoint``, or the format a body was translated from (``crewai``: the original sits under its name)."""
    entity: EntityState
    inputs: dict[str, Any] = Field(default_factory=dict)
    """The kickoff inputs: the user's data."""
    events: list[dict[str, Any]] = Field(default_factory=list)
    """Each event is checked against its event class (:func:`crewpoint.events.types.parse_event`) in
    :func:`load_body`, for bodies in crewpoint's own format."""
    lineage: LineageState
    trigger: StrictStr = ""
    created_at: StrictFloat = 0.0
    origin: OriginState | None = None

    @model_validator(mode="after")
    def _runnable(self) -> CheckpointBody:
        """In crewpoint's own format every task of a crew is done by one of its agents, a flow names its class and
        an agent run holds the messages it was given (a translated body may leave these unknown: CrewAI runs it,
        not crewpoint)."""
        if self.format == "crewpoint" and isinstance(self.entity, CrewState):
            agents = {a.id for a in self.entity.agents}
            for i, task in enumerate(self.entity.tasks):
                if task.agent not in agents:
                    raise _Refused(
                        ("entity", "tasks", i, "agent"),
                        f"expected the id of one of the crew's agents, not {_shown(task.agent)}",
                    )
        if self.format == "crewpoint" and isinstance(self.entity, FlowState) and not self.entity.class_:
            raise _Refused(("entity", "class"), f"expected the flow's class path, not {_shown(self.entity.class_)}")
        if self.format == "crewpoint" and isinstance(self.entity, AgentState) and self.entity.pending is None:
            raise _Refused(("entity", "pending"), "expected the list of messages the agent was given, not null")
        return self

    @property
    def kind(self) -> str:
        return self.entity.kind


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


MIGRATIONS: dict[int, Callable[[Body], Body]] = {0: _v0_to_v1}
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


class _Refused(ValueError):
    """A cross-field check inside a model: ``loc`` below the model, and what is wrong."""

    def __init__(self, loc: tuple[str | int, ...], problem: str) -> None:
        super().__init__(problem)
        self.loc, self.problem = loc, problem


def load_body(raw: Any, source: str = "checkpoint") -> CheckpointBody:
    """The one door: migrate ``raw`` and validate all of it, or raise :class:`DamagedBody` naming the field
    (:class:`UnsupportedSchema` for a newer schema). ``source`` names the checkpoint in messages (its id)."""
    body = migrate(raw, source)
    try:
        typed = CheckpointBody.model_validate(body)
    except ValidationError as exc:
        raise _damaged(exc, body, source, ()) from None
    if typed.format == "crewpoint":
        _check_events(typed.events, body, source)
    return typed


def refused_by_class(error: ValidationError, source: str, where: Sequence[str | int]) -> DamagedBody:
    """Data the schema leaves to a class (a flow's state, an LLM's or tool's fields) that the class refuses, as a
    damaged body naming the field below ``where`` (``entity.state.count``)."""
    return _damaged(error, None, source, tuple(where))


def owner_of(error: ValidationError, body: Body) -> tuple[str | int, ...] | None:
    """Where in ``body`` the fields a class refused sit: the one ``{"class": ..., "fields": {...}}`` entry naming
    a class called ``error.title`` whose fields hold the refused value (its path ending in ``fields``), or None."""
    first = error.errors()[0]
    loc = first["loc"]
    if not loc:
        return None
    found: list[tuple[str | int, ...]] = []

    def walk(value: Any, here: tuple[str | int, ...]) -> None:
        if isinstance(value, dict):
            name, fields = value.get("class"), value.get("fields")
            if isinstance(name, str) and isinstance(fields, dict) and name.rpartition(".")[2] == error.title:
                value_there, present = _value_at(fields, loc)
                if first["type"] == "missing" or (present and value_there == first["input"]):
                    found.append((*here, "fields"))
            for key, inner in value.items():
                walk(inner, (*here, key))
        elif isinstance(value, list):
            for i, inner in enumerate(value):
                walk(inner, (*here, i))

    walk(body, ())
    return found[0] if len(found) == 1 else None


def _check_events(events: list[dict[str, Any]], body: Body, source: str) -> None:
    from crewpoint.events.types import parse_event

    for i, event in enumerate(events):
        try:
            parse_event(event)
        except ValidationError as exc:
            raise _damaged(exc, event, source, ("events", i)) from None


# -- saying what is wrong, in one line ---------------------------------------------------------------------

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


def _type_name(value: Any) -> str:
    names = {type(None): "null", bool: "true/false", int: "a number", float: "a number", str: "a string"}
    names.update({list: "a list", dict: "an object"})
    return names.get(type(value), type(value).__name__)


def _shown(value: Any) -> str:
    return repr(value) if isinstance(value, (int, float, str)) and len(repr(value)) <= 24 else _type_name(value)


def _dotted(parts: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in parts)


def _real_path(loc: Sequence[str | int], data: Any, missing: bool) -> list[str | int]:
    """``loc`` as a path in ``data``: the segments pydantic adds for union members and tags are dropped by
    walking the data itself. With ``data`` None the location is taken as it is."""
    if data is None:
        return list(loc)
    path: list[str | int] = []
    here = data
    for n, part in enumerate(loc):
        if isinstance(here, dict) and isinstance(part, str) and part in here:
            path.append(part)
            here = here[part]
        elif isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            path.append(part)
            here = here[part]
        elif missing and n == len(loc) - 1 and isinstance(here, dict):
            path.append(part)
    return path


def _problem(error: Mapping[str, Any], value: Any, present: bool) -> str:
    kind = error.get("type", "")
    if kind == "missing":
        return "missing"
    expected = _EXPECTED.get(kind)
    if expected is not None:
        return f"expected {expected}, not {_type_name(value)}" if present else f"expected {expected}"
    if kind == "literal_error":
        return f"expected {error['ctx']['expected']}, not {_shown(value) if present else 'nothing'}"
    if kind == "value_error" and isinstance(error.get("ctx", {}).get("error"), _Refused):
        return str(error["ctx"]["error"].problem)
    text = str(error.get("msg", "is not valid"))
    text = text.removeprefix("Value error, ")
    return text[:1].lower() + text[1:]


def _damaged(exc: ValidationError, data: Any, source: str, prefix: tuple[str | int, ...]) -> DamagedBody:
    errors = exc.errors()
    first = errors[0]
    ctx_error = first.get("ctx", {}).get("error")
    path = _real_path(tuple(first["loc"]), data, first["type"] == "missing")
    if isinstance(ctx_error, _Refused):  # a cross-field check names its field below the model that made it
        path += list(ctx_error.loc)
    if first["type"] == "entity_kind":  # the entity's kind picks its schema: name the field itself
        entity, _ = _value_at(data, path)
        if not isinstance(entity, dict):
            return DamagedBody(source, _dotted((*prefix, *path)), f"expected an object, not {_type_name(entity)}")
        kind = entity.get("kind")
        problem = f"expected crew, flow or agent, not {_shown(kind)}"
        return DamagedBody(source, _dotted((*prefix, *path, "kind")), problem)
    # A value wrong for every member of a union gives one error per member at the same path: say them together.
    expected: list[str] = []
    for error in errors:
        here = _real_path(tuple(error["loc"]), data, error["type"] == "missing")
        if here == path and error["type"] in _EXPECTED and _EXPECTED[error["type"]] not in expected:
            expected.append(_EXPECTED[error["type"]])
    value, present = _value_at(data, path)
    if len(expected) > 1:
        problem = f"expected {' or '.join(expected)}, not {_type_name(value)}"
    else:
        problem = _problem(first, value if present else first.get("input"), present or data is None)
    return DamagedBody(source, _dotted(prefix + tuple(path)), problem)


def _value_at(data: Any, path: Sequence[str | int]) -> tuple[Any, bool]:
    here = data
    for part in path:
        if isinstance(here, dict) and isinstance(part, str) and part in here:
            here = here[part]
        elif isinstance(here, list) and isinstance(part, int) and 0 <= part < len(here):
            here = here[part]
        else:
            return None, False
    return here, data is not None
