"""A real OTLP/HTTP trace receiver on 127.0.0.1: ``POST /v1/traces`` bodies decoded with opentelemetry-proto's
``ExportTraceServiceRequest`` into :class:`Span` records (hex ids, plain attribute values, events and links).

``with OtlpReceiver() as receiver:`` then ``receiver.endpoint`` (the base URL a run exports to) and
``receiver.wait_for(lambda spans: ...)``, which waits on the spans arriving (a condition, never the clock).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

KINDS = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass
class Span:
    name: str
    kind: str
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    status: int = 0
    start_ns: int = 0
    end_ns: int = 0
    service: str = ""


def _value(any_value: Any) -> Any:
    which = any_value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in any_value.array_value.values]
    if which == "kvlist_value":
        return {kv.key: _value(kv.value) for kv in any_value.kvlist_value.values}
    return getattr(any_value, which) if which else None


def _attributes(pairs: Any) -> dict[str, Any]:
    return {kv.key: _value(kv.value) for kv in pairs}


def decode(body: bytes) -> list[Span]:
    """The spans of one ``ExportTraceServiceRequest``."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    request.ParseFromString(body)
    spans = []
    for resource_spans in request.resource_spans:
        service = str(_attributes(resource_spans.resource.attributes).get("service.name", ""))
        for scope_spans in resource_spans.scope_spans:
            for s in scope_spans.spans:
                spans.append(
                    Span(
                        name=s.name,
                        kind=KINDS.get(s.kind, str(s.kind)),
                        trace_id=s.trace_id.hex(),
                        span_id=s.span_id.hex(),
                        parent_id=s.parent_span_id.hex(),
                        attributes=_attributes(s.attributes),
                        events=[(e.name, _attributes(e.attributes)) for e in s.events],
                        links=[
                            (link.trace_id.hex(), link.span_id.hex(), _attributes(link.attributes)) for link in s.links
                        ],
                        status=s.status.code,
                        start_ns=s.start_time_unix_nano,
                        end_ns=s.end_time_unix_nano,
                        service=service,
                    )
                )
    return spans


class OtlpReceiver:
    """The receiver: every span it was sent, in arrival order, in :attr:`spans`."""

    def __init__(self) -> None:
        self.spans: list[Span] = []
        self.requests = 0
        self._changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if self.path != "/v1/traces":
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                spans = decode(body)
                with receiver._changed:
                    receiver.spans.extend(spans)
                    receiver.requests += 1
                    receiver._changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="otlp-receiver", daemon=True
        )

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def wait_for(self, ready: Callable[[list[Span]], bool], timeout: float = 20.0) -> list[Span]:
        """The spans once ``ready(spans)`` holds (AssertionError naming what came if it never does)."""
        with self._changed:
            if not self._changed.wait_for(lambda: ready(list(self.spans)), timeout):
                raise AssertionError(f"the spans never matched; received: {[s.name for s in self.spans]}")
            return list(self.spans)

    def __enter__(self) -> OtlpReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)


def by_name(spans: list[Span]) -> dict[str, Span]:
    """The spans by name (the last of a name wins)."""
    return {s.name: s for s in spans}


def tree(spans: list[Span]) -> list[str]:
    """The spans as an indented outline of names, children in start order (what a trace view shows)."""
    ids = {s.span_id for s in spans}
    children: dict[str, list[Span]] = {}
    for s in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(s.parent_id if s.parent_id in ids else "", []).append(s)
    lines: list[str] = []

    def walk(parent: str, depth: int) -> None:
        for s in children.get(parent, []):
            lines.append("  " * depth + f"{s.name} [{s.kind}]")
            walk(s.span_id, depth + 1)

    walk("", 0)
    return lines


IDS = frozenset(
    {
        "crewpoint.run.id",
        "crewpoint.checkpoint.id",
        "crewpoint.resumed_from",
        "crewpoint.request.id",
        "crewpoint.task.id",
    }
)
"""Attributes whose values are ids made by the run: a golden file holds them as ``<id N>``, N by first appearance."""
TIMES = frozenset({"crewpoint.wait.seconds"})


def golden(spans: list[Span]) -> list[dict[str, Any]]:
    """The spans as a golden file holds them: each trace in the order it started, its spans depth first, ids made by
    the run numbered (so which spans share one still shows) and lengths of time left out."""
    names: dict[str, str] = {}

    def named(value: str) -> str:
        return names.setdefault(value, f"<id {len(names) + 1}>")

    def attributes(found: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted(found):
            value = found[key]
            out[key] = named(str(value)) if key in IDS else "<seconds>" if key in TIMES else value
        return out

    traces: list[str] = []
    for s in sorted(spans, key=lambda s: s.start_ns):
        if s.trace_id not in traces:
            traces.append(s.trace_id)
    roots = {(s.trace_id, s.span_id): f"<span of trace {traces.index(s.trace_id) + 1}: {s.name}>" for s in spans}
    rows: list[dict[str, Any]] = []
    for number, trace_id in enumerate(traces, 1):
        in_trace = [s for s in spans if s.trace_id == trace_id]
        for line in tree(in_trace):
            rows.append({"trace": number, "span": line})
        ordered = _depth_first(in_trace)
        for row, s in zip(rows[-len(ordered) :], ordered, strict=True):
            row["attributes"] = attributes(s.attributes)
            if s.events:
                row["events"] = [[name, attributes(attrs)] for name, attrs in s.events]
            if s.links:
                row["links"] = [
                    [roots.get((t, p), "<a run not exported here>"), attributes(attrs)] for t, p, attrs in s.links
                ]
            row["status"] = {0: "UNSET", 1: "OK", 2: "ERROR"}.get(s.status, str(s.status))
    return rows


def _depth_first(spans: list[Span]) -> list[Span]:
    ids = {s.span_id for s in spans}
    children: dict[str, list[Span]] = {}
    for s in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(s.parent_id if s.parent_id in ids else "", []).append(s)
    out: list[Span] = []

    def walk(parent: str) -> None:
        for s in children.get(parent, []):
            out.append(s)
            walk(s.span_id)

    walk("")
    return out


GOLDEN = Path(__file__).resolve().parent.parent / "fixtures" / "otel"


def assert_golden(scenario: str, spans: list[Span]) -> None:
    """The spans match ``tests/fixtures/otel/<scenario>.json``; ``CREWPOINT_UPDATE_GOLDEN=1`` writes it instead."""
    found = golden(spans)
    path = GOLDEN / f"{scenario}.json"
    if os.environ.get("CREWPOINT_UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    assert found == json.loads(path.read_text(encoding="utf-8")), f"the spans differ from {path}"
