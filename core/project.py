"""``crewpoint.project``: CrewAI-style projects, a ``@CrewBase`` class of ``@agent``, ``@task`` and ``@crew`` methods.

::

    @CrewBase
    class MyCrew:
        agents_config = "config/agents.yaml"   # the default, relative to this file
        tasks_config = "config/tasks.yaml"

        @agent
        def researcher(self) -> Agent:
            return Agent(config=self.agents_config["researcher"])

        @task
        def research_task(self) -> Task:
            return Task(config=self.tasks_config["research_task"])

        @crew
        def crew(self) -> Crew:
            return Crew(agents=self.agents, tasks=self.tasks)

    MyCrew().crew().kickoff(inputs={"topic": "tides"})

The YAML files are loaded with ``yaml.safe_load`` on first use. In a task's entry ``agent`` names an ``@agent``
method, ``context`` ``@task`` methods and ``tools`` ``@tool`` methods; in an agent's entry ``llm`` may name an
``@llm`` method and ``tools`` ``@tool`` methods. ``@agent``, ``@task``, ``@tool`` and ``@llm`` methods are made once
per instance, so ``self.agents`` and ``self.tasks`` list the same objects, in the order the class declares them.

``@before_kickoff`` methods get a run's inputs and may return changed ones; ``@after_kickoff`` methods get its result
and may return another. They run whenever the crew runs in the user's program, a resume, fork or answer through
``--app`` included. A checkpoint records only their names (code comes from the program, never from a checkpoint):
a crew rebuilt from a checkpoint alone does not run them and says so in one warning line naming them.

This module imports nothing heavy: PyYAML is imported when a file is first read.
"""

from __future__ import annotations

import functools
import inspect
import os
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from crewpoint.project_yaml import Refused, bounded_load, read_bounded

if TYPE_CHECKING:
    from crewpoint.crew import Crew

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

_ROLE = "__crewpoint_role__"
"""Set on each decorated method: ``agent``, ``task``, ``tool``, ``llm``, ``crew``, ``before_kickoff`` or
``after_kickoff``."""
_PROJECT = "__crewpoint_project__"
"""Set on a ``@CrewBase`` class."""
_MADE = "_crewpoint_made"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ProjectError(ValueError):
    """A project's configuration is wrong: one line naming the file and the key."""


class ConfigKeyError(ProjectError, KeyError):
    """A key the YAML file does not have (a ``KeyError`` too, as a dict's missing key is)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


# -- the method decorators ---------------------------------------------------------------------------------------


class _Building:
    """Marks a method being made: asking for it again while it is made is a cycle."""


def _made_once(role: str, post: Callable[[Any, str], None] | None = None) -> Callable[[F], F]:
    def decorate(fn: F) -> F:
        name = fn.__name__

        @functools.wraps(fn)
        def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
            if args or kwargs:  # a call with arguments is the user's own business
                return fn(self, *args, **kwargs)
            made: dict[str, Any] = self.__dict__.setdefault(_MADE, {})
            found = made.get(name)
            if isinstance(found, _Building):
                raise ProjectError(f"{type(self).__name__}.{name}() needs itself (a context or agent names it back)")
            if name not in made:
                made[name] = _Building()
                try:
                    value = fn(self)
                except BaseException:
                    made.pop(name, None)
                    raise
                if post is not None:
                    post(value, name)
                made[name] = value
            return made[name]

        setattr(wrapper, _ROLE, role)
        return cast(F, wrapper)

    return decorate


def _name_task(value: Any, name: str) -> None:
    if getattr(value, "name", "") is None:  # a task is known by its method's name, as in CrewAI
        value.name = name


def agent(fn: F) -> F:
    """An ``@agent`` method: made once per instance; listed in ``self.agents``; named by tasks' ``agent:``."""
    return _made_once("agent")(fn)


def task(fn: F) -> F:
    """A ``@task`` method: made once per instance; listed in ``self.tasks``; a task without a name takes the
    method's (the name a checkpoint matches it by)."""
    return _made_once("task", _name_task)(fn)


def tool(fn: F) -> F:
    """A ``@tool`` method: made once per instance; named by ``tools:`` in the YAML files."""
    return _made_once("tool")(fn)


def llm(fn: F) -> F:
    """An ``@llm`` method: made once per instance; named by an agent's ``llm:`` in the YAML file."""
    return _made_once("llm")(fn)


def before_kickoff(fn: F) -> F:
    """Runs as the crew starts a run (a resumed one too): gets the inputs, may return changed inputs."""
    setattr(fn, _ROLE, "before_kickoff")
    return fn


def after_kickoff(fn: F) -> F:
    """Runs when the crew's run finishes: gets the result, may return another."""
    setattr(fn, _ROLE, "after_kickoff")
    return fn


def crew(fn: F) -> F:
    """The ``@crew`` method: the ``Crew`` it returns runs the class's kickoff hooks."""

    @functools.wraps(fn)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        made = fn(self, *args, **kwargs)
        _attach(self, made)
        return made

    setattr(wrapper, _ROLE, "crew")
    return cast(F, wrapper)


def members(cls: type[Any], role: str) -> list[str]:
    """The names of ``cls``'s methods decorated as ``role``, in the order the class (and its bases) declare them."""
    names: list[str] = []
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            if getattr(value, _ROLE, None) == role and name not in names:
                names.append(name)
    return [n for n in names if getattr(getattr(cls, n, None), _ROLE, None) == role]


def _made_list(owner: Any, role: str) -> list[Any]:
    return [getattr(owner, name)() for name in members(type(owner), role)]


# -- kickoff hooks -----------------------------------------------------------------------------------------------


@dataclass
class KickoffHooks:
    """A project crew's ``@before_kickoff`` and ``@after_kickoff`` methods, bound to its instance."""

    owner: str
    before: list[Callable[..., Any]] = field(default_factory=list)
    after: list[Callable[..., Any]] = field(default_factory=list)

    def run_before(self, current: Mapping[str, Any], given: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The inputs after every before hook (``current``: the run's inputs): None when none changed them and
        the kickoff was given none."""
        inputs = dict(given) if given is not None else dict(current)
        for hook in self.before:
            changed = hook(inputs)
            if changed is not None:
                inputs = dict(changed)
        if given is None and inputs == dict(current):
            return None
        return inputs

    def run_after(self, result: Any) -> Any:
        for hook in self.after:
            changed = hook(result)
            if changed is not None:
                result = changed
        return result

    def state(self) -> dict[str, Any]:
        """What a checkpoint records of them: their names alone."""
        return {
            "class": self.owner,
            "before_kickoff": [_hook_name(h) for h in self.before],
            "after_kickoff": [_hook_name(h) for h in self.after],
        }


def _hook_name(hook: Callable[..., Any]) -> str:
    return str(getattr(hook, "__name__", "hook"))


def _attach(owner: Any, made: Any) -> None:
    cls = type(owner)
    hooks = KickoffHooks(
        owner=cls.__name__,
        before=[getattr(owner, n) for n in members(cls, "before_kickoff")],
        after=[getattr(owner, n) for n in members(cls, "after_kickoff")],
    )
    if not hasattr(made, "_hooks"):
        return  # not a crewpoint Crew: the user's own object
    made._hooks = hooks
    if "name" not in made.model_fields_set:
        made.name = cls.__name__
    if cls.__qualname__ == cls.__name__:  # a module-level class: the checkpoint's origin names it
        made._made_in = (cls.__module__, cls.__name__)


def hooks_not_run(saved: Any) -> str | None:
    """The warning for a crew rebuilt from a checkpoint alone whose program has kickoff hooks (``saved``: the
    names its checkpoint recorded), or None. Names that are not identifiers (a damaged body) are left out."""
    if not isinstance(saved, Mapping):
        return None
    parts: list[str] = []
    for key in ("before_kickoff", "after_kickoff"):
        names = saved.get(key)
        listed = [f"{n}()" for n in names if isinstance(n, str) and _NAME.match(n)] if isinstance(names, list) else []
        if listed:
            parts.append(f"{key} hook{'s' if len(listed) > 1 else ''} {', '.join(listed)}")
    if not parts:
        return None
    owner = saved.get("class")
    of = f" of {owner}" if isinstance(owner, str) and _NAME.match(owner) else ""
    return f"not run: {'; '.join(parts)}{of} live in the program, not the checkpoint; pass --app to run them"


def warn_hooks_not_run(saved: Any) -> None:
    from crewpoint.serialize import _caller_stacklevel

    text = hooks_not_run(saved)
    if text is not None:
        warnings.warn(text, UserWarning, stacklevel=_caller_stacklevel())


# -- the YAML files ----------------------------------------------------------------------------------------------


def _shown(path: Path) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith(os.pardir) else relative


def read_yaml(path: Path, what: str) -> dict[str, dict[str, Any]]:
    """A project's YAML file: a mapping of names to mappings of settings (``what``: ``agent`` or ``task``). A file
    that does not exist reads as empty; a file that is not such YAML, or too big or with too many aliases
    (:mod:`crewpoint.project_yaml`), is a one-line :class:`ProjectError` naming it."""
    shown = _shown(path)
    try:
        text = read_bounded(path)
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ProjectError(f"{shown}: cannot be read: {exc}") from None
    except Refused as exc:
        raise ProjectError(f"{shown}: refused: {exc}") from None
    import yaml

    try:
        data = bounded_load(text)
    except Refused as exc:
        raise ProjectError(f"{shown}: refused: {exc}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ProjectError(f"{shown}: not valid YAML{where}: {problem}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ProjectError(f"{shown}: expected {what} names with their settings, not {type(data).__name__}")
    for key, value in data.items():
        if not isinstance(value, dict):
            raise ProjectError(f"{shown}: {what} {key!r}: expected a mapping of settings, not {type(value).__name__}")
    return data


class ProjectConfig(dict[str, dict[str, Any]]):
    """A loaded ``agents_config`` or ``tasks_config``: a dict whose entries, read by key (``[name]`` or ``get``),
    come back with the names in them (``agent:``, ``context:``, ``tools:``, ``llm:``) turned into the objects the
    class's methods make; a key it does not have is a one-line :class:`ConfigKeyError` naming the file."""

    def __init__(self, data: Mapping[str, dict[str, Any]], source: str, what: str, owner: Any, exists: bool) -> None:
        super().__init__(data)
        self.source, self.what, self.owner, self.exists = source, what, owner, exists
        self._resolved: dict[str, dict[str, Any]] = {}

    def __missing__(self, key: str) -> dict[str, Any]:
        if not self.exists:
            raise ConfigKeyError(f"{self.source}: no such file (looking for {self.what} {key!r})")
        known = ", ".join(repr(k) for k in self) or "none"
        raise ConfigKeyError(f"{self.source}: no {self.what} named {key!r} (it has {known})")

    def __getitem__(self, key: str) -> dict[str, Any]:
        if key not in self:
            return self.__missing__(key)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(key, dict(super().__getitem__(key)))
        return self._resolved[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self else default

    def _method(self, key: str, setting: str, role: str, name: Any) -> Any:
        cls = type(self.owner)
        if not isinstance(name, str):
            return name  # already an object
        if name in members(cls, role):
            return getattr(self.owner, name)()
        raise ProjectError(
            f"{self.source}: {self.what} {key!r}: {setting} {name!r} is not an @{role} method of {cls.__name__}"
        )

    def _resolve(self, key: str, entry: dict[str, Any]) -> dict[str, Any]:
        if "tools" in entry:
            tools = entry["tools"] if isinstance(entry["tools"], list) else [entry["tools"]]
            entry["tools"] = [self._method(key, "tool", "tool", t) for t in tools]
        if self.what == "agent":
            model = entry.get("llm")
            if isinstance(model, str) and model in members(type(self.owner), "llm"):
                entry["llm"] = getattr(self.owner, model)()
            return entry
        if "agent" in entry:
            entry["agent"] = self._method(key, "agent", "agent", entry["agent"])
        if "context" in entry:
            context = entry["context"] if isinstance(entry["context"], list) else [entry["context"]]
            entry["context"] = [self._method(key, "context task", "task", t) for t in context]
        return entry


class _ConfigFile:
    """``agents_config`` / ``tasks_config`` on a ``@CrewBase`` class: on the class, the path (or mapping) given; on
    an instance, the file loaded once as a :class:`ProjectConfig`."""

    def __init__(self, attr: str, what: str, value: Any, folder: Path) -> None:
        self.attr, self.what, self.value, self.folder = attr, what, value, folder

    def __get__(self, owner: Any, cls: type[Any] | None = None) -> Any:
        if owner is None:
            return self.value
        key = f"_crewpoint_{self.attr}"
        loaded = owner.__dict__.get(key)
        if loaded is None:
            loaded = self._load(owner, self.value)
            owner.__dict__[key] = loaded
        return loaded

    def __set__(self, owner: Any, value: Any) -> None:
        owner.__dict__[f"_crewpoint_{self.attr}"] = self._load(owner, value)

    def _load(self, owner: Any, value: Any) -> ProjectConfig:
        if isinstance(value, Mapping):
            return ProjectConfig(dict(value), f"{type(owner).__name__}.{self.attr}", self.what, owner, True)
        path = Path(os.fspath(value))
        if not path.is_absolute():
            path = self.folder / path
        return ProjectConfig(read_yaml(path, self.what), _shown(path), self.what, owner, path.exists())


# -- the class decorator -----------------------------------------------------------------------------------------


def CrewBase(cls: type[T]) -> type[T]:  # CrewAI spells it as a class
    """Make ``cls`` a project crew: its YAML files load relative to its source file, ``self.agents`` and
    ``self.tasks`` list its ``@agent`` and ``@task`` methods' objects, and its ``@crew`` method's crew runs its
    kickoff hooks. ``--app module:MyCrew`` runs ``MyCrew().crew()``."""
    try:
        folder = Path(inspect.getfile(cls)).resolve().parent
    except (TypeError, OSError):  # a class typed at the prompt: relative to the working folder
        folder = Path.cwd()
    for attr, what, default in (
        ("agents_config", "agent", "config/agents.yaml"),
        ("tasks_config", "task", "config/tasks.yaml"),
    ):
        value = getattr(cls, attr, default)
        setattr(cls, attr, _ConfigFile(attr, what, value, folder))
    if "agents" not in vars(cls):
        cls.agents = property(lambda self: _made_list(self, "agent"))  # type: ignore[attr-defined]
    if "tasks" not in vars(cls):
        cls.tasks = property(lambda self: _made_list(self, "task"))  # type: ignore[attr-defined]
    setattr(cls, _PROJECT, True)
    return cls


def is_project_class(value: Any) -> bool:
    """Is ``value`` a ``@CrewBase`` class?"""
    return isinstance(value, type) and bool(getattr(value, _PROJECT, False))


def project_crew(project: Any) -> Crew:
    """The crew of a ``@CrewBase`` instance: what its one ``@crew`` method returns."""
    cls = type(project)
    found = members(cls, "crew")
    if len(found) != 1:
        what = ", ".join(found) if found else "none"
        raise ProjectError(f"{cls.__name__} needs exactly one @crew method (found {what})")
    made: Crew = getattr(project, found[0])()
    return made


# -- Agent(config=...) and Task(config=...) -----------------------------------------------------------------------


def fill_from_config(data: Any, fields: Mapping[str, Any], what: str, warn_unknown: bool) -> Any:
    """The keyword arguments of ``Agent(config=...)`` / ``Task(config=...)``: the settings given explicitly, then
    those of ``config`` (a YAML entry) for every field not given. With ``warn_unknown``, settings the class has no
    field for are named in one warning (an agent warns of its own)."""
    if not isinstance(data, dict) or "config" not in data:
        return data
    rest = {k: v for k, v in data.items() if k != "config"}
    config = data["config"]
    if config is None:
        return rest
    if not isinstance(config, Mapping):
        raise ValueError(f"{what}(config=...) takes the settings of a YAML entry (a mapping), not {type(config)}")
    unknown = sorted(str(k) for k in config if k not in fields and k not in rest)
    if warn_unknown and unknown:
        from crewpoint.serialize import _caller_stacklevel

        warnings.warn(
            f"{what} ignores the setting(s) {', '.join(unknown)}: crewpoint does not use them",
            UserWarning,
            stacklevel=_caller_stacklevel(),
        )
        return {**{k: v for k, v in config.items() if k in fields}, **rest}
    return {**config, **rest}
