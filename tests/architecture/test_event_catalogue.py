"""One source for the event catalogue: the classes in ``core/events/family_*.py``.

The names (``CheckpointEventType``) and where each class lives are an index written from those classes by
``python -m crewpoint.events``; these tests hold the index to the classes and show that adding an event is one class
in one family module plus that command.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import get_args

import pytest

import crewpoint.events as events_pkg
from crewpoint.events import types
from crewpoint.events.base import BaseEvent

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "core" / "events" / "index.py"


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env={**os.environ, **env}
    )


# -- the index matches the classes ---------------------------------------------------------------------------


def test_the_written_index_is_the_one_the_family_modules_give() -> None:
    assert INDEX.read_text(encoding="utf-8") == types.render_index(), "run: python -m crewpoint.events"


def test_the_check_command_passes_on_this_tree() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "crewpoint.events", "--check"], capture_output=True, text=True, timeout=120
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_the_literal_names_every_class_and_its_family_holds_it() -> None:
    names = get_args(events_pkg.CheckpointEventType)
    assert names == tuple(events_pkg.EVENT_TYPES)
    for name in names:
        cls = events_pkg.EVENT_TYPES[name]
        assert cls.model_fields["type"].default == name
        assert cls.__name__ == types.class_name(name)
        assert cls.__name__ in types.FAMILIES[cls.__module__.removeprefix("crewpoint.events.family_")]
    classes = [cls for family in types.FAMILY_ORDER for cls in types.family_classes(family)]
    assert [cls.__name__ for cls in classes] == list(types.CLASS_NAMES)
    bases = [cls.__name__ for cls in classes if cls.model_fields["type"].default == "event"]
    assert bases[:3] == ["TaskEvent", "CrewEvent", "AgentEvent"]
    assert len(names) + len(bases) == len(classes)


def test_never_emitted_is_read_from_the_classes() -> None:
    never = events_pkg.NEVER_EMITTED
    assert isinstance(never, frozenset)
    assert {"a2a_message_sent", "mcp_connection_started", "crew_train_started"} <= never
    assert {"task_completed", "llm_call_completed", "SIGTERM", "checkpoint_pruned", "llm_thinking_chunk"}.isdisjoint(
        never
    )
    assert {"tool_selection_error", "tool_validate_input_error", "tool_execution_error"}.isdisjoint(never)
    assert never == {name for name, cls in events_pkg.EVENT_TYPES.items() if not cls.emitted}


def test_the_naming_rule() -> None:
    assert types.class_name("llm_call_completed") == "LLMCallCompletedEvent"
    assert types.class_name("a2a_message_sent") == "A2AMessageSentEvent"
    assert types.class_name("mcp_tool_execution_failed") == "MCPToolExecutionFailedEvent"
    assert types.class_name("SIGTSTP") == "SigtstpEvent"
    assert types.class_name("checkpoint_pruned") == "CheckpointPrunedEvent"


def test_star_and_every_name_are_accepted_and_others_refused() -> None:
    from crewpoint.checkpoint.config import CheckpointConfig

    config = CheckpointConfig(on_events=["*", *get_args(events_pkg.CheckpointEventType)])
    assert len(config.on_events) == len(events_pkg.EVENT_TYPES) + 1
    with pytest.raises(ValueError, match="task_paused"):
        CheckpointConfig(on_events=["task_completed", "task_paused"])
    with pytest.raises(ValueError, match="unknown event type 'task_paused'"):
        events_pkg.event_class("task_paused")
    assert type(events_pkg.parse_event({"type": "task_paused", "note": 1})) is BaseEvent


def test_every_exported_name_resolves_and_unknown_names_do_not() -> None:
    for name in events_pkg.__all__:
        assert getattr(events_pkg, name) is not None
    assert set(types.CLASS_NAMES) <= set(dir(events_pkg))
    with pytest.raises(AttributeError):
        events_pkg.TaskPausedEvent  # noqa: B018
    with pytest.raises(AttributeError):
        types.NoSuchEvent  # noqa: B018


# -- laziness: a family is built when one of its classes is first used ----------------------------------------


def test_names_and_checks_build_no_family_and_a_class_builds_only_its_own() -> None:
    code = textwrap.dedent(
        """
        import sys
        from crewpoint.events import EVENT_TYPES, CheckpointEventType, event_bus

        def built():
            return sorted(m.rsplit("_", 1)[1] for m in sys.modules if m.startswith("crewpoint.events.family_"))

        assert "task_completed" in EVENT_TYPES and len(CheckpointEventType.__args__) == len(EVENT_TYPES)
        event_bus.register("llm_call_completed", lambda source, event: None)
        print(built())
        from crewpoint.events import LLMCallCompletedEvent
        print(built())
        EVENT_TYPES["SIGTERM"]
        print(built())
        """
    )
    done = run_python(code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["[]", "['llm']", "['llm', 'signals']"]


# -- adding an event: one class in one family module, then the command --------------------------------------


def _copy_of_the_package(tmp_path: Path) -> Path:
    """A private copy of crewpoint's engine and providers, importable with PYTHONPATH, to add an event to."""
    package = tmp_path / "site" / "crewpoint"
    shutil.copytree(ROOT / "core", package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "providers", package / "providers", ignore=shutil.ignore_patterns("__pycache__"))
    return package


def _add_class(package: Path, family: str, source: str) -> None:
    module = package / "events" / f"family_{family}.py"
    module.write_text(module.read_text(encoding="utf-8") + "\n\n" + textwrap.dedent(source), encoding="utf-8")


def _run_module(package: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crewpoint.events", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(package.parent)},
    )


def test_adding_an_event_is_one_class_and_one_command(tmp_path: Path) -> None:
    package = _copy_of_the_package(tmp_path)
    _add_class(
        package,
        "task",
        """
        class TaskPausedEvent(TaskEvent):
            type: Literal["task_paused"] = "task_paused"
            reason: str | None = None
        """,
    )
    stale = _run_module(package, "--check")
    assert stale.returncode == 1
    assert "out of date" in stale.stderr and "python -m crewpoint.events" in stale.stderr

    wrote = _run_module(package)
    assert wrote.returncode == 0, wrote.stderr
    assert _run_module(package, "--check").returncode == 0

    code = textwrap.dedent(
        """
        import crewpoint
        assert crewpoint.__file__.startswith(sys.argv[1]), crewpoint.__file__
        from crewpoint.checkpoint.config import CheckpointConfig
        from crewpoint.events import EVENT_TYPES, TaskPausedEvent, __all__, event_bus
        seen = []
        event_bus.register("task_paused", lambda source, event: seen.append(event.reason))
        event_bus.emit(None, TaskPausedEvent(reason="waiting"))
        names = list(EVENT_TYPES)
        print(names.index("task_paused") == names.index("task_evaluation") + 1, "TaskPausedEvent" in __all__)
        print(CheckpointConfig(on_events=["task_paused"]).on_events, seen)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + code, str(package)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(package.parent)},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["True True", "['task_paused'] ['waiting']"]


@pytest.mark.parametrize(
    ("source", "named"),
    [
        ('class TaskHaltedEvent(TaskEvent):\n    type: Literal["task_paused"] = "task_paused"\n', "TaskHaltedEvent"),
        ('class TaskAgainEvent(TaskEvent):\n    type: Literal["task_started"] = "task_started"\n', "TaskAgainEvent"),
    ],
)
def test_a_class_that_breaks_the_naming_rule_is_named(tmp_path: Path, source: str, named: str) -> None:
    package = _copy_of_the_package(tmp_path)
    _add_class(package, "task", source)
    done = _run_module(package)
    assert done.returncode == 2
    assert named in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_family_module_missing_from_the_order_is_named(tmp_path: Path) -> None:
    package = _copy_of_the_package(tmp_path)
    (package / "events" / "family_billing.py").write_text("", encoding="utf-8")
    done = _run_module(package)
    assert done.returncode == 2
    assert "family_billing" in done.stderr and len(done.stderr.splitlines()) == 1


def test_a_class_is_one_object_whichever_way_it_is_imported() -> None:
    from crewpoint.events import family_task

    assert events_pkg.TaskCompletedEvent is family_task.TaskCompletedEvent is types.TaskCompletedEvent
