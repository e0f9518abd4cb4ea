"""A ``provider/model`` name without a ``base_url`` calls that provider's own OpenAI-compatible endpoint with that
provider's key (``groq/llama-3.1-8b-instant`` goes to Groq with ``GROQ_API_KEY``, never to OpenAI with
``OPENAI_API_KEY``); a provider crewpoint cannot speak to is refused in one line before any call; a ``base_url``
the program gives still wins."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import LLMServer

from crewpoint.cost import PROVIDER_PREFIXES
from crewpoint.llm import DEFAULT_BASE_URL, LLM, NO_DEFAULT_ENDPOINT, PROVIDER_ENDPOINTS, LLMError, default_llm

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.mark.parametrize(
    ("name", "url", "key"),
    [
        ("groq/llama-3.1-8b-instant", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ("openai/gpt-4o-mini", DEFAULT_BASE_URL, "OPENAI_API_KEY"),
        ("gpt-4o-mini", DEFAULT_BASE_URL, "OPENAI_API_KEY"),
        ("openrouter/anthropic/claude-3.5-sonnet", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ("together_ai/meta-llama/Llama-3-8b-chat-hf", "https://api.together.xyz/v1", "TOGETHERAI_API_KEY"),
        ("deepseek/deepseek-chat", "https://api.deepseek.com/v1", "DEEPSEEK_API_KEY"),
        ("mistral/mistral-small-latest", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
        ("fireworks_ai/accounts/fireworks/models/x", "https://api.fireworks.ai/inference/v1", "FIREWORKS_AI_API_KEY"),
        ("Groq/llama-3.1-8b-instant", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ("ollama/llama3.1:8b", "http://localhost:11434/v1", "OLLAMA_API_KEY"),
        ("meta-llama/Llama-3.1-8B-Instruct", DEFAULT_BASE_URL, "OPENAI_API_KEY"),  # no provider: a model's id
    ],
)
def test_a_provider_prefix_without_a_base_url_calls_its_providers_endpoint_with_its_key(
    name: str, url: str, key: str
) -> None:
    llm = LLM(model=name)
    assert (llm.base_url, llm.api_key_env, llm.url) == (url, key, url + "/chat/completions")
    assert "base_url" not in llm.model_fields_set  # still the program's choice to make, as it was


def test_provider_names_whose_endpoint_it_is_and_a_key_goes_with_its_endpoint() -> None:
    groq = PROVIDER_ENDPOINTS["groq"]
    assert (LLM(model="openai/gpt-oss-20b", provider="groq").base_url, LLM(model="x", provider="groq").url) == (
        groq[0],
        groq[0] + "/chat/completions",
    )
    # Groq's endpoint named by hand, the model's name no help: the key read is still Groq's, not OpenAI's
    assert LLM(model="gpt-4o-mini", base_url=groq[0] + "/").api_key_env == "GROQ_API_KEY"
    assert LLM(model="groq/x", api_key_env="MY_KEY").api_key_env == "MY_KEY"  # a variable named by hand stays


def test_every_provider_prefix_has_an_endpoint_or_is_refused() -> None:
    assert set(PROVIDER_ENDPOINTS) | NO_DEFAULT_ENDPOINT == set(PROVIDER_PREFIXES)
    assert not set(PROVIDER_ENDPOINTS) & NO_DEFAULT_ENDPOINT


@pytest.mark.parametrize("name", ["anthropic/claude-3-5-sonnet-latest", "bedrock/anthropic.claude-v2", "azure/gpt4"])
async def test_a_provider_crewpoint_cannot_speak_to_is_refused_in_one_line_before_any_call(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    llm = LLM(model=name)
    for attempt in (lambda: llm.invoke(HELLO), lambda: llm.call(HELLO)):
        with pytest.raises(LLMError) as refused:
            attempt()
        said = str(refused.value)
        assert "\n" not in said and "sk-openai-secret" not in said
        assert said.startswith(f"LLM {name}: ") and "base_url=" in said and "OpenAI-compatible" in said
    with pytest.raises(LLMError, match="no OpenAI-compatible endpoint"):
        await llm.acall(HELLO)


def test_the_providers_endpoint_gets_its_own_key_and_never_another_providers(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A real call: Groq's endpoint (here the local server standing at its address) is sent GROQ_API_KEY, and the
    model without its prefix; OPENAI_API_KEY, also set, goes nowhere."""
    monkeypatch.setitem(PROVIDER_ENDPOINTS, "groq", (server.base_url, "GROQ_API_KEY"))  # type: ignore[index]
    monkeypatch.setenv("GROQ_API_KEY", "gsk-groq")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    assert LLM(model="groq/llama-3.1-8b-instant").invoke(HELLO) == "echo: hello"
    (request,) = server.requests
    assert request.body["model"] == "llama-3.1-8b-instant"
    assert request.headers.get("Authorization") == "Bearer gsk-groq"


def test_a_base_url_given_wins_over_the_prefix(server: LLMServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GROQ_API_KEY", "gsk-groq")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    for name in ("groq/llama-3.1-8b-instant", "anthropic/claude-3-5-sonnet-latest"):
        assert LLM(model=name, base_url=server.base_url).invoke(HELLO) == "echo: hello"
    assert [r.body["model"] for r in server.requests] == ["llama-3.1-8b-instant", "claude-3-5-sonnet-latest"]
    assert all("Authorization" not in r.headers for r in server.requests)  # Groq's key never left for the server


def test_crewpoint_llm_with_a_prefix_and_no_base_url_calls_the_providers_endpoint(
    monkeypatch: pytest.MonkeyPatch, server: LLMServer
) -> None:
    monkeypatch.setenv("CREWPOINT_LLM", "groq/llama-3.1-8b-instant")
    monkeypatch.delenv("CREWPOINT_BASE_URL", raising=False)
    chosen = default_llm()
    assert isinstance(chosen, LLM) and (chosen.base_url, chosen.api_key_env) == PROVIDER_ENDPOINTS["groq"]
    monkeypatch.setenv("CREWPOINT_BASE_URL", server.base_url)
    chosen = default_llm()
    assert isinstance(chosen, LLM) and chosen.base_url == server.base_url
    assert chosen.invoke(HELLO) == "echo: hello"
