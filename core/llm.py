"""Language models: the base class, the embedded offline model and an OpenAI-compatible client.

Subclass :class:`BaseLLM` and implement ``call``; the runtime calls :meth:`BaseLLM.invoke`, which wraps
``call`` with the ``llm_call_started`` / ``llm_call_completed`` / ``llm_call_failed`` events.

An API key is read from the environment when a request is made. It is never a field, so it never reaches a
checkpoint, an event, a log line or an error message.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import random
import re
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from crewpoint.budget import Call, check_before_call, stop
from crewpoint.serialize import CheckpointState, callbacks_trusted, class_path, load_class, rebuild, state_fields
from crewpoint.text import clip

if TYPE_CHECKING:
    import httpx

__all__ = [
    "LLM",
    "BaseLLM",
    "LLMError",
    "ModelNotNamed",
    "OfflineLLM",
    "default_llm",
    "llm_from_state",
    "parse_reply",
    "resolve_llm",
]

log = logging.getLogger("crewpoint")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
PROVIDER_ENDPOINTS: Mapping[str, tuple[str, str]] = {
    "openai": (DEFAULT_BASE_URL, "OPENAI_API_KEY"),
    "groq": ("https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together_ai": ("https://api.together.xyz/v1", "TOGETHERAI_API_KEY"),
    "deepseek": ("https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
    "mistral": ("https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "fireworks_ai": ("https://api.fireworks.ai/inference/v1", "FIREWORKS_AI_API_KEY"),
    "xai": ("https://api.x.ai/v1", "XAI_API_KEY"),
    "cerebras": ("https://api.cerebras.ai/v1", "CEREBRAS_API_KEY"),
    "gemini": ("https://generativelanguage.googleapis.com/v1beta/openai", "GEMINI_API_KEY"),
    "ollama": ("http://localhost:11434/v1", "OLLAMA_API_KEY"),
    "ollama_chat": ("http://localhost:11434/v1", "OLLAMA_API_KEY"),
    "lm_studio": ("http://localhost:1234/v1", "LM_STUDIO_API_KEY"),
}
"""A CrewAI-style name's provider prefix (``groq/llama-3.1-8b-instant``) → the OpenAI-compatible endpoint an
:class:`LLM` without a ``base_url`` calls, and the variable its key is read from (the names LiteLLM reads)."""
NO_DEFAULT_ENDPOINT = frozenset({"anthropic", "azure", "vertex_ai", "bedrock", "cohere", "perplexity", "hosted_vllm"})
"""Provider prefixes with no OpenAI-compatible endpoint crewpoint knows: such an LLM without a ``base_url`` is
refused before any call instead of asking OpenAI's server with OpenAI's key."""


# -- call context ---------------------------------------------------------------------------------------


@dataclass(slots=True)
class _CallContext:
    call_id: str
    agent_id: str | None = None
    task_id: str | None = None
    agent_role: str | None = None
    reported: dict[str, int | None] | None = None
    started: float = 0.0
    messages: list[dict[str, str]] | None = None  # what was sent: its characters are counted only to estimate
    answer: str = ""


_current_call: ContextVar[_CallContext | None] = ContextVar("crewpoint_llm_call", default=None)


def call_messages() -> list[dict[str, str]] | None:
    """The messages of the LLM call in progress in this context (None outside a call)."""
    ctx = _current_call.get()
    return None if ctx is None else ctx.messages


def _new_call_id() -> str:
    return uuid.uuid4().hex


_rules: list[ModuleType] = []


def _usage_rules() -> ModuleType:
    """:mod:`crewpoint.usage`, imported by the first call that needs it (not by the API), then kept at hand."""
    if not _rules:
        # lazy: the usage rules load with the first call, not with the API
        import crewpoint.usage

        _rules.append(crewpoint.usage)
    return _rules[0]


def _characters(messages: list[dict[str, str]] | None) -> int:
    """The characters of the messages' contents (what the estimate counts)."""
    return sum(len(str(m.get("content", ""))) for m in messages) if messages else 0


def _one_line(text: str, limit: int = 300) -> str:
    return clip(text, limit)


# -- the base class ---------------------------------------------------------------------------------------


class BaseLLM(BaseModel):
    """A language model. Subclasses implement :meth:`call`; everything else has a default.

    An LLM is a pydantic model: a checkpoint saves it as its dotted class path plus its fields
    (:meth:`to_state`) and :func:`llm_from_state` brings back the same class. Untrusted, only the fields declared
    ``Annotated[..., CheckpointState]`` come back from a checkpoint (here the model and its sampling settings);
    a subclass declares its own the same way, and every other field takes its class default.
    """

    model_config = ConfigDict(defer_build=True)

    model: Annotated[str, CheckpointState]
    temperature: Annotated[float | None, CheckpointState] = None

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        """Answer a chat conversation (``[{"role": ..., "content": ...}, ...]``) with text."""
        raise NotImplementedError(f"{type(self).__qualname__} must implement call(messages, **kwargs)")

    async def acall(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        """The async twin of :meth:`call`; by default runs ``call`` in a worker thread."""
        import asyncio

        return await asyncio.to_thread(self.call, messages, **kwargs)

    # -- wrappers that emit events ---------------------------------------------------------------------
    def invoke(
        self,
        messages: list[dict[str, str]],
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
        **kwargs: Any,
    ) -> str:
        """Call the model; emit ``llm_call_started``, then ``llm_call_completed`` or ``llm_call_failed``. A run whose
        spending has reached its budget stops here, before the call (:class:`crewpoint.budget.BudgetExceeded`)."""
        call = self._budget_call(messages, kwargs, agent_id, task_id, agent_role)
        over = check_before_call(call)
        if over is not None:
            raise stop(*over, call)
        with self._call_events(messages, agent_id, task_id, agent_role) as ctx:
            ctx.answer = _check_text(self, self.call(messages, **kwargs))
        return ctx.answer

    @contextmanager
    def _call_events(
        self, messages: list[dict[str, str]], agent_id: str | None, task_id: str | None, agent_role: str | None
    ) -> Iterator[_CallContext]:
        """One call in progress (its context current): ``llm_call_started``, then ``llm_call_completed`` with the
        ``answer`` the body sets, or ``llm_call_failed`` when the body raises."""
        ctx = _CallContext(
            _new_call_id(), agent_id=agent_id, task_id=task_id, agent_role=agent_role, started=time.perf_counter()
        )
        token = _current_call.set(ctx)
        try:
            self._emit_started(ctx, messages)
            try:
                yield ctx
            except BaseException as exc:
                self._emit_failed(ctx, exc)
                raise
            self._emit_completed(ctx, ctx.answer)
        finally:
            _current_call.reset(token)

    async def ainvoke(
        self,
        messages: list[dict[str, str]],
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
        **kwargs: Any,
    ) -> str:
        """The async twin of :meth:`invoke`."""
        call = self._budget_call(messages, kwargs, agent_id, task_id, agent_role)
        over = check_before_call(call)
        if over is not None:
            import asyncio

            raise await asyncio.to_thread(stop, *over, call)
        with self._call_events(messages, agent_id, task_id, agent_role) as ctx:
            ctx.answer = _check_text(self, await self.acall(messages, **kwargs))
        return ctx.answer

    def output_limit(self, kwargs: Mapping[str, Any]) -> int | None:
        """The most output tokens a call may make (``max_tokens``, given to the call or set on the model), or None
        when nothing limits it: a budget bounds a call's cost by it (:mod:`crewpoint.budget`)."""
        for value in (kwargs.get("max_tokens"), getattr(self, "max_tokens", None)):
            if type(value) is int and value > 0:
                return value
        return None

    def _budget_call(
        self,
        messages: list[dict[str, str]],
        kwargs: Mapping[str, Any],
        agent_id: str | None,
        task_id: str | None,
        agent_role: str | None,
    ) -> Call:
        """The call about to be made, as a budget bounds it."""
        return Call(
            self.model,
            self.provider_name(),
            _characters(messages),
            self.output_limit(kwargs),
            agent_id=agent_id,
            task_id=task_id,
            agent_role=agent_role,
        )

    def _call_fields(self, agent_id: str | None, task_id: str | None, agent_role: str | None) -> dict[str, Any]:
        return {"model": self.model, "agent_id": agent_id, "task_id": task_id, "agent_role": agent_role}

    def _event_ids(self, ctx: _CallContext) -> dict[str, Any]:
        """What every event of one call names: the model, the call, and its agent and task."""
        return {
            **self._call_fields(ctx.agent_id, ctx.task_id, ctx.agent_role),
            "call_id": ctx.call_id,
            "source_type": "llm",
        }

    usage_provider: ClassVar[str] = "custom"
    """The provider a call's usage names (``usage.provider`` on ``llm_call_completed``); a subclass sets its own."""

    def provider_name(self) -> str:
        """The provider this model's usage is recorded under: from the model's settings, never from a server."""
        return self.usage_provider

    def record_usage(
        self,
        prompt_tokens: int | None,
        completion_tokens: int | None,
        *,
        cache_read_tokens: int | None = None,
        cache_write_tokens: int | None = None,
        reasoning_tokens: int | None = None,
    ) -> None:
        """Report token counts for the call in progress; they appear on ``llm_call_completed`` (``usage``). A call
        that reports none has its tokens estimated there (``ceil(characters / 4)``, marked ``estimated``)."""
        ctx = _current_call.get()
        if ctx is not None:
            ctx.reported = {
                "input_tokens": prompt_tokens,
                "output_tokens": completion_tokens,
                "cache_read_tokens": cache_read_tokens,
                "cache_write_tokens": cache_write_tokens,
                "reasoning_tokens": reasoning_tokens,
            }

    def record_usage_report(self, report: Mapping[str, Any]) -> None:
        """Report an OpenAI-compatible ``usage`` object for the call in progress (see :func:`usage_from_report`)."""
        # lazy: the usage rules load with the first call, not with the API
        from crewpoint.usage import TOKEN_KEYS, usage_from_report

        counts = usage_from_report(report)
        if any(counts[name] is not None for name in TOKEN_KEYS):
            ctx = _current_call.get()
            if ctx is not None:
                ctx.reported = counts

    def emit_chunk(self, chunk: str) -> None:
        """Emit one ``llm_stream_chunk`` for the call in progress (streaming subclasses use this)."""
        from crewpoint.events import LLMStreamChunkEvent, event_bus

        ctx = _current_call.get() or _CallContext(call_id=_new_call_id())
        event_bus.emit(self, LLMStreamChunkEvent(chunk=chunk, **self._event_ids(ctx)))

    def emit_thinking_chunk(self, chunk: str) -> None:
        """Emit one ``llm_thinking_chunk``: reasoning text the model streamed for the call in progress."""
        from crewpoint.events import LLMThinkingChunkEvent, event_bus

        ctx = _current_call.get() or _CallContext(call_id=_new_call_id())
        event_bus.emit(self, LLMThinkingChunkEvent(chunk=chunk, **self._event_ids(ctx)))

    def _emit_started(self, ctx: _CallContext, messages: list[dict[str, str]]) -> None:
        from crewpoint.events import LLMCallStartedEvent, event_bus

        ctx.messages = messages
        event_bus.emit(self, LLMCallStartedEvent(message_count=len(messages), **self._event_ids(ctx)))

    def _emit_completed(self, ctx: _CallContext, text: str) -> None:
        from crewpoint.events import LLMCallCompletedEvent, event_bus

        reported = ctx.reported
        estimating = reported is None or reported.get("input_tokens") is None
        usage = _usage_rules().call_usage(
            reported,
            model=self.model,
            provider=self.provider_name(),
            duration_s=time.perf_counter() - ctx.started if ctx.started else 0.0,
            sent_chars=_characters(ctx.messages) if estimating else 0,
            received_chars=len(text),
        )
        event_bus.emit(
            self,
            LLMCallCompletedEvent(
                response=text,
                prompt_tokens=usage["input_tokens"],
                completion_tokens=usage["output_tokens"],
                usage=usage,
                **self._event_ids(ctx),
            ),
        )

    def _emit_failed(self, ctx: _CallContext, exc: BaseException) -> None:
        from crewpoint.events import LLMCallFailedEvent, event_bus

        error = _one_line(str(exc)) or type(exc).__name__
        event_bus.emit(self, LLMCallFailedEvent(error=error, **self._event_ids(ctx)))

    # -- checkpoints -----------------------------------------------------------------------------------
    def to_state(self) -> dict[str, Any]:
        """``{"class": "<module>.<QualName>", "fields": {...}}``, JSON-ready, with no secret in it."""

        return {"class": class_path(type(self)), "fields": self.model_dump(mode="json")}


def _check_text(llm: BaseLLM, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{type(llm).__qualname__}.call returned {type(value).__name__}, expected str")
    return value


# -- restoring from a checkpoint --------------------------------------------------------------------------


class ModelNotNamed(ValueError):
    """A checkpoint whose agent ran on a real model, rebuilt with no model named (no program, no ``CREWPOINT_LLM``):
    it would go on with the offline model's text in place of the model's, so it does not go on."""

    def __init__(self, agent: str, model: str) -> None:
        self.agent, self.model = agent, model
        who = f"agent {agent!r}" if agent else "an agent"
        super().__init__(
            f"the checkpoint's {who} ran on the model {model!r}; rebuilt from the checkpoint alone it would run on "
            "the offline model: bind your program (kickoff(from_checkpoint=...) on your own crew, or --app on the "
            "command line) or name the model (CREWPOINT_LLM, with CREWPOINT_BASE_URL for its server)"
        )


def _is_crewpoints(cls: type) -> bool:
    return cls.__module__.split(".", 1)[0] == "crewpoint"


def llm_from_state(data: object, *, allow_import: bool | None = None, agent: str = "") -> BaseLLM:
    """Rebuild an agent's LLM saved by :meth:`BaseLLM.to_state` (or saved as a model name).

    Trusted (``CREWPOINT_DESERIALIZE_CALLBACKS=1``, or ``allow_import``), it comes back exactly as saved, its class
    imported if need be. Untrusted, the checkpoint never picks the class, the model or anything that reaches
    outside: a user class comes back when the running program defines it, with only its declared checkpoint state
    (``Annotated[..., CheckpointState]``) read from the checkpoint; crewpoint's own models (and a bare model name)
    come back as the model the user names (``CREWPOINT_LLM``/``CREWPOINT_BASE_URL``), with the saved sampling
    settings only for the same class. A checkpoint that ran offline goes on offline when no model is named; one
    that ran on a real model with none named raises :class:`ModelNotNamed`. Raises ``ValueError`` with a one-line
    reason.
    """

    trusted = callbacks_trusted() if allow_import is None else allow_import
    if data is None:
        return default_llm()
    if isinstance(data, str):
        return resolve_llm(data) if trusted else _program_default(data, {}, agent)
    if not isinstance(data, dict) or not isinstance(data.get("class"), str):
        raise ValueError("the checkpoint's LLM entry is damaged: it has no class name")
    path: str = data["class"]
    fields = data.get("fields") or {}
    if not isinstance(fields, dict):
        raise ValueError(f"the checkpoint's LLM entry for {path} is damaged: its fields are not a mapping")
    cls = load_class(path, BaseLLM, "LLM class", trusted=trusted)
    if trusted:
        return rebuild(cls, fields, "LLM class", trusted=True)
    if _is_crewpoints(cls):
        model = fields.get("model")
        return _program_default(model if isinstance(model, str) else "", state_fields(cls, fields), agent, cls)
    return rebuild(cls, fields, "LLM class", trusted=False)


_said_switch: set[tuple[str, str, str]] = set()


def _program_default(model: str, declared: dict[str, Any], agent: str, saved: type | None = None) -> BaseLLM:
    """The model the user names (``CREWPOINT_LLM``), with the saved sampling settings when the checkpoint's class is
    the default's. The checkpoint's model is never taken: one that differs is said once, before anything runs. A
    checkpoint that ran offline goes on offline (quietly) when the user names no model; one that ran on a real
    model raises :class:`ModelNotNamed` (its run must not go on with the offline model's text)."""
    ran_offline = saved is OfflineLLM if saved is not None else model.strip() in ("", "offline")
    if not ran_offline and not _named_model():
        raise ModelNotNamed(agent, model)
    base = default_llm(say_offline=not ran_offline)
    cls = type(base)
    values = base.model_dump()
    if saved is cls:
        cls.model_validate({**values, **declared})  # the checkpoint's fields, checked by their class as ever
        values.update({k: v for k, v in declared.items() if k != "model"})
    if model and model != base.model:
        key = (agent, model, base.model)
        if key not in _said_switch:
            _said_switch.add(key)
            who = f"agent {agent!r}" if agent else "an agent"
            log.warning(
                "the checkpoint names the model %r for %s; this run calls %r, the model CREWPOINT_LLM names",
                model,
                who,
                base.model,
            )
    return cls.model_validate(values)


def _named_model() -> str:
    """The model the user names for a rebuild (``CREWPOINT_LLM``; ``offline`` names the offline model), or ""."""
    return os.environ.get("CREWPOINT_LLM", "").strip()


# -- the offline model ------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z0-9][A-Za-z0-9'_-]*")
_STOPWORDS = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being below
    between both but by can could did do does doing down during each few for from further had has have having
    he her here hers herself him himself his how i if in into is it its itself just let me more most my myself
    no nor not now of off on once only or other our ours ourselves out over own please same she should so some
    such than that the their theirs them themselves then there these they this those through to too under
    until up use using very was we were what when where which while who whom why will with would you your
    yours yourself yourselves task expected output answer write give make provide return final using based
    current context earlier tasks relevant memories knowledge crew previous
    """.split()
)
_OPENERS = (
    "Here is a short answer on {topic}.",
    "A brief take on {topic}.",
    "Notes on {topic}.",
    "In short, this covers {topic}.",
)
_MIDDLES = (
    "The main point is {a}, with {b} as the supporting detail.",
    "{A} comes first; {b} follows from it.",
    "Looking at {a} and {b} together gives the clearest picture.",
)


def _keywords(text: str, limit: int) -> list[str]:
    seen: list[str] = []
    for word in _WORD.findall(text):
        low = word.lower().strip("'_-")
        if len(low) < 3 or low in _STOPWORDS or low in seen:
            continue
        seen.append(low)
        if len(seen) >= limit:
            break
    return seen


def _join_words(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def _tools_from_system(messages: list[dict[str, str]]) -> list[str]:
    names: list[str] = []
    for message in messages:
        if message.get("role") != "system":
            continue
        in_tools = False
        for line in str(message.get("content", "")).splitlines():
            stripped = line.strip()
            if stripped == "Tools:":
                in_tools = True
                continue
            if not in_tools:
                continue
            match = re.match(r"-\s*([^:]+?)\s*:", stripped)
            if match is None:
                in_tools = False
                continue
            names.append(match.group(1))
    return names


def _mention_position(name: str, text: str) -> int | None:
    best: int | None = None
    for variant in {name, name.replace("_", " ")}:
        match = re.search(rf"(?<!\w){re.escape(variant)}(?!\w)", text, flags=re.IGNORECASE)
        if match is not None and (best is None or match.start() < best):
            best = match.start()
    return best


def _is_observation(message: dict[str, str]) -> bool:
    return message.get("role") != "system" and str(message.get("content", "")).startswith("Observation:")


class OfflineLLM(BaseLLM):
    """The embedded model: no network, deterministic text derived from the prompt.

    It plays the agent's tool protocol: when the task names one of the listed tools and no tool has been
    used yet, it asks for that tool; otherwise it gives a ``Final Answer:``. ``delay`` seconds are slept
    per call so that runs can be watched.
    """

    model: str = "offline"
    delay: float = 0.0
    usage_provider: ClassVar[str] = "offline"

    _calls: int = PrivateAttr(default=0)

    @property
    def calls(self) -> int:
        """How many times this instance has answered."""
        return self._calls

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        if self.delay > 0:
            time.sleep(self.delay)
        return self._reply(messages)

    async def acall(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        import asyncio

        if self.delay > 0:
            await asyncio.sleep(self.delay)
        return self._reply(messages)

    def _reply(self, messages: list[dict[str, str]]) -> str:
        with _counter_lock:
            self._calls += 1
        text = self.respond(messages)
        ctx = _current_call.get()
        if ctx is not None:  # deterministic usage, reported (not estimated): the estimate rule on what went each way
            estimate_tokens = _usage_rules().estimate_tokens
            ctx.reported = {
                "input_tokens": estimate_tokens(_characters(messages)),
                "output_tokens": estimate_tokens(len(text)),
            }
        return text

    def respond(self, messages: list[dict[str, str]]) -> str:
        """The reply to ``messages``: a pure function of the conversation."""
        observations = [m for m in messages if _is_observation(m)]
        prompts = [m for m in messages if m.get("role") == "user" and not _is_observation(m)]
        prompt = str(prompts[-1].get("content", "")) if prompts else ""
        if not observations:
            tool = self._tool_for(messages, prompt)
            if tool is not None:
                query = " ".join(w for w in _keywords(prompt, 8) if w not in tool.lower().split())
                words = query.split()[:5]
                return f"Action: {tool}\nAction Input: {json.dumps({'query': ' '.join(words)})}"
        observation = ""
        if observations:
            observation = str(observations[-1].get("content", ""))[len("Observation:") :].strip()
        return "Final Answer: " + self._text(messages, prompt, observation)

    @staticmethod
    def _tool_for(messages: list[dict[str, str]], prompt: str) -> str | None:
        found: list[tuple[int, str]] = []
        for name in _tools_from_system(messages):
            position = _mention_position(name, prompt)
            if position is not None:
                found.append((position, name))
        return min(found)[1] if found else None

    @staticmethod
    def _text(messages: list[dict[str, str]], prompt: str, observation: str) -> str:
        digest = hashlib.sha256(
            json.dumps(
                [[str(m.get("role", "")), str(m.get("content", ""))] for m in messages], ensure_ascii=False
            ).encode("utf-8")
        ).hexdigest()
        seed = int(digest[:8], 16)
        words = _keywords(prompt, 6)
        topic = _join_words(words[:4]) if words else "the request"
        sentences = [_OPENERS[seed % len(_OPENERS)].format(topic=topic)]
        if len(words) >= 2:
            a, b = words[0], words[-1]
            middle = _MIDDLES[(seed >> 8) % len(_MIDDLES)]
            sentences.append(middle.format(a=a, A=a[:1].upper() + a[1:], b=b))
        if observation:
            shown = clip(observation, 1000, one_line=False)
            sentences.append(f"The tool reported: {shown}")
        sentences.append(f"[offline {digest[:8]}]")
        return " ".join(sentences)


_counter_lock = threading.Lock()


# -- parsing replies --------------------------------------------------------------------------------------

_ACTION = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(.*?)[ \t]*$", re.MULTILINE | re.IGNORECASE)
_ACTION_INPUT = re.compile(r"^[ \t]*Action[ \t]*Input[ \t]*:[ \t]*", re.MULTILINE | re.IGNORECASE)
_FINAL = re.compile(r"Final[ \t]*Answer[ \t]*:", re.IGNORECASE)


def _parse_action_input(raw: str) -> dict[str, Any]:
    text = raw.strip()
    fence = re.match(r"```(?:json)?\s*(.*?)\s*```", text, flags=re.DOTALL)
    if fence is not None:
        text = fence.group(1)
    start = text.find("{")
    if start != -1:
        try:
            value, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError:
            value = None
        if isinstance(value, dict):
            return value
    first_line = text.split("\n", 1)[0].strip().strip("\"'")
    return {"input": first_line} if first_line else {}


def parse_reply(text: str) -> tuple[Literal["action", "final"], str, dict[str, Any]]:
    """Read a ReAct reply: ``("action", tool_name, args)`` or ``("final", answer, {})``.

    ``Action: <tool>`` with ``Action Input: <json object>`` asks for a tool (an input that is not a JSON
    object becomes ``{"input": "<text>"}``); ``Final Answer: <text>`` ends. Whichever comes first wins, so
    an imagined observation after an action is ignored. A reply with neither is the answer as a whole.
    """
    action = _ACTION.search(text)
    final = _FINAL.search(text)
    if action is not None and (final is None or action.start() < final.start()):
        name = action.group(1).strip().strip("`'\"[]()*").strip()
        if name:
            rest = text[action.end() :]
            stop = _FINAL.search(rest)
            observation = re.search(r"^[ \t]*Observation[ \t]*:", rest, flags=re.MULTILINE | re.IGNORECASE)
            ends = [m.start() for m in (stop, observation) if m is not None]
            rest = rest[: min(ends)] if ends else rest
            args_match = _ACTION_INPUT.search(rest)
            args = _parse_action_input(rest[args_match.end() :]) if args_match else {}
            return "action", name, args
    if final is not None:
        return "final", text[final.end() :].strip(), {}
    return "final", text.strip(), {}


# -- the OpenAI-compatible client ---------------------------------------------------------------------------


class LLMError(RuntimeError):
    """A model call failed; the message is one line and never contains the API key."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


_RETRIES = 4
"""Retries of a call the server could not answer now (HTTP 429, 5xx, a timeout) before it fails with the reason."""
_BACKOFF = 0.25
"""Seconds before the first retry; each next one waits twice as long, jittered between a half and the whole."""
_WAIT_CAP = 30.0
"""The longest wait before a retry, whatever the server's ``Retry-After`` asks."""


def _retry_wait(attempt: int, retry_after: str | None = None) -> float:
    """Seconds before retry ``attempt`` (0: the first): the server's ``Retry-After`` (seconds or an HTTP date) when
    it gives one, else exponential backoff with jitter (calls that failed together do not come back together)."""
    if retry_after:
        try:
            asked = float(retry_after)
        except ValueError:
            try:
                asked = email.utils.parsedate_to_datetime(retry_after).timestamp() - time.time()
            except (TypeError, ValueError):
                asked = -1.0
        if asked >= 0:
            return min(asked, _WAIT_CAP)
    step = min(_WAIT_CAP, _BACKOFF * 2**attempt)
    return random.uniform(step / 2, step)


def _gave_up(error: LLMError) -> LLMError:
    return LLMError(f"{error}; gave up after {_RETRIES + 1} tries", status=error.status)


def _is_retryable(status: int) -> bool:
    return status == 429 or status >= 500


def _server_message(body: bytes | str) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    try:
        data = json.loads(text)
    except ValueError:
        return _one_line(text, 200)
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return _one_line(str(error["message"]), 200)
        for key in ("error", "detail", "message"):
            if isinstance(data.get(key), str) and data[key]:
                return _one_line(str(data[key]), 200)
    return _one_line(text, 200)


class _Stream:
    """Reads server-sent events from a chat-completions stream."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm
        self.parts: list[str] = []
        self.done = False

    def feed(self, line: str) -> None:
        if self.done or not line.startswith("data:"):
            return
        payload = line[len("data:") :].strip()
        if not payload:
            return
        if payload == "[DONE]":
            self.done = True
            return
        try:
            data = json.loads(payload)
        except ValueError:
            raise self.llm._error("sent a malformed stream event (not JSON)") from None
        if not isinstance(data, dict):
            raise self.llm._error("sent a malformed stream event")
        if "error" in data:
            raise self.llm._error(f"failed mid-stream: {_server_message(json.dumps(data))}")
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.llm.record_usage_report(usage)
        for choice in data.get("choices") or []:
            delta = (choice.get("delta") or {}) if isinstance(choice, dict) else {}
            if not isinstance(delta, dict):
                continue
            # reasoning streamed beside the answer: vLLM and DeepSeek say reasoning_content, Ollama and others reasoning
            thinking = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(thinking, str) and thinking:
                self.llm.emit_thinking_chunk(thinking)
            content = delta.get("content")
            if isinstance(content, str) and content:
                self.parts.append(content)
                self.llm.emit_chunk(content)

    def text(self) -> str:
        return "".join(self.parts)


class LLM(BaseLLM):
    """A model behind an OpenAI-compatible chat-completions API (OpenAI, Ollama, vLLM, llama.cpp server).

    The key is read from ``os.environ[api_key_env]`` at call time; with no key set no ``Authorization``
    header is sent, which suits local servers.
    """

    base_url: str = DEFAULT_BASE_URL
    api_key_env: str = "OPENAI_API_KEY"
    timeout: float = 60
    stream: bool = False
    max_tokens: Annotated[int | None, CheckpointState] = None
    provider: str | None = None
    """The provider usage and prices are recorded under (``"openai"``, ``"ollama"``, ``"groq"``, ...); set by the
    program, never read from the server's URL. Unset, a CrewAI-style name's prefix says it (``anthropic/claude-…``
    is Anthropic's), else ``"openai"``."""

    @model_validator(mode="after")
    def _provider_endpoint(self) -> LLM:
        """Without a ``base_url``, a provider prefix's endpoint (:data:`PROVIDER_ENDPOINTS`); without an
        ``api_key_env``, the key variable of the provider whose endpoint is called, so a key meant for one provider
        never goes to another's. What was given stays as given (and given stays: the fields set are unchanged)."""
        given = self.model_fields_set
        if "base_url" not in given:
            known = PROVIDER_ENDPOINTS.get(self._prefix())
            if known is not None:
                self.__dict__["base_url"] = known[0]
        if "api_key_env" not in given:
            url = self.base_url.rstrip("/")
            owner = next((env for base, env in PROVIDER_ENDPOINTS.values() if base == url), None)
            if owner is not None:
                self.__dict__["api_key_env"] = owner
        return self

    def _prefix(self) -> str:
        """The provider prefix the model's name starts with, as ``cost.split_provider`` reads it (lower case), the
        one ``provider`` names when it is one, or ""."""
        if self.provider is not None and self.provider.strip().lower() in PROVIDER_ENDPOINTS:
            return self.provider.strip().lower()
        head, sep, rest = self.model.partition("/")
        return head.strip().lower() if sep and rest.strip() else ""

    def _check_reachable(self) -> None:
        """Refuse, in one line and before any call, a provider crewpoint cannot speak to at a known address."""
        prefix = self._prefix()
        if "base_url" not in self.model_fields_set and prefix in NO_DEFAULT_ENDPOINT:
            raise LLMError(
                f"LLM {self.model}: {prefix} has no OpenAI-compatible endpoint crewpoint knows, and crewpoint speaks"
                " only that API; give base_url= an OpenAI-compatible server for this model (and api_key_env= the"
                " variable holding its key)"
            )

    def provider_name(self) -> str:
        return self._named()[0]

    @property
    def server_model(self) -> str:
        """The model as the server is asked for it: a CrewAI-style name without its provider prefix
        (``openai/gpt-4o-mini`` → ``gpt-4o-mini``), unless ``provider`` names another provider, whose own id it is
        then (Groq's ``openai/gpt-oss-20b``)."""
        return self._named()[1]

    def _named(self) -> tuple[str, str]:
        # lazy: model names live with the prices, which building an agent does not load
        from crewpoint.cost import split_provider

        prefix, rest = split_provider(self.model)
        if prefix is None or self.provider not in (None, prefix, self.model.partition("/")[0].strip().lower()):
            return self.provider or "openai", self.model
        return prefix, rest

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    # -- request pieces ---------------------------------------------------------------------------------
    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        if self.stream:
            headers["Accept"] = "text/event-stream"
        return headers

    def _body(self, messages: list[dict[str, str]], kwargs: dict[str, Any]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.server_model, "messages": messages, "stream": self.stream}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if self.stream:
            body["stream_options"] = {"include_usage": True}
        body.update(kwargs)
        return body

    def _error(self, what: str, status: int | None = None) -> LLMError:
        message = f"LLM {self.model} at {self.base_url} {what}"
        key = os.environ.get(self.api_key_env, "")
        if key:
            message = message.replace(key, "***")
        return LLMError(message, status=status)

    def _status_error(self, status: int, body: bytes | str) -> LLMError:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        key = os.environ.get(self.api_key_env, "")
        if key:  # before the message is clipped: a clipped key would no longer match
            text = text.replace(key, "***")
        detail = _server_message(text)
        what = f"returned HTTP {status}" + (f": {detail}" if detail else "")
        if status in (401, 403):
            what += f" (check the {self.api_key_env} environment variable)"
        return self._error(what, status)

    def _transport_error(self, exc: Exception) -> LLMError:
        import httpx

        if isinstance(exc, httpx.TimeoutException):
            return self._error(f"did not answer within {self.timeout:g}s (raise timeout= or check the server)")
        if isinstance(exc, httpx.ConnectError):
            return self._error(f"cannot be reached ({_one_line(str(exc), 120) or 'connection failed'}); is it running?")
        return self._error(f"request failed: {type(exc).__name__}: {_one_line(str(exc), 120)}")

    def _parse_json(self, content: bytes) -> str:
        try:
            data = json.loads(content)
        except ValueError:
            raise self._error("returned a malformed response (not JSON)") from None
        try:
            message = data["choices"][0]["message"]
            text = message.get("content")
        except (KeyError, IndexError, TypeError, AttributeError):
            raise self._error("returned a response without choices[0].message") from None
        usage = data.get("usage")
        if isinstance(usage, dict):
            self.record_usage_report(usage)
        return text if isinstance(text, str) else ""

    @staticmethod
    def _is_sse(response: httpx.Response) -> bool:
        return "text/event-stream" in response.headers.get("content-type", "")

    # -- sync ------------------------------------------------------------------------------------------
    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        import httpx

        self._check_reachable()
        body = self._body(messages, kwargs)
        with httpx.Client(timeout=self.timeout) as client:
            for attempt in range(_RETRIES + 1):
                try:
                    with client.stream("POST", self.url, json=body, headers=self._headers()) as response:
                        if response.status_code >= 400:
                            content = response.read()
                            if _is_retryable(response.status_code):
                                if attempt == _RETRIES:
                                    raise _gave_up(self._status_error(response.status_code, content))
                                time.sleep(self._retry(response, attempt))
                                continue
                            raise self._status_error(response.status_code, content)
                        if self.stream and self._is_sse(response):
                            return self._read_stream(response.iter_lines())
                        return self._parse_json(response.read())
                except httpx.TimeoutException as exc:
                    if attempt == _RETRIES:
                        raise _gave_up(self._transport_error(exc)) from None
                    time.sleep(self._retry(None, attempt))
                except httpx.HTTPError as exc:
                    raise self._transport_error(exc) from None
        raise AssertionError("unreachable")

    def _read_stream(self, lines: Iterable[str]) -> str:
        stream = _Stream(self)
        for line in lines:
            stream.feed(line)
            if stream.done:
                break
        return stream.text()

    # -- async -----------------------------------------------------------------------------------------
    async def acall(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        import asyncio

        import httpx

        self._check_reachable()
        body = self._body(messages, kwargs)
        async with httpx.AsyncClient(timeout=self.timeout) as client:
            for attempt in range(_RETRIES + 1):
                try:
                    async with client.stream("POST", self.url, json=body, headers=self._headers()) as response:
                        if response.status_code >= 400:
                            content = await response.aread()
                            if _is_retryable(response.status_code):
                                if attempt == _RETRIES:
                                    raise _gave_up(self._status_error(response.status_code, content))
                                await asyncio.sleep(self._retry(response, attempt))
                                continue
                            raise self._status_error(response.status_code, content)
                        if self.stream and self._is_sse(response):
                            stream = _Stream(self)
                            async for line in response.aiter_lines():
                                stream.feed(line)
                                if stream.done:
                                    break
                            return stream.text()
                        return self._parse_json(await response.aread())
                except httpx.TimeoutException as exc:
                    if attempt == _RETRIES:
                        raise _gave_up(self._transport_error(exc)) from None
                    await asyncio.sleep(self._retry(None, attempt))
                except httpx.HTTPError as exc:
                    raise self._transport_error(exc) from None
        raise AssertionError("unreachable")

    def _retry(self, response: httpx.Response | None, attempt: int) -> float:
        """The wait before retry ``attempt`` of a call the server answered with ``response`` (None: it timed out),
        logged."""
        wait = _retry_wait(attempt, response.headers.get("retry-after") if response is not None else None)
        what = f"returned HTTP {response.status_code}" if response is not None else f"timed out ({self.timeout:g}s)"
        log.info("LLM %s at %s %s; retrying in %.1fs", self.model, self.base_url, what, wait)
        return wait


# -- defaults ---------------------------------------------------------------------------------------------

_warned_offline = False
_warn_lock = threading.Lock()


def default_llm(*, say_offline: bool = True) -> BaseLLM:
    """``LLM(model=$CREWPOINT_LLM, base_url=$CREWPOINT_BASE_URL)`` if configured, else :class:`OfflineLLM` (said once,
    unless ``say_offline`` is False)."""
    global _warned_offline
    model = os.environ.get("CREWPOINT_LLM", "").strip()
    if model == "offline":
        return OfflineLLM()
    if model:
        return LLM(model=model, **_base_url_env())
    if not say_offline:
        return OfflineLLM()
    with _warn_lock:
        if not _warned_offline:
            _warned_offline = True
            log.warning("no LLM configured: using the offline model (set CREWPOINT_LLM to use a real one)")
    return OfflineLLM()


def resolve_llm(value: BaseLLM | str | None) -> BaseLLM:
    """``None`` → :func:`default_llm`; a model name → :class:`LLM` (``"offline"`` → :class:`OfflineLLM`)."""
    if value is None:
        return default_llm()
    if isinstance(value, BaseLLM):
        return value
    if isinstance(value, str):
        if value.strip() == "offline":
            return OfflineLLM()
        return LLM(model=value, **_base_url_env())
    raise TypeError(f"llm must be a BaseLLM, a model name or None, not {type(value).__name__}")


def _base_url_env() -> dict[str, str]:
    """``CREWPOINT_BASE_URL`` as an LLM's ``base_url`` when set; unset, the model's name chooses the endpoint (a
    provider prefix's, else OpenAI's)."""
    url = os.environ.get("CREWPOINT_BASE_URL")
    return {"base_url": url} if url else {}
