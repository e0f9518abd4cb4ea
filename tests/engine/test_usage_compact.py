"""Recording usage costs little: what every checkpoint of a run repeats (its usage rows, the chain's rows before it,
the finished part of its event history, its usage summary) is worked out once (the stores' codec encodes only what
came since), and what each store keeps is still byte for byte what a full encode of the same body gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import crewpoint.providers.codec as codec_module
from crewpoint import Agent, CheckpointConfig, Crew, OfflineLLM, Task
from crewpoint.events import TaskStartedEvent
from crewpoint.events.record import EventRecord
from crewpoint.providers import provider_for
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord
from crewpoint.providers.chunks import encode_json
from crewpoint.providers.codec import BodyCodec, codec
from crewpoint.providers.json_provider import encode_file
from crewpoint.providers.usage_meta import ROW_KEYS, usage_summary
from crewpoint.runtime import RuntimeState
from crewpoint.usage import UsageLedger


def three_steps(location: str) -> Crew:
    llm = OfflineLLM()
    agents = [Agent(role=f"Agent {i}", goal="g", backstory="b", llm=llm) for i in range(2)]
    tasks = [
        Task(name=f"step-{i}", description=f"Step {i}: owls", expected_output="p", agent=agents[i % 2])
        for i in range(3)
    ]
    return Crew(agents=agents, tasks=tasks, checkpoint=CheckpointConfig(location=location))


def run_and_resume(location: str) -> list[CheckpointMeta]:
    """A run of three tasks, then a resume from its first task's checkpoint (so its checkpoints hold rows
    before the run and rows reused): every checkpoint of the store, newest first."""
    three_steps(location).kickoff()
    provider = provider_for(location)
    first = min((m for m in provider.list(location) if m.trigger == "task_completed"), key=lambda m: m.sequence)
    three_steps(location).kickoff(from_checkpoint=first.location)
    return provider.list(location)


def plain(body: dict[str, Any]) -> dict[str, Any]:
    return dict(json.loads(json.dumps(body)))


@pytest.fixture(params=["json", "sqlite", "postgres"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        return str(request.getfixturevalue("pg_location"))
    return str(tmp_path / ("store" if request.param == "json" else "store.db"))


def test_each_store_keeps_what_a_full_encode_of_the_body_gives(location: str, tmp_path: Path) -> None:
    metas = run_and_resume(location)
    provider = provider_for(location)
    resumed = provider.read(location, metas[0].id).body["usage"]
    assert resumed["before"] and resumed["reused"] and resumed["rows"]  # every kind of row is in the test
    if location.endswith("store"):  # the JSON store: each file is the bytes a full encode gives
        for meta in metas:
            record = provider.read(location, meta.id)
            assert Path(meta.location).read_bytes() == encode_file(record.meta, plain(record.body))
        return
    # a chunked store records its manifest's length and digest: a full encode of the same body gives the same
    again = location + "_again" if location.startswith("postgresql") else str(tmp_path / "again.db")
    for meta in metas:
        record = provider.read(location, meta.id)
        provider.write(again, CheckpointRecord(meta=record.meta.with_(location="", size=0), body=plain(record.body)))
    stored = [provider.read(location, m.id).meta for m in metas]
    rewritten = [provider.read(again, m.id).meta for m in metas]
    assert [(m.body_length, m.digest, m.size) for m in stored] == [(m.body_length, m.digest, m.size) for m in rewritten]
    assert all(m.body_length and len(m.digest) == 64 for m in stored)


def encoded_items(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The items the stores' codec encodes from now on (each one it could not take from a body before)."""
    seen: list[Any] = []

    def counting(value: Any) -> str:
        seen.append(value)
        return encode_json(value)

    monkeypatch.setattr(codec_module, "encode_json", counting)
    return seen


def test_a_capture_is_stored_as_a_full_encode_of_its_body_gives(tmp_path: Path) -> None:
    metas = run_and_resume(str(tmp_path / "store"))
    assert len(metas) == 5  # three, and the two tasks the resume ran
    state = RuntimeState(three_steps(str(tmp_path / "other")), None)
    state.take_source_usage(provider_for(str(tmp_path / "store")).read(str(tmp_path / "store")).body["usage"])
    state.usage.add({"input_tokens": 3, "output_tokens": 4, "model": "m", "duration_s": 0.5}, "u", "U", "a")
    state.events.add(TaskStartedEvent(task_id="u", task_name="U"))
    for _ in range(2):  # the second time from what the codec kept of the first
        body = state.capture("manual").body
        assert body["usage"]["rows"] and body["usage"]["before"] and body["events"]
        assert codec.body_text(body) == BodyCodec().body_text(plain(body))


def test_a_capture_is_encoded_for_what_came_since_the_last_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = RuntimeState(three_steps(str(tmp_path / "store")), None)
    call = {"input_tokens": 5, "output_tokens": 7, "model": "m", "provider": "p", "duration_s": 0.25}
    for n in range(3):
        state.events.add(TaskStartedEvent(task_id=f"t{n}", task_name=f"task {n}"))
        state.usage.add(call, f"t{n}", f"task {n}", "agent")
    first = state.capture("manual").body
    codec.body_text(first)
    seen = encoded_items(monkeypatch)
    state.events.add(TaskStartedEvent(task_id="t3", task_name="task 3"))
    state.usage.add(call, "t2", "task 2", "agent")
    second = state.capture("manual").body
    text = codec.body_text(second)
    encoded = list(seen)
    assert [e for e in encoded if isinstance(e, dict) and "type" in e] == [second["events"][-1]]  # the new event
    assert [r for r in encoded if isinstance(r, list)] == [second["usage"]["rows"][2]]  # the row that changed
    assert text == BodyCodec().body_text(plain(second))


def test_a_history_that_is_not_the_one_last_captured_is_encoded_afresh(tmp_path: Path) -> None:
    state = RuntimeState(three_steps(str(tmp_path / "store")), None)
    for n in range(3):
        state.events.add(TaskStartedEvent(task_id=f"t{n}", task_name=f"task {n}"))
    first = state.capture("manual").body
    codec.body_text(first)
    state.events = EventRecord(TaskStartedEvent(task_id=name, task_name="another history") for name in "wxyz")
    second = state.capture("manual").body
    assert [e["task_id"] for e in second["events"]] == list("wxyz") and len(first["events"]) == 3
    assert codec.body_text(second) == BodyCodec().body_text(plain(second))


def test_each_capture_holds_the_whole_history_and_changing_one_leaves_the_run_s_history_as_it_was(
    tmp_path: Path,
) -> None:
    state = RuntimeState(three_steps(str(tmp_path / "store")), None)
    state.events.add(TaskStartedEvent(task_id="t0", task_name="task 0"))
    first = state.capture("manual").body["events"]
    state.events.add(TaskStartedEvent(task_id="t1", task_name="task 1"))
    second = state.capture("manual").body["events"]
    assert [e["task_id"] for e in first] == ["t0"] and [e["task_id"] for e in second] == ["t0", "t1"]
    assert second == state.events.to_list()
    second[0]["task_name"] = "changed by a reader of the body"
    assert [e["task_name"] for e in state.events.to_list()] == ["task 0", "task 1"]
    assert [e["task_name"] for e in state.events.compacts()] == ["task 0", "task 1"]


def test_runs_written_in_turn_are_each_encoded_as_their_bodies_say() -> None:
    """The codec keeps what it encoded per run: two runs writing in turn, an item that is in a list twice, a body
    with no lineage and one a lone surrogate keeps from UTF-8 are each stored as a full encode gives."""
    event = {"type": "task_started", "n": 1}
    bodies = [
        {"lineage": {"lineage": run, "branch": "main"}, "events": [event, {"n": i}], "usage": {"rows": [[run, i]]}}
        for i in range(3)
        for run in ("a", "b")
    ]
    bodies.append({"lineage": {"lineage": "a", "branch": "main"}, "events": [event, event], "usage": {"rows": []}})
    bodies.append({"events": [event], "usage": {"rows": [["x"]], "before": []}})
    for body in bodies:
        assert codec.body_text(body) == BodyCodec().body_text(plain(body))
        assert json.loads("{" + codec.body_text(body)[:-1])["body"] == body
    rows: list[Any] = [["r", 1], ["r", 2]]
    grown = {"lineage": {"lineage": "c", "branch": "main"}, "events": rows, "usage": {"rows": rows}}
    codec.body_text(grown)
    rows.append(["r", 3])
    rows[0] = ["r", 9]  # the same lists, changed after they were encoded: encoded again
    assert codec.body_text(grown) == BodyCodec().body_text(plain(grown))
    meta = CheckpointMeta("c" * 32, None, "main", "l", 1, 1.0, "t")
    surrogate = {"lineage": {"lineage": "a", "branch": "main"}, "events": [event, {"text": "\ud800"}]}
    assert json.loads(encode_file(meta, surrogate).split(b"\n", 1)[1][7:-2]) == surrogate


def test_a_ledgers_unchanged_rows_are_the_same_lists_from_one_checkpoint_to_the_next() -> None:
    ledger = UsageLedger()
    call = {"input_tokens": 5, "output_tokens": 7, "model": "m", "provider": "p", "duration_s": 0.1234567}
    last: list[Any] = []
    for unit in ("a", "b", "a", "c", "a"):
        ledger.add(call, unit, unit.upper(), "agent")
        rows = ledger.stored_and_summary()[0]
        changed = ["abc".index(unit)]
        assert [i for i, r in enumerate(last) if r is not rows[i]] == [i for i in changed if i < len(last)]
        last = rows
    assert [row[ROW_KEYS.index("requests")] for row in rows] == [3, 1, 1]


def row(model: Any, tokens: Any, seconds: Any = 0.1, estimated: Any = False, provider: Any = "p") -> dict[str, Any]:
    return {
        "unit": "u",
        "model": model,
        "provider": provider,
        "input_tokens": tokens,
        "output_tokens": 2,
        "requests": 1,
        "duration_s": seconds,
        "estimated": estimated,
    }


def test_a_ledgers_summary_is_the_summary_of_its_rows_after_every_call() -> None:
    before = [row("m", 10, 0.3), row("n", 4, 0.1, True), row(7, 1), row("m", -3, -1.0, provider=None)]
    calls = [
        ("a", {"model": "m", "input_tokens": 1, "output_tokens": 2, "duration_s": 0.1}),
        ("b", {"model": "x", "input_tokens": 2, "output_tokens": 2, "duration_s": 0.2}),
        ("a", {"model": "m", "input_tokens": 5, "output_tokens": 1, "duration_s": 0.30000000000000004}),  # a middle row
        ("c", {"model": "m" * 300, "input_tokens": 10**15, "output_tokens": 0, "duration_s": 1e-7, "estimated": True}),
        ("b", {"model": "x", "input_tokens": 1, "output_tokens": 1, "duration_s": 2.5}),
    ]
    for chain_before in ([], before):
        ledger = UsageLedger()
        ledger.start_from(chain_before)
        assert ledger.stored_and_summary()[1] == usage_summary(chain_before, [])
        for unit, call in calls:
            ledger.add({"provider": "p", **call}, unit, unit.upper(), "agent")
            rows = ledger.rows()
            assert ledger.stored_and_summary()[1] == usage_summary([*chain_before, *rows], rows)
    seconds = json.loads(ledger.stored_and_summary()[1])["run"]
    assert [entry[8] for entry in seconds] == [0.4, 2.7, 0.0]  # whole microseconds, whatever order they came in
    many = UsageLedger()
    for i in range(200):
        many.add({"model": f"model-{i}", "input_tokens": i, "output_tokens": 2}, "u", "U", None)
    assert many.stored_and_summary()[1] == usage_summary(many.rows(), many.rows()) == '{"too_long":true}'
    assert UsageLedger().stored_and_summary()[1] == ""
