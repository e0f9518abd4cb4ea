"""The model a resumed run calls is the program's or the user's, never silently the checkpoint's, and its dry run
prices that model: a checkpoint edited from ``gpt-4o-mini`` to ``gpt-4.5-preview`` (about 100x the price, "the same
family") runs the model the user names and says so before running, in one line on stderr and in the dry run; bound
to the program, the program's model runs; the estimate prices the recorded tokens at the model the run will call.

Real processes: the user's program, the ``crewpoint`` command, and the OpenAI-compatible server of
``tests/llm_server.py`` on 127.0.0.1."""

from __future__ import annotations

import copy
import os
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from genai_prices import Usage, calc_price
from llm_server import LLMServer

from crewpoint.checkpoint import ops
from crewpoint.cost import format_usd
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord

BIN = os.path.dirname(sys.executable)
PER_CALL = {"prompt_tokens": 40_000, "completion_tokens": 10_000, "total_tokens": 50_000}

PROGRAM = textwrap.dedent(
    """
    import os
    from pathlib import Path

    from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task

    HERE = Path(__file__).parent
    llm = LLM(model=os.environ.get("PROGRAM_MODEL", "gpt-4o-mini"), base_url=os.environ["MODEL_TEST_LLM"])
    writer = Agent(role="Writer", goal="write", backstory="b", llm=llm)
    crew = Crew(
        agents=[writer],
        tasks=[
            Task(name="draft", description="Draft the post.", expected_output="a draft", agent=writer),
            Task(name="polish", description="Polish the post.", expected_output="a post", agent=writer),
        ],
        checkpoint=CheckpointConfig(location=str(HERE / "store")),
    )

    if __name__ == "__main__":
        crew.kickoff()
    """
)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        running.usage = PER_CALL
        yield running


def user_env(server: LLMServer, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREWPOINT_") and k != "OPENAI_API_KEY"}
    env.update(PATH=os.pathsep.join([BIN, env.get("PATH", "")]), NO_COLOR="1", MODEL_TEST_LLM=server.base_url)
    return {**env, **extra}


def crewpoint(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["crewpoint", "checkpoint", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=180
    )


def finished_run(tmp_path: Path, server: LLMServer) -> tuple[Path, dict[str, str], str]:
    """The program run to its end on ``gpt-4o-mini``: the project, its environment, and the checkpoint after the
    first task."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM)
    env = user_env(server)
    done = subprocess.run(
        [sys.executable, "prog.py"], cwd=project, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    first = next(m for m in ops.list_checkpoints(str(project / "store")) if m.tasks_done == 1)
    server.requests.clear()
    return project, env, first.id


def price(model: str, calls: int = 1) -> str:
    """What ``calls`` of the server's fixed usage cost at ``model``, as crewpoint shows a cost."""
    usage = Usage(input_tokens=PER_CALL["prompt_tokens"], output_tokens=PER_CALL["completion_tokens"])
    return format_usd(calc_price(usage, model_ref=model, provider_id="openai").total_price * calls)


def crafted(project: Path, source: str, model: str) -> str:
    """A copy of checkpoint ``source`` whose agent names ``model``, written beside it: its id."""
    record = ops.load(source, str(project / "store"))
    body = copy.deepcopy(record.body)
    body["entity"]["agents"][0]["llm"]["fields"]["model"] = model
    new_id = uuid.uuid4().hex
    body["lineage"]["id"] = new_id
    meta = CheckpointMeta(**{**record.meta.to_dict(), "id": new_id, "location": "", "size": 0})
    JsonProvider().write(str(project / "store"), CheckpointRecord(meta=meta, body=body))
    return new_id


def test_a_checkpoint_that_changes_the_model_runs_the_users_and_says_so_first(
    tmp_path: Path, server: LLMServer
) -> None:
    project, env, first = finished_run(tmp_path, server)
    edited = crafted(project, first, "gpt-4.5-preview")
    named = {**env, "CREWPOINT_LLM": "gpt-4o-mini", "CREWPOINT_BASE_URL": server.base_url}

    dry = crewpoint("resume", edited, "--location", "store", "--dry-run", cwd=project, env=named)
    assert dry.returncode == 0, dry.stderr
    assert "model:   agent 'Writer' calls 'gpt-4o-mini' (the checkpoint names 'gpt-4.5-preview')" in dry.stdout
    assert not server.requests

    ran = crewpoint("resume", edited, "--location", "store", cwd=project, env=named)
    assert ran.returncode == 0, ran.stderr
    assert {r.body["model"] for r in server.requests} == {"gpt-4o-mini"}  # the user's model, not the checkpoint's
    said = [line for line in ran.stderr.splitlines() if "gpt-4.5-preview" in line]
    assert len(said) == 1 and "'gpt-4o-mini'" in said[0] and "CREWPOINT_LLM" in said[0]


def test_bound_to_the_program_its_model_runs_whatever_the_checkpoint_says(tmp_path: Path, server: LLMServer) -> None:
    project, env, first = finished_run(tmp_path, server)
    edited = crafted(project, first, "gpt-4.5-preview")
    ran = crewpoint("resume", edited, "--location", "store", "--app", "prog.py:crew", cwd=project, env=env)
    assert ran.returncode == 0, ran.stderr
    assert {r.body["model"] for r in server.requests} == {"gpt-4o-mini"}


def test_the_dry_run_prices_the_model_the_run_will_call(tmp_path: Path, server: LLMServer) -> None:
    project, env, first = finished_run(tmp_path, server)
    assert price("gpt-4.5-preview") != price("gpt-4o-mini")
    pricier = {**env, "PROGRAM_MODEL": "gpt-4.5-preview"}  # the program now names a pricier model

    dry = crewpoint(
        "resume",
        first,
        "--location",
        "store",
        "--app",
        "prog.py:crew",
        "--keep",
        "draft",
        "--dry-run",
        cwd=project,
        env=pricier,
    )
    assert dry.returncode == 0, dry.stderr
    assert "model:   agent 'Writer' calls 'gpt-4.5-preview' (the checkpoint names 'gpt-4o-mini')" in dry.stdout
    (total,) = [line for line in dry.stdout.splitlines() if line.strip().startswith("total:")]
    assert f"total: {price('gpt-4.5-preview')}," in total, dry.stdout  # polish's recorded tokens at the new price

    ran = crewpoint(
        "resume", first, "--location", "store", "--app", "prog.py:crew", "--keep", "draft", cwd=project, env=pricier
    )
    assert ran.returncode == 0, ran.stderr
    assert [r.body["model"] for r in server.requests] == ["gpt-4.5-preview"]  # the model the estimate priced
