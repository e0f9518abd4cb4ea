"""Entity kinds are one protocol and one registry (``crewpoint.entities``): every registered class provides the
whole protocol, every kind has one word for its units wherever progress is shown, the shared classmethods are
written once, and no module outside the registry compares an entity kind to a kind's name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.entities import ENTITY_KINDS, CheckpointedEntity, Entity, entity_class, kind_of
from crewpoint.flow import Flow, listen, start
from crewpoint.providers.base import CheckpointError, CheckpointMeta
from crewpoint.tui.cli import main
from crewpoint.tui.store_index import progress_text
from crewpoint.tui.widgets.overview_view import progress_line

ROOT = Path(__file__).resolve().parents[2]


class TwoSteps(Flow[dict[str, Any]]):
    @start()
    def first(self) -> str:
        return "one"

    @listen(first)
    def second(self, value: str) -> str:
        return value + " two"


class MyCrew(Crew):
    pass


def _protocol_members() -> dict[str, Any]:
    """What :class:`Entity` declares: its attributes and its methods, properties and classmethods."""
    members: dict[str, Any] = {name: None for name in Entity.__annotations__}
    for name, value in vars(Entity).items():
        if not name.startswith("_") and (callable(value) or isinstance(value, property | classmethod)):
            members[name] = value
    return members


def _crew(location: Path, cls: type[Crew] = Crew) -> Crew:
    writer = Agent(role="Writer", goal="write")
    tasks = [Task(description=f"part {i}", expected_output="a line", agent=writer) for i in (1, 2)]
    return cls(agents=[writer], tasks=tasks, checkpoint=CheckpointConfig(location=str(location)))


def _newest(location: Path) -> CheckpointMeta:
    metas = ops.list_checkpoints(str(location))
    assert metas, "the run wrote no checkpoint"
    return max(metas, key=lambda m: m.sequence)


# -- the protocol -------------------------------------------------------------------------------------------------


def test_every_registered_class_provides_the_whole_protocol() -> None:
    members = _protocol_members()
    assert len(members) >= 20  # everything Crew, Flow and Agent share, not a handful
    for kind, entry in ENTITY_KINDS.items():
        cls = entry.cls
        assert entity_class(kind) is cls and cls.KIND == kind and issubclass(cls, CheckpointedEntity)
        for name, declared in members.items():
            found = inspect.getattr_static(cls, name, None)
            if found is None and declared is None:  # an attribute: set on each instance (a field or __init__)
                assert name in getattr(cls, "model_fields", {}) or name in inspect.getsource(cls.__init__), name
                continue
            assert found is not None, f"{cls.__name__} lacks {name}"
            if isinstance(declared, property):
                assert isinstance(found, property), f"{cls.__name__}.{name} is not a property"
            if isinstance(declared, classmethod):
                assert isinstance(found, classmethod), f"{cls.__name__}.{name} is not a classmethod"


def test_the_shared_classmethods_are_written_once() -> None:
    for name in ("from_checkpoint", "afrom_checkpoint", "fork", "entity_kind"):
        owners = [entry.cls for entry in ENTITY_KINDS.values() if name in vars(entry.cls)]
        assert owners == [], f"{name} is written again in {[c.__name__ for c in owners]}"


def test_each_kind_rebuilds_from_its_checkpoint_as_the_class_asked(tmp_path: Path) -> None:
    crew = _crew(tmp_path / "crew")
    crew.kickoff()
    crew_ref = _newest(tmp_path / "crew").location
    rebuilt = Crew.from_checkpoint(crew_ref)
    assert type(rebuilt) is Crew and rebuilt.entity_kind == "crew" and rebuilt.rerun() == []
    mine = MyCrew.fork(CheckpointConfig(restore_from=crew_ref), branch="mine")
    assert type(mine) is MyCrew and mine.runtime_state is not None and mine.runtime_state.branch == "mine"

    TwoSteps(checkpoint=CheckpointConfig(location=str(tmp_path / "flow"))).kickoff()
    flow = TwoSteps.from_checkpoint(_newest(tmp_path / "flow").location)
    assert type(flow) is TwoSteps and flow.method_outputs == [("first", "one"), ("second", "one two")]

    agent = Agent(role="Helper", goal="help", checkpoint=CheckpointConfig(location=str(tmp_path / "agent")))
    agent.kickoff(messages="hello")
    assert type(Agent.from_checkpoint(_newest(tmp_path / "agent").location)) is Agent

    with pytest.raises(CheckpointError, match="this checkpoint is of a crew, not an agent"):
        Agent.from_checkpoint(crew_ref)  # a checkpoint of another kind is refused, as before


# -- the registry ------------------------------------------------------------------------------------------------


def test_every_kind_has_one_word_for_its_units() -> None:
    words = {kind: (entry.unit, entry.units) for kind, entry in ENTITY_KINDS.items()}
    for kind, entry in ENTITY_KINDS.items():
        assert entry.cls.KIND == kind and entity_class(kind) is entry.cls
        assert entry.unit and entry.units and entry.units != entry.unit, kind  # "1 task", "2 tasks"
    known = {"crew": ("task", "tasks"), "flow": ("step", "steps"), "agent": ("kickoff", "kickoffs")}
    assert {kind: words[kind] for kind in known} == known
    assert len({unit for unit, _ in words.values()}) == len(words)  # no two kinds share a word
    assert kind_of("something-else").unit == "step" and kind_of("something-else").load is None
    with pytest.raises(CheckpointError, match="unknown entity kind"):
        entity_class("something-else")


def test_info_the_overview_and_the_tree_say_the_same_word(tmp_path: Path) -> None:
    """Each kind's checkpoint reads in its registry word in ``info`` and the Overview; a flow's in the tree too."""
    _crew(tmp_path / "crew").kickoff()
    TwoSteps(checkpoint=CheckpointConfig(location=str(tmp_path / "flow"))).kickoff()
    Agent(role="Helper", goal="help", checkpoint=CheckpointConfig(location=str(tmp_path / "agent"))).kickoff("hi")
    expected = {"crew": ("2/2 tasks", "2/2"), "flow": ("2 steps run", "step 2"), "agent": ("1/1 kickoff", "1/1")}
    for kind, (overview, tree) in expected.items():
        meta = _newest(tmp_path / kind)
        assert meta.entity_kind == kind
        assert progress_line(meta).startswith(overview) and progress_text(meta) == tree
        info = CliRunner().invoke(main, ["checkpoint", "info", meta.id, "--location", str(tmp_path / kind)])
        assert info.exit_code == 0, info.output
        progress = next(line for line in info.stdout.splitlines() if line.startswith("progress"))
        assert progress.endswith(f" {kind_of(kind).noun(meta.tasks_total)} done"), progress


# -- no ladders ----------------------------------------------------------------------------------------------------

KINDS = "|".join(ENTITY_KINDS)
LADDER = re.compile(
    rf"""(?:kind\b|kind["']\]|\.kind)\s*(?:[!=]=|\bin\b)\s*[(\[{{]?\s*["'](?:{KINDS})["']"""
    rf"""|["'](?:{KINDS})["']\s*[!=]=\s*\S*kind\b"""
    rf"""|\{{\s*["'](?:{KINDS})["']\s*:"""
)
"""A comparison of an entity kind with a kind's name (``kind == "flow"``, ``entity["kind"] != 'crew'``,
``info.kind in ("crew", ...)``, ``"agent" == meta.entity_kind``) or a table keyed by kind names
(``{"flow": "methods", ...}.get(kind)``)."""

ALLOWED = {
    "core/entities.py": "the registry itself",
    "core/checkpoint/schema.py": "the body's one owner validates each kind's shape: its typed union is told apart "
    "by the ``kind`` field",
}
OTHER_TOOLS = "core/formats/"
"""Another tool's format reads that tool's own kind names (CrewAI's entity types) as the providers beside its stores
do: its words, not the registry's."""


def ladders(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if LADDER.search(line)]


def test_the_scan_finds_a_ladder_when_there_is_one() -> None:
    for line in (
        'if kind == "crew":',
        "elif entity['kind'] != 'flow':",
        'if info.kind in ("agent", "crew"):',
        'x = "flow" if meta.entity_kind == "flow" else "y"',
        'if "agent" == meta.entity_kind:',
        'unit = {"crew": "tasks", "flow": "methods"}.get(info.kind, "steps")',
    ):
        assert ladders(line) == [line], line
    assert ladders('if record.kind == protocol.STARTED:\nkind = kind_of(meta.entity_kind)\nstore.kind == "json"') == []


def test_no_module_outside_the_registry_compares_kind_names() -> None:
    found: list[str] = []
    for folder in ("core", "tui", "screens"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative in ALLOWED or relative.startswith(OTHER_TOOLS):
                continue
            found += [f"{relative}: {line}" for line in ladders(path.read_text(encoding="utf-8"))]
    assert found == [], "ask crewpoint.entities.kind_of(kind) instead:\n" + "\n".join(found)
