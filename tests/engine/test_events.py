"""The event catalogue, the event bus and the event history graph."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, get_args

import pytest

import crewpoint.events as events_pkg
from crewpoint.events import (
    CATALOGUE_NAMES,
    EVENT_TYPES,
    NEVER_EMITTED,
    A2AMessageSentEvent,
    BaseEvent,
    CheckpointEventType,
    CrewKickoffStartedEvent,
    EdgeKind,
    EventBus,
    EventRecord,
    LiteAgentExecutionCompletedEvent,
    LLMCallCompletedEvent,
    LLMCallStartedEvent,
    LLMEvent,
    LLMStreamChunkEvent,
    MCPConnectionStartedEvent,
    SigtermEvent,
    TaskCompletedEvent,
    TaskStartedEvent,
    ToolUsageStartedEvent,
    event_bus,
    event_class,
    parse_event,
)
from crewpoint.events.record import RWLock

SEEDS = Path(__file__).resolve().parents[2].parent / "shared" / "seeds"
CATALOGUE_COPY = Path(__file__).parents[1] / "fixtures" / "seed-catalogue.txt"
"""The seed pages' catalogue lines, kept with the tests for checkouts that have no seed pages beside them."""
CATALOGUE_LINE = re.compile(
    r"^(?P<family>[A-Za-z0-9 ]+) — (?P<names>[a-z0-9_]+(?:, [a-z0-9_]+)*|SIG[A-Z]+(?:, SIG[A-Z]+)*)\s*$"
)


def seed_catalogue() -> dict[str, list[str]]:
    """Family -> names, from every seed page that lists the supported events."""
    families: dict[str, list[str]] = {}
    pages = sorted(SEEDS.glob("checkpointing-*.txt")) if SEEDS.is_dir() else [CATALOGUE_COPY]
    for page in pages:
        for line in page.read_text(encoding="utf-8").splitlines():
            match = CATALOGUE_LINE.match(line.strip())
            if match:
                names = match["names"].split(", ")
                families.setdefault(match["family"], [])
                families[match["family"]] += [n for n in names if n not in families[match["family"]]]
    return families


def expected_class_name(name: str) -> str:
    if name.startswith("SIG"):
        return name.capitalize() + "Event"
    upper = {"llm": "LLM", "mcp": "MCP", "a2a": "A2A"}
    return "".join(upper.get(part, part.capitalize()) for part in name.split("_")) + "Event"


# -- the catalogue ----------------------------------------------------------------------------------------


def test_every_seed_catalogue_name_has_an_event_class() -> None:
    families = seed_catalogue()
    assert len(families) >= 16, f"catalogue lines not recognised: {sorted(families)}"
    seeded = [name for names in families.values() for name in names]
    missing = [name for name in seeded if name not in EVENT_TYPES]
    assert not missing
    crewpoints_own = {"budget_exceeded"}  # a run stopped at its budget (crewpoint.budget): no CrewAI feature
    assert set(CATALOGUE_NAMES) == set(seeded) | crewpoints_own


def test_the_kept_catalogue_copy_matches_the_seed_pages() -> None:
    if SEEDS.is_dir():
        kept = CATALOGUE_COPY.read_text(encoding="utf-8").splitlines()
        page = (SEEDS / "checkpointing-zh.txt").read_text(encoding="utf-8").splitlines()
        assert all(line in page for line in kept)


def test_literal_lists_exactly_the_event_types_in_order() -> None:
    assert get_args(CheckpointEventType) == tuple(EVENT_TYPES)
    assert CATALOGUE_NAMES == tuple(n for n in EVENT_TYPES if not n.startswith("checkpoint_"))
    lifecycle = [n for n in EVENT_TYPES if n.startswith("checkpoint_")]
    assert lifecycle == [
        "checkpoint_started",
        "checkpoint_completed",
        "checkpoint_failed",
        "checkpoint_restored",
        "checkpoint_forked",
        "checkpoint_pruned",
    ]


def test_class_names_types_and_exports() -> None:
    for name, cls in EVENT_TYPES.items():
        assert cls.__name__ == expected_class_name(name)
        assert cls().type == name
        assert getattr(events_pkg, cls.__name__) is cls
        assert cls.__name__ in events_pkg.__all__
    assert EVENT_TYPES["llm_stream_chunk"] is LLMStreamChunkEvent
    assert EVENT_TYPES["mcp_connection_started"] is MCPConnectionStartedEvent
    assert EVENT_TYPES["a2a_message_sent"] is A2AMessageSentEvent
    assert EVENT_TYPES["crew_kickoff_started"] is CrewKickoffStartedEvent
    assert EVENT_TYPES["lite_agent_execution_completed"] is LiteAgentExecutionCompletedEvent
    assert EVENT_TYPES["SIGTERM"] is SigtermEvent


def test_every_event_round_trips_through_its_compact_dict() -> None:
    for name, cls in EVENT_TYPES.items():
        event = cls(sequence=7, parent_event_id="p1")
        data = json.loads(json.dumps(event.compact()))
        assert data["type"] == name
        assert all(value is not None for value in data.values())
        back = parse_event(data)
        assert type(back) is cls
        assert back.compact() == event.compact()


def test_runtime_fields_are_typed_and_optional() -> None:
    done = LLMCallCompletedEvent(model="m", call_id="c1", response="hi", prompt_tokens=3, completion_tokens=1)
    assert isinstance(done, LLMEvent)
    assert done.compact()["completion_tokens"] == 1
    assert LLMCallStartedEvent().message_count == 0
    assert ToolUsageStartedEvent(tool_name="search", tool_args={"q": "x"}).tool_args == {"q": "x"}
    with pytest.raises(ValueError):
        LLMCallCompletedEvent(prompt_tokens="many")
    assert SigtermEvent().signal_number == signal.SIGTERM
    assert SigtermEvent().type == "SIGTERM"


def test_never_emitted_names() -> None:
    prefixes = (
        "a2a_",
        "mcp_",
        "skill_",
        "step_observation_",
        "agent_reasoning_",
        "agent_logs_",
        "crew_train_",
        "crew_test_",
        "agent_evaluation_",
    )
    singles = {
        "plan_refinement",
        "plan_replan_triggered",
        "goal_achieved_early",
        "task_evaluation",
    }
    expected = {n for n in EVENT_TYPES if n.startswith(prefixes) or n in singles}
    assert expected == NEVER_EMITTED
    assert {"task_completed", "llm_call_completed", "SIGTERM", "checkpoint_completed"}.isdisjoint(NEVER_EMITTED)


def test_event_class_and_parse_event_with_unknown_names() -> None:
    assert event_class("task_completed") is TaskCompletedEvent
    with pytest.raises(ValueError, match="task_finished"):
        event_class("task_finished")
    data = {"type": "from_the_future", "event_id": "e1", "sequence": 3, "colour": "blue"}
    event = parse_event(data)
    assert type(event) is BaseEvent
    assert event.compact()["colour"] == "blue"
    assert event.compact()["type"] == "from_the_future"


# -- the bus ----------------------------------------------------------------------------------------------


def test_subscribe_by_class_family_name_and_wildcard() -> None:
    bus = EventBus()
    by_class: list[str] = []
    by_family: list[str] = []
    by_name: list[str] = []
    everything: list[str] = []
    bus.register(LLMCallCompletedEvent, lambda s, e: by_class.append(e.type))
    bus.register(LLMEvent, lambda s, e: by_family.append(e.type))
    bus.register("task_completed", lambda s, e: by_name.append(e.type))
    bus.register("*", lambda s, e: everything.append(e.type))
    for event in (LLMCallStartedEvent(), LLMCallCompletedEvent(), TaskCompletedEvent(), TaskStartedEvent()):
        bus.emit(None, event)
    assert by_class == ["llm_call_completed"]
    assert by_family == ["llm_call_started", "llm_call_completed"]
    assert by_name == ["task_completed"]
    assert everything == ["llm_call_started", "llm_call_completed", "task_completed", "task_started"]


def test_unknown_subscription_targets_are_rejected() -> None:
    bus = EventBus()
    with pytest.raises(ValueError, match="task_finished"):
        bus.on("task_finished")(lambda s, e: None)
    with pytest.raises(TypeError):
        bus.register(dict, lambda s, e: None)  # type: ignore[arg-type]


def test_failing_handler_is_logged_and_later_handlers_still_run(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus()
    seen: list[str] = []

    def broken(source: Any, event: BaseEvent) -> None:
        raise RuntimeError("handler exploded")

    bus.register("task_completed", broken)
    bus.register("task_completed", lambda s, e: seen.append(e.event_id))
    with caplog.at_level(logging.ERROR, logger="crewpoint.events"):
        event = bus.emit(None, TaskCompletedEvent())
    assert seen == [event.event_id]
    assert "handler exploded" in caplog.text


def test_async_handler_has_finished_when_emit_returns() -> None:
    bus = EventBus()
    seen: list[str] = []

    async def slow(source: Any, event: BaseEvent) -> None:
        await asyncio.sleep(0.02)
        seen.append(event.type)

    bus.register(TaskCompletedEvent, slow)
    bus.emit(None, TaskCompletedEvent())
    assert seen == ["task_completed"]


async def test_async_handler_works_when_emitting_inside_a_running_loop() -> None:
    bus = EventBus()
    seen: list[str] = []

    async def handler(source: Any, event: BaseEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event.type)

    bus.register("*", handler)
    bus.emit(None, TaskStartedEvent())
    assert seen == ["task_started"]


def test_three_parameter_handlers_receive_the_current_state() -> None:
    from crewpoint.runtime import current_state

    bus = EventBus()
    calls: dict[str, tuple[Any, ...]] = {}

    def two(source: Any, event: BaseEvent) -> None:
        calls["two"] = (source, event)

    def three(source: Any, event: BaseEvent, state: Any) -> None:
        calls["three"] = (source, event, state)

    class Listener:
        def on_event(self, source: Any, event: BaseEvent, state: Any) -> None:
            calls["method"] = (source, event, state)

    bus.register("*", two)
    bus.register("*", three)
    bus.register("*", Listener().on_event)
    source = object()
    event = bus.emit(source, TaskCompletedEvent())
    assert calls["two"] == (source, event)
    assert calls["three"] == (source, event, current_state())
    assert calls["method"] == (source, event, current_state())


def test_scoped_handlers_restore_the_previous_subscriptions() -> None:
    kept: list[str] = []
    scoped: list[str] = []

    def keep(source: Any, event: BaseEvent) -> None:
        kept.append(event.type)

    event_bus.register("task_started", keep)
    try:
        with event_bus.scoped_handlers():

            @event_bus.on(LLMCallCompletedEvent)
            def on_llm_done(source: Any, event: LLMCallCompletedEvent) -> None:
                scoped.append(event.call_id or "")

            event_bus.emit(None, LLMCallCompletedEvent(call_id="c1"))
            event_bus.emit(None, TaskStartedEvent())
        event_bus.emit(None, LLMCallCompletedEvent(call_id="c2"))
        event_bus.emit(None, TaskStartedEvent())
    finally:
        event_bus.off(keep)
    assert scoped == ["c1"]
    assert kept == ["task_started", "task_started"]


def test_sequence_numbers_strictly_increase_across_threads() -> None:
    bus = EventBus()
    per_thread: list[list[int]] = [[] for _ in range(4)]

    def work(i: int) -> None:
        for _ in range(200):
            per_thread[i].append(bus.emit(None, LLMStreamChunkEvent(chunk="x")).sequence)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for seqs in per_thread:
        assert all(a < b for a, b in itertools.pairwise(seqs))
    everything = [s for seqs in per_thread for s in seqs]
    assert len(set(everything)) == len(everything) == 800
    assert bus.emit(None, TaskCompletedEvent()).sequence > max(everything)


# -- the event record -------------------------------------------------------------------------------------


def crew_history() -> tuple[EventRecord, dict[str, BaseEvent]]:
    """A small crew run: kickoff -> two tasks, an LLM call and a tool call inside the first task."""
    e: dict[str, BaseEvent] = {}
    e["kickoff"] = CrewKickoffStartedEvent(crew_name="c", inputs={"topic": "x"})
    e["t1"] = TaskStartedEvent(task_name="research", parent_event_id=e["kickoff"].event_id)
    e["llm1"] = LLMCallStartedEvent(call_id="a", parent_event_id=e["t1"].event_id)
    e["llm1_done"] = LLMCallCompletedEvent(
        call_id="a", response="r", parent_event_id=e["t1"].event_id, started_event_id=e["llm1"].event_id
    )
    e["tool"] = ToolUsageStartedEvent(
        tool_name="search", parent_event_id=e["t1"].event_id, triggered_by_event_id=e["llm1_done"].event_id
    )
    e["t1_done"] = TaskCompletedEvent(
        output="o", parent_event_id=e["kickoff"].event_id, started_event_id=e["t1"].event_id
    )
    e["t2"] = TaskStartedEvent(task_name="write", parent_event_id=e["kickoff"].event_id)
    e["signal"] = SigtermEvent()
    record = EventRecord()
    for event in e.values():
        record.add(event)
    return record, e


def ids(nodes: Any) -> list[str]:
    return [n.event_id for n in nodes]


def test_record_links_order_parents_triggers_and_starts() -> None:
    record, e = crew_history()
    assert len(record) == 8
    assert ids(record) == [ev.event_id for ev in e.values()]
    t1 = e["t1"].event_id
    assert ids(record.edges(e["t1"].event_id, EdgeKind.PREVIOUS)) == [e["kickoff"].event_id]
    assert ids(record.edges(e["t1"].event_id, "next")) == [e["llm1"].event_id]
    assert ids(record.edges(t1, EdgeKind.CHILD)) == [
        e["llm1"].event_id,
        e["llm1_done"].event_id,
        e["tool"].event_id,
    ]
    assert ids(record.edges(e["tool"].event_id, EdgeKind.PARENT)) == [t1]
    assert ids(record.edges(e["llm1_done"].event_id, EdgeKind.STARTED)) == [e["llm1"].event_id]
    assert ids(record.edges(e["llm1"].event_id, EdgeKind.COMPLETED_BY)) == [e["llm1_done"].event_id]
    assert ids(record.edges(t1, EdgeKind.COMPLETED_BY)) == [e["t1_done"].event_id]
    assert ids(record.edges(e["llm1_done"].event_id, EdgeKind.TRIGGER)) == [e["tool"].event_id]
    assert ids(record.edges(e["tool"].event_id, EdgeKind.TRIGGERED_BY)) == [e["llm1_done"].event_id]
    assert record.edges(e["signal"].event_id, EdgeKind.NEXT) == []
    assert record.get(t1) is record[t1]
    assert record.get("missing") is None
    with pytest.raises(KeyError):
        record.edges("missing", EdgeKind.CHILD)
    assert ids(record.by_type("task_started")) == [t1, e["t2"].event_id]


def test_record_roots_and_breadth_first_descendants() -> None:
    record, e = crew_history()
    assert ids(record.roots()) == [e["kickoff"].event_id, e["signal"].event_id]
    assert ids(record.descendants(e["kickoff"].event_id)) == [
        e["t1"].event_id,
        e["t1_done"].event_id,
        e["t2"].event_id,
        e["llm1"].event_id,
        e["llm1_done"].event_id,
        e["tool"].event_id,
    ]
    assert record.descendants(e["tool"].event_id) == []


def test_record_links_a_child_that_arrives_before_its_parent() -> None:
    parent = TaskStartedEvent()
    child = LLMCallStartedEvent(parent_event_id=parent.event_id)
    record = EventRecord([child])
    assert ids(record.roots()) == [child.event_id]
    record.add(parent)
    assert ids(record.edges(parent.event_id, EdgeKind.CHILD)) == [child.event_id]
    assert ids(record.roots()) == [parent.event_id]
    assert record.add(parent) is record[parent.event_id]
    assert len(record) == 2


def test_record_round_trips_through_json() -> None:
    record, e = crew_history()
    record.add(BaseEvent.model_validate({"type": "from_the_future", "parent_event_id": e["t2"].event_id, "x": 1}))
    data = json.loads(json.dumps(record.to_list()))
    back = EventRecord.from_list(data)
    assert back.to_list() == record.to_list()
    for node in record:
        for kind in EdgeKind:
            assert ids(back.edges(node.event_id, kind)) == ids(record.edges(node.event_id, kind))
    assert ids(back.roots()) == ids(record.roots())
    assert isinstance(back[e["llm1_done"].event_id].event, LLMCallCompletedEvent)
    assert back.by_type("from_the_future")[0].compact["x"] == 1


def test_record_keeps_events_as_they_were_and_copies_are_snapshots() -> None:
    record, e = crew_history()
    before = record.to_list()
    e["t1_done"].output = "edited later"  # type: ignore[attr-defined]
    assert record.to_list() == before
    snapshot = record.copy()
    record.add(TaskCompletedEvent(started_event_id=e["t2"].event_id))
    assert len(snapshot) == 8
    assert snapshot.edges(e["t2"].event_id, EdgeKind.COMPLETED_BY) == []
    assert len(record.edges(e["t2"].event_id, EdgeKind.COMPLETED_BY)) == 1


def test_concurrent_adds_from_eight_threads_lose_nothing() -> None:
    kickoff = CrewKickoffStartedEvent()
    record = EventRecord([kickoff])
    per_thread = 300
    start = threading.Barrier(9)
    stop_reading = threading.Event()
    added: list[list[str]] = [[] for _ in range(8)]

    def writer(i: int) -> None:
        start.wait()
        for _ in range(per_thread):
            event = LLMStreamChunkEvent(chunk=str(i), parent_event_id=kickoff.event_id)
            added[i].append(record.add(event).event_id)

    reader_errors: list[BaseException] = []

    def reader() -> None:
        start.wait()
        try:
            while not stop_reading.is_set():
                record.to_list()
                record.descendants(kickoff.event_id)
        except BaseException as exc:
            reader_errors.append(exc)

    writers = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    watcher = threading.Thread(target=reader)
    for t in [*writers, watcher]:
        t.start()
    for t in writers:
        t.join()
    stop_reading.set()
    watcher.join()

    assert reader_errors == []
    assert len(record) == 1 + 8 * per_thread
    assert len(record.descendants(kickoff.event_id)) == 8 * per_thread
    assert all(event_id in record for ids_ in added for event_id in ids_)
    chain = [kickoff.event_id]
    while nxt := record.edges(chain[-1], EdgeKind.NEXT):
        chain.append(nxt[0].event_id)
    assert chain == ids(record)


def test_rwlock_allows_many_readers_and_one_writer() -> None:
    lock = RWLock()
    readers_inside = threading.Barrier(4, timeout=2)
    order: list[str] = []

    def read() -> None:
        with lock.read():
            readers_inside.wait()  # breaks (times out) if readers excluded each other
            order.append("read")

    def write() -> None:
        with lock.write():
            order.append("write")

    readers = [threading.Thread(target=read) for _ in range(3)]
    for t in readers:
        t.start()
    readers_inside.wait()
    w = threading.Thread(target=write)
    w.start()
    for t in [*readers, w]:
        t.join()
    assert order == ["read", "read", "read", "write"]


def test_the_lazy_catalogue_tables_match_the_classes() -> None:
    """The names, classes and never-emitted set are tables in ``crewpoint.events.types``; the classes live in
    family modules built on first use. Building every class must give exactly the tables."""
    from crewpoint.events import types

    classes = [types.EVENT_TYPES[name] for name in types.EVENT_TYPES]
    assert [cls.model_fields["type"].default for cls in classes] == list(types.EVENT_TYPES)
    assert {name for name, cls in zip(types.EVENT_TYPES, classes, strict=True) if not cls.emitted} == set(
        types.NEVER_EMITTED
    )
    assert len(set(classes)) == len(classes) == len(types.EVENT_TYPES)
    for cls in classes:
        assert getattr(types, cls.__name__) is cls
    assert set(types.CheckpointEventType.__args__) == set(types.EVENT_TYPES)


def test_importing_the_api_builds_no_event_class_it_does_not_use() -> None:
    code = (
        "import sys\n"
        "from crewpoint import Agent, Crew, Task\n"
        "built = sorted(m for m in sys.modules if m.startswith('crewpoint.events.family_'))\n"
        "assert 'crewpoint.events.family_a2a' not in built, built\n"
        "assert len(built) <= 4, built\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
