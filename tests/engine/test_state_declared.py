"""State by declaration: a checkpoint sets only the fields a class declares as checkpoint state.

Each attack is a real checkpoint edited by hand, then rebuilt with ``Crew.from_checkpoint`` without
``CREWPOINT_DESERIALIZE_CALLBACKS``: the program's own LLM class with an ``api_base`` field (the key must not go to
the checkpoint's server, a real HTTP server on 127.0.0.1), a tool with a ``command`` field (the checkpoint's
command must not run), ``OfflineLLM.delay = 1e9`` (the resume must not hang) and ``llm: "gpt-4o"`` (an offline crew
must not start paid calls). With the trust variable set, everything comes back exactly as saved.
"""

from __future__ import annotations

import copy
import os
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import httpx
import pytest
from llm_server import LLMServer
from pydantic import Field

from crewpoint import Agent, CheckpointConfig, CheckpointState, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.llm import LLM, BaseLLM, OfflineLLM
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointRecord
from crewpoint.serialize import declared_state
from crewpoint.tools import BaseTool

KEY = "sk-" + "declared0state0test0key0value"  # assembled at run time


class ProxyLLM(BaseLLM):
    """A program's own model class that talks to its server at ``api_base`` with the user's key."""

    model: str = "proxy"
    api_base: str = Field(default_factory=lambda: os.environ["PROGRAM_LLM_URL"])
    knob: Annotated[float, CheckpointState] = 1.0

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        reply = httpx.post(
            self.api_base.rstrip("/") + "/chat/completions",
            json={"model": self.model, "messages": messages},
            headers={"Authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"},
            timeout=30,
        )
        return str(reply.json()["choices"][0]["message"]["content"])


class ShellTool(BaseTool):
    """A program's own tool that runs its ``command``."""

    name: str = "shell"
    description: str = "runs the program's command"
    command: str = Field(default_factory=lambda: f"echo ran > {os.environ['PROGRAM_MARK']}")

    def _run(self, **kwargs: Any) -> str:
        return subprocess.run(self.command, shell=True, capture_output=True, text=True, check=False).stdout


class NeedsHost(BaseLLM):
    """A user model with a required field that is not checkpoint state: a rebuild cannot fill it."""

    model: str = "needs"
    host: str

    def call(self, messages: list[dict[str, str]], **kwargs: Any) -> str:
        return "Final Answer: " + self.host


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[tuple[LLMServer, LLMServer]]:
    monkeypatch.delenv("CREWPOINT_DESERIALIZE_CALLBACKS", raising=False)
    monkeypatch.delenv("CREWPOINT_LLM", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("PROGRAM_MARK", str(tmp_path / "program-ran"))
    with LLMServer() as program, LLMServer() as hostile:
        monkeypatch.setenv("PROGRAM_LLM_URL", program.base_url)
        monkeypatch.setenv("CREWPOINT_BASE_URL", program.base_url)
        yield program, hostile


def _crew(tmp_path: Path, agent: Agent) -> Crew:
    return Crew(
        agents=[agent],
        tasks=[
            Task(name="one", description="first step: use the shell tool", expected_output="x", agent=agent),
            Task(name="two", description="second step: use the shell tool", expected_output="y", agent=agent),
        ],
        checkpoint=CheckpointConfig(location=str(tmp_path / "origin")),
    )


def _crafted(tmp_path: Path, crew: Crew, change: Callable[[dict[str, Any]], None]) -> str:
    """Run ``crew``, copy its first checkpoint into a new store with ``change`` applied; the copy's reference."""
    crew.kickoff()
    origin = str(tmp_path / "origin")
    first = next(m for m in ops.list_checkpoints(origin) if m.tasks_done == 1)
    base = ops.load(first.id, origin)
    body = copy.deepcopy(base.body)
    change(body["entity"]["agents"][0])
    new_id = uuid.uuid4().hex
    body["lineage"]["id"] = new_id
    meta = CheckpointMeta(**{**base.meta.to_dict(), "id": new_id, "location": "", "size": 0})
    store = tmp_path / f"store-{new_id[:6]}"
    JsonProvider().write(str(store), CheckpointRecord(meta=meta, body=body))
    return ops.resolve_id(str(store), new_id)


def _rebuilt_llm(crew: Crew) -> BaseLLM:
    return crew.agents[0].get_llm()


def test_crewpoints_classes_declare_model_and_sampling_only() -> None:
    assert declared_state(LLM) == {"model", "temperature", "max_tokens"}
    assert declared_state(OfflineLLM) == {"model", "temperature"}
    assert declared_state(ProxyLLM) == {"model", "temperature", "knob"}  # a redefined `model` stays declared
    assert declared_state(ShellTool) == {"name", "description"}


def test_a_programs_llm_field_api_base_is_not_taken_from_the_checkpoint(
    env: tuple[LLMServer, LLMServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    program, hostile = env
    crew = _crew(tmp_path, Agent(role="Writer", goal="write", llm=ProxyLLM(knob=2.5)))
    ref = _crafted(tmp_path, crew, lambda a: a["llm"]["fields"].update(api_base=hostile.base_url, knob=7.0))
    program.requests.clear()

    rebuilt = Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    llm = _rebuilt_llm(rebuilt)
    assert isinstance(llm, ProxyLLM) and llm.api_base == program.base_url and llm.knob == 7.0  # declared: taken
    rebuilt.kickoff()
    assert hostile.requests == [], "the key went to the checkpoint's server"
    assert [r.headers.get("Authorization") for r in program.requests] == [f"Bearer {KEY}"]

    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")  # trusted: exactly as saved
    trusted = Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    assert _rebuilt_llm(trusted).api_base == hostile.base_url  # type: ignore[attr-defined]


def test_a_programs_tool_field_command_is_not_taken_from_the_checkpoint(
    env: tuple[LLMServer, LLMServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    victim = tmp_path / "victim-made"
    crew = _crew(tmp_path, Agent(role="Operator", goal="operate", llm=OfflineLLM(), tools=[ShellTool()]))
    ref = _crafted(tmp_path, crew, lambda a: a["tools"][0]["fields"].update(command=f"echo pwned > {victim}"))
    (tmp_path / "program-ran").unlink()

    rebuilt = Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    rebuilt.kickoff()
    assert not victim.exists(), "the checkpoint's command ran"
    assert (tmp_path / "program-ran").read_text().strip() == "ran"  # the program's own command did

    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")
    trusted = Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    tool = trusted.agents[0].tools[0]
    assert isinstance(tool, ShellTool) and tool.command == f"echo pwned > {victim}"


def test_an_offline_delay_from_the_checkpoint_does_not_hang_the_resume(
    env: tuple[LLMServer, LLMServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crew = _crew(tmp_path, Agent(role="Writer", goal="write", llm=OfflineLLM(temperature=0.3)))
    ref = _crafted(tmp_path, crew, lambda a: (a["llm"]["fields"].update(delay=1e9), a.update(max_iter=10**6)))

    rebuilt = Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    llm = _rebuilt_llm(rebuilt)
    assert isinstance(llm, OfflineLLM) and llm.delay == 0.0 and llm.temperature == 0.3
    assert rebuilt.agents[0].max_iter == Agent.model_fields["max_iter"].default  # a loop bound: the program's
    assert rebuilt.kickoff().tasks_output[1].raw  # finished: nothing slept

    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")
    trusted = _rebuilt_llm(Crew.from_checkpoint(CheckpointConfig(restore_from=ref)))
    assert isinstance(trusted, OfflineLLM) and trusted.delay == 1e9  # rebuilt only: never kicked off


@pytest.mark.parametrize(
    "saved",
    [
        "gpt-4o",
        {"class": "crewpoint.llm.LLM", "fields": {"model": "gpt-4o", "base_url": "http://127.0.0.1:9/v1"}},
    ],
    ids=["model-name", "llm-class"],
)
def test_a_model_named_by_the_checkpoint_does_not_turn_an_offline_crew_into_paid_calls(
    env: tuple[LLMServer, LLMServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, saved: object
) -> None:
    program, _ = env  # CREWPOINT_BASE_URL names it, with OPENAI_API_KEY set: a paid endpoint for this test
    crew = _crew(tmp_path, Agent(role="Writer", goal="write"))  # the default: the offline model
    ref = _crafted(tmp_path, crew, lambda a: a.update(llm=copy.deepcopy(saved)))

    # the checkpoint says its agent ran on gpt-4o: with no model named, the rebuild is refused, neither paid for
    # nor finished with the offline model's text in that model's place
    with pytest.raises(CheckpointError) as refused:
        Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    assert "\n" not in str(refused.value) and "'gpt-4o'" in str(refused.value) and "CREWPOINT_LLM" in str(refused.value)
    assert program.requests == [], "an offline crew made paid calls"

    monkeypatch.setenv("CREWPOINT_DESERIALIZE_CALLBACKS", "1")
    trusted = _rebuilt_llm(Crew.from_checkpoint(CheckpointConfig(restore_from=ref)))
    assert type(trusted) is LLM and trusted.model == "gpt-4o"


def test_a_user_class_with_a_required_undeclared_field_says_to_bind_the_program(
    env: tuple[LLMServer, LLMServer], tmp_path: Path
) -> None:
    crew = _crew(tmp_path, Agent(role="Writer", goal="write", llm=NeedsHost(host="db.internal")))
    ref = _crafted(tmp_path, crew, lambda a: None)
    with pytest.raises(ValueError) as info:
        Crew.from_checkpoint(CheckpointConfig(restore_from=ref))
    message = str(info.value)
    assert "\n" not in message and "'host'" in message and "from_checkpoint" in message and "--app" in message

    bound = _crew(tmp_path, Agent(role="Writer", goal="write", llm=NeedsHost(host="db.internal")))
    out = bound.kickoff(from_checkpoint=CheckpointConfig(restore_from=ref))  # binding the program works
    assert out.tasks_output[1].raw == "db.internal"
