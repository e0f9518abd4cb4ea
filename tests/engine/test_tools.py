"""Callback saving rules and tools: running, caching, errors, events and checkpoint state."""

from __future__ import annotations

import asyncio
import functools
import json
import os
import subprocess
import sys
import warnings
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from crewpoint.events import (
    BaseEvent,
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
    event_bus,
)
from crewpoint.serialize import TRUST_ENV, callable_path, check_savable, load_callable
from crewpoint.tools import BaseTool, FunctionTool, cache_nothing, tool, tool_from_state

CALLS: Counter[str] = Counter()


def module_callback(output: Any) -> None:
    """A plain module-level function: the one kind of callback a checkpoint can name."""


def cache_even(args: dict[str, Any], result: Any) -> bool:
    return isinstance(result, int) and result % 2 == 0


@tool("Word counter")
def count_words(text: str) -> int:
    """Count the words in a text."""
    CALLS["count_words"] += 1
    return len(text.split())


@tool("Even word counter", cache_function=cache_even)
def count_words_even_cached(text: str) -> int:
    """Count words; only even counts are cached."""
    CALLS["count_words_even_cached"] += 1
    return len(text.split())


@tool
def shout(text: str) -> str:
    """Repeat the text in capitals."""
    CALLS["shout"] += 1
    return text.upper()


@tool("Divider")
def divide(a: float, b: float) -> float:
    """Divide a by b."""
    CALLS["divide"] += 1
    return a / b


class GreeterTool(BaseTool):
    name: str = "Greeter"
    description: str = "Greets someone by name."
    greeting: str = "Hello"

    def _run(self, who: str) -> str:
        CALLS["greeter"] += 1
        return f"{self.greeting}, {who}!"


class Notifier:
    def on_done(self, output: Any) -> None:
        pass

    def __call__(self, output: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def fresh_tools() -> Iterator[None]:
    CALLS.clear()
    for t in (count_words, count_words_even_cached, shout, divide):
        t.clear_cache()
    yield


@pytest.fixture
def seen() -> Iterator[list[BaseEvent]]:
    events: list[BaseEvent] = []
    with event_bus.scoped_handlers():
        for cls in (ToolUsageStartedEvent, ToolUsageFinishedEvent, ToolUsageErrorEvent):
            event_bus.register(cls, lambda source, event: events.append(event))
        yield events


# -- callable_path ----------------------------------------------------------------------------------------


def test_callable_path_names_a_module_level_function() -> None:
    path = callable_path(module_callback)
    assert path == f"{module_callback.__module__}.module_callback"


def test_callable_path_refuses_what_cannot_be_imported_back() -> None:
    def closure(output: Any) -> None:
        pass

    main_ns: dict[str, Any] = {"__name__": "__main__"}
    exec("def in_main(output):\n    pass\n", main_ns)

    assert callable_path(lambda output: None) is None
    assert callable_path(closure) is None
    assert callable_path(Notifier().on_done) is None
    assert callable_path(functools.partial(module_callback)) is None
    assert callable_path(Notifier()) is None
    assert callable_path(len) is None
    assert callable_path(main_ns["in_main"]) is None
    assert callable_path(Notifier.on_done) is None  # a method, even unbound, is not module-level


def test_callable_path_names_a_tool_function_by_the_tool_that_wraps_it() -> None:
    # the module attribute ``count_words`` is the tool; its function is saved under the tool's name
    assert callable_path(count_words.func) == f"{__name__}.count_words"


# -- check_savable ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fn",
    [lambda output: None, Notifier().on_done, functools.partial(module_callback), Notifier(), print],
    ids=["lambda", "bound method", "partial", "callable instance", "builtin"],
)
def test_check_savable_warns_with_the_documented_text(fn: Any) -> None:
    with pytest.warns(UserWarning, match="callback cannot be saved in a checkpoint") as record:
        check_savable(fn, "Task")
    assert str(record[0].message).startswith("Task callback cannot be saved in a checkpoint")
    assert record[0].filename == __file__  # points at the caller's line, not at crewpoint


def test_check_savable_is_silent_for_module_functions_and_none() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_savable(module_callback, "Task")
        check_savable(None, "Task")


# -- load_callable ------------------------------------------------------------------------------------------


def test_load_callable_refuses_without_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_ENV, raising=False)
    path = callable_path(module_callback)
    assert path is not None
    with pytest.raises(ValueError) as info:
        load_callable(path)
    message = str(info.value)
    assert path in message
    assert "CREWPOINT_DESERIALIZE_CALLBACKS=1" in message
    assert "from_checkpoint=" in message and "--app" in message

    monkeypatch.setenv(TRUST_ENV, "true")  # only exactly "1" trusts
    with pytest.raises(ValueError, match="CREWPOINT_DESERIALIZE_CALLBACKS=1"):
        load_callable(path)


def test_load_callable_imports_with_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")
    path = callable_path(module_callback)
    assert path is not None
    assert load_callable(path) is module_callback
    assert load_callable("os.path.join") is os.path.join


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("no_such_module_xyz.func", "no_such_module_xyz"),
        ("os.path.no_such_function", "no_such_function"),
        ("not a path", "not a path"),
        ("os.sep", "not a callable"),
    ],
)
def test_load_callable_names_a_path_it_cannot_use(monkeypatch: pytest.MonkeyPatch, path: str, fragment: str) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")
    with pytest.raises(ValueError, match=fragment):
        load_callable(path)


# -- running tools ------------------------------------------------------------------------------------------


def test_tool_decorator_builds_a_tool_from_the_function() -> None:
    assert isinstance(count_words, FunctionTool)
    assert count_words.name == "Word counter"
    assert count_words.description == "Count the words in a text."
    assert shout.name == "shout"
    assert count_words.args_spec == {"text": "str"}
    assert "Tool Name: Word counter" in count_words.describe()
    assert count_words("one two") == 2  # still callable as the plain function


def test_tool_without_docstring_is_refused() -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ValueError, match="docstring"):
        tool("Nothing")(undocumented)


def test_run_returns_text_and_emits_started_and_finished(seen: list[BaseEvent]) -> None:
    out = count_words.run(agent_id="a1", task_id="t1", text="the quick brown fox")
    assert out == "4"
    started, finished = seen
    assert isinstance(started, ToolUsageStartedEvent)
    assert started.tool_name == "Word counter"
    assert started.tool_args == {"text": "the quick brown fox"}
    assert (started.agent_id, started.task_id) == ("a1", "t1")
    assert isinstance(finished, ToolUsageFinishedEvent)
    assert finished.output == "4"
    assert finished.from_cache is False


def test_subclass_tool_runs_its_run_method() -> None:
    greeter = GreeterTool(greeting="Hi")
    assert greeter.run(who="Ada") == "Hi, Ada!"
    assert greeter.args_spec == {"who": "str"}


def test_identical_call_is_answered_from_cache(seen: list[BaseEvent]) -> None:
    assert count_words.run(text="a b c") == "3"
    assert count_words.run(text="a b c") == "3"
    assert CALLS["count_words"] == 1
    finished = [e for e in seen if isinstance(e, ToolUsageFinishedEvent)]
    assert [e.from_cache for e in finished] == [False, True]
    assert finished[1].output == "3"

    count_words.run(text="a b c d")  # different arguments run again
    assert CALLS["count_words"] == 2


def test_cache_key_ignores_argument_order() -> None:
    assert divide.run(a=6, b=3) == "2.0"
    assert divide.run(b=3, a=6) == "2.0"
    assert CALLS["divide"] == 1


def test_clear_cache_runs_the_tool_again() -> None:
    count_words.run(text="x y")
    count_words.clear_cache()
    count_words.run(text="x y")
    assert CALLS["count_words"] == 2


def test_cache_function_decides_what_is_cached(seen: list[BaseEvent]) -> None:
    count_words_even_cached.run(text="one two three")  # 3: not cached
    count_words_even_cached.run(text="one two three")
    assert CALLS["count_words_even_cached"] == 2
    count_words_even_cached.run(text="one two")  # 2: cached
    count_words_even_cached.run(text="one two")
    assert CALLS["count_words_even_cached"] == 3
    finished = [e for e in seen if isinstance(e, ToolUsageFinishedEvent)]
    assert [e.from_cache for e in finished] == [False, False, False, True]


def test_cache_function_false_never_caches() -> None:
    def never(args: dict[str, Any], result: Any) -> bool:
        return False

    with pytest.warns(UserWarning, match="callback cannot be saved in a checkpoint"):
        t = GreeterTool(cache_function=never)
    t.run(who="Bo")
    t.run(who="Bo")
    assert CALLS["greeter"] == 2
    assert t.cache_size == 0


def test_tool_error_comes_back_as_text_and_event(seen: list[BaseEvent]) -> None:
    out = divide.run(a=1, b=0)
    assert out.startswith("Error: ")
    assert "ZeroDivisionError" in out
    error = seen[-1]
    assert isinstance(error, ToolUsageErrorEvent)
    assert error.tool_name == "Divider"
    assert error.error is not None and "division by zero" in error.error
    assert not any(isinstance(e, ToolUsageFinishedEvent) for e in seen)
    divide.run(a=1, b=0)  # failures are never cached
    assert CALLS["divide"] == 2


def test_wrong_arguments_are_an_error_string_not_an_exception() -> None:
    out = count_words.run(txt="oops")
    assert out.startswith("Error: ")
    assert "txt" in out


def test_structured_results_become_json_text() -> None:
    @tool("Pair")
    def pair(x: int) -> dict[str, int]:
        """Return x and its double."""
        return {"x": x, "double": 2 * x}

    assert json.loads(pair.run(x=4)) == {"x": 4, "double": 8}


async def test_async_tool_functions_run_from_sync_and_async_code() -> None:
    @tool("Async echo")
    async def echo(text: str) -> str:
        """Echo the text after yielding to the loop."""
        await asyncio.sleep(0)
        return f"echo {text}"

    assert echo.run(text="a") == "echo a"  # run() from inside a running loop
    assert await echo.arun(text="b") == "echo b"
    assert await count_words.arun(text="one two three") == "3"


def test_unsavable_cache_function_warns_at_construction() -> None:
    with pytest.warns(UserWarning, match="tool 'Greeter' cache_function callback cannot be saved"):
        GreeterTool(cache_function=lambda args, result: True)
    with pytest.warns(UserWarning, match="callback cannot be saved in a checkpoint"):

        @tool("Lambda cached", cache_function=lambda args, result: True)
        def lambda_cached(x: int) -> int:
            """Return x."""
            return x


# -- checkpoint state ---------------------------------------------------------------------------------------


def _round_trip(state: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(state))
    return loaded


def test_subclass_tool_state_round_trip(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")
    original = GreeterTool(greeting="Ahoy", cache_function=cache_even)
    state = _round_trip(original.to_state())
    assert state["path"] == f"{__name__}.GreeterTool"
    assert state["fields"] == {"greeting": "Ahoy"}
    restored = tool_from_state(state)
    assert isinstance(restored, GreeterTool)
    assert restored.greeting == "Ahoy"
    assert restored.cache_function is cache_even
    assert restored.run(who="Cy") == "Ahoy, Cy!"


def test_a_tool_the_program_defines_comes_back_without_trust(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(TRUST_ENV, raising=False)
    restored = tool_from_state(_round_trip(count_words.to_state()))
    assert isinstance(restored, FunctionTool) and restored.func is count_words.func
    # a plain function is never taken for a tool, even one the program (or crewpoint) defines
    for path in (f"{__name__}.module_callback", "crewpoint.serialize.import_path", "shutil.rmtree"):
        with pytest.raises(ValueError, match="CREWPOINT_DESERIALIZE_CALLBACKS=1"):
            tool_from_state({**_round_trip(count_words.to_state()), "path": path})


def test_function_tool_restores_in_a_fresh_process() -> None:
    state = _round_trip(count_words_even_cached.to_state())
    assert state["kind"] == "function"
    assert state["cache_function"] == f"{__name__}.cache_even"
    script = (
        "import json, sys\n"
        "from crewpoint.tools import tool_from_state\n"
        "t = tool_from_state(json.loads(sys.argv[1]))\n"
        "outs = [t.run(text='a b'), t.run(text='a b')]\n"
        "print(json.dumps({'name': t.name, 'description': t.description, 'outs': outs,\n"
        "                  'cached': t.cache_size}))\n"
    )
    env = {**os.environ, TRUST_ENV: "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    proc = subprocess.run(
        [sys.executable, "-c", script, json.dumps(state)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {
        "name": "Even word counter",
        "description": "Count words; only even counts are cached.",
        "outs": ["2", "2"],
        "cached": 1,
    }

    env.pop(TRUST_ENV)
    refused = subprocess.run(
        [sys.executable, "-c", script, json.dumps(state)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode != 0
    assert "CREWPOINT_DESERIALIZE_CALLBACKS=1" in refused.stderr


def test_unsavable_cache_function_comes_back_caching_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")
    with pytest.warns(UserWarning):
        original = GreeterTool(cache_function=lambda args, result: True)
    state = _round_trip(original.to_state())
    assert state["cache_function"] is None
    assert state["cache_function_unsavable"] is True

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # restoring does not warn again
        restored = tool_from_state(state)
    assert restored.cache_function is cache_nothing
    restored.run(who="Di")
    restored.run(who="Di")
    assert CALLS["greeter"] == 2
    assert restored.cache_size == 0

    again = tool_from_state(_round_trip(restored.to_state()))  # stays "caches nothing" across saves
    assert again.cache_function is cache_nothing


def test_tool_without_module_path_cannot_be_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")

    @tool("Local")
    def local(x: int) -> int:
        """Return x."""
        return x

    state = _round_trip(local.to_state())
    assert state["path"] is None
    with pytest.raises(ValueError, match=r"not defined at module level.*--app"):
        tool_from_state(state)


def test_a_path_that_is_not_a_tool_class_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")
    state = _round_trip(GreeterTool().to_state())
    state["path"] = f"{__name__}.Notifier"
    with pytest.raises(ValueError, match="not a BaseTool"):
        tool_from_state(state)
