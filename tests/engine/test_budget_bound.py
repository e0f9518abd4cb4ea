"""A budget is not crossed by a call crewpoint can bound: before each call, its prompt (estimated from its text) and
its output (``max_tokens``, else the largest output one call of its task or agent made) are priced and added to what
the run spent; a call that would pass the budget is not made. Against the local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from llm_server import LLMServer

from crewpoint import LLM, Agent, Budget, BudgetExceeded, CheckpointConfig, Crew, Task
from crewpoint.providers import JsonProvider

SMALL_CALL = {"prompt_tokens": 400, "completion_tokens": 100}
"""What each answer reports: at gpt-4o's price ($2.50 in, $10 out per million), $0.002 a call."""
TASKS = ("Research owls.", "Outline the post.", "Write the post.", "Edit the post.")


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def usd(usage: dict[str, int]) -> float:
    counted = Usage(input_tokens=usage["prompt_tokens"], output_tokens=usage["completion_tokens"])
    return float(calc_price(counted, model_ref="gpt-4o", provider_id="openai").total_price)


def crew_of(server: LLMServer, budget: Budget, **llm_settings: Any) -> Crew:
    llm = LLM(model="gpt-4o", base_url=server.base_url, provider="openai", **llm_settings)
    writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
    tasks = [Task(name=f"t{i}", description=text, expected_output="text", agent=writer) for i, text in enumerate(TASKS)]
    return Crew(agents=[writer], tasks=tasks, budget=budget, checkpoint=CheckpointConfig(location="store"))


def stop_event() -> dict[str, Any]:
    provider = JsonProvider()
    body = provider.read("store", provider.list("store")[0].id).body
    return next(e for e in body["events"] if e["type"] == "budget_exceeded")


def test_a_dollar_budget_is_not_passed_by_a_call_the_tasks_history_bounds(server: LLMServer) -> None:
    """$0.002 calls and a $0.005 budget: two calls ($0.004), and the third, which would make $0.006, is not made."""
    server.usage = SMALL_CALL
    assert usd(SMALL_CALL) == pytest.approx(0.002)
    with pytest.raises(BudgetExceeded) as stopped:
        crew_of(server, Budget(usd=0.005)).kickoff()
    assert len(server.requests) == 2
    exc = stopped.value
    assert exc.spent_usd == pytest.approx(0.004) and exc.spent_usd <= 0.005
    line = str(exc)
    assert len(line.splitlines()) == 1
    assert "spent $0.0040 and 1,000 tokens of $0.0050 (the next call, up to $0.00" in line  # what it could cost
    assert exc.next_call is not None and exc.next_call.startswith("up to $0.00")
    assert stop_event()["spent_usd"] == pytest.approx(0.004)


def test_max_tokens_bounds_a_call_no_history_can(server: LLMServer) -> None:
    """The first call has no history, but ``max_tokens`` bounds it: 2,000 output tokens do not fit a 1,000-token
    budget, so no call is made at all."""
    server.usage = SMALL_CALL
    with pytest.raises(BudgetExceeded) as stopped:
        crew_of(server, Budget(tokens=1000), max_tokens=2000).kickoff()
    assert server.requests == []
    assert stopped.value.spent_tokens == 0 and stopped.value.next_call is not None
    assert stopped.value.next_call.startswith("up to 2,0")  # the prompt's estimate and the 2,000 it may write
    assert stop_event()["task_id"] is not None  # the first task's call: named, never made


def test_max_tokens_that_fits_lets_the_calls_through_until_one_would_not(server: LLMServer) -> None:
    """With ``max_tokens=100`` each call is bounded by its prompt and 100 output tokens, priced at the model's price:
    a $0.003 budget takes two calls' worth, never a third."""
    server.usage = {"prompt_tokens": 100, "completion_tokens": 100}  # $0.00125 a call
    with pytest.raises(BudgetExceeded) as stopped:
        crew_of(server, Budget(usd=0.003), max_tokens=100).kickoff()
    assert [r.body.get("max_tokens") for r in server.requests] == [100, 100]  # the limit reached the server
    assert stopped.value.spent_usd == pytest.approx(0.0025) and stopped.value.spent_usd <= 0.003


def test_a_token_budget_is_not_passed_by_a_bounded_call(server: LLMServer) -> None:
    server.usage = SMALL_CALL  # 500 tokens a call
    with pytest.raises(BudgetExceeded) as stopped:
        crew_of(server, Budget(tokens=1100)).kickoff()
    assert len(server.requests) == 2  # 1,000 spent: a third call (its prompt and 100 out) would pass 1,100
    assert stopped.value.spent_tokens == 1000


def test_with_nothing_to_bound_it_a_run_goes_past_by_one_call_at_most(server: LLMServer) -> None:
    """No ``max_tokens`` and no earlier call: the first call is made, though it passes the budget; the run stops
    right after it."""
    server.usage = SMALL_CALL
    with pytest.raises(BudgetExceeded) as stopped:
        crew_of(server, Budget(usd=0.001)).kickoff()
    assert len(server.requests) == 1
    assert stopped.value.spent_usd == pytest.approx(0.002) and stopped.value.next_call is None
    assert "(the next call" not in str(stopped.value)
