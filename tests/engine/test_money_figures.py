"""Figures that cannot crash or hide: any dollar figure is shown without raising; a price override and a budget have
a ceiling, refused in one line where they are read; a chain with a known cost and a model of unknown price shows the
known part with the mark (``$1.00+?``). Real runs against the local OpenAI-compatible server, real CLI processes."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path

import pytest
from llm_server import LLMServer
from support.cli import checkpoint
from textual.app import App, ComposeResult
from textual.widgets import Label

from crewpoint import LLM, Agent, Budget, BudgetExceeded, CheckpointConfig, Crew, Task
from crewpoint.budget import budget_from_state, parse_usd
from crewpoint.cost import format_usd
from crewpoint.providers import JsonProvider
from crewpoint.providers.base import CheckpointRecord
from crewpoint.screens.resume_confirm import BudgetField


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return checkpoint(*args, cwd=cwd, env={**os.environ, **env})


def run_two_models(server: LLMServer, project: Path) -> None:
    """A crew whose first task runs on gpt-4o (priced) and whose second runs on a model no table knows."""
    server.usage = {"prompt_tokens": 200_000, "completion_tokens": 50_000}  # $1.00 on gpt-4o
    known = Agent(role="Writer", goal="g", backstory="b", llm=LLM(model="gpt-4o", base_url=server.base_url))
    local = Agent(role="Editor", goal="g", backstory="b", llm=LLM(model="house-model-7", base_url=server.base_url))
    tasks = [
        Task(name="draft", description="Draft it.", expected_output="text", agent=known),
        Task(name="edit", description="Edit it.", expected_output="text", agent=local),
    ]
    Crew(agents=[known, local], tasks=tasks, checkpoint=CheckpointConfig(location=str(project / "store"))).kickoff()


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (1e26, "$1.0e+26"),
        (1e300, "$1.0e+300"),
        (Decimal("1e400"), "$1.0e+400"),
        (float("inf"), "$inf"),
        (float("-inf"), "-$inf"),
        (float("nan"), "$?"),
        (Decimal("sNaN"), "$?"),
        (-2.5, "-$2.50"),
        (12345.678, "$12,345.68"),
        (0.00001, "<$0.0001"),
        (0, "$0.0000"),
        (None, "price unknown"),
    ],
)
def test_money_formatting_never_raises(value: float | Decimal | None, shown: str) -> None:
    assert format_usd(value) == shown


def test_a_price_override_above_the_ceiling_is_refused_in_one_line_naming_the_key(
    server: LLMServer, tmp_path: Path
) -> None:
    run_two_models(server, tmp_path)
    listed = json.loads(cli("list", "store", "--json", cwd=tmp_path).stdout)
    checkpoint, first = str(listed[0]["id"]), str(listed[-1]["id"])  # the newest, and one with a task left to run
    (tmp_path / "pyproject.toml").write_text('[tool.crewpoint.prices]\n"gpt-4o" = { input_mtok = 1e300 }\n')
    for args in (
        ("list", "store"),
        ("info", checkpoint, "--location", "store"),
        ("cost", "store"),
        ("cost", checkpoint, "--location", "store"),
        ("fork", first, "--location", "store", "--dry-run", "-b", "other"),
    ):
        named = {"CREWPOINT_LLM": "gpt-4o"} if args[0] == "fork" else {}  # a rebuild runs the model the user names
        done = cli(*args, cwd=tmp_path, **named)
        said = [line for line in done.stderr.splitlines() if "gpt-4o.input_mtok" in line]
        assert done.returncode == 2 and len(said) == 1, (args, done.stderr)
        assert "above the highest price" in said[0] and str(tmp_path / "pyproject.toml") in said[0], args
        assert "Traceback" not in done.stderr and "InvalidOperation" not in done.stderr


def test_a_budget_above_the_ceiling_is_refused_in_one_line(tmp_path: Path) -> None:
    for command in ("resume", "fork", "answer"):
        done = cli(command, "abc", "--budget", "1e30", cwd=tmp_path)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "--budget" in done.stderr and "1000000000" in done.stderr
    with pytest.raises(ValueError, match="above the largest budget"):
        parse_usd("1e30")  # the app's Budget field
    with pytest.raises(ValueError, match="up to 1,000,000,000"):
        Budget(usd=1e30)
    assert budget_from_state({"budget": {"usd": 1e30, "tokens": None}}) is None  # a crafted one is not taken


class _Dialog(App[None]):
    def compose(self) -> ComposeResult:
        yield BudgetField({"entity": {"budget": {"usd": 1e30, "tokens": 10**30}}})


async def test_a_crafted_saved_budget_does_not_kill_the_budget_field() -> None:
    app = _Dialog()
    async with app.run_test() as pilot:
        await pilot.pause()
        label = app.query_one(BudgetField).query_one(Label)
        assert "empty: no limit" in str(label.render())


def test_a_chain_with_a_known_cost_and_an_unknown_price_shows_the_known_part(server: LLMServer, tmp_path: Path) -> None:
    run_two_models(server, tmp_path)
    listed = cli("list", "store", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    newest_row = listed.stdout.splitlines()[1]
    assert "$1.00+?" in newest_row.split()  # not a bare "?": the $1.00 known, the rest marked
    rows = json.loads(cli("list", "store", "--json", cwd=tmp_path).stdout)
    assert rows[0]["cost_usd"] == 1.0 and rows[0]["price_unknown"] == ["house-model-7"]
    info = cli("info", str(rows[0]["id"]), "--location", "store", cwd=tmp_path).stdout
    assert "$1.00 + price unknown" in info
    cost = cli("cost", "store", cwd=tmp_path).stdout
    assert "$1.00 + price unknown" in cost and "price unknown: house-model-7" in cost


def test_info_of_a_budget_stop_with_crafted_figures_says_what_it_can(server: LLMServer, tmp_path: Path) -> None:
    """A ``budget_exceeded`` event whose figures are not numbers a run writes (infinite, beyond any budget) is shown
    without them, not as a crash."""
    server.usage = {"prompt_tokens": 200_000, "completion_tokens": 50_000}
    writer = Agent(role="Writer", goal="g", backstory="b", llm=LLM(model="gpt-4o", base_url=server.base_url))
    tasks = [Task(name=f"t{i}", description=f"Step {i}.", expected_output="text", agent=writer) for i in (1, 2)]
    crew = Crew(agents=[writer], tasks=tasks, budget=Budget(usd=0.5), checkpoint=CheckpointConfig(location="store"))
    with pytest.raises(BudgetExceeded):
        crew.kickoff()
    provider = JsonProvider(fsync=False)
    record = provider.read("store", provider.list("store")[0].id)
    body = copy.deepcopy(record.body)
    event = next(e for e in body["events"] if e["type"] == "budget_exceeded")
    event.update(spent_tokens=1e400, spent_usd=10**400)  # JSON's 1e400 reads back as infinity
    meta = record.meta.with_(id="c0ffee" + record.meta.id[6:], branch="crafted", parent_id=None, location="")
    provider.write("store", CheckpointRecord(meta=meta, body=body))
    shown = cli("info", meta.id, "--location", "store", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "stopped: budget: the run stopped here, before an LLM call" in shown.stdout
    assert "Traceback" not in shown.stderr
