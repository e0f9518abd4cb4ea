"""Locality: a checkpoint never decides where crewpoint writes or what store it deletes from.

Each attack is a crafted file, tried through the real command line (a subprocess) and the API; afterwards the
victim folders are checked: nothing new above a store, other projects' checkpoints all still there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from support.cli import crewpoint
from support.cli import one_line_error as refused
from support.stores import make_store

from crewpoint.checkpoint import ops
from crewpoint.providers import CheckpointError, JsonProvider


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return crewpoint("checkpoint", *args, cwd=cwd, env={**os.environ, "NO_COLOR": "1"}, timeout=300)


def tree(folder: Path) -> set[str]:
    """Every path under ``folder`` (hidden ones included), relative to it."""
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def set_branch(path: Path, branch: str) -> None:
    """Rewrite a checkpoint file's recorded branch, keeping its name and body (the body's digest still holds)."""
    head, rest = path.read_bytes().split(b"\n", 1)
    meta = json.loads(head[len(b'{"meta":') : -1])
    meta["branch"] = branch
    path.write_bytes(b'{"meta":' + json.dumps(meta).encode() + b",\n" + rest)


def files_of(store: Path) -> list[Path]:
    return sorted(store.rglob("*.json"), key=lambda p: p.name)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """``tmp_path/work/proj/.checkpoints``: one finished demo run."""
    proj = tmp_path / "work" / "proj"
    proj.mkdir(parents=True)
    make_store(str(proj / ".checkpoints"))
    return proj


def test_a_record_whose_branch_disagrees_with_its_folder_is_damaged_and_never_resumed(
    project: Path, tmp_path: Path
) -> None:
    store = project / ".checkpoints"
    crafted = [p for p in files_of(store) if "/main/" in str(p)][-1]
    set_branch(crafted, "x/y/z")
    above = tmp_path / "work"
    before = tree(above) - tree(store)

    line = refused(run_cli("resume", str(crafted), cwd=project)).replace(str(tmp_path), "")
    assert "damaged" in line and "x/y/z" in line
    # Nothing was written beside the store: no checkpoints, .runs/ or index in the folders above it.
    assert tree(above) - {f".checkpoints/{p}" for p in tree(store)} - {".checkpoints"} == before - {".checkpoints"}
    assert not (tmp_path / "main").exists() and not (tmp_path / ".index.jsonl").exists()

    # The listing shows it damaged with its reason; the other checkpoints stay good.
    metas = {m.id: m for m in JsonProvider().list(str(store))}
    damaged = [m for m in metas.values() if m.damaged]
    assert len(damaged) == 1 and "x/y/z" in (damaged[0].damaged or "")
    assert damaged[0].location == str(crafted)
    with pytest.raises(CheckpointError, match="x/y/z"):
        ops.load(str(crafted))


def test_a_lone_checkpoint_file_is_read_but_no_run_writes_beside_it(project: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    downloads = home / "Downloads"
    downloads.mkdir(parents=True)
    lone = downloads / "x.json"
    source = [p for p in files_of(project / ".checkpoints") if "/main/" in str(p)][1]
    shutil.copy(source, lone)
    set_branch(lone, "a/b")  # one dirname per part of it used to reach above the home folder
    before_home, before_top = tree(home), set(os.listdir(tmp_path))

    for command in (["resume", str(lone)], ["fork", str(lone), "--branch", "try"]):
        line = refused(run_cli(*command, cwd=downloads)).replace(str(tmp_path), "")
        assert "no store is found from it" in line
    # Reading is harmless: info shows the file, without ancestry, and says it lies in no store.
    shown = run_cli("info", str(lone), "--json", cwd=downloads)
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    assert data["ancestry"] == [data["meta"]["id"]] and "no store is found from it" in data["lone"]
    assert tree(home) == before_home and set(os.listdir(tmp_path)) == before_top

    # The provider still reads the file itself; the store a run would write to is refused, before anything runs.
    provider = JsonProvider()
    record = provider.read(str(lone))
    assert record.meta.branch == "a/b" and record.meta.damaged is None
    with pytest.raises(CheckpointError, match="no store is found from it"):
        provider.store_of(record.meta)


@pytest.mark.parametrize(
    "command",
    [
        ["list", "{notes}"],
        ["copy", "{notes}", "{target}"],
        ["prune", "{notes}", "--keep", "1"],
        ["prune", "{notes}", "--keep", "1", "--dry-run"],
        ["info", "{notes}"],
        ["resume", "{notes}"],
        ["fork", "{notes}"],
    ],
)
def test_a_json_file_that_is_no_checkpoint_is_an_error_for_every_command(tmp_path: Path, command: list[str]) -> None:
    home = tmp_path / "home"
    projects = [home / "projA" / "cp", home / "projB" / "cp"]
    for store in projects:
        store.parent.mkdir(parents=True)
        make_store(str(store))
    notes = home / "Downloads" / "notes.json"
    notes.parent.mkdir(parents=True)
    notes.write_text('{"title": "my notes", "items": [1, 2, 3]}\n')
    before = {str(s): sorted(p.name for p in files_of(s)) for s in projects}
    target = tmp_path / "copied"

    args = [a.format(notes=notes, target=target) for a in command]
    line = refused(run_cli(*args, cwd=home))
    assert "notes.json" in line
    assert {str(s): sorted(p.name for p in files_of(s)) for s in projects} == before
    assert not target.exists()
    assert notes.read_text() == '{"title": "my notes", "items": [1, 2, 3]}\n'


def test_a_checkpoint_file_inside_its_store_still_names_that_store(project: Path) -> None:
    store = project / ".checkpoints"
    one = next(p for p in files_of(store) if "/main/" in str(p))
    assert ops.find_store(str(one)) == str(store)
    linked = project / "link.json"
    linked.symlink_to(one)
    # Found from the file's real folders: a link elsewhere still names the store that holds the file.
    assert os.path.realpath(ops.find_store(str(linked))) == os.path.realpath(store)
    result = run_cli("list", str(one), cwd=project)
    assert result.returncode == 0 and one.name.split("_")[2][:8] in result.stdout


def test_a_crewai_fork_is_written_under_the_store_it_came_from(tmp_path: Path) -> None:
    from crewai_fixtures import json_store

    from crewpoint.formats.crewai.fork import fork_checkpoint

    store = json_store(tmp_path / "outer" / "crewai")
    crafted = sorted(store.rglob("*.json"))[0]
    document = json.loads(crafted.read_text())
    document["branch"] = "x/y/z"
    crafted.write_text(json.dumps(document))
    outside = tmp_path / "outer"
    before = set(os.listdir(outside)), set(os.listdir(tmp_path))

    done = fork_checkpoint(str(store), None, branch="mine")
    assert os.path.realpath(done.ref).startswith(os.path.realpath(store) + os.sep)
    assert (set(os.listdir(outside)), set(os.listdir(tmp_path))) == before

    # Named by the crafted file itself, the fork is refused: its folders are not its recorded branch.
    with pytest.raises(CheckpointError, match="x/y/z"):
        fork_checkpoint(str(crafted), None, branch="other")
    assert (set(os.listdir(outside)), set(os.listdir(tmp_path))) == before
