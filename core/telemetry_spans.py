"""Spans from a run's events (the GenAI semantic conventions of :data:`crewpoint.telemetry.SEMCONV_VERSION`).

Loaded only when export is configured (:mod:`crewpoint.telemetry`): it imports the OpenTelemetry SDK. A span's parent
is the span of the nearest enclosing ``*_started`` event the bus nested the event in, so a crew kicked off in a flow's
method is a child of that method's span. A run's root span has ids drawn from its run id: a resumed, forked or
answered run links to the root of the run that wrote its checkpoint without storing anything more in it.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator
from opentelemetry.trace import Link, Span, SpanContext, SpanKind, Status, StatusCode, TraceFlags, set_span_in_context

from crewpoint._version import __version__
from crewpoint.telemetry import EXPORT_TIMEOUT_S, QUEUE_SIZE, Settings, call_cost, prices_in_force, run_cost
from crewpoint.telemetry_queue import Handoff, OnceExporter, asked_in_history, role_of

if TYPE_CHECKING:
    from crewpoint.events.base import BaseEvent
    from crewpoint.runtime import RuntimeState

log = logging.getLogger("crewpoint.telemetry")

_ROOTS = {"crew_kickoff_started": "crew_name", "flow_started": "flow_name"}
_ROOT_ENDS = frozenset({"crew_kickoff_completed", "flow_finished"})
_FAILED = frozenset({"task_failed", "method_execution_failed", "llm_call_failed"})
_REFUSED_TOOLS = frozenset({"tool_selection_error", "tool_validate_input_error"})
_WAITS = {"human_feedback_requested": "request_id", "flow_input_requested": "method_name"}
_ANSWERS = {"human_feedback_received": "request_id", "flow_input_received": "method_name"}
_EXTRAS = frozenset({"task_started", "llm_call_started", *_ROOT_ENDS, *_ANSWERS})
_HANDLED = frozenset(
    {
        *_ROOT_ENDS,
        *_FAILED,
        *_REFUSED_TOOLS,
        *_WAITS,
        *_ANSWERS,
        "crew_kickoff_failed",
        "task_completed",
        "method_execution_finished",
        "llm_call_completed",
        "tool_usage_finished",
        "tool_usage_error",
        "tool_execution_error",
        "budget_exceeded",
    }
)
_STOPS = {"failed": None, "interrupted": "interrupted", "budget": "budget_exceeded"}
_ENDINGS = ("_completed", "_finished", "_failed", "_error")
EVENT_QUEUE_SIZE = 16384
"""Events that may wait to become spans: more are dropped (said once), the run never waits."""


@dataclass(frozen=True, slots=True)
class _Seen:
    """What the run said as an event came (read on the run's thread; its spans are made later, on their own)."""

    run_id: str
    checkpoint_id: str | None
    branch: str
    source_run: str | None
    resumed_from: str | None
    extra: Any = None  # what only the event's moment knows: a task's role, a call's provider, a run's usage rows


def run_ids(run_id: str) -> tuple[int, int]:
    """The trace id and span id of the root span of the run ``run_id`` (a run's checkpoints name it)."""
    digest = hashlib.sha256(f"crewpoint-run:{run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1, int.from_bytes(digest[16:24], "big") or 1


class _Ids(IdGenerator):
    """Random ids, but for a run's root span the ids its run id gives (:func:`run_ids`)."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()
        self._next = threading.local()

    def generate_trace_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        return ids[0] if ids is not None else self._random.generate_trace_id()

    def generate_span_id(self) -> int:
        ids = getattr(self._next, "ids", None)
        if ids is not None:
            self._next.ids = None
            return int(ids[1])
        return self._random.generate_span_id()

    def root_next(self, run_id: str) -> None:
        self._next.ids = run_ids(run_id)


@dataclass
class _Open:
    span: Span
    run: str | None
    checkpoint_before: str | None = None
    error: str | None = None
    cost: Decimal = field(default_factory=lambda: Decimal(0))


class SpanMaker:
    """The listener: an event in, a span opened, ended or annotated."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        kwargs: dict[str, Any] = {"timeout": EXPORT_TIMEOUT_S}
        if settings.endpoint is not None:
            kwargs["endpoint"] = settings.endpoint.rstrip("/").removesuffix("/v1/traces") + "/v1/traces"
        if settings.headers:
            kwargs["headers"] = dict(settings.headers)
        exporter = OTLPSpanExporter(**kwargs)
        where = kwargs.get("endpoint") or getattr(exporter, "_endpoint", "the collector")
        # the exporter's own log lines would repeat each failure: crewpoint says it once
        logging.getLogger("opentelemetry.exporter.otlp.proto.http").setLevel(logging.CRITICAL)
        logging.getLogger("opentelemetry.exporter.otlp.proto.common").setLevel(logging.CRITICAL)
        resource = Resource.create({"service.name": settings.service_name} if settings.service_name else {})
        if str(resource.attributes.get("service.name", "")).startswith("unknown_service"):
            resource = resource.merge(Resource({"service.name": "crewpoint"}))
        self.ids = _Ids()
        self.provider = TracerProvider(resource=resource, id_generator=self.ids, shutdown_on_exit=True)
        self.provider.add_span_processor(
            BatchSpanProcessor(
                OnceExporter(exporter, f"{where}, set by {settings.source}"),
                max_queue_size=QUEUE_SIZE,
                export_timeout_millis=int(EXPORT_TIMEOUT_S * 1000),
            )
        )
        self.tracer = self.provider.get_tracer("crewpoint", __version__)
        self._handoff = Handoff(self._handle, EVENT_QUEUE_SIZE)
        atexit.register(self._drain)  # before the provider's own exit flush (registered earlier, run later)
        self._open: dict[str, _Open] = {}  # started event id -> its open span
        self._parents: dict[str, str | None] = {}  # started event id -> the event it is nested in
        self._roots: dict[str, str] = {}  # run id -> its root's started event id
        self._waits: dict[str, float] = {}  # what a person is asked (request id or method) -> when
        self._prices: dict[str, Any] = {}  # run id -> the prices in force as it started (read once per run)

    # -- the tree ----------------------------------------------------------------------------------------
    def _enclosing(self, event_id: str | None) -> _Open | None:
        seen = 0
        while event_id is not None and seen < 1000:
            found = self._open.get(event_id)
            if found is not None:
                return found
            event_id, seen = self._parents.get(event_id), seen + 1
        return None

    def _start(self, event: BaseEvent, name: str, kind: SpanKind, attributes: dict[str, Any], run: str | None) -> _Open:
        parent = self._enclosing(event.parent_event_id)
        context = set_span_in_context(parent.span) if parent is not None else None
        span = self.tracer.start_span(
            name, context=context, kind=kind, attributes=_clean(attributes), start_time=_ns(event.timestamp)
        )
        opened = _Open(span, run if run is not None else (parent.run if parent else None))
        self._open[event.event_id] = opened
        return opened

    def _take(self, event: BaseEvent) -> _Open | None:
        """The open span ``event`` ends (its ``*_started`` event's), no longer open; the caller finishes it."""
        started = event.started_event_id
        self._parents.pop(started or "", None)
        return self._open.pop(started, None) if started else None

    def _end(self, event: BaseEvent, error: str | None = None, attributes: dict[str, Any] | None = None) -> None:
        opened = self._take(event)
        if opened is not None:
            if attributes:
                opened.span.set_attributes(_clean(attributes))
            _finish(opened, opened.error or error, event.timestamp)

    # -- events ------------------------------------------------------------------------------------------
    def on_event(self, source: Any, event: BaseEvent) -> None:
        """On the run's thread: only what the event's moment knows goes onto the queue; spans are made on theirs."""
        kind = event.type
        if not (kind in _HANDLED or kind.endswith("_started") or (event.started_event_id and kind.endswith(_ENDINGS))):
            return
        seen = None
        state = _state()
        if state is not None and state.exports_traces:  # spans are a run's, and only of a run that asked for them
            try:
                extra = self._extra(source, event, state) if kind in _EXTRAS else None
            except Exception:  # a span never stops a run
                log.debug("no span for %s", kind, exc_info=True)
                return
            seen = _Seen(state.run_id, state.checkpoint_id, state.branch, state.source_run, state.resumed_from, extra)
        self._handoff.put((event, seen))

    def _extra(self, source: Any, event: BaseEvent, state: RuntimeState) -> Any:
        kind, data = event.type, event.__dict__
        if kind == "task_started":
            return data.get("agent_role") or role_of(source, data.get("task_id")) or data.get("task_name") or "agent"
        if kind == "llm_call_started":
            return self._chat(source, data)
        if kind in _ROOT_ENDS:
            return state.usage.rows()
        return asked_in_history(state, kind, str(data.get(_ANSWERS[kind])))  # an answer: when it was asked

    def _handle(self, item: tuple[Any, ...]) -> None:
        if item[0] == "end":
            self._end_run(*item[1:])
        else:
            self._on_event(*item)

    def _on_event(self, event: BaseEvent, state: _Seen | None) -> None:
        kind = event.type
        if kind.endswith("_started"):
            self._parents[event.event_id] = event.parent_event_id
        elif kind not in _HANDLED:
            self._parents.pop(event.started_event_id or "", None)
            return
        if state is None:
            return
        run = state.run_id
        data: dict[str, Any] = event.__dict__  # the fields as they are (read, never changed): no copy per event
        if kind in _ROOTS:
            self._root(event, state, str(data.get(_ROOTS[kind]) or "run"))
        elif kind == "task_started":
            role = state.extra
            task = self._start(event, f"invoke_agent {role}", SpanKind.INTERNAL, self._agent(role, data), run)
            task.checkpoint_before = state.checkpoint_id
        elif kind == "method_execution_started":
            method = data.get("method_name") or "method"
            step = self._start(event, f"invoke_agent {method}", SpanKind.INTERNAL, self._agent(method, data), run)
            step.checkpoint_before = state.checkpoint_id
        elif kind == "llm_call_started":
            model = data.get("model") or "model"
            self._start(event, f"chat {model}", SpanKind.CLIENT, state.extra, run)
        elif kind == "tool_usage_started":
            attributes = self._tool(data)
            if self.settings.capture_content and data.get("tool_args") is not None:
                attributes["gen_ai.tool.call.arguments"] = json.dumps(data["tool_args"], default=str)
            self._start(event, f"execute_tool {data.get('tool_name')}", SpanKind.INTERNAL, attributes, run)
        elif kind in _REFUSED_TOOLS:
            opened = self._start(
                event, f"execute_tool {data.get('tool_name')}", SpanKind.INTERNAL, self._tool(data), run
            )
            self._open.pop(event.event_id, None)
            _finish(opened, kind, event.timestamp)
        elif kind == "tool_execution_error":
            tool = self._enclosing(event.parent_event_id)
            if tool is not None:
                tool.error = str(data.get("error") or "").split(":", 1)[0] or kind
        elif kind == "llm_call_completed":
            self._chat_completed(event, data, state)
        elif kind in ("task_completed", "method_execution_finished"):
            unit = self._open.get(event.started_event_id or "")
            wrote = unit is not None and state.checkpoint_id != unit.checkpoint_before
            self._end(event, attributes={"crewpoint.checkpoint.id": state.checkpoint_id if wrote else None})
        elif kind == "crew_kickoff_failed":  # the run's closing ends it, with the exception's name (end_run)
            self._parents.pop(event.started_event_id or "", None)
        elif kind in _ROOT_ENDS:
            self._root_end(event, state, None)
        elif kind in _FAILED or kind == "tool_usage_error":
            self._end(event, kind)
        elif kind == "tool_usage_finished":
            captured = self.settings.capture_content and data.get("output") is not None
            self._end(event, attributes={"gen_ai.tool.call.result": str(data["output"]) if captured else None})
        elif kind == "budget_exceeded":
            root = self._root_of(run)
            if root is not None:
                root.error = "budget_exceeded"
        elif kind in _WAITS:  # (a flow's method_execution_paused and flow_paused that follow are the same wait)
            self._paused(event, data, run, kind)
        elif kind in _ANSWERS:
            self._resumed(event, data, run, state.extra, kind)

    def _root(self, event: BaseEvent, state: _Seen, name: str) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_workflow",
            "gen_ai.workflow.name": name,
            "crewpoint.run.id": state.run_id,
            "crewpoint.branch": state.branch,
            "crewpoint.entity.kind": "crew" if event.type == "crew_kickoff_started" else "flow",
        }
        links: list[Link] = []
        if self._enclosing(event.parent_event_id) is None:
            source_run = state.source_run
            if source_run and source_run != state.run_id:
                trace_id, span_id = run_ids(source_run)
                link_context = SpanContext(trace_id, span_id, is_remote=True, trace_flags=TraceFlags(1))
                links.append(Link(link_context, {"crewpoint.run.id": source_run}))
                attributes["crewpoint.resumed_from"] = state.resumed_from
            self.ids.root_next(state.run_id)
        parent = self._enclosing(event.parent_event_id)
        context = set_span_in_context(parent.span) if parent is not None else None
        span = self.tracer.start_span(
            f"invoke_workflow {name}",
            context=context,
            kind=SpanKind.INTERNAL,
            attributes=_clean(attributes),
            links=links,
            start_time=_ns(event.timestamp),
        )
        run = state.run_id
        self._open[event.event_id] = _Open(span, run)
        self._roots[run] = event.event_id
        self._prices[run] = prices_in_force()

    def _root_of(self, run: str | None) -> _Open | None:
        started = self._roots.get(run or "")
        return self._open.get(started) if started else None

    def _root_end(self, event: BaseEvent, state: _Seen, error: str | None) -> None:
        self._cost_and_checkpoint(state)
        self._roots.pop(state.run_id, None)
        self._end(event, error)

    def _cost_and_checkpoint(self, state: _Seen) -> None:
        root = self._root_of(state.run_id)
        if root is None:
            return
        usd = run_cost(state.extra, self._prices.pop(state.run_id, None))
        if usd is not None:
            root.span.set_attribute("crewpoint.cost.usd", usd)
        if state.checkpoint_id:
            root.span.set_attribute("crewpoint.checkpoint.id", state.checkpoint_id)

    def _agent(self, name: str, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": name,
            "crewpoint.task.id": data.get("task_id"),
            "crewpoint.task.name": data.get("task_name"),
            "crewpoint.method": data.get("method_name"),
        }

    def _tool(self, data: dict[str, Any]) -> dict[str, Any]:
        return {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": data.get("tool_name"),
            "gen_ai.agent.name": data.get("agent_role"),
        }

    def _chat(self, source: Any, data: dict[str, Any]) -> dict[str, Any]:
        provider = None
        try:
            provider = source.provider_name()
        except Exception:
            provider = None
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": provider or "openai",
            "gen_ai.request.model": data.get("model"),
        }
        if self.settings.capture_content:
            # lazy: the call in progress (its messages), read only when the user asked for contents
            from crewpoint.llm import call_messages

            messages = call_messages()
            if messages is not None:
                attributes["gen_ai.input.messages"] = json.dumps(messages, default=str)
        return attributes

    def _chat_completed(self, event: BaseEvent, data: dict[str, Any], state: _Seen) -> None:
        opened = self._take(event)
        if opened is None:
            return
        span, usage = opened.span, data.get("usage") or {}
        names = {
            "input_tokens": "gen_ai.usage.input_tokens",
            "output_tokens": "gen_ai.usage.output_tokens",
            "cache_read_tokens": "gen_ai.usage.cache_read.input_tokens",
            "cache_write_tokens": "gen_ai.usage.cache_creation.input_tokens",
            "reasoning_tokens": "gen_ai.usage.reasoning.output_tokens",
        }
        for key, attribute in names.items():
            count = usage.get(key)
            # input and output always; cache and reasoning where the server reported some (else it said nothing)
            if isinstance(count, int) and (count or key in ("input_tokens", "output_tokens")):
                span.set_attribute(attribute, count)
        span.set_attribute("gen_ai.response.model", str(usage.get("model") or data.get("model") or ""))
        if usage.get("estimated"):
            span.set_attribute("crewpoint.usage.estimated", True)
        usd = call_cost(usage, self._prices.get(opened.run or ""))
        if usd is not None:
            span.set_attribute("crewpoint.cost.usd", usd)
        if self.settings.capture_content and data.get("response") is not None:
            output = [{"role": "assistant", "parts": [{"type": "text", "content": data["response"]}]}]
            span.set_attribute("gen_ai.output.messages", json.dumps(output))
        _finish(opened, opened.error, event.timestamp)

    def _paused(self, event: BaseEvent, data: dict[str, Any], run: str | None, kind: str) -> None:
        key = _WAITS.get(kind)
        if key is not None:
            self._waits[str(data.get(key))] = event.timestamp
        attributes = _clean({"crewpoint.reason": kind, "crewpoint.request.id": data.get("request_id")})
        for opened in {id(o): o for o in (self._enclosing(event.parent_event_id), self._root_of(run)) if o}.values():
            opened.span.add_event("paused", attributes, timestamp=_ns(event.timestamp))

    def _resumed(self, event: BaseEvent, data: dict[str, Any], run: str | None, history: Any, kind: str) -> None:
        key = str(data.get(_ANSWERS[kind]))
        asked = self._waits.pop(key, None)
        if asked is None:
            asked = history  # asked by the run that waited: when, from the run's event history
        attributes: dict[str, Any] = {"crewpoint.reason": kind, "crewpoint.request.id": data.get("request_id")}
        if asked is not None:
            attributes["crewpoint.wait.seconds"] = round(max(event.timestamp - asked, 0.0), 3)
        for opened in {id(o): o for o in (self._enclosing(event.parent_event_id), self._root_of(run)) if o}.values():
            opened.span.add_event("resumed", _clean(attributes), timestamp=_ns(event.timestamp))

    # -- the end of a run ----------------------------------------------------------------------------------
    def end_run(self, state: RuntimeState, status: str, error: BaseException | None) -> None:
        """On the run's thread, as it closes: what it was, onto the queue (never dropped)."""
        seen = _Seen(
            state.run_id, state.checkpoint_id, state.branch, state.source_run, state.resumed_from, state.usage.rows()
        )
        stop = _STOPS.get(status, "") if status in _STOPS else None
        if status == "failed":
            stop = type(error).__name__ if error is not None else "failed"
        self._handoff.put(("end", seen, status, stop, time.time()), must=True)

    def _end_run(self, state: _Seen, status: str, stop: str | None, now: float) -> None:
        started = self._roots.pop(state.run_id, None)
        if started is None or started not in self._open:
            return
        self._cost_and_checkpoint_for(state, started)
        inside = [key for key in self._open if self._under(key, started)]
        for key in reversed(inside):  # the innermost first
            opened = self._open.pop(key)
            _finish(opened, opened.error or stop, now)
        root = self._open.pop(started)
        if status == "waiting":
            root.span.set_attribute("crewpoint.waiting", True)
        _finish(root, root.error or stop, now)

    def _cost_and_checkpoint_for(self, state: _Seen, started: str) -> None:
        self._roots[state.run_id] = started
        self._cost_and_checkpoint(state)
        self._roots.pop(state.run_id, None)

    def _under(self, key: str, root: str) -> bool:
        parent, seen = self._parents.get(key), 0
        while parent is not None and seen < 1000:
            if parent == root:
                return True
            parent, seen = self._parents.get(parent), seen + 1
        return False

    def _drain(self) -> None:
        self._handoff.drain(EXPORT_TIMEOUT_S)

    def flush(self, timeout_s: float) -> bool:
        start = time.monotonic()
        if not self._handoff.drain(timeout_s):
            return False
        left = max(timeout_s - (time.monotonic() - start), 0.001)
        return bool(self.provider.force_flush(int(left * 1000)))

    def shutdown(self) -> None:
        self._handoff.stop(EXPORT_TIMEOUT_S)
        atexit.unregister(self._drain)
        self.provider.shutdown()


def _finish(opened: _Open, error: str | None, timestamp: float) -> None:
    if error:
        opened.span.set_attribute("error.type", error)
        opened.span.set_status(Status(StatusCode.ERROR))
    opened.span.end(end_time=_ns(timestamp))


def _state() -> RuntimeState | None:
    # lazy: crewpoint.runtime imports crewpoint.telemetry (its hooks)
    from crewpoint.runtime import current_state

    return current_state()


def _ns(timestamp: float) -> int:
    return int(timestamp * 1_000_000_000)


def _clean(attributes: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in attributes.items() if value is not None}
