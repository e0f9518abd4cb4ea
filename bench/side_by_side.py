"""Side by side: ``list`` and ``info`` of today's tree against a build of an earlier commit, and ``list`` against
its floor.

Both versions are installed the ordinary way, each in a venv of its own: a wheel built from the source (today's:
the working tree's files, committed or not; the baseline's: ``git archive``), its dependencies pinned to the
versions in the venv running the bench. Each version writes its own 10,000-record stores (JSON and SQLite: the
store formats differ between them), and the bench times whole processes as a user runs them (``crewpoint
checkpoint list STORE``, ``crewpoint checkpoint info ID --location STORE``), bytecode cached, the two versions'
runs interleaved so that a busy machine slows both alike; a ratio is today's median over the baseline's.

The floor (``list_floor.py``) prints the bytes today's ``list`` prints with the least work; its row is today's
median over the floor's, reported only when the two outputs are the same bytes. A second floor per store adds the
checks a listing owes its user (each JSON file against the index; each SQLite row's body row): no target, it
shows how much of the gap those checks explain.
"""

from __future__ import annotations

import io
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from run import Row, bench_env

BASELINE = "d136068"
"""The last commit before records carried a body length and digest (and SQLite stores moved to schema 3)."""

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
KINDS = ("JSON", "SQLite")
BUDGET = 1.10
"""Today's time over the baseline's, at most."""
FLOOR_GOAL = 2.0
"""Today's ``list`` over its floor, at most."""

_FILL = """
import sys
sys.path.insert(0, sys.argv[1])
from support.stores import fill_store
from crewpoint.providers import JsonProvider, SqliteProvider
fill_store(JsonProvider(fsync=False), sys.argv[2], int(sys.argv[4]))
provider = SqliteProvider()
fill_store(provider, sys.argv[3], int(sys.argv[4]))
provider.close()
"""


@dataclass
class Build:
    """One version of crewpoint installed in its own venv, with the stores it wrote."""

    label: str
    venv: Path
    stores: dict[str, str] = field(default_factory=dict)
    newest: dict[str, str] = field(default_factory=dict)
    """Per store kind: the newest checkpoint's id as ``list`` shows it."""
    listing: dict[str, bytes] = field(default_factory=dict)
    """Per store kind: what ``list`` printed."""

    @property
    def python(self) -> str:
        return str(self.venv / "bin" / "python")

    @property
    def crewpoint(self) -> str:
        return str(self.venv / "bin" / "crewpoint")

    def list_args(self, kind: str) -> list[str]:
        return [self.crewpoint, "checkpoint", "list", self.stores[kind]]

    def info_args(self, kind: str) -> list[str]:
        return [self.crewpoint, "checkpoint", "info", self.newest[kind], "--location", self.stores[kind]]


def _run(args: list[str], cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run a step of the set-up; its failure names the step and the last line it printed."""
    done = subprocess.run(args, capture_output=True, env=bench_env(), cwd=cwd)
    if done.returncode != 0:
        last = (done.stderr or done.stdout or b"").decode(errors="replace").strip().splitlines()[-1:]
        raise RuntimeError(f"{' '.join(map(str, args[:4]))}: exit {done.returncode} {' '.join(last)}")
    return done


def tree_source(dest: Path) -> Path:
    """The working tree's files (tracked or new, not ignored) copied to ``dest``."""
    names = _run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=REPO).stdout.decode().split("\0")
    for name in filter(None, names):
        source = REPO / name
        if source.is_file() and not source.is_symlink():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def commit_source(commit: str, dest: Path) -> Path:
    """The files of ``commit``, as ``git archive`` gives them, in ``dest``."""
    data = _run(["git", "archive", "--format=tar", commit], cwd=REPO).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as archive:
        if hasattr(tarfile, "data_filter"):  # Python 3.11.4 and later; Debian 12's 3.11.2 has no filters
            archive.extractall(dest, filter="data")
        else:
            archive.extractall(dest)  # our own repository, as git archive gives it
    return dest


def install(source: Path, venv: Path, constraints: Path) -> None:
    """Build a wheel of ``source`` and install it with its dependencies in a new venv at ``venv``."""
    wheels = venv.with_name(venv.name + "-wheel")
    pip = [sys.executable, "-m", "pip"]
    _run([*pip, "wheel", "-q", "--no-deps", "-w", str(wheels), str(source.resolve())])
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)])
    wheel = next(wheels.glob("crewpoint-*.whl"))
    # --no-compile: the first run of each command writes the bytecode of what it imports, as a user's first run
    # does; the timed runs after it find that bytecode cached
    target = ["--python", str(venv / "bin" / "python")]
    _run([*pip, *target, "install", "-q", "--no-compile", "-c", str(constraints), str(wheel)])


def prepare(workdir: Path, count: int = 10_000, baseline: str = BASELINE) -> tuple[Build, Build]:
    """Install the baseline and today's tree under ``workdir``; each writes its stores of ``count`` records."""
    workdir.mkdir(parents=True, exist_ok=True)
    constraints = workdir / "constraints.txt"
    pinned = _run([sys.executable, "-m", "pip", "list", "--format=freeze", "--exclude-editable"]).stdout
    constraints.write_bytes(pinned)
    builds = []
    for label, source in (
        (baseline, commit_source(baseline, workdir / "src-baseline")),
        ("today", tree_source(workdir / "src-today")),
    ):
        tag = "baseline" if label == baseline else "today"
        build = Build(label, workdir / f"venv-{tag}")
        install(source, build.venv, constraints)
        build.stores = {"JSON": str(workdir / f"{tag}-store"), "SQLite": str(workdir / f"{tag}-store.db")}
        _run([build.python, "-c", _FILL, str(REPO / "tests"), build.stores["JSON"], build.stores["SQLite"], str(count)])
        builds.append(build)
    return builds[0], builds[1]


def _once(args: list[str]) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one whole process, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True, env=bench_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def _medians(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each command, run in turn ``runs`` times after a first run that warms
    the caches (bytecode, a JSON store's index, the page cache)."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, args in commands.items():
            wall, cpu, _ = _once(args)
            samples[name].append((wall, cpu))
    return {
        name: (statistics.median(s[0] for s in got), statistics.median(s[1] for s in got))
        for name, got in samples.items()
    }


def measure(baseline: Build, today: Build, runs: int = 9) -> list[Row]:
    """The rows: today over the baseline for ``list`` and ``info`` of each store kind, then ``list`` over its floor."""
    floor_bytes: dict[str, bytes] = {}
    for build in (baseline, today):
        for kind in KINDS:
            build.listing[kind] = _once(build.list_args(kind))[2]
            build.newest[kind] = build.listing[kind].split(b"\n")[1].split()[0].decode()
            _once(build.info_args(kind))
    floors = {kind: _floor_args(today, kind) for kind in KINDS}
    floors.update({f"{kind} checked": [*_floor_args(today, kind), "--checks"] for kind in KINDS})
    for kind, args in floors.items():
        floor_bytes[kind] = _once(args)[2]
    commands: dict[str, list[str]] = {}
    for kind in KINDS:
        for build in (baseline, today):
            commands[f"{build.label} list {kind}"] = build.list_args(kind)
            commands[f"{build.label} info {kind}"] = build.info_args(kind)
    commands.update({f"floor list {kind}": args for kind, args in floors.items()})
    got = _medians(commands, runs)
    rows = []
    records = f"{len(today.listing['JSON'].splitlines()) - 1:,}"
    for command in ("list", "info"):
        for kind in KINDS:
            ours, theirs = got[f"today {command} {kind}"], got[f"{baseline.label} {command} {kind}"]
            what = f"list {records}" if command == "list" else f"info of the newest of {records}"
            rows.append(
                Row(
                    f"today / {baseline.label}: {what} ({kind})",
                    ours[0] / theirs[0],
                    "x",
                    BUDGET,
                    f"{ours[0]:.3f} s / {theirs[0]:.3f} s, CPU {ours[1] / theirs[1]:.2f}x; median of {runs}; "
                    "each version's own store",
                )
            )
    for floor_name, kind, name, goal in (
        ("JSON", "JSON", "its floor", FLOOR_GOAL),
        ("SQLite", "SQLite", "its floor", FLOOR_GOAL),
        ("JSON checked", "JSON", "its floor with the checks a listing owes", None),
        ("SQLite checked", "SQLite", "its floor with the checks a listing owes", None),
    ):
        ours, floor = got[f"today list {kind}"], got[f"floor list {floor_name}"]
        same = floor_bytes[floor_name] == today.listing[kind]
        rows.append(
            Row(
                f"list {records} ({kind}) / {name}",
                ours[0] / floor[0] if same else float("nan"),
                "x",
                goal,
                f"{ours[0]:.3f} s / {floor[0]:.3f} s, CPU {ours[1] / floor[1]:.2f}x; floor: list_floor.py"
                if same
                else "the floor printed other bytes than list: no ratio",
            )
        )
    return rows


def _floor_args(build: Build, kind: str) -> list[str]:
    return [build.python, str(BENCH / "list_floor.py"), build.stores[kind]]


def bench_side_by_side() -> list[Row]:
    """Run from the bench's temporary folder (``run.py`` changes into it)."""
    baseline, today = prepare(Path("side-by-side").resolve())
    return measure(baseline, today)


def side_by_side_benches() -> list[Callable[[], list[Row]]]:
    return [bench_side_by_side]
