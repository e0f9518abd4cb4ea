"""A run's trace in Arize Phoenix: start Phoenix on 127.0.0.1 (from a venv of its own, `make test-phoenix`), run the
offline demo crew exporting to it over OTLP/HTTP, and read the trace back through Phoenix's REST API
(``GET /v1/projects/{project}/spans``): one root span per run, each task a child of it, each model call a child of
its task, and the run id and checkpoint ids crewpoint wrote.

    python scripts/phoenix_check.py .venv-phoenix/bin/phoenix

Exit 0 when the trace is there as the run made it; 1 (with what differs) when not.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

WAIT_S = 120.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def _until(what: str, ready: Any, server: subprocess.Popen[bytes] | None = None) -> Any:
    """Ask ``ready()`` again until it gives something (each answer is an event: Phoenix up, spans stored)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if server is not None and server.poll() is not None:
            raise SystemExit(f"Phoenix stopped before {what} (exit code {server.returncode}); see its output above")
        try:
            found = ready()
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            found = None
        if found:
            return found
        time.sleep(0.25)  # asking again: the answer is what is waited on, not the time
    raise SystemExit(f"no {what} after {WAIT_S:.0f} s")


def _run_crew(endpoint: str, store: Path) -> list[Any]:
    """The offline demo crew, checkpointed in ``store``, exporting its spans to ``endpoint``; its checkpoints."""
    from crewpoint import CheckpointConfig, telemetry
    from crewpoint.demo import demo_crew
    from crewpoint.providers import JsonProvider

    config = CheckpointConfig(location=str(store), otel={"endpoint": endpoint, "service_name": "crewpoint-phoenix"})
    demo_crew(checkpoint=config).kickoff(inputs={"topic": "owls", "audience": "children"})
    if not telemetry.flush():
        raise SystemExit(f"the spans could not be sent to Phoenix at {endpoint}")
    return sorted(JsonProvider().list(str(store)), key=lambda meta: meta.sequence)


def check(spans: list[dict[str, Any]], run_id: str, checkpoint_ids: list[str]) -> list[str]:
    """What differs between the trace Phoenix stored and the run (nothing: an empty list)."""
    problems = []
    roots = [s for s in spans if not s.get("parent_id")]
    if len(roots) != 1 or not roots[0]["name"].startswith("invoke_workflow "):
        return [f"one root span invoke_workflow expected, found {[s['name'] for s in roots]}"]
    root = roots[0]
    if root["attributes"].get("crewpoint.run.id") != run_id:
        problems.append(f"the root's crewpoint.run.id is {root['attributes'].get('crewpoint.run.id')!r}")
    ids = {s["context"]["span_id"]: s for s in spans}
    tasks = sorted((s for s in spans if s["name"].startswith("invoke_agent ")), key=lambda s: s["start_time"])
    if len(tasks) != 4:
        problems.append(f"4 invoke_agent spans expected, found {len(tasks)}")
    for task in tasks:
        if task.get("parent_id") != root["context"]["span_id"]:
            problems.append(f"{task['name']} is not a child of the run's span")
    for chat in (s for s in spans if s["name"].startswith("chat ")):
        parent = ids.get(chat.get("parent_id") or "")
        if parent is None or not parent["name"].startswith("invoke_agent "):
            problems.append(f"{chat['name']} is not a child of a task's span")
        if "gen_ai.usage.input_tokens" not in chat["attributes"]:
            problems.append(f"{chat['name']} has no gen_ai.usage.input_tokens")
    written = [t["attributes"].get("crewpoint.checkpoint.id") for t in tasks]
    if written != checkpoint_ids:
        problems.append(f"the tasks' checkpoint ids {written} are not the run's {checkpoint_ids}")
    return problems


def _flat(attributes: Any, prefix: str = "") -> dict[str, Any]:
    """Phoenix's attributes, nested by dots or flat, as flat dotted names."""
    if isinstance(attributes, list):  # [{"key": ..., "value": {...}}] as OTLP JSON gives them
        return {item["key"]: next(iter(item["value"].values()), None) for item in attributes}
    flat: dict[str, Any] = {}
    for key, value in (attributes or {}).items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flat(value, name + "."))
        else:
            flat[name] = value
    return flat


def main(phoenix: str) -> int:
    port, grpc_port = _free_port(), _free_port()
    base = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryDirectory(prefix="crewpoint-phoenix-") as folder:
        env = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(grpc_port),
            "PHOENIX_WORKING_DIR": folder,
            "PHOENIX_TELEMETRY_ENABLED": "false",
        }
        server = subprocess.Popen([phoenix, "serve"], env=env, stdout=sys.stderr)
        try:
            _until("Phoenix answering", lambda: _get(f"{base}/v1/projects"), server)
            checkpoints = _run_crew(base, Path(folder) / "store")
            run_id = checkpoints[-1].run_id
            tasks_written = [meta.id for meta in checkpoints if meta.trigger == "task_completed"]

            def trace() -> list[dict[str, Any]] | None:
                data = _get(f"{base}/v1/projects/default/spans?limit=1000")["data"]
                spans = [{**s, "attributes": _flat(s.get("attributes"))} for s in data]
                mine = [s for s in spans if s["attributes"].get("crewpoint.run.id") == run_id]
                if not mine:
                    return None
                trace_id = mine[0]["context"]["trace_id"]
                found = [s for s in spans if s["context"]["trace_id"] == trace_id]
                tasks = sum(s["name"].startswith("invoke_agent ") for s in found)
                return found if any(not s.get("parent_id") for s in found) and tasks >= len(tasks_written) else None

            spans = _until("trace in Phoenix", trace, server)
        finally:
            server.terminate()
            server.wait(timeout=30)
    problems = check(spans, run_id, tasks_written)
    for problem in problems:
        print(f"phoenix: {problem}", file=sys.stderr)
    if not problems:
        names = sorted({s["name"] for s in spans})
        print(f"phoenix: the run's trace is in Phoenix, {len(spans)} spans ({', '.join(names)})")
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/phoenix_check.py PATH-TO-phoenix")
    raise SystemExit(main(sys.argv[1]))
