"""The checkpoint body, declared once: its fields and their defaults, its version, the migration chain and the one
door every reader uses.

The declaration below (:data:`BODY` and the objects it is made of, in the words of
:mod:`crewpoint.checkpoint.schema_spec`) is the one place the body is said. The types readers see
(:class:`CheckpointBody`, :class:`CrewState`, ...) are generated from it into :mod:`crewpoint.checkpoint.schema_types`
by ``python -m crewpoint.checkpoint.schema`` (``--check`` only says whether that file is current; a test fails until
it is).

:func:`load_body` is the door. It migrates a raw body up to :data:`SCHEMA_VERSION` (a body from a newer
crewpoint is refused, never half-read) and validates it in full against :data:`BODY`: meta facts, lineage, the
entity's state (crew, agents, tasks, flow, agent), events and origin. It returns the body as a
:class:`CheckpointBody` with every field the declaration names filled in (its default where the body has none), so
readers, and each entity's ``from_state``, read fields by name and never repeat a default. A body that does not
validate is damaged, and :class:`DamagedBody` names the first field that is wrong
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
To change the body: change its declaration here and the entity's ``to_state``/``from_state``, then run
``python -m crewpoint.checkpoint.schema``; if old bodies need rewriting, bump :data:`SCHEMA_VERSION` and add the
step to :data:`MIGRATIONS`.

Version history:

* 0 — early shape: ``state`` (the entity), ``event_history``, and lineage as top-level ``checkpoint_id``,
  ``parent_id``, ``branch``; no ``lineage`` block, no ``sequence``.
* 1 — ``entity``, ``events``, a ``lineage`` block with ``id``, ``parent_id``, ``branch``, ``lineage`` and
  ``sequence``. Later, with no version bump (an optional section: a body without it reads as spending nothing):
  ``usage`` with ``rows``, ``before`` and ``reused`` (:data:`USAGE`).
* 2 — a usage row is stored as the list of its values in ``ROW_KEYS`` order (every checkpoint repeats every row
  of its run, so its keys are not repeated with it); a version-1 row, a dict, reads the same. Later, with no
  version bump (optional fields, read as absent): an entity's ``budget``, a crew's ``kickoff_hooks``, a task's
  ``fingerprint`` (one short hash per part that decides its output, written when it runs; a checkpoint written
  before fingerprints matches its tasks by name and position); a flow's ``method_fingerprints`` (each method's
  parts' short hashes) and ``state_writers`` (the state keys each method set).
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Any, cast

from crewpoint.checkpoint.schema_spec import (
    ANY,
    BOOL,
    INT,
    NULL,
    NUM,
    REQUIRED,
    STR,
    Bad,
    Bounded,
    ByKind,
    Converted,
    Count,
    DamagedBody,
    KnownFormat,
    ListOf,
    MapOf,
    Matching,
    Nullable,
    Obj,
    OneOf,
    OneValue,
    Pair,
    Path,
    Spec,
    declaration,
    dotted,
    named,
    shown,
    type_name,
)
from crewpoint.generated import write_or_check
from crewpoint.providers.base import UnsupportedSchema
from crewpoint.providers.claims import REQUEST_ID_RE
from crewpoint.providers.usage_meta import MAX_TOKENS, MAX_USD, ROW_KEYS, UsageRow

if TYPE_CHECKING:
    from pydantic import ValidationError

    from crewpoint.checkpoint.schema_types import *  # noqa: F403  (the body's types, for type checkers)
    from crewpoint.checkpoint.schema_types import CheckpointBody

SCHEMA_VERSION = 2
"""The body schema this crewpoint writes and reads; the one place it is set."""

Body = dict[str, Any]


def __getattr__(name: str) -> Any:
    """The body's types (:class:`CheckpointBody`, :class:`CrewState`, ...), read from the generated module when first
    asked for, so the generator runs whatever that file holds."""
    if name in {spec.name for spec in named(BODY)}:
        # lazy: the generator runs whatever the generated file holds, so it repairs a broken one
        from crewpoint.checkpoint import schema_types

        value = globals()[name] = getattr(schema_types, name)
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# -- the declaration -----------------------------------------------------------------------------------------

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
MESSAGE = Obj({"role": (STR, REQUIRED), "content": (STR, REQUIRED)}, name="MessageState")
LLM = Obj({"class": (STR, REQUIRED), "fields": (MapOf(ANY), dict)})
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
    },
    name="TaskOutputState",
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
        "fingerprint": (Nullable(MapOf(STR)), None),
    },
    name="TaskState",
)
REQUEST_ID = Matching(REQUEST_ID_RE, "a request id (1 to 64 of A-Z a-z 0-9 _ . -)")
"""A request id: part of the key its answer is claimed under, so one that could not be claimed is damaged."""
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
            "branch": (
                OPT_STR,
                None,
                "The run and branch that wrote the checkpoint holding the request (a fork's copy names its source's).",
            ),
            "task_index": (Nullable(Count()), None, "A crew task's request: the task's place in the crew."),
            "task_id": (OPT_STR, None),
            "method": (OPT_STR, None, "A method's review: the method."),
            "index": (Nullable(Count()), None, "A flow's request: the place of the method run that asks."),
            "key": (OPT_STR, None, "A flow's ``ask``: which ask of that method run (``<index>:<number>``)."),
        },
        name="PendingFeedbackState",
        doc="A request a person has not answered yet: the run waits on it (see :mod:`crewpoint.feedback`).",
    )
)
"""The request a waiting run holds (optional: a body without one is not waiting; no migration needed)."""
ANSWERED_FEEDBACK = ListOf(MapOf(ANY))
"""Each answered review of the run (feedback, outcome, who, when), oldest first."""


class _Dollars(Spec):
    """A number of dollars above 0, up to the largest budget (a budget's ``usd``)."""

    expected = f"a number of dollars above 0, up to {MAX_USD:,.0f}"
    python = "float"

    def check(self, value: Any, path: Path) -> Any:
        if type(value) not in (int, float):
            raise self.refuse(value, path)
        if not 0 < value <= MAX_USD:  # NaN fails this too
            raise Bad(path, f"expected {self.expected}, not {shown(value)}", kind_taken=True)
        return value


class _Tokens(Count):
    """A whole number of tokens from 1, up to the largest budget (a budget's ``tokens``)."""

    def check(self, value: Any, path: Path) -> Any:
        super().check(value, path)
        if value > MAX_TOKENS:
            raise Bad(path, f"expected a whole number of tokens up to {MAX_TOKENS:,}, not {value}", kind_taken=True)
        return value


BUDGET = Nullable(
    Obj({"usd": (Nullable(_Dollars()), None), "tokens": (Nullable(_Tokens(1)), None)}, name="BudgetState")
)
"""What a run of the entity may spend (:class:`crewpoint.budget.Budget`); a rebuild from the checkpoint alone keeps
it (optional: an entity without one has no limit; its ``to_state`` then writes none)."""
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
    },
    name="AgentState",
)
KICKOFF_HOOKS = Nullable(
    Obj(
        {"class": (STR, ""), "before_kickoff": (ListOf(STR), list), "after_kickoff": (ListOf(STR), list)},
        name="KickoffHooksState",
    )
)
"""A project crew's kickoff hooks, by name alone (:mod:`crewpoint.project`): they live in the program, so a rebuild
from the checkpoint alone says they are not run (optional: a crew without hooks writes none)."""


def _references_resolve(crew: dict[str, Any], path: Path) -> None:
    """Every task's agent and context name a member of this crew, so a rebuild never meets a dangling id."""
    agents = {a["id"] for a in crew["agents"]}
    tasks = {t["id"] for t in crew["tasks"]}
    for i, task in enumerate(crew["tasks"]):
        if task["agent"] and agents and task["agent"] not in agents:
            raise Bad((*path, "tasks", i, "agent"), f"names agent {task['agent']!r}, which this crew does not have")
        for j, ref in enumerate(task["context"] or []):
            if ref not in tasks:
                raise Bad((*path, "tasks", i, "context", j), f"names task {ref!r}, which this crew does not have")


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
        "kickoff_hooks": (KICKOFF_HOOKS, None),
        "pending_feedback": (PENDING_FEEDBACK, None),
        "human_feedback": (ANSWERED_FEEDBACK, list),
        "budget": (BUDGET, None),
    },
    _references_resolve,
    name="CrewState",
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
        "method_fingerprints": (MapOf(MapOf(STR)), dict),
        "state_writers": (MapOf(ListOf(STR)), dict),
    },
    name="FlowState",
)
ENTITY = ByKind({"crew": CREW, "flow": FLOW, "agent": AGENT}, name="EntityState")
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
                raise Bad(
                    ("entity", "tasks", i, "agent"),
                    f"expected the id of one of the crew's agents, not {shown(task['agent'])}",
                )
    elif entity["kind"] == "flow" and not entity["class"]:
        raise Bad(("entity", "class"), f"expected the flow's class path, not {shown(entity['class'])}")
    elif entity["kind"] == "agent" and entity["pending"] is None:
        raise Bad(("entity", "pending"), "expected the list of messages the agent was given, not null")


_NAME = Bounded("str", 500)
_TOKENS = Bounded("int", 10**15)
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
        "duration_s": (Bounded("num", 10**9), 0.0),
        "estimated": (BOOL, False),
    },
    name="UsageRow",
    doc="What LLM calls used, summed for one (unit, agent, model, provider, estimated).",
)


class _StoredRow(Converted):
    """A usage row as a body stores it, the list of its values in ``ROW_KEYS`` order (an older body's dict is read
    too), checked as the object :data:`USAGE_ROW` and read as the one row type
    (:class:`~crewpoint.providers.usage_meta.UsageRow`)."""

    def check(self, value: Any, path: Path) -> Any:
        checked = super().check(value, path)
        return UsageRow._make(checked[name] for name in ROW_KEYS)

    def annotation(self) -> str:
        return "UsageRow"

    def parts(self) -> Sequence[Spec]:
        return ()


def _row_values(value: list[Any], path: Path) -> Any:
    if len(value) != len(ROW_KEYS):
        raise Bad(path, f"expected a list of {len(ROW_KEYS)} values, not {len(value)}")
    return dict(zip(ROW_KEYS, value, strict=True))


_STORED_ROW = _StoredRow(USAGE_ROW, list, _row_values, f"a list of {len(ROW_KEYS)} values or an object")
USAGE_ROWS = ListOf(_STORED_ROW, most=100_000)
"""At most 100,000 usage rows, each stored as the list of its values in ``ROW_KEYS`` order (an older body's dict is
read too) and read as the object :data:`USAGE_ROW`."""
USAGE = Obj(
    {"rows": (USAGE_ROWS, list), "before": (USAGE_ROWS, list), "reused": (USAGE_ROWS, list)}, name="UsageSection"
)
"""The ``usage`` section: what the run spent (``rows``), what its chain spent before it (``before``) and the rows
of ``before`` whose task or method the run took over instead of running again (``reused``)."""
LINEAGE = Obj(
    {
        "id": (STR, ""),
        "parent_id": (OPT_STR, None),
        "branch": (STR, "main"),
        "lineage": (STR, ""),
        "sequence": (Count(), 0),
        "resumed_from": (OPT_STR, None),
    },
    name="LineageState",
)
ORIGIN = Obj({"file": (OPT_STR, None), "module": (OPT_STR, None), "attr": (OPT_STR, None)}, name="OriginState")
BODY = Obj(
    {
        "schema_version": (INT, SCHEMA_VERSION),
        "version": (STR, ""),
        "format": (
            KnownFormat(),
            "crewpoint",
            "``crewpoint``, or the registered format a body was translated from (the original sits under its name).",
        ),
        "entity": (ENTITY, REQUIRED),
        "inputs": (MapOf(ANY), dict),
        "events": (ListOf(MapOf(ANY)), list),  # crewpoint's own: EVENT each (see _runnable); others: their own
        "lineage": (LINEAGE, REQUIRED),
        "trigger": (STR, ""),
        "created_at": (NUM, 0.0),
        "origin": (Nullable(ORIGIN), None),
        "usage": (USAGE, lambda: {"rows": [], "before": [], "reused": []}),
    },
    _runnable,
    name="CheckpointBody",
    doc="A whole checkpoint body at :data:`SCHEMA_VERSION`, as :func:`load_body` returns it.",
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
        raise DamagedBody(source, "", f"expected an object, not {type_name(body)}")
    # A body translated from another format (CrewAI's) is made by this crewpoint as it reads, so it is current;
    # crewpoint's own bodies carry their version, the oldest (0) told by its shape too (``state``, no ``entity``).
    if body.get("format", "crewpoint") != "crewpoint":
        raw = body.get("schema_version", SCHEMA_VERSION)
    elif "schema_version" in body or "state" in body:
        raw = body.get("schema_version", 0)
    else:
        raise DamagedBody(source, "schema_version", "missing")
    if type(raw) is not int or raw < 0:
        raise DamagedBody(source, "schema_version", f"expected a version number, not {shown(raw)}")
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


def load_body(raw: Any, source: str = "checkpoint") -> CheckpointBody:
    """The one door: migrate ``raw`` and validate all of it, or raise :class:`DamagedBody` naming the field
    (:class:`UnsupportedSchema` for a newer schema). ``source`` names the checkpoint in messages (its id).

    The body returned is a checked copy with every field the schema knows filled in; ``raw`` is left as it is.
    """
    body = migrate(raw, source)
    try:
        return cast("CheckpointBody", BODY.check(body, ()))
    except Bad as bad:
        raise DamagedBody(source, dotted(bad.path), bad.problem) from None
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
        problem = f"expected {_EXPECTED[kind]}, not {type_name(first.get('input'))}"
    else:
        text = str(first.get("msg", "is not valid")).removeprefix("Value error, ")
        problem = text[:1].lower() + text[1:]
    return DamagedBody(source, dotted((*where, *first["loc"])), problem)


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


# -- the types readers see, generated ------------------------------------------------------------------------

_TYPES_HEADER = '''\
"""The checkpoint body's types, written from its declaration in ``crewpoint.checkpoint.schema`` by
``python -m crewpoint.checkpoint.schema``.

Do not edit: change the declaration and run that command (a test fails until this file matches). Every field is
there in a body :func:`crewpoint.checkpoint.schema.load_body` returns: the declaration's default where the stored
body had none.
"""

from __future__ import annotations

from typing import {imports}
{rows}
'''


def render_types() -> str:
    """The text of ``schema_types.py`` for the declaration as it is."""
    blocks = [declaration(spec) for spec in named(BODY)]
    text = "\n\n".join(blocks)
    imports = ", ".join(name for name in ("Any", "Literal", "TypedDict") if re.search(rf"\b{name}\b", text))
    rows = "\nfrom crewpoint.providers.usage_meta import UsageRow\n" if re.search(r"\bUsageRow\b", text) else ""
    return _TYPES_HEADER.format(imports=imports, rows=rows) + "\n" + text


def main(argv: Sequence[str]) -> int:
    """``python -m crewpoint.checkpoint.schema`` writes ``schema_types.py``; with ``--check`` it only says whether it
    is current."""
    path = FilePath(__file__).resolve().with_name("schema_types.py")
    return write_or_check(path, render_types(), "python -m crewpoint.checkpoint.schema", argv)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
