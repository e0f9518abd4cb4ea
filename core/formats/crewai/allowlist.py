"""What a copy of a CrewAI checkpoint handed to CrewAI may hold: an allow-list, as data, by CrewAI 1.15's models.

CrewAI rebuilds a checkpoint by validating it into its models, and several fields do more than hold a value there:
a mapping in a model's place becomes an LLM whose ``base_url`` the user's key is sent to, a tool's ``tool_type`` or
a callback's dotted path is imported, a file name is read or written, a server or a repository is contacted. So the
copy is rebuilt, field by field, from what each model is known to hold safely (:data:`SHAPES`, the walk is
:mod:`crewpoint.formats.crewai.rebuild`). Each field has a rule:

- :data:`KEEP`: data CrewAI reads as a value (text, numbers, flags, ids, outputs, a run's state);
- :data:`LLM`: a model. CrewAI builds an LLM from a model name, or from a mapping with ``llm_type``, ``model``,
  ``model_name`` or ``deployment_name``; the copy keeps the model and how it samples (:data:`LLM_STATE`), so its
  endpoint, key, headers and client settings come from the user's environment;
- :data:`EMBEDDER`: an embedder spec, kept as its provider and model (:data:`EMBEDDER_STATE`);
- :data:`MEMORY`: ``True``/``False``, or a ``Memory`` mapping (:data:`SHAPES` ``memory``), whose
  :data:`STORAGE` is kept only as the name of one of CrewAI's backends (:data:`MEMORY_STORAGES`), never a path;
- :data:`CHECKPOINT`: the entity's checkpoint setting, made to write into the store the checkpoint came from;
- :data:`CODE`: code or reach the checkpoint names (tools, callbacks, classes, hooks, files, servers, sharing): kept
  only when empty, else left out and said;
- a shape's name (``"agent"``), a list of it (``"[agent]"``) or a mapping of it (``"{node}"``).

A field a shape does not name is kept only when it is empty or a number or a flag; otherwise it is left out and said.
Trusted (``CREWPOINT_DESERIALIZE_CALLBACKS=1``) the checkpoint goes to CrewAI as saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KEEP = "keep"
LLM = "llm"
EMBEDDER = "embedder"
MEMORY = "memory setting"
CHECKPOINT = "checkpoint"
CODE = "code"
STORAGE = "storage"

LLM_STATE = frozenset(
    {
        "llm_type",
        "model",
        "provider",
        "is_litellm",
        "api",
        "temperature",
        "top_p",
        "max_tokens",
        "max_completion_tokens",
        "seed",
        "frequency_penalty",
        "presence_penalty",
        "n",
        "stop",
        "stream",
        "response_format",
        "logprobs",
        "top_logprobs",
        "reasoning_effort",
    }
)
"""The fields of a CrewAI LLM a checkpoint may set without trust: which model, and how it samples."""

LLM_MODEL_NAMES = ("model", "model_name", "deployment_name")
"""Where CrewAI finds an LLM mapping's model (``create_llm`` in ``utilities/llm_utils.py``, ``_validate_llm_ref``
in ``agents/agent_builder/base_agent.py``): the first one set wins."""

LLM_TYPES = frozenset({"base", "litellm", "openai", "anthropic", "azure", "bedrock", "gemini"})
"""The ``llm_type`` values CrewAI resolves through its own registry (``_LLM_TYPE_REGISTRY`` in ``base_agent.py``)."""

EMBEDDER_STATE = frozenset({"model", "model_name"})
"""The fields of an embedder's ``config`` a checkpoint may set without trust."""

EMBEDDER_CODE = frozenset({"custom"})
"""Embedder providers that call code the spec names (``rag/embeddings/factory.py``: ``custom`` takes a callable)."""

MEMORY_STORAGES = frozenset({"lancedb", "qdrant-edge"})
"""The ``Memory.storage`` names CrewAI picks a backend by (``memory/unified_memory.py``); any other string is a path
CrewAI writes to."""

_AGENT = {
    # crewai/agent/core.py Agent, on crewai/agents/agent_builder/base_agent.py BaseAgent
    "a2a": CODE,  # remote agents: servers to contact
    "adapted_agent": KEEP,
    "agent_executor": "executor",
    "agent_knowledge_context": KEEP,
    "allow_code_execution": CODE,  # the model's code runs on the user's machine
    "allow_delegation": KEEP,
    "apps": CODE,  # platform apps: a service to contact
    "backstory": KEEP,
    "cache": KEEP,
    "cache_handler": CODE,
    "callbacks": CODE,
    "checkpoint": CHECKPOINT,
    "checkpoint_kickoff_event_id": KEEP,
    "code_execution_mode": KEEP,
    "config": CODE,  # set as fields when validated: a way around every other rule
    "crew": KEEP,  # the crew's id
    "crew_knowledge_context": KEEP,
    "date_format": KEEP,
    "embedder": EMBEDDER,
    "entity_type": KEEP,
    "execution_context": "execution_context",
    "executor_class": KEEP,  # a name CrewAI looks up in its own map (_EXECUTOR_CLASS_MAP)
    "from_repository": CODE,  # fetched from CrewAI's service, and its tools imported
    "function_calling_llm": LLM,  # BeforeValidator(_validate_llm_ref); create_llm in Agent's post-init
    "goal": KEEP,
    "guardrail": CODE,
    "guardrail_max_retries": KEEP,
    "i18n": "i18n",
    "id": KEEP,
    "inject_date": KEEP,
    "knowledge": CODE,  # sources: files and URLs
    "knowledge_config": "knowledge_config",
    "knowledge_search_query": KEEP,
    "knowledge_sources": CODE,
    "knowledge_storage": CODE,
    "llm": LLM,  # BeforeValidator(_validate_llm_ref); create_llm in Agent's post-init
    "max_execution_time": KEEP,
    "max_iter": KEEP,
    "max_reasoning_attempts": KEEP,
    "max_retry_limit": KEEP,
    "max_rpm": KEEP,
    "max_tokens": KEEP,
    "mcps": CODE,  # MCP servers: commands to start, URLs to contact
    "memory": MEMORY,
    "multimodal": KEEP,
    "planning": KEEP,
    "planning_config": "planning_config",
    "prompt_template": KEEP,
    "reasoning": KEEP,
    "respect_context_window": KEEP,
    "response_template": KEEP,
    "role": KEEP,
    "security_config": KEEP,
    "skills": CODE,  # folders read
    "step_callback": CODE,
    "system_template": KEEP,
    "tool_failure_policy": KEEP,
    "tools": CODE,  # each tool's tool_type is imported (tools/base_tool.py _resolve_tool_dict), cache_function too
    "tools_handler": "tools_handler",
    "tools_results": KEEP,
    "use_better_compaction": KEEP,
    "use_system_prompt": KEEP,
    "verbose": KEEP,
}

_FLOW = {
    # crewai/flow/runtime/__init__.py Flow
    "checkpoint": CHECKPOINT,
    "checkpoint_completed_methods": KEEP,
    "checkpoint_method_counts": KEEP,
    "checkpoint_method_outputs": KEEP,
    "checkpoint_state": KEEP,
    "defer_trace_finalization": KEEP,
    "entity_type": KEEP,
    "execution_context": "execution_context",
    "human_feedback_history": KEEP,
    "initial_state": KEEP,  # a JSON schema CrewAI makes a model from, or the state's values: nothing imported
    "input_provider": CODE,  # a dotted path imported (_validate_input_provider)
    "last_human_feedback": KEEP,
    "max_method_calls": KEEP,
    "memory": MEMORY,
    "name": KEEP,
    "persistence": CODE,  # a backend and the file it writes
    "stream": KEEP,
    "suppress_flow_events": KEEP,
    "tracing": CODE,  # sends the run to CrewAI's service: the user's setting decides
}

_EXECUTOR = {
    # crewai/agents/agent_executor.py AgentExecutor (a Flow, saved among a crew's entities)
    **_FLOW,
    "after_llm_call_hooks": CODE,
    "agent": "agent",
    "before_llm_call_hooks": CODE,
    "callbacks": CODE,
    "crew": "crew",
    "executor_type": KEEP,  # a name CrewAI looks up in its own registry (_EXECUTOR_TYPE_REGISTRY)
    "function_calling_llm": LLM,
    "llm": LLM,
    "log_error_after": KEEP,
    "max_iter": KEEP,
    "original_tools": CODE,
    "prompt": KEEP,
    "request_within_rpm_limit": CODE,
    "respect_context_window": KEEP,
    "response_model": CODE,
    "step_callback": CODE,
    "stop_words": KEEP,
    "task": "task",
    "tools": CODE,
    "tools_description": KEEP,
    "tools_handler": "tools_handler",
    "tools_names": KEEP,
    "use_better_compaction": KEEP,
}

SHAPES: dict[str, dict[str, str]] = {
    # crewai/state/runtime.py RuntimeState, as CrewAI's checkpoint providers write it
    "state": {
        "crewai_version": KEEP,
        "branch": KEEP,
        "parent_id": KEEP,
        "trigger": KEEP,
        "entities": "[entity]",
        "event_record": "event_record",
    },
    # crewai/crew.py Crew
    "crew": {
        "after_kickoff_callbacks": CODE,
        "agents": "[agent]",
        "before_kickoff_callbacks": CODE,
        "cache": KEEP,
        "chat_llm": LLM,  # create_llm (utilities/crew_chat.py)
        "checkpoint": CHECKPOINT,
        "checkpoint_inputs": KEEP,
        "checkpoint_kickoff_event_id": KEEP,
        "checkpoint_train": KEEP,
        "config": CODE,
        "embedder": EMBEDDER,
        "entity_type": KEEP,
        "execution_context": "execution_context",
        "execution_logs": KEEP,
        "function_calling_llm": LLM,  # BeforeValidator(_validate_llm_ref), then create_llm
        "id": KEEP,
        "knowledge": CODE,
        "knowledge_sources": CODE,
        "manager_agent": "agent",
        "manager_llm": LLM,  # BeforeValidator(_validate_llm_ref), then create_llm
        "max_rpm": KEEP,
        "memory": MEMORY,
        "name": KEEP,
        "output_log_file": CODE,  # a file written
        "planning": KEEP,
        "planning_llm": LLM,  # BeforeValidator(_validate_llm_ref)
        "process": KEEP,
        "prompt_file": CODE,  # a file read
        "security_config": KEEP,
        "share_crew": CODE,  # sends the crew's data to CrewAI's service
        "skills": CODE,
        "step_callback": CODE,
        "stream": KEEP,
        "task_callback": CODE,
        "task_execution_output_json_files": CODE,
        "tasks": "[task]",
        "token_usage": KEEP,
        "tool_failure_policy": KEEP,
        "tracing": CODE,
        "trained_agents_file": CODE,
        "usage_metrics": KEEP,
        "verbose": KEEP,
    },
    "agent": _AGENT,
    "flow": _EXECUTOR,  # a flow entity is the user's Flow or an agent's executor: the executor's fields hold both
    "executor": _EXECUTOR,
    # crewai/task.py Task
    "task": {
        "agent": "agent",
        "allow_crewai_trigger_context": KEEP,
        "async_execution": KEEP,
        "callback": CODE,
        "checkpoint_original_description": KEEP,
        "checkpoint_original_expected_output": KEEP,
        "config": CODE,
        "context": "[task]",  # task ids, or tasks
        "converter_cls": CODE,
        "create_directory": KEEP,
        "delegations": KEEP,
        "description": KEEP,
        "end_time": KEEP,
        "expected_output": KEEP,
        "guardrail": CODE,
        "guardrail_max_retries": KEEP,
        "guardrails": CODE,
        "human_input": KEEP,
        "id": KEEP,
        "input_files": CODE,  # files read
        "markdown": KEEP,
        "max_retries": KEEP,
        "name": KEEP,
        "output": KEEP,  # TaskOutput: text and values
        "output_file": CODE,  # a file written
        "output_json": CODE,
        "output_pydantic": CODE,
        "processed_by_agents": KEEP,
        "prompt_context": KEEP,
        "response_model": CODE,
        "retry_count": KEEP,
        "security_config": KEEP,
        "start_time": KEEP,
        "tool_failure_policy": KEEP,
        "tools": CODE,
        "tools_errors": KEEP,
        "used_tools": KEEP,
    },
    # crewai/memory/unified_memory.py Memory
    "memory": {
        "complex_query_threshold": KEEP,
        "confidence_threshold_high": KEEP,
        "confidence_threshold_low": KEEP,
        "consolidation_limit": KEEP,
        "consolidation_threshold": KEEP,
        "default_importance": KEEP,
        "embedder": EMBEDDER,  # build_embedder (rag/embeddings/factory.py)
        "exploration_budget": KEEP,
        "importance_weight": KEEP,
        "llm": LLM,  # a model name, or an LLM
        "memory_kind": KEEP,
        "query_analysis_threshold": KEEP,
        "read_only": KEEP,
        "recency_half_life_days": KEEP,
        "recency_weight": KEEP,
        "root_scope": KEEP,
        "semantic_weight": KEEP,
        "storage": STORAGE,
    },
    # crewai/agent/planning_config.py PlanningConfig
    "planning_config": {
        "llm": LLM,  # BeforeValidator(_validate_llm_ref)
        "max_attempts": KEEP,
        "max_replans": KEEP,
        "max_step_iterations": KEEP,
        "max_steps": KEEP,
        "observe_steps": KEEP,
        "plan_prompt": KEEP,
        "reasoning_effort": KEEP,
        "refine_prompt": KEEP,
        "step_timeout": KEEP,
        "system_prompt": KEEP,
    },
    # crewai/context.py ExecutionContext, applied to the run's context when restored
    "execution_context": {
        "current_task_id": KEEP,
        "emission_sequence": KEEP,
        "event_id_stack": KEEP,
        "feedback_callback_info": KEEP,
        "flow_id": KEEP,
        "flow_method_name": KEEP,
        "flow_request_id": KEEP,
        "last_event_id": KEEP,
        "platform_token": CODE,  # who the run is to CrewAI's service: the user's own login decides
        "triggering_event_id": KEEP,
    },
    "knowledge_config": {"results_limit": KEEP, "score_threshold": KEEP},
    "i18n": {"prompt_file": CODE},
    "tools_handler": {"cache": CODE, "last_used_tool": CODE},
    # crewai/state/event_record.py EventRecord: events are validated into their classes (_resolve_event)
    "event_record": {"nodes": "{event_node}"},
    "event_node": {"event": "event", "edges": KEEP},
    # crewai/events/types/*.py: an event's fields are values, but for the models some events carry
    "event": {"*": KEEP, "agent": "agent", "crew": "crew", "task": "task", "tools": CODE},
}
"""Each shape: its fields and their rules (``"*"``: the rule of a field the shape does not name)."""

ENTITY_SHAPES = {"crew": "crew", "flow": "flow", "agent": "agent"}
"""A RuntimeState entity's shape, by its ``entity_type`` (CrewAI's discriminator)."""


def empty(value: Any) -> bool:
    """Does ``value`` name nothing (None, False, an empty string, list or mapping)?"""
    return value is None or value is False or (isinstance(value, (str, list, dict)) and not value)


def rebuild_llm(value: Any) -> Any:
    """A model as CrewAI may build it without trust: its name, or its mapping's :data:`LLM_STATE` (None when it
    names no model)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return None
    model = next((value[k] for k in LLM_MODEL_NAMES if isinstance(value.get(k), str) and value[k]), None)
    if model is None:
        return None
    out = {k: v for k, v in value.items() if k in LLM_STATE and _plain_setting(v)}
    out["model"] = model
    if out.get("llm_type") not in LLM_TYPES:
        out.pop("llm_type", None)
    return out


def _plain_setting(value: Any) -> bool:
    if isinstance(value, Mapping):
        return all(isinstance(k, str) and _plain_setting(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_plain_setting(v) for v in value)
    return value is None or isinstance(value, (str, bool, int, float))


def rebuild_embedder(value: Any) -> Any:
    """An embedder spec kept as its provider and model; None when its provider runs code the spec names."""
    if not isinstance(value, Mapping):
        return None
    provider = value.get("provider")
    if not isinstance(provider, str) or provider in EMBEDDER_CODE:
        return None
    config = value.get("config")
    config = config if isinstance(config, Mapping) else {}
    return {
        "provider": provider,
        "config": {k: v for k, v in config.items() if k in EMBEDDER_STATE and isinstance(v, str)},
    }
