"""``provider/model`` names as CrewAI users write them (``llm="openai/gpt-4o-mini"``, every CrewAI agents.yaml): the
server is asked for the model without the provider prefix, and usage is recorded and priced under that provider and
model, not "price unknown". A name whose first part is no provider (a Hugging Face id) is sent whole, and so is
another provider's own id when ``provider=`` says whose it is (Groq's ``openai/gpt-oss-20b``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from llm_server import LLMServer

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.cost import PRICE_UNKNOWN, price_row, split_provider
from crewpoint.estimate import chain_cost
from crewpoint.events import BaseEvent, LLMCallCompletedEvent, event_bus
from crewpoint.llm import LLM

USAGE = {"prompt_tokens": 1_000, "completion_tokens": 500, "total_tokens": 1_500}


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.usage = USAGE
        yield running


@pytest.fixture
def completed() -> Iterator[list[BaseEvent]]:
    seen: list[BaseEvent] = []
    with event_bus.scoped_handlers():
        event_bus.register(LLMCallCompletedEvent, lambda source, event: seen.append(event))
        yield seen


def genai(model: str, provider: str) -> object:
    usage = Usage(input_tokens=USAGE["prompt_tokens"], output_tokens=USAGE["completion_tokens"])
    return calc_price(usage, model_ref=model, provider_id=provider).total_price


@pytest.mark.parametrize(
    ("name", "provider", "sent", "recorded"),
    [
        ("openai/gpt-4o-mini", None, "gpt-4o-mini", "openai"),
        ("anthropic/claude-3-5-sonnet-latest", None, "claude-3-5-sonnet-latest", "anthropic"),
        ("ollama/llama3.1:8b", None, "llama3.1:8b", "ollama"),
        ("openrouter/anthropic/claude-3.5-sonnet", None, "anthropic/claude-3.5-sonnet", "openrouter"),
        ("gpt-4o-mini", None, "gpt-4o-mini", "openai"),
        ("meta-llama/Llama-3.1-8B-Instruct", None, "meta-llama/Llama-3.1-8B-Instruct", "openai"),
        ("openai/gpt-oss-20b", "groq", "openai/gpt-oss-20b", "groq"),
        ("groq/openai/gpt-oss-20b", None, "openai/gpt-oss-20b", "groq"),
    ],
)
def test_the_server_is_asked_for_the_model_and_usage_names_the_provider(
    server: LLMServer, completed: list[BaseEvent], name: str, provider: str | None, sent: str, recorded: str
) -> None:
    llm = LLM(model=name, base_url=server.base_url, provider=provider)
    assert llm.invoke([{"role": "user", "content": "hello"}]) == "echo: hello"
    assert server.requests[-1].body["model"] == sent
    (event,) = completed
    assert event.usage["provider"] == recorded and event.model == name  # the name as the user wrote it


@pytest.mark.parametrize(
    ("name", "provider", "model"),
    [
        ("openai/gpt-4o-mini", "openai", "gpt-4o-mini"),
        ("openai/gpt-4o-mini", "", "gpt-4o-mini"),  # a row recorded before provider names were understood
        ("anthropic/claude-3-5-sonnet-latest", "anthropic", "claude-3-5-sonnet-latest"),
        ("groq/llama-3.3-70b-versatile", "groq", "llama-3.3-70b-versatile"),
    ],
)
def test_a_provider_model_row_is_priced_as_that_providers_model(name: str, provider: str, model: str) -> None:
    row = {
        "unit": "t",
        "label": "1. t",
        "agent": "Writer",
        "model": name,
        "provider": provider,
        "input_tokens": USAGE["prompt_tokens"],
        "output_tokens": USAGE["completion_tokens"],
        "requests": 1,
    }
    cost = price_row(row)
    assert cost.note is None and cost.usd == genai(model, split_provider(name)[0] or provider)


def test_a_crew_written_as_crewai_users_write_it_runs_and_is_priced(
    server: LLMServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CREWPOINT_BASE_URL", server.base_url)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    writer = Agent(role="Writer", goal="write", backstory="b", llm="openai/gpt-4o-mini")  # agents.yaml's form
    crew = Crew(
        agents=[writer],
        tasks=[Task(name="post", description="Write the post.", expected_output="a post", agent=writer)],
        checkpoint=CheckpointConfig(location=str(tmp_path / "store")),
    )
    assert crew.kickoff().raw.startswith("echo:")
    assert {r.body["model"] for r in server.requests} == {"gpt-4o-mini"}
    newest = ops.list_checkpoints(str(tmp_path / "store"))[0]
    spent = chain_cost(ops.load(newest.id, str(tmp_path / "store")).body).spent
    assert spent.complete and PRICE_UNKNOWN not in spent.shown()
    assert spent.usd == genai("gpt-4o-mini", "openai") * len(server.requests)
