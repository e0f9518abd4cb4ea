"""What a fork or resume will cost before it runs: the estimate from each task's last recorded run on the chain.

A real 3-task crew on gpt-4o against the local OpenAI-compatible server, each task's call reporting a known usage
(tests/support/cost_runs.py); then ``fork --dry-run`` and ``resume --dry-run`` and :func:`crewpoint.estimate`."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from support.cli import CHECKPOINT
from support.cost_runs import APP, USAGE, build, usage_server
from support.prices import genai_usd

from crewpoint.checkpoint import ops
from crewpoint.cost import Prices, format_usd, price_rows, usage_rows
from crewpoint.estimate import NO_HISTORY, cost_text, estimate_rerun, last_run, units_to_run
from crewpoint.providers import JsonProvider
from crewpoint.usage import UsageRow


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, list[Any]]]:
    """One real run on main (three checkpoints) and its fork re-running task 3 on ``rewrite``."""
    location = str(tmp_path_factory.mktemp("estimate") / "store")
    with usage_server() as server:
        yield location, build(location, server.base_url)


def usd(description: str) -> Decimal:
    """genai-prices' own price of one call of the task with this description."""
    report = USAGE[description]
    counts = {"input_tokens": report["prompt_tokens"], "output_tokens": report["completion_tokens"]}
    return genai_usd({**counts, "model": "gpt-4o", "provider": "openai"})


def main_checkpoints(metas: list[Any]) -> list[Any]:
    return [m for m in metas if m.branch == "main"]


def dry_run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CHECKPOINT, *args, "--dry-run"], capture_output=True, text=True, check=False)


def test_a_fork_that_edits_task_2_estimates_task_3_from_its_recorded_run(store: tuple[str, list[Any]]) -> None:
    location, metas = store
    last = main_checkpoints(metas)[-1]
    record = ops.load(last.location)
    plan = ops.plan_fork(record, outputs={1: "A shorter outline."})
    units, open_ended = units_to_run(record.body, plan.rerun)
    task_3 = record.body["entity"]["tasks"][2]["id"]
    assert (units, open_ended) == ([task_3], False)

    estimate = estimate_rerun(record.body, units, Prices())
    recorded = [row for row in usage_rows(record.body) if row.unit == task_3]
    assert estimate.total.usd == price_rows(recorded, Prices()).usd == usd("Write the post.")
    assert estimate.total.tokens["input_tokens"] == 2000 and estimate.total.tokens["output_tokens"] == 900
    assert estimate.total.duration_s == pytest.approx(recorded[0].duration_s)
    assert estimate.missing == []

    result = dry_run("fork", last.location, "--set-output", "2=A shorter outline.", "--app", APP)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "task to run: 3. t3" in lines
    shown = cost_text(price_rows(recorded, Prices()))
    assert shown == "$0.0140"
    assert any(line.startswith(f"  3. t3: {shown}, 2,000 in / 900 out, ") for line in lines), result.stdout
    assert any(line.startswith(f"  total: {shown}, 2,000 in / 900 out, ") for line in lines), result.stdout
    assert not list(Path(location).glob("fork-*")), "a dry run writes nothing"


def test_a_fork_before_tasks_that_ran_after_it_is_estimated_from_that_run(store: tuple[str, list[Any]]) -> None:
    """Forking task 2 of a finished run: task 3 never ran on the checkpoint's own chain, but it ran after it (the
    newest checkpoint that descends from it holds that run), and that is what the fork will run again."""
    location, metas = store
    after_task_1, after_task_2 = main_checkpoints(metas)[:2]
    result = dry_run("fork", after_task_2.location, "--set-output", "2=A shorter outline.", "--app", APP)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("estimate, from each one's last run on this chain or after it") for line in lines)
    assert any(line.startswith("  3. t3: $0.0140, 2,000 in / 900 out, ") for line in lines), result.stdout

    result = dry_run("resume", after_task_1.location, "--app", APP)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "tasks to run: 2. t2, 3. t3" in lines
    shown = format_usd(usd("Outline the post.") + usd("Write the post."))  # each from its run on main
    assert any(line.startswith(f"  total: {shown}, ") for line in lines), result.stdout

    alone = Path(location).parent / "alone"  # the same store without what ran after task 1: nothing to go on
    shutil.copytree(location, alone)
    kept = {after_task_1.id}
    JsonProvider().delete(str(alone), [m.id for m in ops.list_checkpoints(str(alone)) if m.id not in kept])
    (first,) = ops.list_checkpoints(str(alone))
    result = dry_run("resume", first.location or "", "--app", APP)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert f"  2. t2: {NO_HISTORY}" in lines and f"  3. t3: {NO_HISTORY}" in lines
    assert f"  total: {NO_HISTORY} (none of them ran before on this chain)" in lines


def test_a_task_run_again_on_a_fork_is_estimated_from_its_newest_run(store: tuple[str, list[Any]]) -> None:
    _location, metas = store
    fork_head = [m for m in metas if m.branch == "rewrite"][-1]
    body = ops.load(fork_head.location).body
    task_3 = body["entity"]["tasks"][2]["id"]
    chain = [*usage_rows(body, "before"), *usage_rows(body, "rows")]
    assert [row.unit for row in chain].count(task_3) == 2  # the run on main and the fork's own
    estimate = estimate_rerun(body, [task_3], Prices())
    assert list(estimate.units[0].rows) == [r for r in usage_rows(body) if r.unit == task_3]
    assert estimate.total.usd == usd("Write the post.")  # once, not the two runs summed


def test_last_run_is_the_newest_stretch_of_a_units_rows() -> None:
    def row(unit: str, model: str = "gpt-4o", n: int = 1) -> UsageRow:
        return UsageRow(unit, agent="a", model=model, provider="openai", requests=n)

    chain = [row("t1"), row("t2", n=1), row("t2", "gpt-4o-mini", n=2), row("t3"), row("t2", n=3)]
    assert [r.requests for r in last_run(chain, "t2")] == [3]
    assert [r.requests for r in last_run(chain[:4], "t2")] == [1, 2]
    assert [r.requests for r in last_run([row("t2", n=1), row("t2", n=2)], "t2")] == [2]  # the same row again
    assert last_run(chain, "t9") == []


@pytest.mark.parametrize(
    "usage",
    [
        "not a section",
        {"rows": "nope", "before": 7},
        {"rows": [None, 3, {"unit": 5}, {"unit": "t1", "model": "gpt-4o", "input_tokens": -4}]},
        {"rows": [{"unit": "t1", "model": "gpt-4o", "input_tokens": 10**30, "duration_s": float("nan")}]},
        {"rows": [[None] * 13, ["t1"], ["t1", "", None, "gpt-4o", "", -4, 0, 0, 0, 0, 1, 0.1, False]]},  # stored form
        {"rows": [["t1", "", None, "gpt-4o", "", "5", 0, 0, 0, 0, 1, 0.1, False, "extra"]]},
    ],
)
def test_a_hostile_usage_section_estimates_no_history(usage: Any) -> None:
    body = {"entity": {"kind": "crew", "tasks": [{"id": "t1", "name": "[bold]x"}]}, "usage": usage}
    units, _ = units_to_run(body, [0, 5, -1])
    estimate = estimate_rerun(body, units, Prices())
    assert units == ["t1"] and estimate.missing == ["1. [bold]x"]
    assert estimate.total_line() == f"estimate: {NO_HISTORY} (none of them ran before on this chain)"


def test_an_unknown_price_shows_tokens_and_an_estimated_count_is_marked() -> None:
    def row(unit: str, model: str, estimated: bool) -> dict[str, Any]:
        return {
            "unit": unit,
            "label": unit,
            "agent": "a",
            "model": model,
            "provider": "openai",
            "input_tokens": 1000,
            "output_tokens": 100,
            "requests": 1,
            "duration_s": 2.0,
            "estimated": estimated,
        }

    body = {
        "entity": {"kind": "crew", "tasks": [{"id": "t1", "name": "local"}, {"id": "t2", "name": "mini"}]},
        "usage": {"rows": [row("t1", "my-local-model", False), row("t2", "gpt-4o-mini", True)]},
    }
    estimate = estimate_rerun(body, ["t1", "t2"], Prices())
    local, mini = estimate.unit_lines()
    assert local == "1. local: price unknown, 1,000 in / 100 out, 2.0s"
    assert mini.startswith("2. mini: ~$0.") and "~1,000 in / 100 out" in mini
    assert estimate.total_line().startswith("estimate: ~$0.") and estimate.total_line().count("price unknown") == 1
    assert estimate.to_json()["total"]["price_unknown"] == ["my-local-model"]
