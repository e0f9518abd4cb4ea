"""Tools agents call: ``BaseTool`` subclasses and ``@tool`` functions, with a per-tool result cache.

A tool run never raises into the agent: a failure comes back as an ``"Error: ..."`` string so the agent can read it
and go on. Arguments the tool does not take are refused before it runs (``tool_validate_input_error``); a tool that
raises emits ``tool_execution_error`` and then ``tool_usage_error``, which ends its use.

In a checkpoint a tool is saved by reference: the dotted path of its class (``BaseTool`` subclasses) or of
its function (``@tool`` tools), plus its name, description, plain fields and its ``cache_function``'s path.
Rebuilding follows the trust rule of :mod:`crewpoint.serialize`. A
``cache_function`` that could not be saved (a lambda, a closure, ...) comes back as :func:`cache_nothing`.
"""

from __future__ import annotations

import inspect
import json
import logging
import sys
import threading
from collections.abc import Callable
from typing import Annotated, Any, overload

from pydantic import BaseModel, ConfigDict, PrivateAttr, model_validator

from crewpoint.events import (
    ToolExecutionErrorEvent,
    ToolUsageErrorEvent,
    ToolUsageFinishedEvent,
    ToolUsageStartedEvent,
    ToolValidateInputErrorEvent,
    event_bus,
)
from crewpoint.serialize import (
    CheckpointState,
    callable_path,
    check_savable,
    class_path,
    defined,
    load_callable,
    load_class,
    rebuild,
)

log = logging.getLogger("crewpoint.tools")

CacheFunction = Callable[[dict[str, Any], Any], bool]


def cache_nothing(args: dict[str, Any], result: Any) -> bool:
    """A ``cache_function`` that never lets a result be cached (what an unsavable one restores as)."""
    return False


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON data (anything unknown becomes its ``str``)."""
    return json.loads(json.dumps(value, default=str))


def _cache_key(args: dict[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), default=repr)


def _as_text(result: Any) -> str:
    if isinstance(result, str):
        return result
    if isinstance(result, dict | list | tuple):
        try:
            return json.dumps(result, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            pass
    return str(result)


def _resolve(result: Any) -> Any:
    """Await ``result`` when a tool returned an awaitable (an ``async def`` tool), from sync code."""
    if not inspect.isawaitable(result):
        return result
    import asyncio

    async def wait() -> Any:
        return await result

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    box: dict[str, Any] = {}

    def runner() -> None:
        try:
            box["value"] = asyncio.run(wait())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=runner, name="crewpoint-tool")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box.get("value")


def _signature_spec(fn: Callable[..., Any]) -> dict[str, str]:
    spec: dict[str, str] = {}
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return spec
    for p in params:
        if p.name == "self" or p.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            text = "Any"
        elif isinstance(ann, str):
            text = ann
        else:
            text = getattr(ann, "__name__", None) or str(ann)
        spec[p.name] = text
    return spec


class BaseTool(BaseModel):
    """A tool: subclass, set ``name`` and ``description`` and override ``_run``.

    ``cache_function(args, result)`` decides whether a result may be cached; ``None`` caches every result.
    Identical arguments are then answered from the tool's cache without running it again.

    Rebuilt from a checkpoint without trust, a tool takes its name and description from it, and only the other
    fields its class declares ``Annotated[..., CheckpointState]``; every other field keeps its class default.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    name: Annotated[str, CheckpointState]
    description: Annotated[str, CheckpointState]
    cache_function: CacheFunction | None = None

    _cache: dict[str, str] = PrivateAttr(default_factory=dict)
    _lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _check_cache_function(self) -> BaseTool:
        check_savable(self.cache_function, f"tool {self.name!r} cache_function")
        return self

    # -- to override --------------------------------------------------------------------------------
    def _run(self, **kwargs: Any) -> Any:
        raise NotImplementedError(f"tool {self.name!r} does not implement _run()")

    # -- description for prompts --------------------------------------------------------------------
    @property
    def args_spec(self) -> dict[str, str]:
        """Argument names and their type names, read from ``_run``'s signature."""
        return _signature_spec(self._run)

    def describe(self) -> str:
        """Three lines an agent's prompt can show: name, arguments and description."""
        args = ", ".join(f"{k}: {v}" for k, v in self.args_spec.items())
        return f"Tool Name: {self.name}\nTool Arguments: {{{args}}}\nTool Description: {self.description}"

    # -- running ------------------------------------------------------------------------------------
    def run(
        self,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
        **kwargs: Any,
    ) -> str:
        """Run the tool with ``kwargs`` and return its output as text; never raises for a tool failure.

        ``agent_id``, ``task_id`` and ``agent_role`` only label the tool events.
        """
        ids: dict[str, Any] = {"agent_id": agent_id, "task_id": task_id, "agent_role": agent_role}
        invalid = self._invalid_args(kwargs)
        if invalid is not None:
            event_bus.emit(
                self,
                ToolValidateInputErrorEvent(tool_name=self.name, tool_args=_jsonable(kwargs), error=invalid, **ids),
            )
            return f"Error: tool {self.name!r} was given bad arguments: {invalid}"
        event_bus.emit(self, ToolUsageStartedEvent(tool_name=self.name, tool_args=_jsonable(kwargs), **ids))
        key = _cache_key(kwargs)
        with self._lock:
            cached = self._cache.get(key)
        if cached is not None:
            event_bus.emit(self, ToolUsageFinishedEvent(tool_name=self.name, output=cached, from_cache=True, **ids))
            return cached
        try:
            result = _resolve(self._run(**kwargs))
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
            event_bus.emit(self, ToolExecutionErrorEvent(tool_name=self.name, error=error, **ids))
            event_bus.emit(self, ToolUsageErrorEvent(tool_name=self.name, error=error, **ids))
            return f"Error: tool {self.name!r} failed: {error}"
        output = _as_text(result)
        if self._may_cache(kwargs, result):
            with self._lock:
                self._cache[key] = output
        event_bus.emit(self, ToolUsageFinishedEvent(tool_name=self.name, output=output, from_cache=False, **ids))
        return output

    def _callable(self) -> Callable[..., Any]:
        """What :meth:`run` calls with the arguments (its signature says which it takes)."""
        return self._run

    def _invalid_args(self, kwargs: dict[str, Any]) -> str | None:
        """Why the tool cannot take ``kwargs`` (a missing or unknown argument), or None."""
        try:
            signature = inspect.signature(self._callable())
        except (TypeError, ValueError):
            return None
        params = signature.parameters
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            unknown = [repr(name) for name in kwargs if name not in params]
            if unknown:
                return f"unexpected argument {', '.join(unknown)}; it takes: {', '.join(params) or 'nothing'}"
        try:
            signature.bind(**kwargs)
        except TypeError as exc:
            return str(exc)
        return None

    async def arun(
        self,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
        **kwargs: Any,
    ) -> str:
        """The async twin of :meth:`run` (the tool runs in a worker thread)."""
        import asyncio

        return await asyncio.to_thread(
            lambda: self.run(agent_id=agent_id, task_id=task_id, agent_role=agent_role, **kwargs)
        )

    def _may_cache(self, args: dict[str, Any], result: Any) -> bool:
        if self.cache_function is None:
            return True
        try:
            return bool(self.cache_function(args, result))
        except Exception:
            log.exception("cache_function of tool %r failed; the result is not cached", self.name)
            return False

    def clear_cache(self) -> None:
        """Forget every cached result."""
        with self._lock:
            self._cache.clear()

    @property
    def cache_size(self) -> int:
        """How many results are cached."""
        with self._lock:
            return len(self._cache)

    # -- checkpoint state ---------------------------------------------------------------------------
    def _reference(self) -> tuple[str, str | None]:
        """``(kind, dotted path or None)`` naming the class that rebuilds this tool."""
        cls = type(self)
        module = sys.modules.get(cls.__module__)
        named = "." not in cls.__qualname__ and module is not None and getattr(module, cls.__qualname__, None) is cls
        return "class", class_path(cls) if named else None

    def _fields_state(self) -> tuple[dict[str, Any], list[str]]:
        fields: dict[str, Any] = {}
        unsaved: list[str] = []
        for field in type(self).model_fields:
            if field in {"name", "description", "cache_function"}:
                continue
            value = getattr(self, field)
            try:
                fields[field] = json.loads(json.dumps(self.model_dump(mode="json", include={field})[field]))
            except Exception:
                unsaved.append(field)
                log.debug("tool %r field %r (%r) is not JSON data and is not saved", self.name, field, value)
        return fields, unsaved

    def to_state(self) -> dict[str, Any]:
        """The tool as JSON data for a checkpoint (see :func:`tool_from_state`)."""
        kind, path = self._reference()
        fn = self.cache_function
        fn_path = None if fn is None or fn is cache_nothing else callable_path(fn)
        fields, unsaved = self._fields_state()
        state: dict[str, Any] = {
            "kind": kind,
            "path": path,
            "name": self.name,
            "description": self.description,
            "cache_function": fn_path,
            "cache_function_unsavable": fn is not None and fn_path is None,
            "fields": fields,
        }
        if unsaved:
            state["unsaved_fields"] = unsaved
        return state


class FunctionTool(BaseTool):
    """A tool made from a function by :func:`tool`; calling it calls the function directly."""

    func: Callable[..., Any]

    def _run(self, **kwargs: Any) -> Any:
        return self.func(**kwargs)

    def _callable(self) -> Callable[..., Any]:
        return self.func

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.func(*args, **kwargs)

    @property
    def args_spec(self) -> dict[str, str]:
        return _signature_spec(self.func)

    def _reference(self) -> tuple[str, str | None]:
        return "function", callable_path(self.func)

    def _fields_state(self) -> tuple[dict[str, Any], list[str]]:
        return {}, []


def _tool_from_function(
    func: Callable[..., Any], name: str | None, cache_function: CacheFunction | None
) -> FunctionTool:
    doc = inspect.getdoc(func)
    label = name or getattr(func, "__name__", "tool")
    if not doc:
        raise ValueError(f"tool function {label!r} needs a docstring: it becomes the tool's description")
    return FunctionTool(name=label, description=doc, func=func, cache_function=cache_function)


@overload
def tool(name_or_func: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    name_or_func: str | None = None, /, *, cache_function: CacheFunction | None = None
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    name_or_func: str | Callable[..., Any] | None = None, /, *, cache_function: CacheFunction | None = None
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function with a docstring into a tool.

    Use as ``@tool``, ``@tool("Name")`` or ``@tool("Name", cache_function=f)``. The docstring becomes the
    description; the name defaults to the function's name.
    """
    if callable(name_or_func):
        return _tool_from_function(name_or_func, None, cache_function)
    name = name_or_func

    def decorator(func: Callable[..., Any]) -> FunctionTool:
        return _tool_from_function(func, name, cache_function)

    return decorator


def _restore_cache_function(state: dict[str, Any]) -> CacheFunction | None:
    path = state.get("cache_function")
    if path:
        return load_callable(path, f"cache_function of tool {state.get('name')!r}")
    if state.get("cache_function_unsavable"):
        return cache_nothing
    return None


def _program_tool(path: str) -> FunctionTool | None:
    """The ``@tool`` the running program defines at ``path``, if any (nothing is imported)."""
    found = defined(path)
    return found if isinstance(found, FunctionTool) else None


def tool_from_state(state: dict[str, Any]) -> BaseTool:
    """Rebuild a tool saved by :meth:`BaseTool.to_state`.

    A ``@tool`` comes back when the running program defines it (``__main__.name`` included); a tool class when the
    program defines it and it is a ``BaseTool``, with only its declared checkpoint state read back (other fields
    keep their class defaults). Anything else is imported only for a trusted checkpoint
    (``CREWPOINT_DESERIALIZE_CALLBACKS=1``); a plain function is never taken for a tool otherwise. Raises
    ValueError saying what to do when the tool cannot come back.
    """
    name = str(state.get("name", "tool"))
    path = state.get("path")
    if not path or not isinstance(path, str):
        what = "function" if state.get("kind") == "function" else "class"
        raise ValueError(
            f"tool {name!r} was not saved in this checkpoint (its {what} is not defined at module level); "
            "resume your own program so its tools are used: crew.kickoff(from_checkpoint=...) or "
            "`crewpoint checkpoint resume ID --app FILE.py:crew`"
        )
    cache_function = _restore_cache_function(state)
    description = str(state.get("description", ""))
    if state.get("kind") == "function":
        program_tool = _program_tool(path)
        if program_tool is not None:
            func = program_tool.func
        else:
            obj = load_callable(path, f"tool {name!r}")
            func = obj.func if isinstance(obj, FunctionTool) else obj
        return FunctionTool(name=name, description=description, func=func, cache_function=cache_function)
    cls = load_class(path, BaseTool, f"tool {name!r} class")
    if cls is FunctionTool:
        raise ValueError(f"tool {name!r}: a function tool must be saved by its function, not as {path!r}")
    saved = state.get("fields") if isinstance(state.get("fields"), dict) else {}
    assert isinstance(saved, dict)
    return rebuild(
        cls,
        {**saved, "name": name, "description": description},
        f"tool {name!r} class",
        given={"cache_function": cache_function},
    )


__all__ = ["BaseTool", "CacheFunction", "FunctionTool", "cache_nothing", "tool", "tool_from_state"]
