"""The program a resume or fork runs is the user's, and `x` signals only the run a record names.

A checkpoint records where its crew came from; the Resume and Fork dialogs may suggest that program only when it is
a file of the current project, say where the suggestion comes from, and check it without importing anything (a
checkpoint naming ``evilpkg.crew`` used to import ``evilpkg`` as the dialog opened; ``antigravity.crew`` opened a
browser). crewpoint's own files are never recorded as a run's program; the command line loads the bundled demo only
for the demo's checkpoints; ``--app`` on a script whose import starts a run stops with one line. A forged run
record naming an unrelated process gets nothing sent by ``x``: only a process that holds its run's mark is
signalled.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from support.cli import CREWPOINT
from support.waiting import wait_for

from crewpoint.checkpoint import ops
from crewpoint.providers.base import CheckpointMeta, CheckpointRecord

SIZE = (140, 40)

PROGRAM = """
import os
import threading

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.llm import BaseLLM, OfflineLLM


class GatedLLM(BaseLLM):
    '''The call for step B waits until a file named "release" appears.'''

    model: str = "gated"

    def call(self, messages, **kwargs):
        if "step B" in messages[1]["content"]:
            with open("holding", "w") as f:
                f.write("B")
            while not os.path.exists("release"):
                threading.Event().wait(0.02)
        return "Final Answer: done"


# HOLD=1: a run that can be caught while it goes; else the offline model
writer = Agent(role="Writer", goal="write", backstory="", llm=GatedLLM() if os.environ.get("HOLD") else OfflineLLM())
crew = Crew(
    agents=[writer],
    tasks=[
        Task(name="a", description="step A", expected_output="text", agent=writer),
        Task(name="b", description="step B", expected_output="text", agent=writer),
    ],
    checkpoint=CheckpointConfig(location="store"),
)

if __name__ == "__main__":
    crew.kickoff()
"""

PACKAGE_INIT = """
import os

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "imported.log"), "a") as f:
    f.write("evilpkg imported\\n")
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("CREWPOINT_DESERIALIZE_CALLBACKS", "HOLD")}
    env["NO_COLOR"] = "1"
    env.update(extra)
    return env


def _newest_first(store: Path) -> list[CheckpointMeta]:
    return ops.list_checkpoints(str(store))


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project (pyproject.toml) whose package ``evilpkg.crew`` ran its crew with ``python -m``: two checkpoints
    in ``store/`` whose recorded program is the module ``evilpkg.crew``. Importing ``evilpkg`` appends a line to
    ``imported.log``; the log of the producing run is removed."""
    root = tmp_path / "project"
    (root / "evilpkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text('[project]\nname = "demo-project"\n', encoding="utf-8")
    (root / "evilpkg" / "__init__.py").write_text(PACKAGE_INIT, encoding="utf-8")
    (root / "evilpkg" / "crew.py").write_text(PROGRAM, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "evilpkg.crew"], cwd=root, env=_env(), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    (root / "imported.log").unlink()
    assert len(_newest_first(root / "store")) == 2
    return root


def _crafted_store(source: Path, target: Path, origin: object) -> CheckpointMeta:
    """A store holding ``source``'s newest checkpoint with its recorded origin replaced by ``origin``."""
    from crewpoint.providers import JsonProvider

    meta = _newest_first(source)[0]
    record = ops.load(meta.id, str(source))
    body = {**record.body, "origin": origin}
    JsonProvider().write(str(target), CheckpointRecord(meta=record.meta, body=body))
    return _newest_first(target)[0]


# -- the dialogs: suggestions ----------------------------------------------------------------------------------


async def test_the_resume_dialog_suggests_a_module_of_this_project_saying_so_and_imports_nothing(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_app import choose, settle, wait_until

    from crewpoint.screens.resume_confirm import ResumeScreen
    from crewpoint.tui.app import make_app
    from crewpoint.tui.widgets.app_field import AppField

    monkeypatch.chdir(project)
    newest = _newest_first(project / "store")[0]
    assert ops.load(newest.id, "store").body["origin"]["module"] == "evilpkg.crew"
    app = make_app("store", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose(pilot, newest.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        field = pilot.app.screen.query_one(AppField)
        await wait_until(pilot, lambda: field.file is not None)
        assert field.spec == "evilpkg.crew:crew"
        assert field.suggested and field.source is not None and "recorded in the checkpoint" in field.source
        assert field.file == str(project / "evilpkg" / "crew.py")  # the file it would run, shown before it runs
        await pilot.press("n")
    assert not (project / "imported.log").exists()  # checking the suggestion imported nothing
    assert "evilpkg" not in sys.modules


@pytest.mark.parametrize(
    "origin",
    [
        {"file": "STDLIB/antigravity.py", "module": "antigravity", "attr": "crew"},
        {"file": None, "module": "antigravity.crew", "attr": "crew"},
        {"file": None, "module": "evilpkg.crew", "attr": "crew"},
        {"file": "CREWPOINT", "module": "crewpoint.tui.cli.__main__", "attr": None},
        {"file": "OUTSIDE/other.py", "module": None, "attr": "crew"},
        {"file": "PROJECT/evilpkg/missing.py", "module": "evilpkg.missing", "attr": "crew"},
    ],
    ids=["stdlib-file", "stdlib-module", "module-without-file", "crewpoint-own", "outside-project", "no-such-file"],
)
async def test_a_recorded_program_that_is_not_a_file_of_this_project_is_never_suggested(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, origin: dict[str, object]
) -> None:
    import importlib.util
    import sysconfig

    from test_app import choose, settle, wait_until

    from crewpoint.screens.resume_confirm import ResumeScreen
    from crewpoint.tui.app import make_app
    from crewpoint.tui.widgets.app_field import AppField

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "other.py").write_text(PROGRAM, encoding="utf-8")
    places = {
        "STDLIB": sysconfig.get_paths()["stdlib"],
        "OUTSIDE": str(outside),
        "PROJECT": str(project),
    }
    path = origin["file"]
    if path == "CREWPOINT":
        path = importlib.util.find_spec("crewpoint.tui.cli.__main__").origin  # found, not run
    elif isinstance(path, str):
        head, _, rest = path.partition("/")
        path = os.path.join(places[head], rest)
    assert path is None or path.endswith("missing.py") or os.path.isfile(path)
    monkeypatch.setenv("BROWSER", f"{sys.executable} -c 'open({str(tmp_path / 'browsed')!r}, \"w\")'")
    monkeypatch.chdir(project)
    meta = _crafted_store(project / "store", project / "crafted", {**origin, "file": path})
    app = make_app("crafted", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await choose(pilot, meta.id)
        await pilot.press("e")
        await wait_until(pilot, lambda: isinstance(pilot.app.screen, ResumeScreen))
        await settle(pilot)
        field = pilot.app.screen.query_one(AppField)
        assert field.spec == "" and not field.suggested and field.file is None
        await pilot.press("n")
    assert "antigravity" not in sys.modules and "evilpkg" not in sys.modules
    assert not (project / "imported.log").exists() and not (tmp_path / "browsed").exists()


def test_the_projects_default_program_is_suggested_with_its_source(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint.checkpoint.program import suggested_app

    monkeypatch.chdir(project)
    (project / "pyproject.toml").write_text('[tool.crewpoint]\napp = "evilpkg/crew.py:crew"\n', encoding="utf-8")
    record = ops.load(_newest_first(project / "store")[0].id, "store")
    suggestion = suggested_app(record)
    assert suggestion == f"{project / 'evilpkg' / 'crew.py'}:crew"
    assert suggestion is not None and suggestion.source == "[tool.crewpoint] app in pyproject.toml"


def test_checking_a_typed_module_name_imports_nothing(project: Path) -> None:
    """The dialog's check of what the user types, in a fresh interpreter: a dotted name resolves by reading
    folders, so neither the package nor a standard module with side effects is imported."""
    script = """
import json, sys
from crewpoint.checkpoint.program import AppError, app_file
before = set(sys.modules)
answers = {}
for spec in ("evilpkg.crew:crew", "antigravity.crew:crew", "antigravity", "evilpkg.nothing:crew", "json.decoder:x"):
    try:
        answers[spec] = app_file(spec)
    except AppError as exc:
        answers[spec] = "error: " + str(exc)
print(json.dumps({"answers": answers, "new": sorted(set(sys.modules) - before)}))
"""
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=project, env=_env(), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    answers = out["answers"]
    assert answers["evilpkg.crew:crew"] == str(project / "evilpkg" / "crew.py")
    assert (
        answers["antigravity.crew:crew"].startswith("error: ")
        and "nothing was imported" in answers["antigravity.crew:crew"]
    )
    assert answers["antigravity"].endswith("antigravity.py")  # named by the user: shown, not run
    assert answers["evilpkg.nothing:crew"].startswith("error: ")
    assert answers["json.decoder:x"].endswith(os.path.join("json", "decoder.py"))
    assert not {"evilpkg", "antigravity", "webbrowser"} & set(out["new"]), out["new"]
    assert not (project / "imported.log").exists()


# -- what a run records, what the command line loads -----------------------------------------------------------


def test_a_run_resumed_without_a_program_records_none_of_crewpoints_files(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from crewpoint.checkpoint.program import is_crewpoint_file, suggested_app
    from crewpoint.tui.launcher import resume_command

    monkeypatch.chdir(project)
    first = _newest_first(project / "store")[-1]
    argv = resume_command(first.id, "store")  # what the app runs when its App field is empty
    done = subprocess.run(argv, cwd=project, env=_env(), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    newest = _newest_first(project / "store")[0]
    assert newest.id != first.id and newest.parent_id == first.id
    record = ops.load(newest.id, "store")
    origin = record.body.get("origin")
    assert origin is None or not is_crewpoint_file(str(origin.get("file") or "")), origin
    assert suggested_app(record) is None  # nothing to pre-fill: the dialog never offers crewpoint's own file


IMPORTTIME = [sys.executable, "-X", "importtime", "-m", "crewpoint.tui.cli", "checkpoint"]


def _imported_modules(stderr: str) -> set[str]:
    """Module names from ``python -X importtime`` output."""
    return {line.rsplit("|", 1)[-1].strip() for line in stderr.splitlines() if line.startswith("import time:")}


def test_resume_loads_the_bundled_demo_only_for_the_demos_own_checkpoints(project: Path) -> None:
    first = _newest_first(project / "store")[-1]
    user = subprocess.run(
        [*IMPORTTIME, "resume", first.id, "-l", "store"],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert user.returncode == 0, user.stderr[-2000:]
    assert "crewpoint.checkpoint.ops" in _imported_modules(user.stderr)  # the listing is real
    assert "crewpoint.demo" not in _imported_modules(user.stderr)

    made = subprocess.run(
        [CREWPOINT, "demo", "--location", "demo-store"], cwd=project, env=_env(), capture_output=True, timeout=120
    )
    assert made.returncode == 0, made.stderr
    demo_first = next(m for m in _newest_first(project / "demo-store")[::-1] if m.entity_kind == "crew")
    demo = subprocess.run(
        [*IMPORTTIME, "fork", demo_first.id, "-l", "demo-store", "--input", "topic=kites"],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert demo.returncode == 0, demo.stderr[-2000:]
    assert "crewpoint.demo" in _imported_modules(demo.stderr)

    # the fork's checkpoints are the demo's too: resuming one finds the demo's tools
    forked = next(m for m in _newest_first(project / "demo-store") if m.branch != "main")
    assert ops.load(forked.id, str(project / "demo-store")).body["origin"]["module"] == "crewpoint.demo"
    again = subprocess.run(
        [*IMPORTTIME, "resume", forked.id, "-l", "demo-store"],
        cwd=project,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    assert "crewpoint.demo" in _imported_modules(again.stderr)


def test_app_on_a_script_that_starts_a_run_while_it_loads_stops_with_one_line(tmp_path: Path) -> None:
    script = PROGRAM.replace('if __name__ == "__main__":\n    crew.kickoff()', "crew.kickoff()")
    (tmp_path / "crew1.py").write_text(script, encoding="utf-8")
    done = subprocess.run([sys.executable, "crew1.py"], cwd=tmp_path, env=_env(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    before = _newest_first(tmp_path / "store")
    resumed = subprocess.run(
        [CREWPOINT, "checkpoint", "resume", before[-1].id, "-l", "store", "--app", "crew1.py:crew"],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert resumed.returncode == 2, resumed.stderr
    assert resumed.stderr.count("\n") == 1 and "Traceback" not in resumed.stderr, resumed.stderr
    assert "crew1.py starts a run while it is loaded" in resumed.stderr
    assert 'if __name__ == "__main__":' in resumed.stderr
    assert [m.id for m in _newest_first(tmp_path / "store")] == [m.id for m in before]  # nothing ran


# -- x: only the run's own process ---------------------------------------------------------------------------


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process of this user, waiting on its stdin."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def _wait_for(path: Path, process: subprocess.Popen[bytes]) -> None:
    def there() -> bool:
        assert process.poll() is None, "the run ended before it got there"
        return path.exists()

    wait_for(there, path.name)


def test_a_running_run_is_verified_by_its_mark_and_a_forged_record_is_not(
    project: Path, bystander: subprocess.Popen[bytes]
) -> None:
    from crewpoint.providers.run_mark import held_by
    from crewpoint.providers.runs import read_runs
    from crewpoint.tui import run_control

    run = subprocess.Popen(
        [sys.executable, "-m", "evilpkg.crew"], cwd=project, env=_env(HOLD="1"), stderr=subprocess.DEVNULL
    )
    try:
        _wait_for(project / "holding", run)  # inside step B's model call: the run is going
        mine = next(r for r in read_runs(str(project / "store")) if r.pid == run.pid and r.status == "running")
        assert held_by(run.pid, mine.run_id)
        assert not held_by(run.pid, "0123456789abcdef") and not held_by(bystander.pid, mine.run_id)
        forged = replace(mine, pid=bystander.pid)  # the same run, pointing at another process
        assert run_control.problem(forged) is not None
        assert run_control.interrupt(forged) is not None
        assert bystander.poll() is None  # nothing was sent to it
        assert run_control.problem(mine) is None
        assert run_control.interrupt(mine) is None
        assert run.wait(timeout=60) in (130, -signal.SIGINT)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait(timeout=30)
    stopped = next(r for r in read_runs(str(project / "store")) if r.pid == run.pid)
    assert stopped.status == "interrupted"
    assert not held_by(run.pid, mine.run_id)  # the process is gone, and with it the mark


async def test_x_in_the_app_sends_nothing_to_a_process_a_forged_run_record_names(
    project: Path, bystander: subprocess.Popen[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_app import browser, choose, settle

    from crewpoint.providers.runs import RunInfo, this_host, write_run
    from crewpoint.screens.confirm import ConfirmScreen
    from crewpoint.tui.app import make_app

    monkeypatch.chdir(project)
    newest = _newest_first(project / "store")[0]
    now = time.time()
    forged = RunInfo(
        run_id="0123456789abcdef",
        pid=bystander.pid,
        host=this_host(),
        started_at=now,
        last_beat=now + 3600,  # fresh for the whole test
        branch=newest.branch,
        lineage=newest.lineage,
        entity_kind=newest.entity_kind,
        entity_name=newest.entity_name,
        checkpoint_id=newest.id,
    )
    write_run("store", forged)
    app = make_app("store", watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = await choose(pilot, newest.id)
        live = screen._live_run_elsewhere()
        assert live is not None and live.pid == bystander.pid  # the app takes the record for a live run
        screen.ckpt_tree.focus()
        await pilot.press("x")
        await settle(pilot)
        assert not isinstance(pilot.app.screen, ConfirmScreen)  # no offer to stop an unverified process
        assert browser(pilot) is screen
    assert bystander.poll() is None  # and nothing was sent to it
