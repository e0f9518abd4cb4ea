"""The checkpoint body's types, written from its declaration in ``crewpoint.checkpoint.schema`` by
``python -m crewpoint.checkpoint.schema``.

Do not edit: change the declaration and run that command (a test fails until this file matches). Every field is
there in a body :func:`crewpoint.checkpoint.schema.load_body` returns: the declaration's default where the stored
body had none.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from crewpoint.providers.usage_meta import UsageRow


class MessageState(TypedDict):
    role: str
    content: str


class BudgetState(TypedDict):
    usd: float | None
    tokens: int | None


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
    budget: BudgetState | None


class TaskOutputState(TypedDict):
    description: str
    raw: str
    expected_output: str
    name: str | None
    agent: str
    summary: str


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
    fingerprint: dict[str, str] | None


KickoffHooksState = TypedDict(
    "KickoffHooksState",
    {
        "class": str,
        "before_kickoff": list[str],
        "after_kickoff": list[str],
    },
)


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
    task_index: int | None
    """A crew task's request: the task's place in the crew."""
    task_id: str | None
    method: str | None
    """A method's review: the method."""
    index: int | None
    """A flow's request: the place of the method run that asks."""
    key: str | None
    """A flow's ``ask``: which ask of that method run (``<index>:<number>``)."""


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
    kickoff_hooks: KickoffHooksState | None
    pending_feedback: PendingFeedbackState | None
    human_feedback: list[dict[str, Any]]
    budget: BudgetState | None


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
        "budget": BudgetState | None,
        "method_fingerprints": dict[str, dict[str, str]],
        "state_writers": dict[str, list[str]],
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
