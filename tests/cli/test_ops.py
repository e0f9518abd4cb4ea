"""The checkpoint operations behind the command line and the terminal app, on stores written by real runs."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest
from support.stores import make_store

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.demo import DEMO_INPUTS, TriageFlow
from crewpoint.flow import Flow, listen, start
from crewpoint.providers import JsonProvider, SqliteProvider
from crewpoint.providers.base import (
    AmbiguousCheckpoint,
    CheckpointError,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    UnsupportedSchema,
)


def ids_of(location: str, branch: str | None = None) -> list[str]:
    return [m.id for m in ops.list_checkpoints(location, branch=branch)]


def test_find_store_detects_the_default_folder_then_the_database_and_refuses_the_rest(tmp_path: Path) -> None:
    with pytest.raises(CheckpointNotFound, match="--location"):
        ops.find_store(None)
    make_store(".checkpoints.db")
    assert ops.find_store(None) == "./.checkpoints.db"
    make_store(".checkpoints")
    assert ops.find_store(None) == "./.checkpoints"
    file = ops.list_checkpoints(".checkpoints")[0].location
    assert os.path.samefile(ops.find_store(file), ".checkpoints")
    with pytest.raises(CheckpointNotFound, match="no such file"):
        ops.find_store("nowhere")
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CheckpointNotFound, match="not a checkpoint store"):
        ops.find_store("notes.txt")
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "main.py").write_text("print(1)")
    with pytest.raises(CheckpointNotFound, match="holds no checkpoints"):
        ops.find_store("project")
    (tmp_path / "fresh").mkdir()
    assert ops.find_store("fresh") == "fresh"


def test_list_is_newest_first_with_limit_and_branch_filter() -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    assert [m.tasks_done for m in metas] == [4, 3, 2, 1]
    assert [m.id for m in ops.list_checkpoints(store, limit=2)] == [m.id for m in metas[:2]]
    assert ops.list_checkpoints(store, branch="other") == []
    assert len(ops.list_checkpoints(store, branch="main")) == 4


@pytest.mark.parametrize("location", [".checkpoints", "cp.db"])
def test_resolve_id_takes_full_ids_prefixes_and_paths_and_names_ambiguous_matches(location: str) -> None:
    store = make_store(location)
    latest = ops.list_checkpoints(store)[0]
    assert ops.load(ops.resolve_id(store, latest.id[:6])).meta.id == latest.id
    assert ops.load(latest.id, store).meta.id == latest.id
    assert ops.resolve_id(None, latest.location) == latest.location
    provider = JsonProvider(fsync=False) if location == ".checkpoints" else SqliteProvider()
    record = ops.load(latest.id, store)
    for new_id in ("abc1000", "abc2000"):
        provider.write(store, CheckpointRecord(meta=record.meta.with_(id=new_id, branch="copies"), body=record.body))
    with pytest.raises(AmbiguousCheckpoint) as caught:
        ops.resolve_id(store, "abc")
    assert caught.value.matches == ["abc1000", "abc2000"]
    assert ops.load("abc2", store).meta.id == "abc2000"
    with pytest.raises(CheckpointNotFound, match="no checkpoint 'zzz'"):
        ops.resolve_id(store, "zzz")


def test_load_refuses_a_newer_schema_and_a_torn_file() -> None:
    store = make_store()
    latest = ops.list_checkpoints(store)[0]
    record = ops.load(latest.id, store)
    future = record.meta.with_(id="future1", parent_id=None, branch="future", schema_version=99)
    JsonProvider(fsync=False).write(store, CheckpointRecord(meta=future, body={**record.body, "schema_version": 99}))
    with pytest.raises(UnsupportedSchema, match="newer crewpoint"):
        ops.load("future1", store)
    path = Path(latest.location)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(DamagedCheckpoint):
        ops.load(latest.id, store)


def test_describe_shows_tasks_outputs_context_and_placeholders() -> None:
    store = make_store(stop_after=2)
    info = ops.describe(ops.load(store))
    assert (info.kind, info.name) == ("crew", "research-crew")
    assert info.inputs == DEMO_INPUTS
    assert info.placeholders == ["topic", "audience"]
    assert [(t.name, t.agent, t.done) for t in info.tasks] == [
        ("research", "Researcher", True),
        ("outline", "Writer", True),
        ("draft", "Writer", False),
        ("review", "Editor", False),
    ]
    assert info.tasks[0].output and info.tasks[2].output is None
    assert info.tasks[3].context == [0, 2]
    assert info.progress == (2, 4)
    assert any(e.get("type") == "task_completed" for e in info.events)


def test_plan_fork_names_the_tasks_that_will_run_and_writes_nothing() -> None:
    store = make_store()
    first, second = ops.list_checkpoints(store)[-1], ops.list_checkpoints(store)[-2]
    before = ids_of(store)
    done = ops.load(ops.list_checkpoints(store)[0].id, store)
    assert ops.plan_fork(done).rerun == []
    plan = ops.plan_fork(done, inputs={"audience": "CTOs"})
    assert plan.changed_inputs == {"audience": "CTOs"} and plan.rerun == [1, 2, 3]
    assert ops.plan_fork(done, inputs={"audience": DEMO_INPUTS["audience"]}).rerun == []
    plan = ops.plan_fork(done, outputs={2: "A new draft"})
    assert plan.edited_outputs == {2: "A new draft"} and plan.rerun == [3]
    assert ops.plan_fork(ops.load(second.id, store), outputs={0: "Facts"}).rerun == [1, 2, 3]
    with pytest.raises(ValueError, match="has not run"):
        ops.plan_fork(ops.load(first.id, store), outputs={2: "too early"})
    assert ids_of(store) == before


def test_fork_with_an_edited_output_reruns_only_its_dependents(llm_calls: list[str]) -> None:
    store = make_store()
    llm_calls.clear()
    latest = ops.list_checkpoints(store)[0]
    info = ops.describe(ops.load(latest.id, store))
    result = ops.prepare_run(
        latest.id[:8], fork=True, branch="new-draft", outputs={2: "A new draft."}, location=store
    ).kickoff()
    assert set(llm_calls) == {info.tasks[3].id}
    assert "review" in result.raw.lower()
    fork = ops.list_checkpoints(store, branch="new-draft")
    assert [m.tasks_done for m in fork] == [4] and fork[0].parent_id == latest.id
    forked = ops.describe(ops.load(fork[0].id, store))
    assert forked.tasks[2].output == "A new draft."
    assert forked.tasks[0].output == info.tasks[0].output
    assert len(ops.list_checkpoints(store, branch="main")) == 4


def test_fork_with_a_changed_input_keeps_tasks_that_do_not_use_it(llm_calls: list[str]) -> None:
    store = make_store()
    llm_calls.clear()
    latest = ops.list_checkpoints(store)[0]
    info = ops.describe(ops.load(latest.id, store))
    ops.prepare_run(latest.id, fork=True, inputs={"audience": "CTOs"}, location=store).kickoff()
    assert set(llm_calls) == {t.id for t in info.tasks[1:]}
    branch = next(m.branch for m in ops.list_checkpoints(store) if m.branch != "main")
    assert branch.startswith("fork-")
    newest = ops.list_checkpoints(store, branch=branch)[0]
    assert ops.load(newest.id, store).body["inputs"]["audience"] == "CTOs"


def test_resume_finishes_an_interrupted_run_without_redoing_finished_tasks(llm_calls: list[str]) -> None:
    store = make_store(stop_after=2)
    llm_calls.clear()
    latest = ops.list_checkpoints(store)[0]
    assert (latest.tasks_done, latest.tasks_total) == (2, 4)
    info = ops.describe(ops.load(latest.id, store))
    prepared = ops.prepare_run(latest.id, location=store)
    assert prepared.plan.rerun == [2, 3] and prepared.branch == "main"
    result = prepared.kickoff()
    assert len(result.tasks_output) == 4
    assert set(llm_calls) == {info.tasks[2].id, info.tasks[3].id}
    metas = ops.list_checkpoints(store)
    assert [m.tasks_done for m in metas] == [4, 3, 2, 1]
    assert metas[1].parent_id == latest.id and prepared.latest_id == metas[0].id


def test_fork_branch_names_are_checked_before_anything_runs(llm_calls: list[str]) -> None:
    store = make_store()
    llm_calls.clear()
    latest = ops.list_checkpoints(store)[0].id
    with pytest.raises(CheckpointError, match="already exists"):
        ops.prepare_run(latest, fork=True, branch="main", location=store).kickoff()
    with pytest.raises(CheckpointError, match="leave the checkpoint store"):
        ops.prepare_run(latest, fork=True, branch="../escape", location=store).kickoff()
    with pytest.raises(ValueError, match="does not exist"):
        ops.prepare_run(latest, fork=True, outputs={9: "x"}, location=store).kickoff()
    assert llm_calls == []
    assert len(ids_of(store)) == 4


class NoteFlow(Flow[dict[str, Any]]):
    @start()
    def first(self) -> str:
        self.state["seen"] = self.state.get("word", "none")
        return "one"

    @listen(first)
    def second(self, previous: str) -> str:
        return previous + " two"


def test_a_flow_class_comes_from_the_running_program_or_a_trusted_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    config = CheckpointConfig(location=".checkpoints", on_events=["method_execution_finished"])
    NoteFlow(checkpoint=config).kickoff()
    first = ops.list_checkpoints(".checkpoints")[-1]
    assert ops.prepare_run(first.id, fork=True, branch="again", location=".checkpoints").kickoff() == "one two"
    record = ops.load(first.id, ".checkpoints")
    record.body["entity"]["class"] = "no_such_package_xyz.Flow"
    with pytest.raises(CheckpointError, match="CREWPOINT_DESERIALIZE_CALLBACKS=1"):
        ops.prepare_run(first.id, fork=True, location=".checkpoints", record=record)
    TriageFlow(checkpoint=CheckpointConfig(location="triage", on_events=["method_execution_finished"])).kickoff()
    start_meta = ops.list_checkpoints("triage")[-1]
    assert "on-call" in ops.prepare_run(start_meta.id, fork=True, location="triage").kickoff()
    info = ops.describe(ops.load(start_meta.id, "triage"))
    assert info.kind == "flow" and info.flow_state["severity"] == "high"
    assert info.method_outputs == [("classify", "high")]


def test_diff_lists_changed_inputs_statuses_and_outputs() -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    latest, second = metas[0], metas[2]
    ops.prepare_run(latest.id, fork=True, branch="b", inputs={"audience": "CTOs"}, location=store).kickoff()
    fork_latest = ops.list_checkpoints(store, branch="b")[0]
    changes = ops.diff(ops.load(latest.id, store), ops.load(fork_latest.id, store))
    keys = {(c.section, c.key) for c in changes}
    assert ("inputs", "audience") in keys and ("checkpoint", "branch") in keys
    assert {("outputs", "2. outline"), ("outputs", "3. draft"), ("outputs", "4. review")} <= keys
    assert ("outputs", "1. research") not in keys
    audience = next(c for c in changes if c.key == "audience")
    assert (audience.before, audience.after) == ("engineering leads", "CTOs")
    older = ops.diff(ops.load(second.id, store), ops.load(latest.id, store))
    assert ops.DiffEntry("tasks", "3. draft", "pending", "done") in older
    assert ops.diff(ops.load(latest.id, store), ops.load(latest.id, store)) == []


def test_prune_plan_keeps_fork_points_unless_forced() -> None:
    store = make_store()
    metas = ops.list_checkpoints(store)
    fork_point = metas[2]  # 2/4
    ops.prepare_run(fork_point.id, fork=True, branch="side", location=store).kickoff()
    plan = ops.prune(store, ops.PruneStrategy(keep=1, branch="main"), dry_run=True)
    assert {m.id for m in plan.doomed} == {metas[1].id, metas[3].id}
    assert plan.kept_fork_points == {fork_point.id}
    forced = ops.prune(store, ops.PruneStrategy(keep=1, branch="main", force=True), dry_run=True)
    assert {m.id for m in forced.doomed} == {m.id for m in metas[1:]}
    assert ops.prune(store, ops.PruneStrategy(older_than=3600), dry_run=True).doomed == []
    everything = ops.prune(store, ops.PruneStrategy(older_than=0, now=time.time() + 1), dry_run=True)
    assert fork_point.id not in {m.id for m in everything.doomed}
    assert ops.prune(store, ops.PruneStrategy(keep=1, branch="main")) == plan
    assert fork_point.id in ids_of(store)
    with pytest.raises(ValueError):
        ops.PruneStrategy()


@pytest.mark.parametrize(
    ("text", "seconds"), [("7d", 604800.0), ("24h", 86400.0), ("30m", 1800.0), ("45s", 45.0), ("1.5h", 5400.0)]
)
def test_parse_age(text: str, seconds: float) -> None:
    assert ops.parse_age(text) == seconds


@pytest.mark.parametrize("text", ["", "7", "d", "7 days", "-1d", "7y"])
def test_parse_age_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(ValueError, match=r"like 7d, 24h, 30m or 45s"):
        ops.parse_age(text)


def test_resolve_task_accepts_numbers_and_names() -> None:
    store = make_store()
    record = ops.load(store)
    assert ops.resolve_task(record, "1") == 0
    assert ops.resolve_task(record, "review") == 3
    with pytest.raises(ValueError, match="1=research"):
        ops.resolve_task(record, "nothing")
    with pytest.raises(ValueError, match="tasks 1 to 4"):
        ops.resolve_task(record, "5")
