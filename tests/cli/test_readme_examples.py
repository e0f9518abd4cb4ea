"""Every example in the README runs as written.

The test reads README.md, takes out each fenced code block and runs it the way the README tells a reader to, in a
fresh folder, on the embedded offline model: Python blocks are saved as the files the README names (``crew1.py``,
``resume.py``) or run as scripts; console and sh blocks are run line by line as real subprocesses, with the
placeholders a reader fills in (``<id>``, ``<file>``) replaced by real ids and file names. A block is either run
here or listed in :data:`NOT_RUN` with the reason, and a block the test does not know fails it, so a new example
cannot be added without being tried.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.cli import cli
from support.reading import browser, text_of
from support.waiting import settle, wait_for, wait_until
from textual.widgets import Button, Input

from crewpoint.cost import load_prices, price_rows, usage_rows
from crewpoint.estimate import cost_text
from crewpoint.screens.answer_dialog import AnswerScreen
from crewpoint.tui.app import make_app

README = Path(__file__).resolve().parents[2] / "README.md"
BIN = Path(sys.executable).parent
TIMEOUT = 180


@dataclass(frozen=True)
class Block:
    lang: str
    code: str
    line: int

    @property
    def commands(self) -> list[str]:
        """The command lines of a console/sh block."""
        return [line for line in self.code.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def readme_blocks() -> list[Block]:
    text = README.read_text(encoding="utf-8")
    found = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        found.append(Block(match.group(1), match.group(2), text.count("\n", 0, match.start()) + 1))
    return found


# A block is known by a piece of its text. RUN: the blocks this test runs; NOT_RUN: the reason a block is not run.
RUN = {
    "crew1.py": "slow = OfflineLLM(delay=3)",
    "resume.py": "result = crew.kickoff(from_checkpoint=sys.argv[1])",
    "bind": 'restore_from="<id or prefix>"',
    "app": "crewpoint checkpoint resume <id> --app crew1.py:crew",
    "rebuild": 'Crew.fork(CheckpointConfig(restore_from=first.location), branch="shorter-research")',
    "config": "config = CheckpointConfig(  # then Crew(",
    "handler": "@event_bus.on(LLMCallCompletedEvent)",
    "declared state": "temperature: Annotated[float, CheckpointState] = 0.2",
    "postgres config": 'CheckpointConfig(location="postgresql://crewpoint@db.internal:5432/agents")',
    "command line": "crewpoint checkpoint list ./.checkpoints --branch main --limit 5 --json",
    "cost": "crewpoint checkpoint cost --by task",
    "prices": '"offline" = { input_mtok = 3.0, output_mtok = 15.0 }',
    "review.py": '@human_feedback(message="Publish this draft?"',
    "answer in a terminal": "CREWPOINT_FEEDBACK=ask python review.py",
    "answer on the command line": "crewpoint checkpoint answer <id> --outcome approved --app review.py:flow",
    "answer.py": 'print(flow.kickoff(from_checkpoint=where, feedback="approved: ship it"))',
    "budget.py": "budget=Budget(usd=2.0, tokens=250),",
    "budget resume": "crewpoint checkpoint resume <id> --app budget.py:crew --budget-tokens 1000",
    "fork estimate": '--set-output 1="Three bullets on agents." --app crew1.py:crew --dry-run',
}
NOT_RUN = {
    "crewpoint checkpoint resume <id> --app prog.py:crew --dry-run": "the output of a dry run after the program "
    "changed: tests/engine/test_program_changes.py test_the_readme_plan_is_what_the_dry_run_prints compares its "
    "plan lines",
    "dry run: would fork": "the output of the fork estimate example: "
    "test_the_fork_estimate_example_prints_the_summary_tasks_last_run compares its lines with it",
    "crewpoint new notes": "tests/cli/test_new_project.py runs these commands (the run waits for the review, the "
    "answer finishes it)",
    "make demo": "`make demo` needs a terminal and `make test` is the whole suite: the Makefile's own targets",
    "export CREWPOINT_CHECKPOINT_LOCATION=postgresql": "needs the PostgreSQL server db.internal of the example; "
    "tests/providers/test_postgres_location.py runs these commands on a local server",
    "crewpoint worker --app crew1.py:crew &": "workers run until stopped and the commands need a PostgreSQL server: "
    "tests/cli/test_fleet.py runs workers, submit and worker --status, tests/cli/test_fleet_list.py the list's STATUS "
    "while a worker is killed, tests/cli/test_fleet_stop.py checkpoint stop, tests/cli/test_fleet_recover.py --recover",
    "python scripts/pg_local.py": "starts a PostgreSQL server that runs until Ctrl-C (tests/pg_server.py is its core)",
    "crewpoint checkpoint serve --location": "starts a web server that runs until Ctrl-C; tests/app/test_serve.py "
    "drives these options with a real browser",
    "crewpoint checkpoint info -l ./.checkpoints 20260115T093012_1a2b3c4d": "needs a CrewAI store holding those ids; "
    "tests/cli/test_crewai_cli.py runs these commands on stores CrewAI wrote",
    'otel={"endpoint": "http://127.0.0.1:4318"})': "needs a collector at that address; "
    "tests/engine/test_telemetry.py runs crews with otel={'endpoint': ...} exporting to a local receiver",
    'otel = { endpoint = "http://127.0.0.1:4318", service_name': "needs a collector at that address; "
    "test_which_setting_turns_export_on reads the setting from a project's pyproject.toml",
    "crewpoint checkpoint --location ./.checkpoints   # then a": "the app and a web server run until closed; "
    "test_a_run_that_waits_is_answered_each_way_the_readme_shows opens the app on the waiting run and presses a, "
    "tests/app/test_answer_app.py answers through the dialog and tests/app/test_serve.py drives serve in a real "
    "browser",
}
LINES_NOT_RUN = {
    "crewpoint checkpoint resume <id> --app prog.py:crew --dry-run": "the output of a dry run after the program "
    "changed: tests/engine/test_program_changes.py test_the_readme_plan_is_what_the_dry_run_prints compares its "
    "plan lines",
    "crewpoint checkpoint  ": "opens the terminal app (tests/app/test_app.py drives it)",
    "crewpoint checkpoint --location ./my_checkpoints": "opens the terminal app (tests/app/test_app.py drives it)",
    "crewpoint checkpoint serve --read-only": "a web server that runs until Ctrl-C (tests/app/test_serve.py)",
}


def block(name: str) -> Block:
    (found,) = [b for b in readme_blocks() if RUN[name] in b.code]
    return found


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CREWPOINT_DESERIALIZE_CALLBACKS", "CREWPOINT_LLM")}
    env["NO_COLOR"] = "1"
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"  # `crewpoint` and `python` as a reader's venv has them
    return env


def run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=cwd, env=_env(), capture_output=True, text=True, timeout=TIMEOUT)


def python(script: str, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, script, *args], cwd)


def checkpoints(folder: Path, branch: str = "main") -> list[Path]:
    """The JSON checkpoint files of ``branch``, oldest first (their names start with the sequence number)."""
    where = folder / ".checkpoints" / branch
    return sorted(where.glob("*.json")) if where.is_dir() else []


def listing(folder: Path) -> list[dict[str, object]]:
    """``list .checkpoints --json`` in ``folder``. The test reads the store this way between the examples it runs, so
    the listing runs in the test's process (the same command, without a process start each time)."""
    done = cli("checkpoint", "list", str(folder / ".checkpoints"), "--json")
    assert done.exit_code == 0, done.stderr
    rows: list[dict[str, object]] = json.loads(done.stdout)
    return rows


def write(folder: Path, name: str, text: str) -> None:
    (folder / name).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where the README's first example (``crew1.py``) ran to the end."""
    folder = tmp_path_factory.mktemp("finished")
    write(folder, "crew1.py", block("crew1.py").code)
    done = python("crew1.py", folder)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() and len(checkpoints(folder)) == 2
    return folder


@pytest.fixture
def project(finished: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    shutil.copytree(finished, folder)
    return folder


def test_every_block_of_the_readme_is_run_here_or_says_why_not() -> None:
    known = {**{f"run {k}": v for k, v in RUN.items()}, **{f"not run {k}": k for k in NOT_RUN}}
    for found in readme_blocks():
        names = [name for name, key in known.items() if key in found.code]
        assert len(names) == 1, f"README line {found.line}: a {found.lang} block this test does not know ({names})"
    for name, key in RUN.items():
        assert sum(key in b.code for b in readme_blocks()) == 1, f"the README no longer has the {name} example"
    assert all(reason for reason in NOT_RUN.values())


def test_the_crash_story_ctrl_c_after_the_first_task_then_resume(tmp_path: Path) -> None:
    write(tmp_path, "crew1.py", block("crew1.py").code)
    write(tmp_path, "resume.py", block("resume.py").code)
    process = subprocess.Popen(
        [sys.executable, "crew1.py"],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def first_checkpoint() -> bool:
            assert process.poll() is None, process.communicate()
            return bool(checkpoints(tmp_path))

        wait_for(first_checkpoint, "the first task's checkpoint", timeout=TIMEOUT)  # now press Ctrl+C
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode in (130, -signal.SIGINT), stderr  # exit 130, or killed by SIGINT as Python does
    (first,) = checkpoints(tmp_path)  # the run stopped during the summary, the research saved
    assert "resume" in stderr
    assert "python resume.py ./.checkpoints/main/<file>.json" in block("resume.py").code  # what the reader runs
    resumed = python("resume.py", tmp_path, f"./.checkpoints/main/{first.name}")
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip()
    rows = listing(tmp_path)
    assert len(rows) == 2  # one new checkpoint, the summary's: the research task was not run again
    assert rows[0]["parent_id"] == rows[1]["id"] and rows[0]["tasks_done"] == 2


def test_binding_naming_the_program_and_rebuilding_run_as_written(project: Path) -> None:
    oldest = listing(project)[-1]
    first_id = str(oldest["id"])

    write(project, "bind.py", block("bind").code.replace("<id or prefix>", first_id[:8]))
    bound = python("bind.py", project)
    assert bound.returncode == 0, bound.stderr

    for command in block("app").commands:
        argv = shlex.split(command.replace("<id>", first_id))
        done = run([str(BIN / argv[0]), *argv[1:]], project)
        assert done.returncode == 0, (command, done.stderr)
    assert any(row["branch"] == "shorter" for row in listing(project))

    write(project, "rebuild.py", block("rebuild").code)
    rebuilt = python("rebuild.py", project)
    assert rebuilt.returncode == 0, rebuilt.stderr
    forked = [row for row in listing(project) if row["branch"] == "shorter-research"]
    assert forked and all(row["parent_id"] for row in forked)


def test_an_app_script_that_kicks_off_while_loading_stops_with_one_line(project: Path) -> None:
    """The first example without its ``__main__`` guard, named by ``--app``: one line, nothing runs."""
    head, _, guarded = block("crew1.py").code.partition('if __name__ == "__main__":')
    unguarded = head + textwrap.dedent(guarded.split("\n", 1)[1])
    assert "__main__" not in unguarded and "\nresult = crew.kickoff(" in unguarded
    write(project, "crew1.py", unguarded)
    before = listing(project)
    done = run(
        [str(BIN / "crewpoint"), "checkpoint", "resume", str(before[-1]["id"]), "--app", "crew1.py:crew"], project
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert 'if __name__ == "__main__":' in done.stderr
    assert listing(project) == before


def test_the_configuration_and_event_handler_examples_run(tmp_path: Path) -> None:
    for name in ("config", "postgres config"):
        write(tmp_path, f"{name.replace(' ', '_')}.py", block(name).code + "\nprint(config.location)\n")
        done = python(f"{name.replace(' ', '_')}.py", tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.split()[-1] in ("./my_checkpoints", "postgresql://crewpoint@db.internal:5432/agents")

    # the handler, with a small crew of the offline model to call it
    crew = (
        "\nfrom crewpoint import Agent, Crew, Task\n"
        'agent = Agent(role="Writer", goal="write", backstory="")\n'
        'Crew(agents=[agent], tasks=[Task(description="say hi", expected_output="hi", agent=agent)]).kickoff()\n'
    )
    write(tmp_path, "handler.py", block("handler").code + crew)
    done = python("handler.py", tmp_path)
    assert done.returncode == 0, done.stderr
    assert "Saved checkpoint:" in done.stdout
    assert any((tmp_path / "my_checkpoints").rglob("*.json"))


def test_the_command_line_examples_run_as_written(project: Path) -> None:
    rows = listing(project)
    newest, oldest = rows[0], rows[-1]
    names = {
        "<file>": checkpoints(project)[-1].stem,
        "<id-prefix>": str(newest["id"])[:8],
        "<id1>": str(oldest["id"])[:8],
        "<id2>": str(newest["id"])[:8],
    }
    ran = skipped = 0
    for command in block("command line").commands:
        if any(command.startswith(line) or command.rstrip() == line.strip() for line in LINES_NOT_RUN):
            skipped += 1
            continue
        for placeholder, value in names.items():
            command = command.replace(placeholder, value)
        argv = shlex.split(command, comments=True)
        done = run([str(BIN / argv[0]), *argv[1:]], project)
        assert done.returncode == 0, (command, done.stderr)
        ran += 1
    assert skipped == 3 and ran == len(block("command line").commands) - skipped
    assert (project / "backup.db").is_file() and (project / "demo-store").is_dir()
    assert any(row["branch"] == "what-if" for row in listing(project))


def test_a_declared_field_comes_back_and_an_undeclared_one_stays_the_programs(tmp_path: Path) -> None:
    """The README's ``ProxyLLM``: a checkpoint edited to point ``api_base`` elsewhere and change ``temperature`` is
    rebuilt with the program's ``api_base`` and the checkpoint's ``temperature``."""
    program = block("declared state").code + textwrap.dedent(
        """
        import sys

        from crewpoint import Agent, CheckpointConfig, Crew, Task

        if sys.argv[1] == "run":
            agent = Agent(role="Writer", goal="write", backstory="", llm=ProxyLLM(model="proxy-1", temperature=0.7))
            task = Task(description="say hi", expected_output="hi", agent=agent)
            Crew(agents=[agent], tasks=[task], checkpoint=True).kickoff()
        else:
            crew = Crew.from_checkpoint(CheckpointConfig(restore_from=sys.argv[2]))
            llm = crew.agents[0].llm
            print(type(llm).__name__, llm.api_base, llm.temperature)
        """
    )
    write(tmp_path, "proxy.py", program)
    done = python("proxy.py", tmp_path, "run")
    assert done.returncode == 0, done.stderr
    (path,) = checkpoints(tmp_path)
    data = json.loads(path.read_text())
    text = json.dumps(data["body"])
    assert '"api_base"' in text and "0.7" in text  # both fields are saved
    edited = text.replace("http://127.0.0.1:8000/v1", "http://attacker.invalid/v1").replace("0.7", "0.4")
    data["body"] = json.loads(edited)
    data["meta"].pop("digest", None)  # an edited body without its digest is checked, not refused as altered
    path.write_text(json.dumps(data))
    rebuilt = python("proxy.py", tmp_path, "rebuild", str(path))
    assert rebuilt.returncode == 0, rebuilt.stderr
    assert rebuilt.stdout.split()[-3:] == ["ProxyLLM", "http://127.0.0.1:8000/v1", "0.4"]


def test_the_cost_examples_run_as_written_and_an_override_prices_the_offline_model(project: Path) -> None:
    newest = str(listing(project)[0]["id"])
    for command in block("cost").commands:
        argv = shlex.split(command.replace("<id-prefix>", newest[:8]), comments=True)
        done = run([str(BIN / argv[0]), *argv[1:]], project)
        assert done.returncode == 0, (command, done.stderr)
    spent = json.loads(done.stdout)  # the last line: one chain as JSON
    tokens = spent["usage"]
    assert tokens["input_tokens"] > 0 and spent["cost_usd"] == 0.0  # the offline model costs nothing
    write(project, "pyproject.toml", block("prices").code)
    priced = run([str(BIN / "crewpoint"), "checkpoint", "cost", newest[:8], "--json"], project)
    assert priced.returncode == 0, priced.stderr
    expected = (tokens["input_tokens"] * 3.0 + tokens["output_tokens"] * 15.0) / 1_000_000
    assert json.loads(priced.stdout)["cost_usd"] == round(expected, 6) > 0


def test_the_budget_example_stops_at_its_budget_and_the_resume_repeats_no_call(tmp_path: Path) -> None:
    write(tmp_path, "budget.py", block("budget.py").code)
    first, resume = block("budget resume").commands
    stopped = _line(first, tmp_path)
    assert stopped.returncode == 76, stopped.stderr
    (said,) = stopped.stderr.strip().splitlines()
    assert "spent $0.0000 and 171 tokens of $2.00 or 250 tokens (the next call, up to $0.0000 and " in said
    assert "go on with: crewpoint checkpoint" in said  # the call that would have passed 250 tokens was not made
    newest = listing(tmp_path)[0]
    assert (newest["trigger"], newest["status"], newest["tasks_done"]) == ("budget_exceeded", "stopped: budget", 2)
    done = _line(resume.replace("<id>", str(newest["id"])[:12]), tmp_path)
    assert done.returncode == 0, done.stderr
    body = json.loads(checkpoints(tmp_path)[-1].read_text())["body"]
    ids = [task["id"] for task in body["entity"]["tasks"]]
    assert all(task["output"] is not None for task in body["entity"]["tasks"])
    assert [row.unit for row in usage_rows(body, "rows")] == ids[2:]  # only note 3 was asked for again
    assert [row.unit for row in usage_rows(body, "reused")] == ids[:2]


def test_the_fork_estimate_example_prints_the_summary_tasks_last_run(project: Path) -> None:
    write(project, "pyproject.toml", block("prices").code)
    newest = str(listing(project)[0]["id"])
    (command,) = block("fork estimate").commands
    done = _line(command.replace("<id-prefix>", newest[:8]), project)
    assert done.returncode == 0, done.stderr
    shown = next(b for b in readme_blocks() if "dry run: would fork" in b.code).code.splitlines()

    def shape(line: str) -> str:  # ids, counts, dollars and seconds differ from the README's; the words do not
        return re.sub(r"[0-9a-f]{12}|[0-9][0-9,.]*", "N", line)

    lines = done.stdout.splitlines()
    assert [shape(line) for line in lines[-4:]] == [shape(line) for line in shown[-4:]]
    assert lines[0].startswith("dry run: would fork ") and lines[2] == "program: crew1.py:crew"
    body = json.loads(checkpoints(project)[-1].read_text())["body"]
    summary = [row for row in usage_rows(body) if row.label == "summary"]
    priced = price_rows(summary, load_prices(project))
    assert priced.usd > 0 and lines[-2].startswith(f"  2. summary: {cost_text(priced)}, ")


def _line(command: str, cwd: Path, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """A console line as a reader's shell runs it: ``NAME=value`` words before the command are its environment."""
    words = shlex.split(command, comments=True)
    env = _env()
    while re.fullmatch(r"[A-Z_]+=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    argv = [sys.executable, *words[1:]] if words[0] == "python" else [str(BIN / words[0]), *words[1:]]
    return subprocess.run(argv, cwd=cwd, env=env, input=stdin or "", capture_output=True, text=True, timeout=TIMEOUT)


def _answer_command(waited: subprocess.CompletedProcess[str]) -> list[str]:
    """The answer command a waiting run printed (exit 75)."""
    assert waited.returncode == 75, waited.stderr
    printed = waited.stdout.strip()
    said = re.search(r"answer with: (crewpoint checkpoint answer [0-9a-f]{12}) --app review.py:flow$", printed)
    assert said is not None, waited.stdout  # the program named, as the README's answer line names it
    return shlex.split(said.group(1))


async def test_a_run_that_waits_is_answered_each_way_the_readme_shows(tmp_path: Path) -> None:
    write(tmp_path, "review.py", block("review.py").code)
    write(tmp_path, "answer.py", block("answer.py").code)

    (asked,) = block("answer in a terminal").commands
    done = _line(asked, tmp_path, stdin="approved\n")
    assert done.returncode == 0, done.stderr
    assert "Publish this draft?" in done.stdout and "published, approved by " in done.stdout

    wait, list_them, answer = block("answer on the command line").commands
    words = _answer_command(_line(wait, tmp_path))
    listed = _line(list_them, tmp_path)
    assert listed.returncode == 0 and listed.stdout.splitlines()[1].split()[-1] == "waiting", listed.stderr
    done = _line(answer.replace("<id>", words[-1]), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "published, approved by " in done.stdout
    again = _line(answer.replace("<id>", words[-1]), tmp_path)
    assert again.returncode == 2 and again.stderr.startswith("crewpoint: already answered by "), again.stderr

    waiting = _answer_command(_line(wait, tmp_path))[-1]
    done = python("answer.py", tmp_path, waiting[:8])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().startswith("published, approved by ")

    # the app: a on the waiting run opens the Answer dialog; its outcome button runs the program on
    waiting = _answer_command(_line(wait, tmp_path))[-1]
    (row,) = [row for row in listing(tmp_path) if row["request"] is not None]
    assert str(row["id"]).startswith(waiting)
    app = make_app(str(tmp_path / ".checkpoints"), watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: screen.waiting_runs() == 1)
        await wait_until(pilot, lambda: screen.ckpt_tree.reveal(str(row["id"])))
        await settle(pilot)
        await wait_until(pilot, lambda: screen.detail.ready and getattr(screen.detail.meta, "id", "") == row["id"])
        await pilot.press("a")
        await wait_until(pilot, lambda: isinstance(app.screen, AnswerScreen))
        dialog = app.screen
        assert text_of(dialog.query_one("#answer-message")) == "Publish this draft?"
        dialog.query_one("#answer-app Input", Input).value = f"{tmp_path / 'review.py'}:flow"
        await settle(pilot)
        approved = dialog.query_one("#answer-outcome-0", Button)
        assert str(approved.label) == "approved"
        approved.press()
        await wait_until(pilot, lambda: app.screen is screen)
        await wait_until(pilot, lambda: screen.run_panel.has_class("-ok") and not screen.run_panel.running, 60)
        await wait_until(pilot, lambda: screen.waiting_runs() == 0)
    assert all(row["request"] is None for row in listing(tmp_path))
