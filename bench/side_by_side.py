"""Side by side: today's tree against a build of an earlier commit, ``--help`` against CrewAI's, and ``list``
against its floor, all measured in one run.

Both versions are installed the ordinary way, each in a venv of its own: a wheel built from the source (today's:
the working tree's files, committed or not; the baseline's: ``git archive``), its dependencies pinned to the
versions in the venv running the bench. Each version writes its own 10,000-record stores (JSON and SQLite: the
store formats differ between them), and the bench times whole processes as a user runs them, bytecode cached, the
runs interleaved (their order turned round every round) so that a busy machine slows all alike. A row over the
baseline is today's median over the baseline's, for ``crewpoint --help``; ``crewpoint checkpoint list STORE``;
``crewpoint checkpoint info ID --location STORE`` and ``crewpoint checkpoint fork ID --location STORE --dry-run
--input topic=...`` of the newest checkpoint (what both versions accept: no program, the crew is rebuilt from the
checkpoint); and what a checkpoint after every task costs a 30-task crew on the offline model (``checkpoint_cost``).

CrewAI's ``crewai --help`` comes from the venv ``make test-crewai`` makes (``.venv-crewai``, CrewAI 1.15.30), its
telemetry off as that target runs it; its rows are today's ``crewpoint --help`` and ``crewpoint checkpoint --help``
over it.

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

import checkpoint_cost
from run import Row, bench_env

BASELINE = "986e614"
"""``main`` when the work on one declaration of the body and one pass over a checkpoint began."""

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
KINDS = ("JSON", "SQLite")
BUDGET = 1.05
"""Today's time over the baseline's, at most."""
CREWAI = REPO / ".venv-crewai" / "bin" / "crewai"
"""CrewAI's command, from the venv ``make test-crewai`` makes."""
CREWAI_GOAL = 0.2
"""crewpoint's ``--help`` over CrewAI's, at most: five times faster."""
QUIET = {"OTEL_SDK_DISABLED": "true", "CREWAI_DISABLE_TELEMETRY": "true", "CREWAI_TRACING_ENABLED": "false"}
"""CrewAI's telemetry off, as ``make test-crewai`` runs it (a help screen that waits on the network measures
that); crewpoint reads none of these."""
FORK_INPUT = "topic=tides"
"""The input the timed fork changes: every task of the demo crew reads it, so the plan runs them all."""
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

    def fork_args(self, kind: str) -> list[str]:
        where = ["--location", self.stores[kind]]
        return [self.crewpoint, "checkpoint", "fork", self.newest[kind], *where, "--dry-run", "--input", FORK_INPUT]


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


def _env() -> dict[str, str]:
    """An ordinary installation's environment (:func:`bench_env`) with CrewAI's telemetry off and no model named:
    the crews run and the forks plan on the offline model, whatever the shell running the bench names."""
    env = {**bench_env(), **QUIET}
    for name in ("CREWPOINT_LLM", "CREWPOINT_BASE_URL"):
        env.pop(name, None)
    return env


def _once(args: list[str]) -> tuple[float, float, bytes]:
    """Wall and CPU seconds of one whole process, and its output."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, check=True, env=_env())
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, done.stdout


def _medians(commands: dict[str, list[str]], runs: int) -> dict[str, tuple[float, float]]:
    """Median wall and CPU seconds of each command, run in turn ``runs`` times (the order turned round every
    round) after a first run that warms the caches (bytecode, a JSON store's index, the page cache)."""
    samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    names = list(commands)
    for round_ in range(runs):
        for name in names if round_ % 2 == 0 else names[::-1]:
            wall, cpu, _ = _once(commands[name])
            samples[name].append((wall, cpu))
    return {
        name: (statistics.median(s[0] for s in got), statistics.median(s[1] for s in got))
        for name, got in samples.items()
    }


def _ratio_row(name: str, ours: tuple[float, float], theirs: tuple[float, float], goal: float | None, note: str) -> Row:
    """Wall over wall, the times and the CPU ratio in the note."""
    times = f"{ours[0]:.3f} s / {theirs[0]:.3f} s, CPU {ours[1] / theirs[1]:.2f}x"
    return Row(name, ours[0] / theirs[0], "x", goal, f"{times}; {note}")


def measure(baseline: Build, today: Build, runs: int = 9, crewai: Path = CREWAI, crew_runs: int = 15) -> list[Row]:
    """The rows: today over the baseline (``--help``; ``list``, ``info`` and ``fork --dry-run`` per store kind; a
    checkpoint's cost per task), ``--help`` over CrewAI's (``crewai``: its command), ``list`` over its floor."""
    floor_bytes: dict[str, bytes] = {}
    for build in (baseline, today):
        _once([build.crewpoint, "--help"])
        for kind in KINDS:
            build.listing[kind] = _once(build.list_args(kind))[2]
            build.newest[kind] = build.listing[kind].split(b"\n")[1].split()[0].decode()
            _once(build.info_args(kind))
            _once(build.fork_args(kind))
    floors = {kind: _floor_args(today, kind) for kind in KINDS}
    floors.update({f"{kind} checked": [*_floor_args(today, kind), "--checks"] for kind in KINDS})
    for kind, args in floors.items():
        floor_bytes[kind] = _once(args)[2]
    commands: dict[str, list[str]] = {}
    for build in (baseline, today):
        commands[f"{build.label} help"] = [build.crewpoint, "--help"]
        for kind in KINDS:
            commands[f"{build.label} list {kind}"] = build.list_args(kind)
            commands[f"{build.label} info {kind}"] = build.info_args(kind)
            commands[f"{build.label} fork {kind}"] = build.fork_args(kind)
    commands["today checkpoint help"] = [today.crewpoint, "checkpoint", "--help"]
    if crewai.is_file():
        commands["crewai help"] = [str(crewai), "--help"]
        _once(commands["crewai help"])
    commands.update({f"floor list {kind}": args for kind, args in floors.items()})
    got = _medians(commands, runs)
    records = f"{len(today.listing['JSON'].splitlines()) - 1:,}"
    vs = f"today / {baseline.label}"
    own = f"median of {runs}; each version's own store"
    help_ = got["today help"], got[f"{baseline.label} help"]
    rows = [_ratio_row(f"{vs}: crewpoint --help", *help_, BUDGET, f"median of {runs}")]
    for command, what in (
        ("list", f"list {records}"),
        ("info", f"info of the newest of {records}"),
        ("fork", f"fork --dry-run --input {FORK_INPUT} of the newest of {records}"),
    ):
        for kind in KINDS:
            ours, theirs = got[f"today {command} {kind}"], got[f"{baseline.label} {command} {kind}"]
            rows.append(_ratio_row(f"{vs}: {what} ({kind})", ours, theirs, BUDGET, own))
    rows.append(_cost_row(baseline, today, crew_runs))
    rows += crewai_rows(got, crewai, runs)
    for floor_name, kind, name, goal in (
        ("JSON", "JSON", "its floor", FLOOR_GOAL),
        ("SQLite", "SQLite", "its floor", FLOOR_GOAL),
        ("JSON checked", "JSON", "its floor with the checks a listing owes", None),
        ("SQLite checked", "SQLite", "its floor with the checks a listing owes", None),
    ):
        ours, floor = got[f"today list {kind}"], got[f"floor list {floor_name}"]
        name = f"list {records} ({kind}) / {name}"
        if floor_bytes[floor_name] == today.listing[kind]:
            rows.append(_ratio_row(name, ours, floor, goal, f"median of {runs}; floor: list_floor.py"))
        else:
            rows.append(Row(name, float("nan"), "x", goal, "the floor printed other bytes than list: no ratio"))
    return rows


def _cost_row(baseline: Build, today: Build, runs: int) -> Row:
    """Today's checkpoint cost per task over the baseline's, a 30-task crew in whole processes."""
    pythons = {baseline.label: baseline.python, "today": today.python}
    got = checkpoint_cost.per_task(pythons, today.venv.parent, _env(), runs)
    ours, theirs = got["today"], got[baseline.label]
    return Row(
        f"today / {baseline.label}: {checkpoint_cost.TASKS}-task crew, a checkpoint per task (JSON), cost per task",
        ours.whole / theirs.whole,
        "x",
        BUDGET,
        f"{ours.whole * 1000:.2f} ms / {theirs.whole * 1000:.2f} ms a task, whole processes with - without, CPU "
        f"{ours.cpu * 1000:.2f} / {theirs.cpu * 1000:.2f} ms; kickoff alone {ours.kickoff * 1000:.2f} / "
        f"{theirs.kickoff * 1000:.2f} ms; median of {runs} pairs",
    )


def crewai_rows(got: dict[str, tuple[float, float]], crewai: Path, runs: int) -> list[Row]:
    """Today's ``--help`` and ``checkpoint --help`` over ``crewai --help``, or a row that says how to get CrewAI."""
    if "crewai help" not in got:
        note = f"no CrewAI to compare with: `make test-crewai` makes {crewai.parent.parent.name}"
        return [Row("crewpoint --help / crewai --help", float("nan"), "x", CREWAI_GOAL, note)]
    theirs = got["crewai help"]
    return [
        _ratio_row(
            f"crewpoint {what} / crewai --help",
            got[name],
            theirs,
            CREWAI_GOAL,
            f"{theirs[0] / got[name][0]:.1f}x faster; median of {runs}; today's crewpoint, {_crewai_version(crewai)}",
        )
        for name, what in (("today help", "--help"), ("today checkpoint help", "checkpoint --help"))
    ]


def _crewai_version(crewai: Path) -> str:
    """``CrewAI 1.15.30``: the version installed in the venv of the command ``crewai``."""
    found = sorted(crewai.parent.parent.glob("lib/python*/site-packages/crewai-*.dist-info"))
    return f"CrewAI {found[0].name.removeprefix('crewai-').removesuffix('.dist-info')}" if found else str(crewai)


def _floor_args(build: Build, kind: str) -> list[str]:
    return [build.python, str(BENCH / "list_floor.py"), build.stores[kind]]


def bench_side_by_side() -> list[Row]:
    """Run from the bench's temporary folder (``run.py`` changes into it)."""
    baseline, today = prepare(Path("side-by-side").resolve())
    return measure(baseline, today)


def side_by_side_benches() -> list[Callable[[], list[Row]]]:
    return [bench_side_by_side]
