"""Runs exported as OpenTelemetry traces to a real OTLP/HTTP receiver on 127.0.0.1 (tests/support/otlp.py decodes
the protobuf the SDK sends), with crews calling the local OpenAI-compatible server (tests/llm_server.py)."""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from llm_server import LLMServer
from support.otlp import OtlpReceiver, Span, assert_golden, by_name, tree

from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task, tool
from crewpoint import telemetry as otel
from crewpoint.providers import JsonProvider
from crewpoint.telemetry_spans import run_ids
from crewpoint.tui.cli import main

USAGE = {
    "prompt_tokens": 1200,
    "completion_tokens": 300,
    "total_tokens": 1500,
    "prompt_tokens_details": {"cached_tokens": 800},
    "completion_tokens_details": {"reasoning_tokens": 120},
}


@pytest.fixture(autouse=True)
def _own_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.chdir(tmp_path)
    for name in (*otel.ENDPOINT_ENVS, otel.CAPTURE_ENV, "OTEL_SDK_DISABLED", "OTEL_SERVICE_NAME"):
        monkeypatch.delenv(name, raising=False)
    yield
    otel.shutdown()


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.usage = USAGE
        yield running


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as running:
        yield running


@tool
def lookup(topic: str) -> str:
    """Look a topic up."""
    return f"{topic}: they hoot at night"


@tool
def broken(topic: str) -> str:
    """Always fails."""
    raise ValueError(f"no notes on {topic}")


def crew_of(server: LLMServer, endpoint: str | None, base_url: str | None = None, **config: Any) -> Crew:
    llm = LLM(model="gpt-4o", base_url=server.base_url, provider="openai")
    writer = Agent(role="Writer", goal="g", backstory="b", llm=llm, tools=[lookup, broken])
    editor_llm = LLM(model="gpt-4o", base_url=base_url or server.base_url, provider="openai")
    editor = Agent(role="Editor", goal="g", backstory="b", llm=editor_llm)
    tasks = [
        Task(name="research", description="Research owls.", expected_output="notes", agent=writer),
        Task(name="edit", description="Edit the notes.", expected_output="text", agent=editor),
    ]
    otel_setting = {"endpoint": endpoint} if endpoint else None
    return Crew(
        name="owls",
        agents=[writer, editor],
        tasks=tasks,
        checkpoint=CheckpointConfig(location="store", otel=otel_setting, **config),
    )


def exported(receiver: OtlpReceiver, roots: int = 1) -> list[Span]:
    assert otel.flush()
    return receiver.wait_for(lambda spans: sum(s.name.startswith("invoke_workflow") for s in spans) >= roots)


def checkpoints(location: str = "store") -> list[Any]:
    return sorted(JsonProvider().list(location), key=lambda meta: meta.sequence)


def test_a_crew_run_is_one_trace_with_the_genai_spans_and_what_the_server_reported(
    server: LLMServer, receiver: OtlpReceiver
) -> None:
    server.replies = ['Action: lookup\nAction Input: {"topic": "owls"}', "Final Answer: owls hoot"]
    crew_of(server, receiver.endpoint).kickoff()
    spans = exported(receiver)
    assert tree(spans) == [
        "invoke_workflow owls [INTERNAL]",
        "  invoke_agent Writer [INTERNAL]",
        "    chat gpt-4o [CLIENT]",
        "    execute_tool lookup [INTERNAL]",
        "    chat gpt-4o [CLIENT]",
        "  invoke_agent Editor [INTERNAL]",
        "    chat gpt-4o [CLIENT]",
    ]
    assert len({s.trace_id for s in spans}) == 1
    assert_golden("crew", spans)
    written = checkpoints()
    root = by_name(spans)["invoke_workflow owls"]
    assert root.attributes["gen_ai.operation.name"] == "invoke_workflow"
    assert root.attributes["crewpoint.run.id"] == written[-1].run_id
    assert root.attributes["crewpoint.branch"] == "main"
    assert root.service == "crewpoint" and root.status != 2 and not root.links

    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == len(server.requests) == 3
    for chat in chats:
        assert chat.attributes["gen_ai.provider.name"] == "openai"
        assert chat.attributes["gen_ai.request.model"] == chat.attributes["gen_ai.response.model"] == "gpt-4o"
        assert chat.attributes["gen_ai.usage.input_tokens"] == USAGE["prompt_tokens"]
        assert chat.attributes["gen_ai.usage.output_tokens"] == USAGE["completion_tokens"]
        assert chat.attributes["gen_ai.usage.cache_read.input_tokens"] == 800
        assert chat.attributes["gen_ai.usage.reasoning.output_tokens"] == 120
        assert "gen_ai.usage.cache_creation.input_tokens" not in chat.attributes  # the server reported none
        assert "gen_ai.input.messages" not in chat.attributes and "gen_ai.output.messages" not in chat.attributes

    tasks = [s for s in sorted(spans, key=lambda s: s.start_ns) if s.name.startswith("invoke_agent")]
    task_checkpoints = [meta.id for meta in written if meta.trigger == "task_completed"]
    assert [s.attributes["crewpoint.checkpoint.id"] for s in tasks] == task_checkpoints

    result = CliRunner().invoke(main, ["checkpoint", "cost", written[-1].id, "--location", "store", "--json"])
    assert result.exit_code == 0, result.output
    cost = json.loads(result.stdout)["cost_usd"]
    assert cost > 0 and round(root.attributes["crewpoint.cost.usd"], 2) == round(cost, 2)
    assert round(sum(c.attributes["crewpoint.cost.usd"] for c in chats), 6) == pytest.approx(cost)


def test_contents_are_exported_only_when_asked_and_a_key_never(
    server: LLMServer, receiver: OtlpReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(otel.CAPTURE_ENV, "true")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-exported-4242")
    server.replies = ['Action: lookup\nAction Input: {"topic": "owls"}', "Final Answer: owls hoot"]
    crew_of(server, receiver.endpoint).kickoff()
    spans = exported(receiver)
    first = next(s for s in spans if s.name.startswith("chat "))
    assert "Research owls." in first.attributes["gen_ai.input.messages"]
    assert json.loads(first.attributes["gen_ai.output.messages"])[0]["role"] == "assistant"
    assert json.loads(by_name(spans)["execute_tool lookup"].attributes["gen_ai.tool.call.arguments"]) == {
        "topic": "owls"
    }
    assert "sk-test-never-exported-4242" not in repr(spans)


def test_tool_errors_end_their_spans_with_an_error_type(server: LLMServer, receiver: OtlpReceiver) -> None:
    server.replies = [
        'Action: broken\nAction Input: {"topic": "owls"}',
        'Action: nowhere\nAction Input: {"topic": "owls"}',
        'Action: lookup\nAction Input: {"subject": "owls"}',
        "Final Answer: no notes",
    ]
    crew_of(server, receiver.endpoint).kickoff()
    spans = by_name(exported(receiver))
    assert spans["execute_tool broken"].attributes["error.type"] == "ValueError"
    assert spans["execute_tool nowhere"].attributes["error.type"] == "tool_selection_error"
    assert spans["execute_tool lookup"].attributes["error.type"] == "tool_validate_input_error"
    for name in ("execute_tool broken", "execute_tool nowhere", "execute_tool lookup"):
        assert spans[name].status == 2 and spans[name].parent_id == spans["invoke_agent Writer"].span_id
    assert "error.type" not in spans["invoke_workflow owls"].attributes  # the agent read the errors and went on


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_crash_and_its_resume_are_two_traces_the_second_linked_to_the_first(
    server: LLMServer, receiver: OtlpReceiver
) -> None:
    dead_model = f"http://127.0.0.1:{_closed_port()}/v1"
    with pytest.raises(Exception, match=r"127\.0\.0\.1"):
        crew_of(server, receiver.endpoint, base_url=dead_model).kickoff()
    first = exported(receiver)
    crashed = by_name(first)["invoke_workflow owls"]
    assert crashed.status == 2 and crashed.attributes["error.type"] == "LLMError"
    assert by_name(first)["chat gpt-4o"].trace_id == crashed.trace_id
    written = checkpoints()
    trace_id, span_id = run_ids(written[-1].run_id)  # a run's root span has the ids its run id gives
    assert (crashed.trace_id, crashed.span_id) == (f"{trace_id:032x}", f"{span_id:016x}")

    crew_of(server, receiver.endpoint).kickoff(
        from_checkpoint=CheckpointConfig(location="store", restore_from=written[-1].id)
    )
    spans = exported(receiver, roots=2)
    assert_golden("crash-and-resume", spans)
    resumed = [s for s in spans if s.name == "invoke_workflow owls" and s.trace_id != crashed.trace_id]
    assert len(resumed) == 1
    (link,) = resumed[0].links
    assert link[:2] == (crashed.trace_id, crashed.span_id)
    assert link[2]["crewpoint.run.id"] == crashed.attributes["crewpoint.run.id"]
    assert resumed[0].attributes["crewpoint.resumed_from"] == written[-1].id
    assert [s.name for s in spans if s.trace_id == resumed[0].trace_id and s.name.startswith("invoke_agent")] == [
        "invoke_agent Editor"
    ]


def test_a_dead_collector_never_fails_the_run_and_is_said_once(
    server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    with caplog.at_level(logging.WARNING):
        crew_of(server, endpoint).kickoff()
        crew_of(server, endpoint).kickoff()
        otel.flush()  # what was queued is tried now: the warning comes from that try at the latest
    assert len(server.requests) == 4 and checkpoints()[-1].tasks_done == 2
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING and "trace" in r.getMessage()]
    assert [r.name for r in warnings] == ["crewpoint.telemetry"]
    assert endpoint in warnings[0].getMessage()


def test_nothing_is_imported_or_sent_unless_configured(tmp_path: Path) -> None:
    program = tmp_path / "run.py"
    program.write_text(
        textwrap.dedent(
            """
            import sys
            from crewpoint import Agent, CheckpointConfig, Crew, Task
            agent = Agent(role="Writer", goal="g", backstory="b")
            task = Task(description="Write.", expected_output="text", agent=agent)
            Crew(agents=[agent], tasks=[task], checkpoint=CheckpointConfig(location="store")).kickoff()
            print(sorted(m for m in sys.modules if m.startswith("opentelemetry")))
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


def test_a_run_that_says_otel_false_makes_no_span_even_beside_runs_that_export(
    server: LLMServer, receiver: OtlpReceiver
) -> None:
    crew_of(server, receiver.endpoint).kickoff()
    quiet = crew_of(server, None)
    quiet.checkpoint = CheckpointConfig(location="quiet", otel=False)
    quiet.kickoff()
    crew_of(server, receiver.endpoint).kickoff()
    spans = exported(receiver, roots=2)
    run_ids = {s.attributes["crewpoint.run.id"] for s in spans if s.name.startswith("invoke_workflow")}
    assert len(run_ids) == 2 and checkpoints("quiet")[-1].run_id not in run_ids
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(server.requests) == 6 and len(chats) == 4  # the quiet run's two calls are not there


def test_which_setting_turns_export_on(tmp_path: Path) -> None:
    assert otel.settings_for(None, {}, str(tmp_path)) is None
    assert otel.settings_for(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, str(tmp_path)) is not None
    assert otel.settings_for(False, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, str(tmp_path)) is None
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    assert otel.settings_for(None, env, str(tmp_path)) is None
    (tmp_path / "pyproject.toml").write_text('[tool.crewpoint]\notel = { endpoint = "http://collector:4318" }\n')
    found = otel.settings_for(None, {}, str(tmp_path))
    assert found is not None and found.endpoint == "http://collector:4318" and "[tool.crewpoint] otel" in found.source
    (tmp_path / "pyproject.toml").write_text("[tool.crewpoint]\notel = { url = 1 }\n")
    with pytest.raises(otel.TelemetryError, match="unknown otel key"):
        otel.settings_for(None, {}, str(tmp_path))
    with pytest.raises(ValueError, match="otel"):
        CheckpointConfig(location="store", otel={"endpoint": 4318})


def test_a_full_span_queue_drops_events_with_one_warning_and_never_blocks_the_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from crewpoint.telemetry_queue import Handoff

    release, handled = threading.Event(), []
    started = threading.Event()

    def handle(item: int) -> None:
        started.set()
        release.wait()
        handled.append(item)

    handoff = Handoff(handle, size=2)
    handoff.put(0)
    assert started.wait(10)  # the spans' thread holds item 0: the queue is empty again
    with caplog.at_level(logging.WARNING):
        for item in range(1, 6):
            handoff.put(item)  # 1 and 2 fit, 3 to 5 are dropped: the run's thread never waits
        handoff.put(6, must=True)  # a run's end goes whatever the queue holds
    release.set()
    assert handoff.drain(10)
    assert handled == [0, 1, 2, 6]
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1 and "the run goes on" in warnings[0].getMessage()
    handoff.stop(10)


def test_a_program_that_exits_right_after_its_run_still_sends_every_span(
    server: LLMServer, receiver: OtlpReceiver, tmp_path: Path
) -> None:
    program = tmp_path / "run.py"
    program.write_text(
        textwrap.dedent(
            f"""
            import atexit, threading
            from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task
            from crewpoint.telemetry_spans import SpanMaker

            exiting = threading.Event()  # the spans' thread holds every event until the program is ending
            handle = SpanMaker._handle
            SpanMaker._handle = lambda self, item: (exiting.wait(), handle(self, item))
            llm = LLM(model="gpt-4o", base_url={server.base_url!r}, provider="openai")
            agent = Agent(role="Writer", goal="g", backstory="b", llm=llm)
            tasks = [Task(description=f"Write {{n}}.", expected_output="text", agent=agent) for n in range(3)]
            config = CheckpointConfig(location="store", otel={{"endpoint": {receiver.endpoint!r}}})
            Crew(name="quick", agents=[agent], tasks=tasks, checkpoint=config).kickoff()
            atexit.register(exiting.set)  # the first thing done at exit: nothing was made a span before
            """
        )
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run([sys.executable, str(program)], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    spans = receiver.wait_for(lambda got: any(s.name == "invoke_workflow quick" for s in got))
    assert tree(spans) == [
        "invoke_workflow quick [INTERNAL]",
        *["  invoke_agent Writer [INTERNAL]", "    chat gpt-4o [CLIENT]"] * 3,
    ]
