"""A real OpenAI-compatible chat-completions server on 127.0.0.1 for tests.

Use the ``llm_server`` fixture (import it into a test module) or ``with LLMServer() as server:``.
Set ``server.mode`` to choose how ``POST /v1/chat/completions`` answers:

- ``"echo"``: a JSON completion ``"echo: <last user message>"`` with ``usage``;
- ``"stream"``: the same text as server-sent events in ``server.chunks`` content chunks, then ``[DONE]``;
- ``"fail_then_ok"``: HTTP ``server.fail_status`` (500) ``server.failures`` times, then like ``"echo"``;
- ``"always_fail"``: HTTP ``server.fail_status`` every time;
- ``"slow_then_ok"``: waits ``server.delay`` seconds before answering ``server.failures`` times, then like
  ``"echo"`` (a client whose timeout is shorter times out that often);
- ``"unauthorized"``: HTTP 401 with an OpenAI-style error body whose message is ``server.error_message``;
- ``"malformed"``: HTTP 200 with a body that is not JSON;
- ``"slow"``: waits ``server.delay`` seconds before answering like ``"echo"``.

``server.retry_after`` (text) is sent as the ``Retry-After`` header of each failed answer.

``server.usage`` (a dict) is the ``usage`` object every answer reports instead of the counted one (streamed: in
the last chunk, when the request asks with ``stream_options.include_usage``); ``server.report_usage = False``
leaves ``usage`` out of every answer. ``server.thinking`` (a list of texts) is streamed first as
``reasoning_content`` chunks, as vLLM and DeepSeek stream a model's reasoning. ``server.replies`` (a list) answers
the next requests in order, one each, before ``reply`` or the echo.

``server.hold(after=N)`` answers the next N requests, then keeps every later one unanswered (recorded, then
waiting) until ``server.release()``: a test holds a run mid-task for as long as it needs, without a clock.

Every request is recorded in ``server.requests`` (path, headers, parsed JSON body).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: Any


class LLMServer:
    def __init__(self) -> None:
        self.mode = "echo"
        self.chunks = 3
        self.failures = 1
        self.fail_status = 500
        self.retry_after: str | None = None
        self.delay = 2.0
        self.error_message = "Incorrect API key provided."
        self.reply: str | None = None
        self.thinking: list[str] = []
        self.replies: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.report_usage = True
        self.requests: list[RecordedRequest] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._held_from: int | None = None
        self._released = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _make_handler(self))
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="llm-test-server", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LLMServer:
        self._thread.start()
        return self

    def hold(self, after: int = 0) -> None:
        """Answer the next ``after`` requests, then none until :meth:`release` (or the server stops)."""
        with self._lock:
            self._released.clear()
            self._held_from = len(self.requests) + after + 1

    def release(self) -> None:
        """Answer the held requests and every one after."""
        with self._lock:
            self._held_from = None
            self._released.set()

    def held(self, number: int) -> bool:
        """Wait while request ``number`` is held; True if the server stopped meanwhile (nothing is answered)."""
        with self._lock:
            start = self._held_from
        if start is None or number < start:
            return False
        while not self._released.wait(0.05):
            if self._stopping.is_set():
                return True
        return False

    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> LLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- what the handler asks ------------------------------------------------------------------------
    def record(self, request: RecordedRequest) -> int:
        with self._lock:
            self.requests.append(request)
            return len(self.requests)

    def reply_for(self, body: Any) -> str:
        with self._lock:
            if self.replies:
                return self.replies.pop(0)
        if self.reply is not None:
            return self.reply
        last = ""
        if isinstance(body, dict):
            for message in body.get("messages") or []:
                if isinstance(message, dict) and message.get("role") == "user":
                    last = str(message.get("content", ""))
        return f"echo: {last}"

    def usage_for(self, body: Any, text: str) -> dict[str, Any] | None:
        if not self.report_usage:
            return None
        return dict(self.usage) if self.usage is not None else _usage(body, text)


def _usage(body: Any, text: str) -> dict[str, int]:
    prompt = 0
    if isinstance(body, dict):
        prompt = sum(len(str(m.get("content", "")).split()) for m in body.get("messages") or [])
    completion = len(text.split())
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def _split(text: str, parts: int) -> list[str]:
    parts = max(1, parts)
    size = -(-len(text) // parts) or 1
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _make_handler(server: LLMServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(
            self,
            status: int,
            payload: bytes,
            content_type: str = "application/json",
            headers: dict[str, str] | None = None,
        ) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(payload)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(payload)

        def _send_json(self, status: int, data: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(data).encode("utf-8"), headers=headers)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw)
            except ValueError:
                body = None
            number = server.record(RecordedRequest(self.path, dict(self.headers.items()), body))
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send_json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                return
            if server.held(number):
                return
            mode = server.mode
            if (mode == "fail_then_ok" and number <= server.failures) or mode == "always_fail":
                self._send_json(
                    server.fail_status,
                    {"error": {"message": "the server is overloaded", "type": "server_error"}},
                    {"Retry-After": server.retry_after} if server.retry_after is not None else None,
                )
                return
            if mode == "slow_then_ok" and number <= server.failures and server._stopping.wait(server.delay):
                return
            if mode == "unauthorized":
                self._send_json(
                    401,
                    {
                        "error": {
                            "message": server.error_message,
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                )
                return
            if mode == "malformed":
                self._send(200, b"<html>this is not json", "text/html")
                return
            if mode == "slow" and server._stopping.wait(server.delay):
                return
            text = server.reply_for(body)
            model = body.get("model", "") if isinstance(body, dict) else ""
            if mode == "stream":
                self._stream(body, model, text)
                return
            answer: dict[str, Any] = {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text},
                        "finish_reason": "stop",
                    }
                ],
            }
            usage = server.usage_for(body, text)
            if usage is not None:
                answer["usage"] = usage
            self._send_json(200, answer)

        def _stream(self, body: Any, model: str, text: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Connection", "close")
            self.end_headers()

            def event(data: Any) -> None:
                self.wfile.write(f"data: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

            def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
                return {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "model": model,
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }

            self.wfile.write(b": keep-alive\n\n")
            event(chunk({"role": "assistant", "content": ""}))
            for thought in server.thinking:
                event(chunk({"reasoning_content": thought}))
            for piece in _split(text, server.chunks):
                event(chunk({"content": piece}))
            event(chunk({}, "stop"))
            options = body.get("stream_options") if isinstance(body, dict) else None
            usage = server.usage_for(body, text)
            if isinstance(options, dict) and options.get("include_usage") and usage is not None:
                event({"id": "chatcmpl-test", "choices": [], "usage": usage})
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return Handler


@pytest.fixture
def llm_server() -> Iterator[LLMServer]:
    with LLMServer() as server:
        yield server
