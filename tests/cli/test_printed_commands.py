"""A run on a real model goes on only on a model someone named: the user's program (``--app``, pyproject) or
``CREWPOINT_LLM``; rebuilt from the checkpoint alone it is refused in one line (exit 2) naming both ways out, never
finished with the offline model's text. And every command crewpoint prints (waiting, budget stop, Ctrl+C, the
refusals' hints) names the program the run ran and, pasted into a shell in the user's folder, does what it says.

Real processes throughout: the user's program, the ``crewpoint`` command in a fresh shell, and the OpenAI-compatible
server of ``tests/llm_server.py`` on 127.0.0.1."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import LLMServer

from crewpoint.checkpoint import ops
from crewpoint.tui.diagnostics import ExitCode

BIN = os.path.dirname(sys.executable)

PROGRAM = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path

    from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task
    from crewpoint.feedback import FeedbackPending

    HERE = Path(__file__).parent
    llm = LLM(model="gpt-4o-mini", base_url=os.environ["MODEL_TEST_LLM"])
    writer = Agent(role="Writer", goal="write", backstory="b", llm=llm)
    crew = Crew(
        agents=[writer],
        tasks=[
            Task(name="draft", description="Draft it.", expected_output="a draft", agent=writer, human_input=True),
            Task(name="polish", description="Polish the post.", expected_output="a post", agent=writer),
        ],
        checkpoint=CheckpointConfig(location=str(HERE / ".checkpoints")),
    )

    if __name__ == "__main__":
        result = crew.kickoff()
        print(result)
        sys.exit(75 if isinstance(result, FeedbackPending) else 0)
    """
)


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def user_env(server: LLMServer, **extra: str) -> dict[str, str]:
    """A user's shell: crewpoint on the PATH, no trust, no model named, a terminal that is not one."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CREWPOINT_") and k != "OPENAI_API_KEY"}
    env.update(PATH=os.pathsep.join([BIN, env.get("PATH", "")]), NO_COLOR="1", MODEL_TEST_LLM=server.base_url)
    return {**env, **extra}


def shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``command`` pasted into a fresh shell in ``cwd``."""
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def printed(text: str, after: str) -> str:
    """The command a run printed after ``after`` (to the end of its line)."""
    found = re.search(re.escape(after) + r"\s*(crewpoint checkpoint [^\n]*)", text)
    assert found is not None, text
    return found.group(1).strip()


def waiting_program(tmp_path: Path, server: LLMServer) -> tuple[Path, dict[str, str], str]:
    """:data:`PROGRAM` run as a user runs it until it waits for a person: the project, the shell's environment and
    the command it printed."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(PROGRAM)
    env = user_env(server)
    waited = shell("CREWPOINT_FEEDBACK=wait python prog.py", project, env)
    assert waited.returncode == ExitCode.WAITING, waited.stderr
    assert server.requests  # the draft ran on the server
    return project, env, printed(waited.stdout, "answer with:")


def polished(project: Path) -> str | None:
    """The saved output of the task that runs after the answer, in the newest checkpoint."""
    newest = ops.list_checkpoints(str(project / ".checkpoints"))[0]
    tasks = ops.load(newest.id, str(project / ".checkpoints")).body["entity"]["tasks"]
    output = tasks[1]["output"]
    return output["raw"] if output is not None else None


def test_the_printed_answer_names_the_program_and_goes_on_with_the_real_model(
    tmp_path: Path, server: LLMServer
) -> None:
    project, env, command = waiting_program(tmp_path, server)
    assert command.endswith(" --app prog.py:crew"), command
    calls = len(server.requests)

    done = shell(f"{command} --accept", project, env)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) > calls  # the remaining task ran on the model the program names
    text = polished(project)
    assert text is not None and text.startswith("echo:") and "[offline" not in text


@pytest.mark.parametrize("verb", ["answer", "resume", "fork"])
def test_without_a_program_or_a_model_a_real_models_run_is_refused_naming_both_ways_out(
    tmp_path: Path, server: LLMServer, verb: str
) -> None:
    project, env, command = waiting_program(tmp_path, server)
    checkpoint_id = shlex.split(command)[3]
    before = [m.id for m in ops.list_checkpoints(str(project / ".checkpoints"))]
    calls = len(server.requests)

    extra = {"answer": " --accept", "resume": "", "fork": " -b other"}[verb]
    refused = shell(f"crewpoint checkpoint {verb} {checkpoint_id}{extra}", project, env)
    assert refused.returncode == 2, refused.stderr
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1, refused.stderr
    assert "'gpt-4o-mini'" in lines[0] and "offline model" in lines[0]
    assert "--app prog.py:crew" in lines[0] and "CREWPOINT_LLM" in lines[0]  # both ways out, the program by name
    assert [m.id for m in ops.list_checkpoints(str(project / ".checkpoints"))] == before  # nothing ran or was written
    assert len(server.requests) == calls

    if verb != "answer":
        return
    # the same answer with a model the user names goes on with that model, on its server
    named = {**env, "CREWPOINT_LLM": "gpt-4o-mini", "CREWPOINT_BASE_URL": server.base_url}
    done = shell(f"crewpoint checkpoint answer {checkpoint_id} --accept", project, named)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) > calls
    text = polished(project)
    assert text is not None and text.startswith("echo:") and "[offline" not in text


def test_a_run_that_ran_offline_still_goes_on_offline_without_a_model_named(tmp_path: Path, server: LLMServer) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(
        PROGRAM.replace('llm = LLM(model="gpt-4o-mini", base_url=os.environ["MODEL_TEST_LLM"])', 'llm = "offline"')
    )
    env = user_env(server)
    command = printed(shell("CREWPOINT_FEEDBACK=wait python prog.py", project, env).stdout, "answer with:")
    bare = " ".join(shlex.split(command)[:4])
    done = shell(f"{bare} --accept", project, env)
    assert done.returncode == 0, done.stderr
    assert not server.requests
    text = polished(project)
    assert text is not None and "[offline" in text


def readme_review() -> str:
    """The README's own ``review.py``: the Python block just before "Saved as `review.py`"."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    head = readme.split("Saved as `review.py`", 1)[0]
    return head.rsplit("```python\n", 1)[1].split("```", 1)[0]


def test_the_readmes_review_prints_a_command_that_answers_it_when_pasted(tmp_path: Path, server: LLMServer) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "review.py").write_text(readme_review())
    env = user_env(server)
    waited = shell("CREWPOINT_FEEDBACK=wait python review.py", project, env)
    assert waited.returncode == ExitCode.WAITING, waited.stderr
    command = printed(waited.stdout, "answer with:")
    assert command.endswith(" --app review.py:flow"), command

    info = shell("crewpoint checkpoint info", project, env)
    assert printed(info.stdout, "answer with:") == command  # info names the same command

    bare = " ".join(shlex.split(command)[:4])
    refused = shell(f"{bare} --outcome approved", project, env)  # the program left out: the hint names it
    assert refused.returncode == 2 and len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert "--app review.py:flow" in refused.stderr and "FILE.py:crew" not in refused.stderr

    done = shell(f"{command} --outcome approved", project, env)
    assert done.returncode == 0, done.stderr
    assert "published, approved by" in done.stdout


def test_a_flow_outside_the_project_is_named_by_its_class_in_the_hint(tmp_path: Path, server: LLMServer) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "review.py").write_text(readme_review())
    env = user_env(server)
    waited = shell("CREWPOINT_FEEDBACK=wait python review.py", elsewhere, env)
    checkpoint_id = shlex.split(printed(waited.stdout, "answer with:"))[3]
    user = tmp_path / "user"
    user.mkdir()
    (user / ".git").mkdir()  # another project: the recorded file is not one of its own
    store = shlex.quote(str(elsewhere / ".checkpoints"))
    refused = shell(f"crewpoint checkpoint resume {checkpoint_id} --location {store}", user, env)
    assert refused.returncode == 2, refused.stderr
    assert "--app FILE.py:Review" in refused.stderr and "Review().kickoff(from_checkpoint=" in refused.stderr


BUDGETED = (
    PROGRAM.replace("human_input=True", "human_input=False")
    .replace("checkpoint=CheckpointConfig(", "budget=Budget(tokens=1),\n    checkpoint=CheckpointConfig(")
    .replace("from crewpoint import LLM,", "from crewpoint import LLM, Budget, BudgetExceeded,")
    .replace(
        "    result = crew.kickoff()\n",
        "    try:\n        result = crew.kickoff()\n    except BudgetExceeded as stopped:\n"
        "        print(stopped, file=sys.stderr)\n        sys.exit(76)\n",
    )
)


def test_the_budget_stops_command_names_the_program_and_goes_on_when_pasted(tmp_path: Path, server: LLMServer) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(BUDGETED)
    env = user_env(server)
    stopped = shell("python prog.py", project, env)
    assert stopped.returncode == ExitCode.BUDGET, stopped.stderr
    command = printed(stopped.stderr, "go on with:")
    assert "--app prog.py:crew" in command
    calls = len(server.requests)

    on = shell(re.sub(r"--budget-tokens \d+", "--budget-tokens 100000", command), project, env)
    assert on.returncode == 0, on.stderr
    assert len(server.requests) > calls
    text = polished(project)
    assert text is not None and text.startswith("echo:")


HELD = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path

    from crewpoint import LLM, Agent, CheckpointConfig, Crew, Task
    from crewpoint.events import TaskCompletedEvent, event_bus

    HERE = Path(__file__).parent


    class Held(LLM):
        def call(self, messages, **kwargs):
            if (HERE / "first.done").exists():
                (HERE / "held.cue").write_text("held")
                import time

                while True:  # held until the Ctrl+C
                    time.sleep(0.05)
            return super().call(messages, **kwargs)


    event_bus.register(TaskCompletedEvent, lambda s, e: (HERE / "first.done").write_text("done"))
    llm = Held(model="gpt-4o-mini", base_url=os.environ["MODEL_TEST_LLM"])
    writer = Agent(role="Writer", goal="write", backstory="b", llm=llm)
    crew = Crew(
        agents=[writer],
        tasks=[
            Task(name="draft", description="Draft the post.", expected_output="a draft", agent=writer),
            Task(name="polish", description="Polish the post.", expected_output="a post", agent=writer),
        ],
        checkpoint=CheckpointConfig(location=str(HERE / ".checkpoints")),
    )

    if __name__ == "__main__":
        crew.kickoff()
    """
)


def test_the_ctrl_c_command_names_the_program_and_goes_on_when_pasted(tmp_path: Path, server: LLMServer) -> None:
    from support.waiting import wait_for

    project = tmp_path / "project"
    project.mkdir()
    (project / "prog.py").write_text(HELD)
    env = user_env(server)
    proc = subprocess.Popen(
        [sys.executable, "prog.py"], cwd=project, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        wait_for(lambda: (project / "held.cue").exists() or proc.poll() is not None, "the second call to be held")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    command = printed(err, "resume with:").split(", or in your program")[0]
    assert command.endswith("--app prog.py:crew"), command
    (project / "first.done").unlink()
    calls = len(server.requests)

    done = shell(command, project, env)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) > calls
    text = polished(project)
    assert text is not None and text.startswith("echo:")
