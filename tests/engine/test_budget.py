"""Budgets: a run stops before the LLM call past its budget, with a ``budget_exceeded`` checkpoint, and a resume
with a larger budget goes on from there without repeating a paid call. Against the local OpenAI-compatible server
(each answer reports a known usage; it counts requests) with a priced model (gpt-4o on openai)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from genai_prices import Usage, calc_price
from llm_server import LLMServer
from support.cli import checkpoint as cli

from crewpoint import LLM, Agent, Budget, BudgetExceeded, CheckpointConfig, Crew, Flow, Task, listen, start
from crewpoint.cost import usage_rows
from crewpoint.providers import JsonProvider

PER_CALL = {"prompt_tokens": 100_000, "completion_tokens": 50_000}
"""What each answer reports: at gpt-4o's price, $0.75 a call."""
TASKS = ("Research owls.", "Outline the post.", "Write the post.")


@pytest.fixture
def server() -> Iterator[LLMServer]:
    """The OpenAI-compatible test server (tests/llm_server.py)."""
    with LLMServer() as running:
        yield running


def call_usd() -> float:
    usage = Usage(input_tokens=PER_CALL["prompt_tokens"], output_tokens=PER_CALL["completion_tokens"])
    return float(calc_price(usage, model_ref="gpt-4o", provider_id="openai").total_price)


def crew_of(server: LLMServer, *, model: str = "gpt-4o", **settings: Any) -> Crew:
    llm = LLM(model=model, base_url=server.base_url, provider="openai")
    writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
    tasks = [
        Task(name=f"t{i + 1}", description=text, expected_output="text", agent=writer) for i, text in enumerate(TASKS)
    ]
    settings.setdefault("checkpoint", CheckpointConfig(location="store"))
    return Crew(agents=[writer], tasks=tasks, **settings)


def calls_per_task(server: LLMServer) -> list[int]:
    """How many requests the server got for each task (a task's request starts with its own description)."""
    firsts = []
    for request in server.requests:
        users = [m["content"] for m in request.body["messages"] if m["role"] == "user"]
        firsts.append(users[0] if users else "")
    return [sum(first.startswith(f"Current task: {text}") for first in firsts) for text in TASKS]


def newest(location: str = "store") -> Any:
    provider = JsonProvider()
    meta = provider.list(location)[0]
    return provider.read(location, meta.id)


def triggers(location: str = "store") -> list[str]:
    return [meta.trigger for meta in JsonProvider().list(location)]


def test_a_crew_stops_before_the_call_past_its_budget_and_a_larger_one_finishes_it(server: LLMServer) -> None:
    server.usage = PER_CALL
    crew = crew_of(server, budget=Budget(usd=0.5))  # passed by task 1's call ($0.75)
    with pytest.raises(BudgetExceeded) as stopped:
        crew.kickoff()
    exc = stopped.value
    assert calls_per_task(server) == [1, 0, 0]  # task 2's call was never made
    record = newest()
    assert record.meta.trigger == "budget_exceeded" and record.meta.id == exc.checkpoint_id
    assert (record.meta.tasks_done, record.meta.tasks_total) == (1, 3)
    assert exc.spent_usd == pytest.approx(call_usd()) and exc.spent_tokens == 150_000
    assert exc.budget == Budget(usd=0.5) and exc.ref is not None and exc.ref.endswith(".json")
    assert "--budget 1" in exc.command and exc.checkpoint_id in exc.command
    assert len(str(exc).splitlines()) == 1 and "$0.7500" in str(exc) and "$0.5000" in str(exc)
    events = [e for e in record.body["events"] if e["type"] == "budget_exceeded"]
    assert len(events) == 1
    assert events[0]["spent_usd"] == pytest.approx(call_usd()) and events[0]["budget_usd"] == 0.5
    assert events[0]["task_id"] == crew.tasks[1].id  # the call it stopped: task 2's
    assert not [e for e in record.body["events"] if e["type"] in ("task_failed", "crew_kickoff_failed")]

    again = crew_of(server)
    result = again.kickoff(from_checkpoint=exc.ref, budget=Budget(usd=5))
    assert calls_per_task(server) == [1, 1, 1]  # each task's call exactly once over both runs
    assert [t.output is not None for t in again.tasks] == [True, True, True]
    assert result.raw.startswith("echo: Current task: Write the post.")
    body = newest().body
    assert [row.unit for row in usage_rows(body, "reused")] == [crew.tasks[0].id]  # task 1: reused, not repeated


def test_setting_a_larger_budget_on_the_crew_resumes_it_in_the_same_program(server: LLMServer) -> None:
    server.usage = PER_CALL
    crew = crew_of(server, budget=Budget(usd=1.0))  # one $0.75 call fits, a second would pass it
    with pytest.raises(BudgetExceeded):
        crew.kickoff()
    with pytest.raises(BudgetExceeded):  # the same budget again: it counts from this kickoff, so one more task
        crew.kickoff()
    assert calls_per_task(server) == [1, 1, 0]
    crew.budget = Budget(usd=5)
    crew.resume()
    assert calls_per_task(server) == [1, 1, 1]


def test_a_program_without_a_budget_resumes_within_the_one_the_run_had(server: LLMServer) -> None:
    server.usage = PER_CALL
    with pytest.raises(BudgetExceeded):
        crew_of(server, budget=Budget(usd=1.0)).kickoff()
    stopped = newest()
    assert stopped.meta.trigger == "budget_exceeded"
    with pytest.raises(BudgetExceeded):  # the same crew in code, with no budget of its own: the saved one counts
        crew_of(server).kickoff(from_checkpoint=stopped.meta.location)
    assert calls_per_task(server) == [1, 1, 0]
    crew_of(server, budget=Budget(usd=5)).kickoff(from_checkpoint=newest().meta.location)  # its own wins
    assert calls_per_task(server) == [1, 1, 1]


def test_a_token_budget_counts_input_output_and_reasoning_tokens(server: LLMServer) -> None:
    server.usage = {
        "prompt_tokens": 100,
        "completion_tokens": 60,
        "completion_tokens_details": {"reasoning_tokens": 40},
    }
    crew = crew_of(server, budget=Budget(tokens=300))  # 200 a call: task 2's (its prompt and 100 out) would pass it
    with pytest.raises(BudgetExceeded) as stopped:
        crew.kickoff()
    assert calls_per_task(server) == [1, 0, 0]
    assert stopped.value.spent_tokens == 200
    assert "(the next call, up to " in str(stopped.value) and "$" not in str(stopped.value)
    event = next(e for e in newest().body["events"] if e["type"] == "budget_exceeded")
    assert (event["budget_tokens"], event["spent_tokens"]) == (300, 200)
    assert "spent_usd" not in event and "budget_usd" not in event  # a token budget prices nothing
    assert "--budget-tokens 600" in stopped.value.command


def test_the_budget_checkpoint_is_written_once_whatever_on_events_says(server: LLMServer) -> None:
    server.usage = PER_CALL
    for location, events in (("none", ["task_started"]), ("all", ["*"])):
        crew = crew_of(server, budget=Budget(usd=0.5), checkpoint=CheckpointConfig(location=location, on_events=events))
        with pytest.raises(BudgetExceeded):
            crew.kickoff()
        written = triggers(location)
        assert written.count("budget_exceeded") == 1 and written[0] == "budget_exceeded", written


def test_a_run_with_no_store_still_stops_and_says_nothing_was_saved(server: LLMServer) -> None:
    server.usage = PER_CALL
    crew = crew_of(server, budget=Budget(usd=0.5), checkpoint=False)
    with pytest.raises(BudgetExceeded) as stopped:
        crew.kickoff()
    assert calls_per_task(server) == [1, 0, 0]
    assert stopped.value.checkpoint_id is None and stopped.value.ref is None and stopped.value.command == ""
    assert "no checkpoint was written" in str(stopped.value) and "checkpoint=True" in str(stopped.value)
    assert not Path("store").exists()


def test_an_unknown_price_warns_once_and_the_tokens_still_stop_the_run(
    server: LLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.usage = {"prompt_tokens": 100, "completion_tokens": 60}
    crew = crew_of(server, model="house-model-7", budget=Budget(usd=0.01, tokens=300))
    with caplog.at_level(logging.WARNING, logger="crewpoint"), pytest.raises(BudgetExceeded) as stopped:
        crew.kickoff()
    assert calls_per_task(server) == [1, 1, 0]  # the dollars could not stop it; the tokens did
    said = [r.getMessage() for r in caplog.records if "cannot be checked" in r.getMessage()]
    assert len(said) == 1 and "house-model-7" in said[0] and "\n" not in said[0]
    assert stopped.value.spent_usd == 0 and stopped.value.spent_tokens == 320


def test_an_unknown_price_alone_never_stops_a_dollar_budget(server: LLMServer) -> None:
    server.usage = PER_CALL
    crew = crew_of(server, model="house-model-7", budget=Budget(usd=0.01))
    crew.kickoff()
    assert calls_per_task(server) == [1, 1, 1]


class Steps(Flow):
    """Three async methods, each one streamed call through ``ainvoke``; a class-attribute budget."""

    llm: LLM | None = None
    budget = Budget(usd=1.0)  # passed by the second call ($1.50)

    async def _say(self, text: str) -> str:
        assert self.llm is not None
        return await self.llm.ainvoke([{"role": "user", "content": text}])

    @start()
    async def first(self) -> str:
        return await self._say("step one")

    @listen(first)
    async def second(self, _: str) -> str:
        return await self._say("step two")

    @listen(second)
    async def third(self, _: str) -> str:
        return await self._say("step three")


def test_a_flow_stops_at_its_budget_streamed_and_async_and_resumes(server: LLMServer) -> None:
    server.mode, server.usage = "stream", PER_CALL
    Steps.llm = LLM(model="gpt-4o", base_url=server.base_url, provider="openai", stream=True)
    with pytest.raises(BudgetExceeded) as stopped:
        Steps(checkpoint=CheckpointConfig(location="store")).kickoff()
    asked = [r.body["messages"][0]["content"] for r in server.requests]
    assert asked == ["step one", "step two"]
    record = newest()
    assert record.meta.trigger == "budget_exceeded"
    assert [name for name, _ in record.body["entity"]["method_outputs"]] == ["first", "second"]
    assert stopped.value.spent_usd == pytest.approx(2 * call_usd())

    again = Steps(checkpoint=CheckpointConfig(location="store"))
    assert again.kickoff(from_checkpoint=stopped.value.ref, budget=Budget(usd=5)) == "echo: step three"
    asked = [r.body["messages"][0]["content"] for r in server.requests]
    assert asked == ["step one", "step two", "step three"]  # no method's call made twice


def test_a_standalone_agent_stops_at_its_budget(server: LLMServer) -> None:
    server.usage, server.reply = PER_CALL, "Action: lookup\nAction Input: {}"  # it asks again and again
    llm = LLM(model="gpt-4o", base_url=server.base_url, provider="openai")
    agent = Agent(role="Writer", llm=llm, max_iter=3, checkpoint=CheckpointConfig(location="store"))
    agent.budget = Budget(usd=0.5)
    with pytest.raises(BudgetExceeded) as stopped:
        agent.kickoff("Write a haiku.")
    assert len(server.requests) == 1
    assert newest().meta.trigger == "budget_exceeded" and stopped.value.checkpoint_id == newest().meta.id


def test_a_budget_refuses_what_is_no_limit() -> None:
    for bad in ({"usd": 0}, {"usd": -1.0}, {"usd": float("nan")}, {"usd": True}, {"tokens": 0}, {"tokens": 2.5}):
        with pytest.raises(ValueError, match="Budget"):
            Budget(**bad)
    assert Budget.of(None, None) is None and Budget.of(2.0, None) == Budget(usd=2.0)
    assert Budget(usd=2.0, tokens=1000).larger().options() == ["--budget", "4", "--budget-tokens", "2000"]
    assert str(Budget(usd=2.0, tokens=1000)) == "$2.00 or 1,000 tokens"


# -- the command line ----------------------------------------------------------------------------------------------

PROGRAM = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path

    from crewpoint import LLM, Agent, Budget, BudgetExceeded, CheckpointConfig, Crew, Task

    HERE = Path(__file__).parent
    llm = LLM(model="gpt-4o", base_url=os.environ["BUDGET_TEST_LLM"], provider="openai")
    writer = Agent(role="Writer", goal="g", backstory="b", llm=llm)
    crew = Crew(
        agents=[writer],
        tasks=[
            Task(name="t1", description="Research owls.", expected_output="text", agent=writer),
            Task(name="t2", description="Outline the post.", expected_output="text", agent=writer),
            Task(name="t3", description="Write the post.", expected_output="text", agent=writer),
        ],
        checkpoint=CheckpointConfig(location=str(HERE / "store")),
        budget=Budget(usd=1.0),
    )

    if __name__ == "__main__":
        try:
            crew.kickoff()
        except BudgetExceeded as stopped:
            print(stopped, file=sys.stderr)
            sys.exit(76)
    """
)


def statuses(project: Path, env: dict[str, str]) -> dict[str, str]:
    done = cli("list", "store", "--json", cwd=project, env=env)
    assert done.returncode == 0, done.stderr
    return {row["id"]: row["status"] for row in json.loads(done.stdout)}


def stopped_program(tmp_path: Path, server: LLMServer) -> tuple[Path, dict[str, str]]:
    """:data:`PROGRAM` run as a user runs it, in ``tmp_path/project``, stopped by its $1 budget after task 1
    (exit 76): the project and the environment its commands run in."""
    server.usage = PER_CALL
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM)
    env = {**os.environ, "BUDGET_TEST_LLM": server.base_url}
    first = subprocess.run(
        [sys.executable, "prog.py"], cwd=project, env=env, capture_output=True, text=True, timeout=120
    )
    assert first.returncode == 76, first.stderr
    return project, env


def test_the_command_line_stops_at_its_budget_with_exit_76_and_goes_on_with_a_larger_one(
    tmp_path: Path, server: LLMServer
) -> None:
    project, env = stopped_program(tmp_path, server)
    assert calls_per_task(server) == [1, 0, 0]
    stopped_at = newest(str(project / "store")).meta
    assert stopped_at.trigger == "budget_exceeded"
    assert set(statuses(project, env).values()) == {"stopped: budget"}
    table = cli("list", "store", cwd=project, env=env)
    assert "stopped: budget" in table.stdout
    info = cli("info", stopped_at.id, "--location", "store", cwd=project, env=env).stdout
    assert (
        "stopped: budget: the run stopped here, before an LLM call: spent $0.7500 and 150,000 tokens of $1.00" in info
    )
    go_on = f"crewpoint checkpoint resume --location store {stopped_at.id[:12]} --app prog.py:crew --budget 2"
    assert f"go on with a larger budget: {go_on}" in info  # as every view names a command: the store (not the one
    # found by default) and the program that ran

    # the program's budget again, through the command line: one more task, then exit 76 with one line
    resumed = cli("resume", stopped_at.id, "--location", "store", "--app", "prog.py:crew", cwd=project, env=env)
    assert resumed.returncode == 76, resumed.stderr
    line = resumed.stderr.strip().splitlines()[-1]
    assert line.startswith("crewpoint: stopped at its budget: spent $0.7500 and 150,000 tokens of $1.00 (the next call")
    assert "go on with: crewpoint checkpoint resume " in line and line.endswith("--app prog.py:crew --budget 2")
    assert calls_per_task(server) == [1, 1, 0]
    second = newest(str(project / "store")).meta
    assert second.trigger == "budget_exceeded" and second.tasks_done == 2

    bad = cli("resume", second.id, "--location", "store", "--budget", "-3", cwd=project, env=env)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "--budget" in bad.stderr

    done = cli(
        "resume", second.id, "--location", "store", "--app", "prog.py:crew", "--budget", "5", cwd=project, env=env
    )
    assert done.returncode == 0, done.stderr
    assert calls_per_task(server) == [1, 1, 1]  # no call made twice
    assert newest(str(project / "store")).meta.tasks_done == 3


def test_a_plain_resume_rebuilt_from_the_checkpoint_keeps_the_runs_budget(tmp_path: Path, server: LLMServer) -> None:
    """The budget is saved with the crew: a resume with neither the program nor ``--budget`` stops at it again
    (counting anew) instead of running on with no limit."""
    project, env = stopped_program(tmp_path, server)
    stopped_at = newest(str(project / "store"))
    assert stopped_at.body["entity"]["budget"] == {"usd": 1.0, "tokens": None}

    # rebuilt from the checkpoint alone: the model is the one this machine names, the budget the run's own
    plain = {**env, "CREWPOINT_LLM": "gpt-4o", "CREWPOINT_BASE_URL": server.base_url}
    resumed = cli("resume", stopped_at.meta.id, "--location", "store", cwd=project, env=plain)
    assert resumed.returncode == 76, resumed.stderr
    assert resumed.stderr.strip().splitlines()[-1].startswith("crewpoint: stopped at its budget: spent $0.7500")
    assert calls_per_task(server) == [1, 1, 0]  # one more task, then the stop: not the rest of the run

    with_more = cli(
        "resume", newest(str(project / "store")).meta.id, "--location", "store", "--budget", "5", cwd=project, env=plain
    )
    assert with_more.returncode == 0, with_more.stderr
    assert calls_per_task(server) == [1, 1, 1]


def test_a_fork_takes_a_token_budget(tmp_path: Path, server: LLMServer) -> None:
    server.usage = PER_CALL
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM)
    env = {**os.environ, "BUDGET_TEST_LLM": server.base_url}
    first = subprocess.run([sys.executable, "prog.py"], cwd=project, env=env, capture_output=True, timeout=120)
    assert first.returncode == 76
    source = newest(str(project / "store")).meta.id
    forked = cli(
        "fork", source, "--location", "store", "--app", "prog.py:crew", "--budget-tokens", "100000", "-b", "lean",
        cwd=project, env=env,
    )  # fmt: skip
    assert forked.returncode == 76, forked.stderr
    assert forked.stderr.strip().splitlines()[-1].endswith("--budget-tokens 200000")
    assert calls_per_task(server) == [1, 1, 0]
    assert newest(str(project / "store")).meta.branch == "lean"


REVIEWED = textwrap.dedent(
    """
    import os
    from pathlib import Path

    from crewpoint import LLM, CheckpointConfig, Flow, listen, start
    from crewpoint.feedback import human_feedback

    llm = LLM(model="gpt-4o", base_url=os.environ["BUDGET_TEST_LLM"], provider="openai")


    class Post(Flow):
        @start()
        @human_feedback(message="Publish the draft?")
        def draft(self):
            return "a draft"

        @listen(draft)
        def publish(self, result):
            first = llm.invoke([{"role": "user", "content": "polish it"}])
            return llm.invoke([{"role": "user", "content": "and again: " + first}])


    flow = Post(checkpoint=CheckpointConfig(location=str(Path(__file__).parent / "store")))

    if __name__ == "__main__":
        flow.kickoff()
    """
)


def test_an_answer_takes_a_budget_and_stops_at_it(tmp_path: Path, server: LLMServer) -> None:
    server.usage = PER_CALL
    project = tmp_path / "project"
    project.mkdir()
    (project / "post.py").write_text(REVIEWED)
    env = {**os.environ, "BUDGET_TEST_LLM": server.base_url, "CREWPOINT_FEEDBACK": "wait"}
    waited = subprocess.run([sys.executable, "post.py"], cwd=project, env=env, capture_output=True, timeout=120)
    assert waited.returncode == 0 and not server.requests
    waiting = newest(str(project / "store")).meta
    answered = cli(
        "answer", waiting.id, "--location", "store", "--accept", "--app", "post.py:flow", "--budget-tokens", "1000",
        cwd=project, env=env,
    )  # fmt: skip
    assert answered.returncode == 76, answered.stderr
    assert [r.body["messages"][0]["content"] for r in server.requests] == ["polish it"]  # the second call: stopped
    assert newest(str(project / "store")).meta.trigger == "budget_exceeded"
