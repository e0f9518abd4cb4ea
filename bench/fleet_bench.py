"""The fleet's rows, on a throw-away PostgreSQL server (``tests/pg_server.py``) and a model server on 127.0.0.1
(``tests/llm_server.py``) that notes when each request arrives. Every worker is a whole ``crewpoint worker`` process
with the worker's default timing, in a process group of its own (its children in it).

- **Kill → first new call**: a run mid-task on a worker, the worker's process group killed with SIGKILL (as a host
  that dies), and the seconds until another worker's child asks the model for that run again, over
  ``FLEET_BENCH_KILLS`` kills (20): p50 and p95, goal p95 at most 10 s (DBOS's default detection is 60 s). The model
  answers a run's first task at once and holds its second until the server stops, so each run stays mid-task, its
  first task checkpointed, until its worker is killed; three runs are killed in turn, each kill followed by a fresh
  worker so one is always idle.
- **Runs per second through the queue / kicked off directly**, for 1, 2 and 4 workers (``FLEET_BENCH_WORKERS``): N
  four-task runs queued at once to N waiting workers, against N runs started at once as ``python fleet_app.py TOPIC``
  processes on a store of the same server, in turn ``FLEET_BENCH_ROUNDS`` (3) times; the median of the rounds'
  ratios, goal at least 0.9. The model answers at once.
- **An idle worker's cost**: its process's CPU seconds per minute over ``FLEET_BENCH_IDLE`` seconds (20), and the
  queries it sends the server per minute (read from the server's statement log by the worker's application name).
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from run import Row, bench_env

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from llm_server import LLMServer, RecordedRequest
from pg_server import LocalServer

KILL_GOAL = 10.0
RATIO_GOAL = 0.9
APP = "fleet_app.py:crew"

PROGRAM = """
import os
import sys

from crewpoint import LLM, Agent, Crew, Task
from crewpoint.checkpoint.config import CheckpointConfig

llm = LLM(model="gpt-4o-mini", base_url=os.environ["FLEET_BENCH_LLM"], provider="openai")
writer = Agent(role="Writer", goal="write", backstory="writes", llm=llm)
crew = Crew(
    agents=[writer],
    tasks=[
        Task(name=f"s{i}", description=f"step {i} of {{topic}}", expected_output="text", agent=writer)
        for i in range(1, 5)
    ],
)

if __name__ == "__main__":  # the same run kicked off directly, on the store $CREWPOINT_CHECKPOINT_LOCATION names
    crew.checkpoint = CheckpointConfig()
    crew.kickoff({"topic": sys.argv[1]})
"""


def _asked(body: Any) -> tuple[str, int]:
    """The topic and the step a request asks about (``step 2 of run-1``); ("", 0) for anything else."""
    messages = body.get("messages") if isinstance(body, dict) else None
    users = [str(m.get("content", "")) for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
    line = users[0].removeprefix("Current task: ").split("\n")[0].strip() if users else ""
    words = line.split()
    if len(words) == 4 and words[0] == "step" and words[1].isdigit() and words[2] == "of":
        return words[3], int(words[1])
    return "", 0


class TimedServer(LLMServer):
    """The model server, noting when each request arrived (``time.monotonic``) and its topic and step; a step of
    ``hold_from`` or later is answered only once the server stops (its run stays mid-task until it is killed)."""

    def __init__(self, hold_from: int | None = None) -> None:
        super().__init__()
        self.hold_from = hold_from
        self.arrivals: list[tuple[float, str, int]] = []
        self._httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # a held request's client died

    def record(self, request: RecordedRequest) -> int:
        topic, step = _asked(request.body)
        with self._lock:
            self.arrivals.append((time.monotonic(), topic, step))
        return super().record(request)

    def reply_for(self, body: Any) -> str:
        if self.hold_from is not None and _asked(body)[1] >= self.hold_from:
            self._stopping.wait()
        return super().reply_for(body)

    def asked_since(self, topic: str, since: float) -> list[tuple[float, int]]:
        with self._lock:
            return [(at, step) for at, t, step in self.arrivals if t == topic and at > since]


def _wait(condition: Callable[[], object], what: str, timeout: float = 120.0, every: float = 0.01) -> None:
    """Look for ``condition`` ``every`` seconds (a look that queries the server, less often: what it costs the
    machine would be counted against the side it waits for)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(every)


class Fleet:
    """Worker processes on one store, each in a process group of its own, what they say kept in ``folder``."""

    def __init__(self, location: str, folder: Path, env: dict[str, str]) -> None:
        self.location, self.folder, self.env = location, folder, env
        self.workers: list[subprocess.Popen[bytes]] = []

    def start(self) -> subprocess.Popen[bytes]:
        argv = [sys.executable, "-m", "crewpoint.tui.cli", "worker", "-l", self.location, "--app", APP]
        with (self.folder / f"worker-{len(self.workers)}.log").open("wb") as said:
            proc = subprocess.Popen(
                argv,
                cwd=self.folder,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=said,
                start_new_session=True,
            )
        self.workers.append(proc)
        return proc

    def up(self, count: int) -> None:
        """Start ``count`` workers and wait until each has registered on the store."""
        from crewpoint.tui.cli.fleet_engine import connect

        for _ in range(count):
            self.start()
        with connect(self.location) as conn:

            def registered() -> bool:
                self.alive()
                row = conn.execute("SELECT count(*) FROM procrastinate_workers").fetchone()
                return row is not None and row[0] == count

            _wait(registered, f"{count} workers registered", every=0.1)

    def holding(self, child: int) -> subprocess.Popen[bytes]:
        """The live worker whose process group holds the process ``child``."""
        group = os.getpgid(child)
        (worker,) = [w for w in self.workers if w.pid == group and w.poll() is None]
        return worker

    def alive(self) -> None:
        for w in self.workers:
            if w.poll() is not None and w.returncode != -signal.SIGKILL:
                said = (self.folder / f"worker-{self.workers.index(w)}.log").read_text(errors="replace")
                raise RuntimeError(f"a worker ended with exit {w.returncode}: {said.strip()[-300:]}")

    def stop(self) -> None:
        for w in self.workers:
            if w.poll() is None:
                os.killpg(w.pid, signal.SIGKILL)
                w.wait(timeout=30)


def _job_pids(location: str) -> dict[int, int | None]:
    from crewpoint.tui.cli.fleet_engine import status

    return {j.id: j.pid for j in status(location)[1]}


class Kill:
    """One SIGKILL: when it was sent (monotonic and wall clock), when another worker took the job (the server's
    ``started`` event, by the same wall clock) and when the run asked the model again."""

    def __init__(self, job: int) -> None:
        self.job, self.at, self.wall = job, time.monotonic(), time.time()
        self.taken = self.asked = float("nan")

    @property
    def latency(self) -> float:
        return self.asked - self.at


def _taken(location: str, kills: list[Kill]) -> None:
    """Each kill's ``taken``: the first start of its job after it, by the server's clock."""
    from crewpoint.tui.cli.fleet_engine import connect

    with connect(location) as conn:
        started = conn.execute(
            "SELECT job_id, EXTRACT(EPOCH FROM at) FROM procrastinate_events WHERE type = 'started' ORDER BY at"
        ).fetchall()
    for kill in kills:
        kill.taken = next(
            (float(at) - kill.wall for job, at in started if job == kill.job and at > kill.wall), kill.taken
        )


def kill_latencies(url: str, folder: Path, kills: int, chains: int = 3) -> list[Kill]:
    """``kills`` SIGKILLs of a worker running a run, over ``chains`` runs killed in turn, each with the seconds to
    the run's next model call."""
    from crewpoint.tui.cli.fleet_engine import Job, ensure_schema, submit

    location = f"{url}?schema=fleet_kills"
    ensure_schema(location)
    chains = min(chains, kills)
    with TimedServer(hold_from=2) as server:
        fleet = Fleet(location, folder, {**bench_env(), "FLEET_BENCH_LLM": server.base_url, "OPENAI_API_KEY": "sk-x"})
        topics = {f"run-{c}": submit(location, Job(APP, {"topic": f"run-{c}"})) for c in range(chains)}
        last: dict[str, Kill | None] = dict.fromkeys(topics)  # each run's last kill
        done: list[Kill] = []
        try:
            for _ in range(chains + 1):
                fleet.start()

            def step() -> bool:
                fleet.alive()
                for topic, job in topics.items():
                    kill = last[topic]
                    since = server.asked_since(topic, kill.at if kill else 0.0)
                    if kill is not None and since and kill not in done:
                        kill.asked = since[0][0]
                        done.append(kill)
                    waiting = sum(1 for k in last.values() if k is not None and k not in done)
                    if (kill is None or kill in done) and len(done) + waiting < kills and any(s >= 2 for _, s in since):
                        child = _job_pids(location)[job]
                        assert child is not None
                        victim = fleet.holding(child)
                        os.killpg(victim.pid, signal.SIGKILL)
                        last[topic] = Kill(job)
                        victim.wait(timeout=30)
                        fleet.start()  # one worker stays idle for the next kill
                return len(done) >= kills

            _wait(step, f"{kills} kills, each run asked for again", timeout=60.0 + 30.0 * kills)
        finally:
            fleet.stop()
    _taken(location, done)
    return done


def _queued_batch(location: str, count: int, tag: str) -> float:
    """Runs per second of ``count`` runs queued at once (each as ``submit`` queues one, all in one transaction) to
    waiting workers: from their queueing to the last one's success, by the server's clock."""
    from crewpoint.tui.cli.fleet_engine import QUEUE, TASK, Job, connect, make_app

    app = make_app(location)
    with app.open():
        task = app.configure_task(TASK, queue=QUEUE)
        ids = task.batch_defer(*(Job(APP, {"topic": f"{tag}-{n}"}).args() for n in range(count)))
    with connect(location) as conn:
        conn.cursor().executemany(
            "INSERT INTO crewpoint_fleet_runs (job_id, program) VALUES (%s, %s)", [(i, APP) for i in ids]
        )

        def finished() -> bool:
            states = [r[0] for r in conn.execute("SELECT status FROM procrastinate_jobs WHERE id = ANY(%s)", (ids,))]
            if "failed" in states:
                raise RuntimeError(f"a queued run failed (jobs {ids})")
            return states.count("succeeded") == count

        _wait(finished, f"{count} queued runs finished", every=0.1)  # timed by the server's events, not by this
        row = conn.execute(
            "SELECT EXTRACT(EPOCH FROM max(at) FILTER (WHERE type = 'succeeded')"
            " - min(at) FILTER (WHERE type = 'deferred')) FROM procrastinate_events WHERE job_id = ANY(%s)",
            (ids,),
        ).fetchone()
    assert row is not None and row[0] is not None
    return count / float(row[0])


def _direct_batch(location: str, folder: Path, env: dict[str, str], count: int, tag: str) -> float:
    """Runs per second of ``count`` runs kicked off at once, each a ``python fleet_app.py TOPIC`` of its own (as from
    a terminal of its own)."""
    env = {**env, "CREWPOINT_CHECKPOINT_LOCATION": location}
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, APP.split(":")[0], f"{tag}-{n}"],
            cwd=folder,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,  # as each worker is: Linux's autogroups share the CPU out by session
        )
        for n in range(count)
    ]
    for proc in procs:
        _, err = proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"a direct run failed: {err.decode(errors='replace').strip()[-300:]}")
    return count / (time.perf_counter() - started)


def throughput(url: str, folder: Path, counts: tuple[int, ...], rounds: int) -> list[Row]:
    """For each number of workers N: N runs queued to N waiting workers against N runs kicked off at once, in turn
    ``rounds`` times (each side first in every other round); the median of the rounds' ratios."""
    from crewpoint.tui.cli.fleet_engine import ensure_schema

    rows = []
    with TimedServer() as server:
        env = {**bench_env(), "FLEET_BENCH_LLM": server.base_url, "OPENAI_API_KEY": "sk-x"}
        warm = [sys.executable, APP.split(":")[0], "warm-up"]  # bytecode, the page cache
        warm_env = {**env, "CREWPOINT_CHECKPOINT_LOCATION": f"{url}?schema=fleet_warm"}
        subprocess.run(warm, cwd=folder, env=warm_env, capture_output=True, check=True)
        for workers in counts:
            queue, direct = f"{url}?schema=fleet_queue_{workers}", f"{url}?schema=fleet_direct_{workers}"
            for location in (queue, direct):  # both stores made before, neither run pays for it
                ensure_schema(location)
            fleet = Fleet(queue, folder, env)
            rates: dict[str, list[float]] = {"queue": [], "direct": []}
            try:
                fleet.up(workers)
                for r in range(rounds):
                    for side in ("queue", "direct") if r % 2 == 0 else ("direct", "queue"):
                        if side == "queue":
                            rates[side].append(_queued_batch(queue, workers, f"queued-{r}"))
                        else:
                            rates[side].append(_direct_batch(direct, folder, env, workers, f"direct-{r}"))
            finally:
                fleet.stop()
            ratio = statistics.median(q / d for q, d in zip(rates["queue"], rates["direct"], strict=True))
            note = (
                f"{statistics.median(rates['queue']):.2f} / {statistics.median(rates['direct']):.2f} runs/s,"
                f" {workers} four-task run{'s' * (workers > 1)} at once; median of {rounds}"
            )
            name = f"fleet: runs/s queued / started directly, {workers} worker{'s' * (workers > 1)}"
            rows.append(Row(name, ratio, "x", RATIO_GOAL, note, at_least=True))
    return rows


def _cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def idle_cost(server: LocalServer, folder: Path, seconds: float) -> tuple[float, int, int]:
    """An idle worker's CPU seconds per minute, watched for ``seconds``, and the queries and the statements (its
    connection pool's ``BEGIN``, ``COMMIT`` and checks too) it sent the server per minute, read from the server's
    statement log by the worker's application name."""
    from crewpoint.tui.cli.fleet_engine import connect, ensure_schema

    location = f"{server.url}?schema=fleet_idle"
    ensure_schema(location)
    name = "crewpoint-idle-worker"
    with connect(location) as conn:
        conn.execute("ALTER SYSTEM SET log_statement = 'all'")
        conn.execute("ALTER SYSTEM SET log_line_prefix = '%a|'")
        conn.execute("SELECT pg_reload_conf()")

    def statements() -> tuple[int, int]:
        said = [
            line.removeprefix(f"{name}|LOG:  ")
            for line in server.log.read_text(errors="replace").splitlines()
            if line.startswith(f"{name}|LOG:  statement: ") or line.startswith(f"{name}|LOG:  execute ")
        ]
        trips = [line.split(": ", 1)[1].strip() for line in said]
        return sum(1 for t in trips if t not in ("", "BEGIN", "COMMIT", "ROLLBACK")), len(trips)

    fleet = Fleet(location, folder, {**bench_env(), "PGAPPNAME": name, "FLEET_BENCH_LLM": "http://127.0.0.1:9/v1"})
    try:
        fleet.up(1)
        (worker,) = fleet.workers
        cpu, (queries, trips), started = _cpu_seconds(worker.pid), statements(), time.monotonic()
        time.sleep(seconds)  # the measure itself: what the worker does on its own in that time
        cpu, took = _cpu_seconds(worker.pid) - cpu, time.monotonic() - started
        after = statements()
    finally:
        fleet.stop()
        with connect(location) as conn:
            conn.execute("ALTER SYSTEM RESET ALL")
            conn.execute("SELECT pg_reload_conf()")
    return cpu * 60 / took, round((after[0] - queries) * 60 / took), round((after[1] - trips) * 60 / took)


def _p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[max(0, -(-len(ordered) * 95 // 100) - 1)]


def measure(folder: Path, kills: int, rounds: int, idle: float, counts: tuple[int, ...] = (1, 2, 4)) -> list[Row]:
    """The fleet's rows: ``kills`` kills, ``rounds`` rounds of runs per number of workers in ``counts``, an idle
    worker watched for ``idle`` seconds."""
    from crewpoint.tui.cli.fleet_engine import HEARTBEAT, STALE_WORKER

    (folder / APP.split(":")[0]).write_text(PROGRAM, encoding="utf-8")
    with LocalServer() as server:
        os.environ.update(server.env())
        done = kill_latencies(server.url, folder, kills)
        latencies = [k.latency for k in done]
        note = (
            f"p50 {statistics.median(latencies):.2f} s, max {max(latencies):.2f} s of {kills}; taken again at"
            f" {statistics.median(k.taken for k in done):.2f} s (heartbeat {HEARTBEAT:g} s, stalled {STALE_WORKER:g} s)"
        )
        name = "fleet: kill → next model call on another worker, p95"
        rows = [Row(name, _p95(latencies), "s", KILL_GOAL, note)]
        rows += throughput(server.url, folder, counts, rounds)
        cpu, queries, trips = idle_cost(server, folder, idle)
        note = f"{queries} queries/min ({trips} statements with the pool's BEGIN, COMMIT and checks)"
        rows.append(Row("fleet: an idle worker's CPU", cpu, "s/min", None, note))
    return rows


def bench_fleet() -> list[Row]:
    import tempfile

    counts = tuple(int(n) for n in (os.environ.get("FLEET_BENCH_WORKERS") or "1,2,4").split(","))
    with tempfile.TemporaryDirectory() as tmp:
        return measure(
            Path(tmp),
            kills=int(os.environ.get("FLEET_BENCH_KILLS") or 20),
            rounds=int(os.environ.get("FLEET_BENCH_ROUNDS") or 3),
            idle=float(os.environ.get("FLEET_BENCH_IDLE") or 20),
            counts=counts,
        )


def fleet_benches() -> list[Callable[[], list[Row]]]:
    return [bench_fleet]


if __name__ == "__main__":
    for row in bench_fleet():
        print(f"{row.name:70} {row.value:10.3f} {row.unit:6} target {row.target} {row.note}")
