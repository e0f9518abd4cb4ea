"""The LLM layer: the offline model, reply parsing, the OpenAI-compatible client and checkpoint state."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from llm_server import LLMServer, llm_server

import crewpoint.llm as llm_module
from crewpoint.events import (
    BaseEvent,
    LLMCallCompletedEvent,
    LLMCallFailedEvent,
    LLMCallStartedEvent,
    LLMStreamChunkEvent,
    event_bus,
)
from crewpoint.llm import (
    DEFAULT_BASE_URL,
    LLM,
    BaseLLM,
    LLMError,
    ModelNotNamed,
    OfflineLLM,
    default_llm,
    llm_from_state,
    parse_reply,
    resolve_llm,
)

__all__ = ["llm_server"]

KEY = "test-key-123"

SYSTEM = {
    "role": "system",
    "content": (
        "You are a researcher.\n"
        "Tools:\n"
        "- web_search: look things up on the web\n"
        "- calculator: do arithmetic\n"
        "\n"
        "Reply with 'Action: <tool>' and 'Action Input: <json>', or 'Final Answer: <text>'."
    ),
}


class ShoutingLLM(BaseLLM):
    """A user-written model: only ``call`` is implemented."""

    model: str = "shout"
    volume: int = 3
    suffix: str = "!"

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        return messages[-1]["content"].upper() + self.suffix * self.volume


class BrokenLLM(BaseLLM):
    model: str = "broken"

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        raise RuntimeError("the model fell over")


@pytest.fixture
def events() -> Iterator[list[BaseEvent]]:
    seen: list[BaseEvent] = []

    def record(source: Any, event: BaseEvent) -> None:
        if event.type.startswith("llm_"):
            seen.append(event)

    with event_bus.scoped_handlers():
        event_bus.register("*", record)
        yield seen


@pytest.fixture
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- the offline model --------------------------------------------------------------------------------------


def test_offline_is_deterministic_and_follows_the_prompt() -> None:
    prompt = [user("Summarise the history of lighthouse engineering in Scotland")]
    first = OfflineLLM().call(prompt)
    assert first == OfflineLLM().call([dict(m) for m in prompt])
    assert first.startswith("Final Answer: ")
    assert "lighthouse" in first and "scotland" in first.lower()
    other = OfflineLLM().call([user("Explain how sourdough bread rises")])
    assert other != first
    assert "sourdough" in other
    answer = parse_reply(first)[1]
    assert 1 <= answer.count(". ") + 1 <= 5


def test_offline_asks_for_a_mentioned_tool_then_uses_the_observation() -> None:
    llm = OfflineLLM()
    messages = [SYSTEM, user("Use web_search to find the tallest lighthouse in Europe.")]
    reply = llm.call(messages)
    kind, tool, args = parse_reply(reply)
    assert (kind, tool) == ("action", "web_search")
    assert reply.startswith("Action: web_search\nAction Input: {")
    assert "lighthouse" in args["query"] and "web_search" not in args["query"]

    messages += [{"role": "assistant", "content": reply}, user("Observation: Phare de l'Île Vierge, 82.5 m")]
    final = llm.call(messages)
    kind, answer, _ = parse_reply(final)
    assert kind == "final"
    assert "Phare de l'Île Vierge, 82.5 m" in answer


def test_offline_matches_tool_names_as_words() -> None:
    llm = OfflineLLM()
    spaced = parse_reply(llm.call([SYSTEM, user("Do a web search on tide tables.")]))
    assert spaced[:2] == ("action", "web_search")
    assert parse_reply(llm.call([SYSTEM, user("Compute 2+2 with the calculator")]))[:2] == (
        "action",
        "calculator",
    )
    # "calculators" is not the word "calculator"; no tool named -> a final answer
    assert parse_reply(llm.call([SYSTEM, user("Compare pocket calculators")]))[0] == "final"


def test_offline_answers_without_a_tools_section() -> None:
    llm = OfflineLLM()
    no_tools = [{"role": "system", "content": "You are helpful."}, user("Use web_search for news")]
    assert llm.call(no_tools).startswith("Final Answer: ")
    assert llm.call([user("Use web_search for news")]).startswith("Final Answer: ")


def test_offline_delay_and_call_count_are_not_saved() -> None:
    llm = OfflineLLM(delay=0.15)
    started = time.monotonic()
    llm.call([user("hello there")])
    assert time.monotonic() - started >= 0.15
    llm.call([user("hello again")])
    assert llm.calls == 2
    assert llm.to_state() == {
        "class": "crewpoint.llm.OfflineLLM",
        "fields": {"model": "offline", "temperature": None, "delay": 0.15},
    }


async def test_offline_async_call_sleeps_without_blocking_the_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    llm = OfflineLLM(delay=0.2)
    sleeping: list[float] = []
    both_asleep = asyncio.Event()
    real_sleep = asyncio.sleep

    async def sleep(delay: float, result: object = None) -> object:
        if delay != 0.2:
            return await real_sleep(delay, result)
        sleeping.append(delay)
        if len(sleeping) == 2:
            both_asleep.set()
        await asyncio.wait_for(both_asleep.wait(), 30)  # the other call goes to sleep while this one sleeps
        return result

    monkeypatch.setattr(asyncio, "sleep", sleep)
    replies = await asyncio.gather(llm.ainvoke([user("alpha beta")]), llm.ainvoke([user("alpha beta")]))
    assert sleeping == [0.2, 0.2]
    assert replies[0] == replies[1] == OfflineLLM().call([user("alpha beta")])


# -- invoke: events around every call ---------------------------------------------------------------------


def test_invoke_emits_started_and_completed_with_one_call_id(events: list[BaseEvent]) -> None:
    llm = OfflineLLM()
    reply = llm.invoke([SYSTEM, user("Write about owls")], agent_id="a1", task_id="t1")
    llm.invoke([user("Write about owls")])
    started, completed, started2, completed2 = events
    assert isinstance(started, LLMCallStartedEvent) and isinstance(completed, LLMCallCompletedEvent)
    assert started.call_id == completed.call_id != started2.call_id == completed2.call_id
    assert (started.model, started.message_count, started.agent_id, started.task_id) == (
        "offline",
        2,
        "a1",
        "t1",
    )
    assert completed.response == reply and completed.task_id == "t1"
    assert completed.prompt_tokens and completed.completion_tokens


def test_invoke_on_a_user_subclass_reports_failure_and_reraises(events: list[BaseEvent]) -> None:
    assert ShoutingLLM().invoke([user("hi")]) == "HI!!!"
    with pytest.raises(RuntimeError, match="fell over"):
        BrokenLLM().invoke([user("hi")], task_id="t9")
    kinds = [e.type for e in events]
    assert kinds == ["llm_call_started", "llm_call_completed", "llm_call_started", "llm_call_failed"]
    failed = events[-1]
    assert isinstance(failed, LLMCallFailedEvent)
    assert failed.error == "the model fell over" and failed.task_id == "t9"
    assert failed.call_id == events[-2].call_id


async def test_ainvoke_on_a_user_subclass_runs_call_in_a_thread(events: list[BaseEvent]) -> None:
    assert await ShoutingLLM(volume=1).ainvoke([user("hey")], agent_id="a2") == "HEY!"
    assert [e.type for e in events] == ["llm_call_started", "llm_call_completed"]
    assert events[1].agent_id == "a2"


# -- parse_reply --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('Action: web_search\nAction Input: {"query": "owls"}', ("action", "web_search", {"query": "owls"})),
        (
            'Thought: I need data.\nAction: `calculator`\nAction Input: ```json\n{"expr": "2+2"}\n```',
            ("action", "calculator", {"expr": "2+2"}),
        ),
        ("Action: web_search\nAction Input: barn owls", ("action", "web_search", {"input": "barn owls"})),
        ("Action: web_search", ("action", "web_search", {})),
        (
            'Action: web_search\nAction Input: {"query": "x"}\nObservation: made up\nFinal Answer: made up',
            ("action", "web_search", {"query": "x"}),
        ),
        ("Thought: done.\nFinal Answer: Owls are nocturnal.\n", ("final", "Owls are nocturnal.", {})),
        ("Final Answer: first line\nsecond line", ("final", "first line\nsecond line", {})),
        ("  Owls hunt at night.  ", ("final", "Owls hunt at night.", {})),
    ],
)
def test_parse_reply(text: str, expected: tuple[str, str, dict[str, Any]]) -> None:
    assert parse_reply(text) == expected


# -- LLM against a real server ------------------------------------------------------------------------------


def test_llm_reply_usage_and_request(llm_server: LLMServer, events: list[BaseEvent], no_key: None) -> None:
    llm = LLM(model="test-model", base_url=llm_server.base_url, temperature=0.2, max_tokens=50)
    reply = llm.invoke([SYSTEM, user("ping the server")], task_id="t1")
    assert reply == "echo: ping the server"
    (request,) = llm_server.requests
    assert request.path == "/v1/chat/completions"
    assert request.body["model"] == "test-model"
    assert request.body["messages"][-1] == user("ping the server")
    assert (request.body["temperature"], request.body["max_tokens"], request.body["stream"]) == (
        0.2,
        50,
        False,
    )
    assert "authorization" not in {k.lower() for k in request.headers}
    completed = events[-1]
    assert isinstance(completed, LLMCallCompletedEvent)
    assert (completed.response, completed.model, completed.task_id) == (reply, "test-model", "t1")
    assert completed.completion_tokens == 4
    assert completed.prompt_tokens == sum(len(m["content"].split()) for m in [SYSTEM, user("ping the server")])


def test_llm_streams_chunk_events_in_order(llm_server: LLMServer, events: list[BaseEvent], no_key: None) -> None:
    llm_server.mode = "stream"
    llm_server.chunks = 4
    llm_server.reply = "The quick brown fox jumps over the lazy dog."
    llm = LLM(model="m", base_url=llm_server.base_url, stream=True)
    reply = llm.invoke([user("tell me")], agent_id="a1")
    assert reply == llm_server.reply
    assert llm_server.requests[0].body["stream"] is True
    started = events[0]
    chunks = [e for e in events if isinstance(e, LLMStreamChunkEvent)]
    assert len(chunks) == 4
    assert "".join(c.chunk or "" for c in chunks) == reply
    assert all(c.call_id == started.call_id and c.agent_id == "a1" for c in chunks)
    assert [e.sequence for e in events] == sorted(e.sequence for e in events)
    completed = events[-1]
    assert isinstance(completed, LLMCallCompletedEvent) and completed.completion_tokens == 9


def test_llm_retries_server_errors_with_growing_waits(llm_server: LLMServer, no_key: None) -> None:
    llm_server.mode = "fail_then_ok"
    llm_server.failures = 3
    llm = LLM(model="m", base_url=llm_server.base_url)
    started = time.monotonic()
    assert llm.call([user("again")]) == "echo: again"
    assert time.monotonic() - started >= 0.125 + 0.25 + 0.5  # at least half of each doubling wait
    assert len(llm_server.requests) == 4


def test_llm_waits_as_long_as_retry_after_asks(llm_server: LLMServer, no_key: None) -> None:
    llm_server.mode = "fail_then_ok"
    llm_server.fail_status = 429
    llm_server.retry_after = "1.5"
    llm = LLM(model="m", base_url=llm_server.base_url)
    started = time.monotonic()
    assert llm.call([user("later")]) == "echo: later"
    assert time.monotonic() - started >= 1.5
    assert len(llm_server.requests) == 2


def test_llm_retries_a_call_that_timed_out(llm_server: LLMServer, no_key: None) -> None:
    llm_server.mode = "slow_then_ok"
    llm_server.failures = 2
    llm_server.delay = 5.0
    assert LLM(model="m", base_url=llm_server.base_url, timeout=0.3).call([user("slow")]) == "echo: slow"
    assert len(llm_server.requests) == 3


def test_llm_gives_up_after_its_retries_with_the_reason(
    llm_server: LLMServer, events: list[BaseEvent], no_key: None
) -> None:
    llm_server.mode = "always_fail"
    llm_server.fail_status = 429
    llm = LLM(model="m", base_url=llm_server.base_url)
    with pytest.raises(LLMError) as info:
        llm.invoke([user("again")])
    assert len(llm_server.requests) == 5
    assert info.value.status == 429
    assert "HTTP 429" in str(info.value) and "the server is overloaded" in str(info.value)
    assert str(info.value).endswith("gave up after 5 tries")
    assert [e.type for e in events] == ["llm_call_started", "llm_call_failed"]


def test_llm_unauthorized_names_the_env_var_not_the_key(
    llm_server: LLMServer, events: list[BaseEvent], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm_server.mode = "unauthorized"
    llm_server.error_message = f"Incorrect API key provided: {KEY}."
    with pytest.raises(LLMError) as info:
        LLM(model="m", base_url=llm_server.base_url).invoke([user("hi")])
    message = str(info.value)
    assert "\n" not in message
    assert "HTTP 401" in message and "Incorrect API key provided" in message and "OPENAI_API_KEY" in message
    assert KEY not in message
    assert len(llm_server.requests) == 1
    failed = events[-1]
    assert isinstance(failed, LLMCallFailedEvent) and failed.error == message


def test_llm_malformed_response(llm_server: LLMServer, events: list[BaseEvent], no_key: None) -> None:
    llm_server.mode = "malformed"
    with pytest.raises(LLMError, match="malformed response"):
        LLM(model="m", base_url=llm_server.base_url).invoke([user("hi")])
    assert events[-1].type == "llm_call_failed"


def test_llm_timeout(llm_server: LLMServer, no_key: None) -> None:
    llm_server.mode = "slow"
    llm_server.delay = 5
    started = time.monotonic()
    with pytest.raises(LLMError, match=r"did not answer within 0\.3s.*; gave up after 5 tries$"):
        LLM(model="m", base_url=llm_server.base_url, timeout=0.3).call([user("hi")])
    assert time.monotonic() - started < 10  # five tries of 0.3 s and the waits between, not the server's 5 s each
    assert len(llm_server.requests) == 5


def test_llm_connection_refused(events: list[BaseEvent], no_key: None) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(LLMError, match="cannot be reached") as info:
        LLM(model="m", base_url=url).invoke([user("hi")])
    assert url in str(info.value)
    assert events[-1].type == "llm_call_failed"


def test_api_key_is_read_at_call_time_and_never_leaks(
    llm_server: LLMServer,
    events: list[BaseEvent],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    llm = LLM(model="m", base_url=llm_server.base_url, stream=True)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm_server.mode = "stream"
    llm.invoke([user("one")])
    monkeypatch.setenv("OPENAI_API_KEY", "second-key-456")
    llm_server.mode = "fail_then_ok"
    llm_server.failures = 2
    llm.invoke([user("two")])
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    llm_server.mode = "unauthorized"
    llm_server.error_message = f"key {KEY} is revoked"
    with pytest.raises(LLMError) as info:
        llm.invoke([user("three")])

    auth = [r.headers.get("Authorization") for r in llm_server.requests]
    assert auth == [f"Bearer {KEY}", "Bearer second-key-456", "Bearer second-key-456", f"Bearer {KEY}"]
    assert any(isinstance(e, LLMStreamChunkEvent) for e in events)
    assert any(isinstance(e, LLMCallFailedEvent) for e in events)
    places = [
        *(e.model_dump_json() for e in events),
        repr(events),
        str(llm.to_state()),
        str(llm.model_dump()),
        llm.model_dump_json(),
        repr(llm),
        str(llm),
        str(info.value),
        repr(info.value),
        *(r.getMessage() for r in caplog.records),
        caplog.text,
    ]
    assert caplog.records
    for text in places:
        assert KEY not in text and "second-key-456" not in text


def test_custom_key_variable(llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_LOCAL_KEY", "local-secret-1")
    LLM(model="m", base_url=llm_server.base_url, api_key_env="MY_LOCAL_KEY").call([user("x")])
    assert llm_server.requests[0].headers.get("Authorization") == "Bearer local-secret-1"


async def test_async_call_against_the_server(llm_server: LLMServer, events: list[BaseEvent], no_key: None) -> None:
    reply = await LLM(model="m", base_url=llm_server.base_url).ainvoke([user("async ping")], task_id="t3")
    assert reply == "echo: async ping"
    assert [e.type for e in events] == ["llm_call_started", "llm_call_completed"]

    llm_server.mode = "stream"
    llm_server.chunks = 3
    threads: set[int] = set()
    with event_bus.scoped_handlers():
        event_bus.register(LLMStreamChunkEvent, lambda source, event: threads.add(threading.get_ident()))
        reply = await LLM(model="m", base_url=llm_server.base_url, stream=True).ainvoke([user("async stream")])
    assert reply == "echo: async stream"
    assert threads == {threading.get_ident()}, "acall streams on the event loop, not in a worker thread"


async def test_async_retry_and_error(llm_server: LLMServer, no_key: None) -> None:
    llm_server.mode = "fail_then_ok"
    llm_server.failures = 1
    llm = LLM(model="m", base_url=llm_server.base_url)
    assert await llm.acall([user("retry")]) == "echo: retry"
    llm_server.mode = "unauthorized"
    llm_server.error_message = "no such key"
    with pytest.raises(LLMError, match="HTTP 401: no such key"):
        await llm.acall([user("hi")])


# -- checkpoint state ---------------------------------------------------------------------------------------


def trusted() -> bool:
    return os.environ.get("CREWPOINT_DESERIALIZE_CALLBACKS") == "1"


def test_builtin_models_come_back_by_declaration_without_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CREWPOINT_DESERIALIZE_CALLBACKS", raising=False)
    monkeypatch.delenv("CREWPOINT_LLM", raising=False)
    monkeypatch.delenv("CREWPOINT_BASE_URL", raising=False)
    offline = OfflineLLM(delay=0.5, temperature=0.1)
    back = llm_from_state(offline.to_state(), allow_import=trusted())
    # the model and its sampling settings are checkpoint state; the delay is the program's (class default)
    assert type(back) is OfflineLLM and back.temperature == 0.1 and back.delay == 0.0
    remote = LLM(model="llama3", base_url="http://127.0.0.1:11434/v1", api_key_env="MY_KEY", stream=True, max_tokens=99)
    state = remote.to_state()
    assert state["class"] == "crewpoint.llm.LLM"
    # with no model named, a model's run is not rebuilt onto the offline model (its text would pass for the model's)
    with pytest.raises(ModelNotNamed, match=r"'llama3'.*offline model.*CREWPOINT_LLM"):
        llm_from_state(state, allow_import=trusted(), agent="Writer")
    monkeypatch.setenv("CREWPOINT_LLM", "llama3.1")
    restored = llm_from_state(state, allow_import=trusted())
    # untrusted, the model, base URL and key variable come from the user's environment, never the checkpoint
    assert type(restored) is LLM and restored.model == "llama3.1" and restored.max_tokens == 99
    assert restored.base_url == DEFAULT_BASE_URL and restored.api_key_env == "OPENAI_API_KEY"
    assert not restored.stream and restored.timeout == LLM.model_fields["timeout"].default
    monkeypatch.setenv("CREWPOINT_BASE_URL", "http://127.0.0.1:9/v1")
    assert llm_from_state(state).base_url == "http://127.0.0.1:9/v1"
    monkeypatch.setenv("CREWPOINT_LLM", "gpt-4o-mini")  # another model: the one the user names runs
    assert llm_from_state(state).model == "gpt-4o-mini"
    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")
    assert llm_from_state(state).model_dump() == remote.model_dump()
    assert llm_from_state(offline.to_state()).model_dump() == offline.model_dump()


def test_a_user_model_comes_back_when_the_program_defines_it_else_needs_trust(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = ShoutingLLM(volume=7, suffix="?", temperature=0.9)
    state = original.to_state()
    assert state["class"].endswith("test_llm.ShoutingLLM")

    monkeypatch.delenv("CREWPOINT_DESERIALIZE_CALLBACKS", raising=False)
    assert type(llm_from_state(state)) is ShoutingLLM  # this program defines the class: nothing to import
    elsewhere = {**state, "class": "json.decoder.JSONDecoder"}
    with pytest.raises(ValueError, match="not a BaseLLM"):
        llm_from_state(elsewhere)
    with pytest.raises(ValueError) as info:
        llm_from_state({**state, "class": "no_such_pkg_xyz.Model"})
    assert "no_such_pkg_xyz.Model" in str(info.value) and "CREWPOINT_DESERIALIZE_CALLBACKS=1" in str(info.value)
    assert "no_such_pkg_xyz" not in sys.modules

    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")
    back = llm_from_state(state, allow_import=trusted())
    assert type(back) is ShoutingLLM
    assert back.model_dump() == original.model_dump()
    assert back.call([user("ok")]) == "OK???????"


def test_unimportable_or_foreign_classes_are_refused() -> None:
    with pytest.raises(ValueError, match=r"nowhere_pkg\.Model.*failed to import"):
        llm_from_state({"class": "nowhere_pkg.Model", "fields": {}}, allow_import=True)
    with pytest.raises(ValueError, match=r"test_llm\.Missing.*has no attribute"):
        llm_from_state({"class": f"{__name__}.Missing", "fields": {}}, allow_import=True)
    with pytest.raises(ValueError, match="not a BaseLLM"):
        llm_from_state({"class": "collections.OrderedDict", "fields": {}}, allow_import=True)
    with pytest.raises(ValueError, match="damaged"):
        llm_from_state({"fields": {}}, allow_import=True)


# -- defaults ---------------------------------------------------------------------------------------------


def test_default_is_offline_and_says_so_once(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.delenv("CREWPOINT_LLM", raising=False)
    monkeypatch.setattr(llm_module, "_warned_offline", False)
    caplog.set_level(logging.WARNING, logger="crewpoint")
    assert isinstance(default_llm(), OfflineLLM)
    assert isinstance(resolve_llm(None), OfflineLLM)
    notes = [r for r in caplog.records if "no LLM configured" in r.getMessage()]
    assert len(notes) == 1 and notes[0].name == "crewpoint" and notes[0].levelno == logging.WARNING
    assert "CREWPOINT_LLM" in notes[0].getMessage()


def test_configured_default_talks_to_the_server(
    llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch, no_key: None
) -> None:
    monkeypatch.setenv("CREWPOINT_LLM", "local-model")
    monkeypatch.setenv("CREWPOINT_BASE_URL", llm_server.base_url)
    llm = default_llm()
    assert isinstance(llm, LLM) and llm.model == "local-model"
    assert llm.invoke([user("configured")]) == "echo: configured"
    assert llm_server.requests[0].body["model"] == "local-model"


def test_resolve_llm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CREWPOINT_BASE_URL", raising=False)
    mine = ShoutingLLM()
    assert resolve_llm(mine) is mine
    assert isinstance(resolve_llm("offline"), OfflineLLM)
    named = resolve_llm("gpt-4o-mini")
    assert isinstance(named, LLM) and named.model == "gpt-4o-mini"
    assert named.base_url == "https://api.openai.com/v1"
    with pytest.raises(TypeError):
        resolve_llm(42)  # type: ignore[arg-type]
