"""Usage recorded where it happens: each LLM call's tokens, summed per task and per run in the checkpoint body."""

from __future__ import annotations

import asyncio
import math
import runpy
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer, llm_server  # noqa: F401  (the fixture)
from support.waiting import wait_for

from crewpoint import LLM, Agent, CheckpointConfig, Crew, Flow, OfflineLLM, Task, listen, start
from crewpoint.checkpoint.schema import DamagedBody, load_body
from crewpoint.cost import usage_rows
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.events import LLMCallCompletedEvent, event_bus
from crewpoint.events.record import EventRecord
from crewpoint.providers import JsonProvider
from crewpoint.usage import (
    CALL_KEYS,
    ROW_KEYS,
    TOKEN_KEYS,
    UsageLedger,
    UsageMetrics,
    UsageRow,
    decode_row,
    encode_row,
    group_rows,
    sum_rows,
    usage_from_report,
)

KNOWN = {
    "prompt_tokens": 1200,
    "completion_tokens": 340,
    "total_tokens": 1540,
    "prompt_tokens_details": {"cached_tokens": 1000},
    "completion_tokens_details": {"reasoning_tokens": 64},
}


def latest_body(location: str = "cp") -> dict[str, Any]:
    provider = JsonProvider()
    newest = provider.list(location)[0]
    return dict(load_body(provider.read(location, newest.id).body))  # as every reader gets it


def two_task_crew(llm: Any, location: str = "cp") -> Crew:
    researcher = Agent(role="Researcher", goal="g", backstory="b", llm=llm)
    writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
    return Crew(
        agents=[researcher, writer],
        tasks=[
            Task(name="research", description="Research owls.", expected_output="notes", agent=researcher),
            Task(name="write", description="Write about owls.", expected_output="text", agent=writer),
        ],
        checkpoint=CheckpointConfig(location=location),
    )


def tokens(row: Mapping[str, Any] | UsageRow) -> tuple[int, ...]:
    if isinstance(row, UsageRow):
        return row.input_tokens, row.output_tokens, row.cache_read_tokens, row.cache_write_tokens, row.reasoning_tokens
    return tuple(row[name] for name in TOKEN_KEYS)


@pytest.fixture
def completed() -> list[LLMCallCompletedEvent]:
    seen: list[LLMCallCompletedEvent] = []
    event_bus.register(LLMCallCompletedEvent, lambda source, event: seen.append(event))
    return seen


# -- against the OpenAI-compatible test server ---------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_recorded_tokens_equal_the_servers_per_task_and_per_run(
    llm_server: LLMServer,  # noqa: F811
    completed: list[LLMCallCompletedEvent],
    stream: bool,
) -> None:
    llm_server.usage = KNOWN
    llm_server.mode = "stream" if stream else "echo"
    llm = LLM(model="gpt-4o-mini", base_url=llm_server.base_url, stream=stream)
    crew = two_task_crew(llm)
    crew.kickoff()
    assert [bool(r.body.get("stream_options")) for r in llm_server.requests] == [stream, stream]
    usage = latest_body()["usage"]
    rows = usage["rows"]
    assert [(r.unit, r.label, r.agent) for r in rows] == [
        (crew.tasks[0].id, "research", "Researcher"),
        (crew.tasks[1].id, "write", "Writer"),
    ]
    for row in rows:
        assert tokens(row) == (1200, 340, 1000, 0, 64)
        assert (row.model, row.provider, row.requests, row.estimated) == ("gpt-4o-mini", "openai", 1, False)
        assert row.duration_s > 0
    total = sum_rows(rows)
    assert (total.input_tokens, total.output_tokens, total.requests) == (2400, 680, 2)
    assert (usage["before"], usage["reused"]) == ([], [])
    assert crew.usage_metrics == UsageMetrics(
        total_tokens=3080, prompt_tokens=2400, cached_prompt_tokens=2000, completion_tokens=680, successful_requests=2
    )
    event = completed[0]
    assert event.usage is not None and (event.prompt_tokens, event.completion_tokens) == (1200, 340)
    assert event.usage["cache_read_tokens"] == 1000 and event.usage["estimated"] is False


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_style_cache_fields_are_read(
    llm_server: LLMServer,  # noqa: F811
    completed: list[LLMCallCompletedEvent],
    stream: bool,
) -> None:
    llm_server.usage = {
        "prompt_tokens": 900,
        "completion_tokens": 50,
        "cache_creation_input_tokens": 200,
        "cache_read_input_tokens": 600,
    }
    llm_server.mode = "stream" if stream else "echo"
    llm = LLM(model="claude-sonnet-4", base_url=llm_server.base_url, stream=stream, provider="anthropic")
    llm.invoke([{"role": "user", "content": "hi"}])
    usage = completed[-1].usage
    assert usage is not None
    assert tokens(usage) == (900, 50, 600, 200, 0)
    assert (usage["provider"], usage["estimated"]) == ("anthropic", False)


@pytest.mark.parametrize("stream", [False, True])
def test_async_calls_record_the_same_usage(
    llm_server: LLMServer,  # noqa: F811
    completed: list[LLMCallCompletedEvent],
    stream: bool,
) -> None:
    llm_server.usage = KNOWN
    llm_server.mode = "stream" if stream else "echo"
    llm = LLM(model="gpt-4o-mini", base_url=llm_server.base_url, stream=stream)
    messages = [{"role": "user", "content": "hello"}]
    llm.invoke(messages)
    asyncio.run(llm.ainvoke(messages))
    sync, done_async = (e.usage for e in completed)
    assert sync is not None and done_async is not None
    assert tokens(sync) == tokens(done_async) == (1200, 340, 1000, 0, 64)


@pytest.mark.parametrize("stream", [False, True])
def test_no_usage_from_the_server_is_estimated_and_marked(
    llm_server: LLMServer,  # noqa: F811
    stream: bool,
) -> None:
    llm_server.report_usage = False
    llm_server.mode = "stream" if stream else "echo"
    llm_server.reply = "Owls hunt at night and sleep by day."
    llm = LLM(model="local-model", base_url=llm_server.base_url, stream=stream, provider="ollama")
    crew = two_task_crew(llm)
    crew.kickoff()
    rows = latest_body()["usage"]["rows"]
    assert len(rows) == 2
    for row, request in zip(rows, llm_server.requests, strict=True):
        sent = sum(len(m["content"]) for m in request.body["messages"])
        assert row.estimated is True
        assert (row.input_tokens, row.output_tokens) == (
            math.ceil(sent / 4),
            math.ceil(len(llm_server.reply) / 4),
        )
        assert (row.provider, row.model) == ("ollama", "local-model")


@pytest.mark.parametrize("report", [True, False])
def test_a_checkpoints_history_keeps_usage_compact_and_reads_back_whole(
    llm_server: LLMServer,  # noqa: F811
    completed: list[LLMCallCompletedEvent],
    report: bool,
) -> None:
    llm_server.usage = KNOWN
    llm_server.report_usage = report
    llm = LLM(model="gpt-4o-mini", base_url=llm_server.base_url)
    two_task_crew(llm).kickoff()
    stored = [e for e in latest_body()["events"] if e["type"] == "llm_call_completed"]
    assert len(stored) == len(completed) == 2
    for item, event in zip(stored, completed, strict=True):
        assert event.usage is not None
        # the event's own model and token fields are not said twice, nor a zero count nor "not estimated"
        assert (item["model"], item["prompt_tokens"], item["completion_tokens"]) == (
            "gpt-4o-mini",
            event.usage["input_tokens"],
            event.usage["output_tokens"],
        )
        kept = {"provider", "duration_s", "cache_read_tokens", "reasoning_tokens"} if report else set()
        assert set(item["usage"]) == kept | {"provider", "duration_s"} | (set() if report else {"estimated"})
    # a resume reads the history back: each call's usage whole again, and stored the same way again
    restored = EventRecord.from_list(latest_body()["events"]).by_type("llm_call_completed")
    assert [node.event.usage for node in restored] == [event.usage for event in completed]
    assert [list(node.event.usage or ()) for node in restored] == [list(CALL_KEYS)] * 2
    assert [node.compact for node in restored] == stored
    whole = restored[0].event.usage
    assert whole is not None and whole["estimated"] is (not report) and whole["model"] == "gpt-4o-mini"
    assert tokens(whole) == ((1200, 340, 1000, 0, 64) if report else tokens(completed[0].usage or {}))


# -- the offline model ---------------------------------------------------------------------------------------


def test_the_offline_model_reports_the_same_usage_every_time() -> None:
    figures = []
    for location in ("one", "two"):
        demo_crew(checkpoint=CheckpointConfig(location=location)).kickoff(inputs=DEMO_INPUTS)
        rows = latest_body(location)["usage"]["rows"]
        figures.append([(r.label, r.agent, tokens(r), r.requests, r.estimated, r.provider) for r in rows])
    assert figures[0] == figures[1]
    assert [f[0] for f in figures[0]] == ["research", "outline", "draft", "review"]
    for _label, _agent, counts, _requests, estimated, provider in figures[0]:
        assert (estimated, provider) == (False, "offline") and counts[0] > 0 and counts[1] > 0
    assert figures[0][0][3] == 2  # the research task asks for a tool, then answers: two calls


# -- flows: usage per method, a crew inside a method counted in it ----------------------------------------------


class Pipeline(Flow):
    @start()
    def name_owls(self) -> str:
        return OfflineLLM().invoke([{"role": "user", "content": "Name three owls."}])

    @start()
    def delegate(self) -> str:
        crew = two_task_crew(OfflineLLM(), location="inner")
        return crew.kickoff().raw


def test_a_flow_records_usage_per_method_and_counts_its_crews() -> None:
    flow = Pipeline(checkpoint=CheckpointConfig(location="flowcp", on_events=["method_execution_finished"]))
    flow.kickoff()
    spent = latest_body("flowcp")["usage"]["rows"]
    assert [(r.unit, r.agent) for r in spent] == [
        ("name_owls", None),
        ("delegate", "Researcher"),
        ("delegate", "Writer"),
    ]
    by_method = {g.unit: g for g in group_rows(spent, "unit")}
    assert by_method["name_owls"].requests == 1 and by_method["name_owls"].label == "name_owls"
    inner = latest_body("inner")["usage"]["rows"]
    assert by_method["delegate"].requests == sum_rows(inner).requests == 2
    assert by_method["delegate"].input_tokens == sum_rows(inner).input_tokens > 0


class TwoSteps(Flow):
    fail_second = True

    @start()
    def outline(self) -> str:
        return OfflineLLM().invoke([{"role": "user", "content": "Outline an article on owls."}])

    @listen(outline)
    def write(self, outline: str) -> str:
        if TwoSteps.fail_second:
            raise RuntimeError("the writer is away")
        return OfflineLLM().invoke([{"role": "user", "content": f"Write it: {outline}"}])


def test_a_resumed_flow_records_the_methods_it_reused() -> None:
    config = CheckpointConfig(location="flowrun", on_events=["method_execution_finished", "method_execution_failed"])
    with pytest.raises(RuntimeError, match="away"):
        TwoSteps(checkpoint=config).kickoff()
    source = latest_body("flowrun")["usage"]
    assert [r.unit for r in source["rows"]] == ["outline"]
    TwoSteps.fail_second = False
    TwoSteps(checkpoint=config).kickoff(from_checkpoint="flowrun")
    usage = latest_body("flowrun")["usage"]
    assert usage["before"] == usage["reused"] == source["rows"]  # the outline was taken over, not asked again
    assert [(r.unit, r.requests) for r in usage["rows"]] == [("write", 1)]


# -- a resume after a kill: what the chain spent before, what the resume reused ----------------------------------

PROGRAM = '''
import sys, threading
from crewpoint import Agent, CheckpointConfig, Crew, OfflineLLM, Task

class Stuck(OfflineLLM):
    """Answers like the offline model, except that it never answers the third task (until the program ends)."""
    def call(self, messages, **kwargs):
        if "Review" in str(messages[-1].get("content", "")):
            threading.Event().wait()
        return super().call(messages, **kwargs)

def make_crew(llm):
    a = Agent(role="Researcher", goal="g", backstory="b", llm=llm)
    b = Agent(role="Writer", goal="g", backstory="b", llm=llm)
    c = Agent(role="Editor", goal="g", backstory="b", llm=llm)
    return Crew(
        agents=[a, b, c],
        tasks=[
            Task(name="research", description="Research owls.", expected_output="notes", agent=a),
            Task(name="draft", description="Draft about owls.", expected_output="text", agent=b),
            Task(name="review", description="Review the draft.", expected_output="text", agent=c),
        ],
        checkpoint=CheckpointConfig(location="killed"),
    )

if __name__ == "__main__":
    make_crew(Stuck()).kickoff()
'''


def stored(location: str) -> int:
    return len(JsonProvider().list(location)) if Path(location).is_dir() else 0


def test_a_resume_after_a_kill_records_what_it_reused(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text(PROGRAM)
    proc = subprocess.Popen([sys.executable, str(program)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: stored("killed") >= 2 or proc.poll() is not None, "two checkpoints")
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    source = latest_body("killed")
    assert sum(t["output"] is not None for t in source["entity"]["tasks"]) == 2
    spent = source["usage"]["rows"]
    assert [r.label for r in spent] == ["research", "draft"]

    crew = runpy.run_path(str(program))["make_crew"](OfflineLLM())
    crew.kickoff(from_checkpoint="killed")
    usage = latest_body("killed")["usage"]
    assert usage["before"] == spent
    assert usage["reused"] == spent  # both finished tasks were taken over, none run again
    assert [r.label for r in usage["rows"]] == ["review"]
    assert crew.usage_metrics is not None and crew.usage_metrics.successful_requests == 1

    # a fork of the finished run that edits the draft: research is reused, review runs again
    finished = latest_body("killed")
    forked = Crew.fork(CheckpointConfig(restore_from=str(tmp_path / "killed")), branch="edit")
    forked.override_output("draft", "An edited draft.")
    forked.kickoff()
    fork_usage = latest_body("killed")["usage"]
    assert fork_usage["before"] == finished["usage"]["before"] + finished["usage"]["rows"]
    assert [r.label for r in fork_usage["reused"]] == ["research", "draft"]
    assert [r.label for r in fork_usage["rows"]] == ["review"]


# -- hostile usage data --------------------------------------------------------------------------------------


def a_body() -> dict[str, Any]:
    demo_crew(checkpoint=CheckpointConfig(location="base")).kickoff(inputs=DEMO_INPUTS)
    return latest_body("base")


def test_a_body_without_usage_still_loads() -> None:
    body = a_body()
    del body["usage"]
    assert load_body(body)["usage"] == {"rows": [], "before": [], "reused": []}


@pytest.mark.parametrize(
    ("usage", "field"),
    [
        ("lots", "usage"),
        ({"rows": "many"}, "usage.rows"),
        ({"rows": [{"input_tokens": -5}]}, "usage.rows.0.input_tokens"),
        ({"rows": [{"input_tokens": True}]}, "usage.rows.0.input_tokens"),
        ({"rows": [{"output_tokens": 10**30}]}, "usage.rows.0.output_tokens"),
        ({"rows": [{"output_tokens": 1.5}]}, "usage.rows.0.output_tokens"),
        ({"rows": [{"duration_s": float("nan")}]}, "usage.rows.0.duration_s"),
        ({"rows": [{"duration_s": float("inf")}]}, "usage.rows.0.duration_s"),
        ({"before": [{"model": "x" * 100_000}]}, "usage.before.0.model"),
        ({"reused": [{"unit": ["a"]}]}, "usage.reused.0.unit"),
        ({"rows": [{"estimated": "yes"}]}, "usage.rows.0.estimated"),
        ({"rows": [{}] * 100_001}, "usage.rows"),
        ({"rows": [[1, 2]]}, "usage.rows.0"),
        # a row as a body stores it: its values in ROW_KEYS order
        ({"rows": [list(range(14))]}, "usage.rows.0"),
        ({"rows": [["u", "L", None, "m", "p", "5", 1, 0, 0, 0, 1, 0.1, False]]}, "usage.rows.0.input_tokens"),
        ({"before": [["u", "L", None, "m", "p", 5, 1, 0, 0, 0, 1, float("nan"), False]]}, "usage.before.0.duration_s"),
        ({"reused": [[["a"], "L", None, "m", "p", 5, 1, 0, 0, 0, 1, 0.1, False]]}, "usage.reused.0.unit"),
        ({"rows": [["u", "L", None, "m", "p", 5, 1, 0, 0, 0, 1, 0.1, "no"]]}, "usage.rows.0.estimated"),
    ],
)
def test_crafted_usage_is_refused_in_one_line(usage: Any, field: str) -> None:
    body = a_body()
    body["usage"] = usage
    with pytest.raises(DamagedBody) as caught:
        load_body(body, "c1")
    assert caught.value.field == field
    assert "\n" not in str(caught.value)


def test_a_row_stored_as_its_values_reads_as_the_row_of_them_and_an_older_dict_row_reads_the_same() -> None:
    values = ["u1", "Research", "Researcher", "gpt-4o", "openai", 1200, 340, 1000, 0, 64, 2, 1.25, False]
    row = dict(zip(ROW_KEYS, values, strict=True))
    body = a_body()
    body["usage"] = {"rows": [values], "before": [row], "reused": []}
    assert body["schema_version"] == 2
    loaded = load_body(body)["usage"]
    read = UsageRow(*values)
    assert (read.model, read.requests, read.duration_s) == ("gpt-4o", 2, 1.25)
    assert loaded["rows"] == loaded["before"] == [read]
    assert usage_rows(body) == usage_rows(body, "before") == [read]
    assert encode_row(read) == values and decode_row(values) == decode_row(row) == read
    older = {**body, "schema_version": 1, "usage": {"rows": [row]}}  # written before rows were stored as lists
    assert load_body(older)["usage"]["rows"] == [read] and load_body(older)["schema_version"] == 2


def test_a_crafted_row_with_unknown_keys_and_missing_figures_reads_as_zeros() -> None:
    body = a_body()
    body["usage"] = {"rows": [{"model": "m", "surprise": {"deep": [1]}}]}
    row = load_body(body)["usage"]["rows"][0]
    assert tokens(row) == (0, 0, 0, 0, 0) and row.requests == 0 and row.estimated is False


# -- the pure helpers ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "usage",
    [
        {"input_tokens": 37, "output_tokens": 39, "model": "offline", "provider": "offline", "estimated": False},
        {"input_tokens": 900, "output_tokens": 50, "cache_read_tokens": 600, "cache_write_tokens": 200},
        {"input_tokens": 5, "output_tokens": 7, "reasoning_tokens": 3, "estimated": True, "model": "gpt-4o"},
        {"input_tokens": 5, "output_tokens": 7, "region": "eu", "duration_s": 1.5},
    ],
)
def test_a_call_usage_stored_compact_reads_back_the_same(usage: dict[str, Any]) -> None:
    whole = {**dict.fromkeys(TOKEN_KEYS, 0), "model": "m", "provider": "p", "duration_s": 0.25, "estimated": False}
    whole.update(usage)
    event = LLMCallCompletedEvent(model="m", prompt_tokens=5, completion_tokens=7, usage=whole)
    stored = event.compact()["usage"]
    assert all(stored[key] == value for key, value in whole.items() if key in stored)
    assert "model" not in stored or whole["model"] != "m"
    assert not any(key in stored and whole[key] == 0 for key in TOKEN_KEYS[2:])
    back = EventRecord.from_list([event.compact()]).by_type("llm_call_completed")[0].event.usage
    assert back == whole and list(back or ())[: len(CALL_KEYS)] == list(CALL_KEYS)
    # a history written before usage was kept compact reads the same
    assert LLMCallCompletedEvent.model_validate({**event.compact(), "usage": whole}).usage == whole


def test_a_ledgers_stored_rows_are_made_again_only_when_they_change() -> None:
    ledger = UsageLedger()
    call = {"input_tokens": 10, "output_tokens": 2, "model": "m", "provider": "p", "duration_s": 0.1234567}
    ledger.add(call, "a", "A", "agent")
    ledger.add(call, "b", "B", "agent")
    first = ledger.stored_and_summary()[0]
    ledger.add(call, "b", "B", "agent")
    ledger.add({**call, "estimated": True}, "c", "C", "agent")
    second = ledger.stored_and_summary()[0]
    assert [row[0] for row in second] == ["a", "b", "c"]  # a row is stored as its values, in ROW_KEYS order
    assert second[0] is first[0]  # unchanged: the same list, so a checkpoint makes only what changed
    requests = ROW_KEYS.index("requests")
    assert (first[1][requests], second[1][requests]) == (1, 2)  # a row given out is never changed
    rows = ledger.rows()
    assert rows == [decode_row(row) for row in second]
    assert (rows[1].input_tokens, rows[1].duration_s) == (20, 0.246913)
    assert rows[2].estimated is True and ledger.rows() == rows


def test_reading_usage_objects() -> None:
    assert usage_from_report(KNOWN) == {
        "input_tokens": 1200,
        "output_tokens": 340,
        "cache_read_tokens": 1000,
        "cache_write_tokens": None,
        "reasoning_tokens": 64,
    }
    # Anthropic's own counts leave cached tokens out of input_tokens; the record counts every token sent
    native = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 300, "cache_creation_input_tokens": 40}
    assert usage_from_report(native)["input_tokens"] == 350
    assert usage_from_report({"prompt_tokens": "12", "completion_tokens": -1})["input_tokens"] is None


def test_rows_sum_and_group() -> None:
    def row(unit: str, agent: str, model: str, n: int, estimated: bool = False) -> UsageRow:
        return UsageRow(unit, unit.upper(), agent, model, "openai", n, n, n, n, n, 1, 0.5, estimated)

    rows = [row("t1", "A", "m1", 10), row("t1", "A", "m2", 5, True), row("t2", "B", "m1", 1)]
    assert sum_rows(rows).input_tokens == 16 and sum_rows(rows).estimated is True
    assert sum_rows([]).requests == 0
    by_unit = group_rows(rows, "unit")
    assert [(g.unit, g.label, g.input_tokens, g.requests) for g in by_unit] == [
        ("t1", "T1", 15, 2),
        ("t2", "T2", 1, 1),
    ]
    assert [(g.model, g.output_tokens) for g in group_rows(rows, "model")] == [("m1", 11), ("m2", 5)]
    assert [g.agent for g in group_rows(rows, "agent")] == ["A", "B"]
