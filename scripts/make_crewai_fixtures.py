"""Make the CrewAI checkpoint stores under tests/fixtures/crewai/ with the released CrewAI.

Run it with a Python that has ``crewai==1.15.30`` (never a dependency of crewpoint)::

    python3 -m venv /tmp/crewai-venv
    /tmp/crewai-venv/bin/pip install crewai==1.15.30 pysqlite3-binary
    /tmp/crewai-venv/bin/python scripts/make_crewai_fixtures.py tests/fixtures/crewai

It writes, offline (a local OpenAI-compatible server on 127.0.0.1 answers every LLM call):

* ``json/``: CrewAI's JSON store with a crew run (three tasks, a checkpoint per finished task), a fork of its
  first checkpoint (CrewAI's automatic ``fork/<id>`` branch), a branch ``edited`` that resumes from an edited
  task output, a flow run and a fork of it, and a standalone agent run;
* ``store.db``: the same runs in CrewAI's SQLite store (``data`` as SQLite JSONB, which needs SQLite 3.45 or
  newer: the script uses ``pysqlite3-binary`` when the stdlib SQLite is older).

The LLM is configured with a placeholder key, so the stores hold it where CrewAI writes keys; the tests put a
key-shaped value in its place in their copies (tests/crewai_fixtures.py).

``--roundtrip WORKDIR CREWPOINT`` is ``make test-crewai``: CrewAI runs a crew into a JSON and a SQLite store in
WORKDIR, the ``crewpoint`` command CREWPOINT forks its last checkpoint with task 2's output edited and has CrewAI
resume the fork, and the script checks that only task 3 reached the LLM, reading the edited output.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

os.environ.setdefault("OTEL_SDK_DISABLED", "true")
os.environ.setdefault("CREWAI_DISABLE_TELEMETRY", "true")
os.environ.setdefault("CREWAI_TRACING_ENABLED", "false")
os.environ.setdefault("CREWAI_STORAGE_DIR", "crewpoint-fixtures")

import sqlite3 as _stdlib_sqlite3

if _stdlib_sqlite3.sqlite_version_info < (3, 45, 0):  # CrewAI writes data with jsonb()
    try:
        import pysqlite3.dbapi2 as _newer_sqlite3  # type: ignore[import-not-found]
    except ImportError:
        _newer_sqlite3 = None
    if _newer_sqlite3 is not None:
        sys.modules["sqlite3"] = _newer_sqlite3

FAKE_KEY = "<no key>"  # nothing like a key; tests put a key-shaped value in its place
CALLS: list[str] = []


class _Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = json.loads(self.rfile.read(length) or b"{}")
        messages = body.get("messages") or []
        user = [str(m.get("content", "")) for m in messages if m.get("role") == "user"]
        prompt = user[-1] if user else ""
        CALLS.append(prompt)
        topic = _first_line(prompt)
        answer = f"Thought: I now know the final answer\nFinal Answer: Notes on {topic}"
        payload = {
            "id": f"chatcmpl-{len(CALLS)}",
            "object": "chat.completion",
            "created": 1_700_000_000,
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": answer}}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
        }
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _first_line(prompt: str) -> str:
    for line in prompt.splitlines():
        text = line.strip()
        if text.startswith("Current Task:"):
            return text.removeprefix("Current Task:").strip()[:80]
    return " ".join(prompt.split())[:80]


def start_server() -> str:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}/v1"


def make_llm(base_url: str) -> Any:
    from crewai import LLM

    return LLM(model="openai/gpt-4o-mini", base_url=base_url, api_key=FAKE_KEY, temperature=0)


def make_crew(base_url: str, checkpoint: Any) -> Any:
    from crewai import Agent, Crew, Process, Task

    llm = make_llm(base_url)
    researcher = Agent(role="Researcher", goal="Find facts about {topic}", backstory="A careful [reader].", llm=llm)
    writer = Agent(role="Writer", goal="Write about {topic}", backstory="Writes plainly.", llm=llm)
    research = Task(
        name="research",
        description="Research {topic} and list three facts.",
        expected_output="Three facts.",
        agent=researcher,
    )
    outline = Task(
        name="outline",
        description="Outline an article on {topic} from the facts.",
        expected_output="An outline.",
        agent=writer,
        context=[research],
    )
    article = Task(
        name="article",
        description="Write a short article on {topic} from the outline.",
        expected_output="A short article.",
        agent=writer,
        context=[outline],
    )
    return Crew(
        name="research crew",
        agents=[researcher, writer],
        tasks=[research, outline, article],
        process=Process.sequential,
        checkpoint=checkpoint,
    )


def make_flow_class() -> type:
    from crewai.flow.flow import Flow, listen, start

    class TriageFlow(Flow):  # type: ignore[misc,type-arg]
        @start()
        def classify(self) -> str:
            self.state["label"] = "billing"
            return "billing"

        @listen(classify)
        def route(self, label: str) -> str:
            self.state["queue"] = f"{label}-queue"
            return f"sent to {label}-queue"

    return TriageFlow


def _list_ids(location: str) -> list[str]:
    """Checkpoint references in CrewAI's own terms (file paths or db#id), oldest first."""
    if location.endswith(".db"):
        import sqlite3

        with sqlite3.connect(location) as conn:
            rows = conn.execute("SELECT id FROM checkpoints ORDER BY rowid").fetchall()
        return [f"{location}#{row[0]}" for row in rows]
    found = []
    for top, _dirs, files in os.walk(location):
        found += [os.path.join(top, f) for f in files if f.endswith(".json")]
    return sorted(found, key=os.path.getmtime)


def make_store(location: str, provider: Any, base_url: str) -> None:
    from crewai import Agent, Crew
    from crewai.flow.flow import Flow
    from crewai.state.checkpoint_config import CheckpointConfig

    def config(**extra: Any) -> CheckpointConfig:
        return CheckpointConfig(location=location, provider=provider, **extra)

    # 1. a crew run: three checkpoints on main
    crew = make_crew(base_url, config())
    crew.kickoff(inputs={"topic": "tide pools"})
    _settle()
    crew_refs = _list_ids(location)
    first = crew_refs[0]

    # 2. CrewAI's own fork of the first checkpoint (automatic fork/<id> branch)
    forked = Crew.fork(config(restore_from=first))
    forked.kickoff(inputs={"topic": "tide pools"})

    # 3. an edited-output branch: task 1's output replaced, the tasks after it reset, resumed on "edited"
    edited = Crew.fork(config(restore_from=first), branch="edited")
    edited.tasks[0].output.raw = "Edited facts: anemones, sea stars, hermit crabs."
    edited.kickoff(inputs={"topic": "tide pools"})

    # 4. a flow run and a fork of its first checkpoint
    flow_class = make_flow_class()
    flow_events = ["method_execution_finished", "flow_finished"]
    flow = flow_class(checkpoint=config(on_events=flow_events))
    flow.kickoff()
    _settle()
    flow_refs = [r for r in _list_ids(location) if r not in crew_refs]
    flow_refs = [r for r in flow_refs if _entity_type(r) == "flow"]
    fork_flow = flow_class.fork(config(restore_from=flow_refs[0]))
    fork_flow.checkpoint = config(on_events=flow_events)
    fork_flow.kickoff()
    _settle()
    del Flow

    # 5. a standalone agent
    agent = Agent(
        role="Summarizer",
        goal="Summarize text",
        backstory="Short answers.",
        llm=make_llm(base_url),
        checkpoint=config(on_events=["lite_agent_execution_completed", "agent_execution_completed"]),
    )
    agent.kickoff(messages="Summarize: the tide comes in twice a day.")
    _settle()


def _settle() -> None:
    """Wait until CrewAI's event handlers (which write the checkpoints) have run."""
    from crewai.events.event_bus import crewai_event_bus

    crewai_event_bus.flush()


def _entity_type(ref: str) -> str:
    if "#" in ref:
        import sqlite3

        db, cid = ref.rsplit("#", 1)
        with sqlite3.connect(db) as conn:
            (text,) = conn.execute("SELECT json(data) FROM checkpoints WHERE id = ?", (cid,)).fetchone()
    else:
        with open(ref, encoding="utf-8") as handle:
            text = handle.read()
    entities = json.loads(text).get("entities") or [{}]
    return str(entities[0].get("entity_type", ""))


def roundtrip(workdir: str, crewpoint: str) -> int:
    """Fork a CrewAI checkpoint with crewpoint (an edited output) and let CrewAI resume it; 0 when only the task
    that depends on the edit reached the LLM and the resumed run read the edit."""
    import shutil
    import sqlite3
    import subprocess

    from crewai.state.checkpoint_config import CheckpointConfig
    from crewai.state.provider.json_provider import JsonProvider
    from crewai.state.provider.sqlite_provider import SqliteProvider

    base_url = start_server()
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    failures: list[str] = []
    kinds = [("json", os.path.join(workdir, "json"), JsonProvider())]
    if sqlite3.sqlite_version_info >= (3, 45, 0):
        kinds.append(("sqlite", os.path.join(workdir, "store.db"), SqliteProvider()))
    else:
        failures.append("sqlite: SQLite 3.45 or newer is needed (pip install pysqlite3-binary)")
    for kind, store, provider in kinds:
        crew = make_crew(base_url, CheckpointConfig(location=store, provider=provider))
        crew.kickoff(inputs={"topic": "tide pools"})
        _settle()
        last = _list_ids(store)[-1]
        source = last.rsplit("#", 1)[1] if "#" in last else os.path.basename(last).split("_p-")[0]
        before = len(CALLS)
        done = subprocess.run(
            [
                crewpoint,
                "checkpoint",
                "fork",
                source,
                "--location",
                store,
                "--branch",
                "edited-rt",
                "--set-output",
                "2=EDITED OUTLINE: one, two, three.",
            ],
            env={**os.environ, "CREWPOINT_CREWAI_PYTHON": sys.executable},
            capture_output=True,
            text=True,
            check=False,
        )
        calls = CALLS[before:]
        print(f"[{kind}] crewpoint fork exit {done.returncode}; {len(calls)} LLM call(s)", file=sys.stderr)
        if done.returncode != 0:
            failures.append(f"{kind}: crewpoint fork failed: {done.stderr.strip()[-500:]}")
            continue
        if len(calls) != 1:
            failures.append(f"{kind}: expected 1 LLM call (task 3), got {len(calls)}: {[c[:60] for c in calls]}")
        elif "Write a short article" not in calls[0] or "EDITED OUTLINE" not in calls[0]:
            failures.append(f"{kind}: the call was not task 3 reading the edited output: {calls[0][:300]!r}")
        branch_refs = [r for r in _list_ids(store) if "edited-rt" in r or _branch_of(r) == "edited-rt"]
        if len(branch_refs) < 2:
            failures.append(f"{kind}: CrewAI wrote no checkpoint on the fork's branch ({branch_refs})")
    for line in failures:
        print(f"FAILED {line}", file=sys.stderr)
    print(f"round trip: {len(kinds) - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


def _branch_of(ref: str) -> str:
    if "#" not in ref:
        return ""
    import sqlite3

    db, cid = ref.rsplit("#", 1)
    with sqlite3.connect(db) as conn:
        row = conn.execute("SELECT branch FROM checkpoints WHERE id = ?", (cid,)).fetchone()
    return str(row[0]) if row else ""


def main(argv: list[str]) -> int:
    if len(argv) == 3 and argv[0] == "--roundtrip":
        return roundtrip(argv[1], argv[2])
    if len(argv) == 3 and argv[0] == "--one":
        return make_one(argv[1], argv[2])
    if len(argv) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    import shutil
    import subprocess

    out = os.path.abspath(argv[0])
    os.makedirs(out, exist_ok=True)
    json_store = os.path.join(out, "json")
    db_store = os.path.join(out, "store.db")
    shutil.rmtree(json_store, ignore_errors=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(db_store + suffix):
            os.remove(db_store + suffix)
    # One process per store: CrewAI keeps the last checkpoint id in process-wide state, and a second store
    # written by the same process would start with a parent from the first.
    for kind, where in (("json", json_store), ("sqlite", db_store)):
        done = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", kind, where], check=False)
        if done.returncode:
            return done.returncode
    return 0


def make_one(kind: str, where: str) -> int:
    import sqlite3

    from crewai.state.provider.json_provider import JsonProvider
    from crewai.state.provider.sqlite_provider import SqliteProvider

    if kind == "sqlite" and sqlite3.sqlite_version_info < (3, 45, 0):
        print("make_crewai_fixtures: SQLite 3.45 or newer is needed (pip install pysqlite3-binary)", file=sys.stderr)
        return 2
    base_url = start_server()
    make_store(where, JsonProvider() if kind == "json" else SqliteProvider(), base_url)
    if kind == "sqlite":
        with sqlite3.connect(where) as conn:  # fold the WAL into the file: one file to commit
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        with sqlite3.connect(where) as conn:
            conn.execute("PRAGMA journal_mode=DELETE")
    print(f"wrote {where} ({len(CALLS)} LLM calls)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
