"""Flows: start/listen/router wiring, state, outputs passed on, events."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from crewpoint.events import event_bus
from crewpoint.flow import Flow, and_, listen, or_, router, start


class Counter(BaseModel):
    count: int = 0
    path: list[str] = []


class BranchingFlow(Flow[Counter]):
    @start()
    def begin(self) -> int:
        self.state.path.append("begin")
        return self.state.count

    @router(begin)
    def decide(self, value: int) -> str:
        self.state.path.append("decide")
        return "big" if value > 10 else "small"

    @listen("big")
    def handle_big(self) -> str:
        self.state.path.append("big")
        return "handled big"

    @listen("small")
    def handle_small(self) -> str:
        self.state.path.append("small")
        return "handled small"


def test_router_label_selects_the_listener() -> None:
    small = BranchingFlow()
    assert small.kickoff() == "handled small"
    assert small.state.path == ["begin", "decide", "small"]
    big = BranchingFlow()
    assert big.kickoff(inputs={"count": 42}) == "handled big"
    assert big.state.path == ["begin", "decide", "big"]
    assert big.state.count == 42


class DictFlow(Flow[dict]):  # type: ignore[type-arg]
    @start()
    def step_one(self) -> str:
        self.state["seen"] = ["one"]
        return "data"

    @listen(step_one)
    def step_two(self, data: str) -> str:
        self.state["seen"].append("two")
        return data.upper() + "!"


def test_listener_receives_the_previous_output_and_dict_state() -> None:
    flow = DictFlow()
    assert flow.kickoff() == "DATA!"
    assert flow.state["seen"] == ["one", "two"]
    assert flow.method_outputs == [("step_one", "data"), ("step_two", "DATA!")]


class JoinFlow(Flow[dict]):  # type: ignore[type-arg]
    @start()
    def a(self) -> str:
        return "a"

    @start()
    def b(self) -> str:
        return "b"

    @listen(and_(a, b))
    def both(self) -> str:
        return "both"

    @listen(or_(a, b))
    def either(self, value: str) -> str:
        self.state.setdefault("either", []).append(value)
        return "either"


def test_and_waits_for_all_or_fires_for_each() -> None:
    flow = JoinFlow()
    flow.kickoff()
    names = [name for name, _ in flow.method_outputs]
    assert names.count("both") == 1
    assert flow.state["either"] == ["a", "b"]


def test_flow_events_in_order() -> None:
    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    DictFlow().kickoff()
    assert types == [
        "flow_created",
        "flow_started",
        "method_execution_started",
        "method_execution_finished",
        "method_execution_started",
        "method_execution_finished",
        "flow_finished",
    ]


class Broken(Flow[dict]):  # type: ignore[type-arg]
    @start()
    def explode(self) -> None:
        raise RuntimeError("boom")


def test_failing_method_emits_failed_and_raises() -> None:
    types: list[str] = []
    event_bus.register("*", lambda s, e: types.append(e.type))
    with pytest.raises(RuntimeError, match="boom"):
        Broken().kickoff()
    assert "method_execution_failed" in types


class AsyncFlow(Flow[dict]):  # type: ignore[type-arg]
    @start()
    async def fetch(self) -> str:
        return "fetched"

    @listen(fetch)
    def use(self, value: str) -> str:
        return value + " and used"


async def test_async_methods_and_kickoff_async() -> None:
    assert await AsyncFlow().kickoff_async() == "fetched and used"
