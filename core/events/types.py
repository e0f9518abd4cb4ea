"""The event catalogue: one pydantic class per event name crewpoint accepts.

The classes are the one source. Each lives in its family's module (``family_task``, ``family_llm``, ...), is named
by a rule from its event name (``llm_call_completed`` -> ``LLMCallCompletedEvent``, ``SIGTERM`` -> ``SigtermEvent``,
see :func:`class_name`) and says its name in a ``type: Literal[...]`` field. Families share a base class
(:class:`LLMEvent`, :class:`ToolEvent`, ...), so a handler can subscribe to a whole family with
``@event_bus.on(LLMEvent)``. Classes whose ``emitted`` is False are accepted everywhere (subscriptions,
``on_events``) but the runtime never emits them, because crewpoint has no such feature (A2A, MCP, skills, ...).

Importing crewpoint builds only the families it uses, so the names (``CheckpointEventType``) and the module of each
class are read from :mod:`crewpoint.events.index`, which ``python -m crewpoint.events`` writes from the
family modules; a test fails until it matches them. To add an event: add its class to its family module, then run
that command.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from crewpoint.events.base import BaseEvent
from crewpoint.events.index import FAMILIES
from crewpoint.events.index import CheckpointEventType as CheckpointEventType

FAMILY_ORDER: tuple[str, ...] = (
    *("task", "crew", "agent", "flow", "llm", "guardrail", "tool", "memory", "knowledge", "reasoning", "mcp"),
    *("observation", "skill", "logging", "a2a", "signals", "checkpoint"),
)
"""Catalogue order of the family modules (``crewpoint.events.family_<name>``): the seeds' order, lifecycle last."""

_ACRONYMS = {"llm": "LLM", "mcp": "MCP", "a2a": "A2A"}

_NAMES: tuple[str, ...] = get_args(CheckpointEventType)
_FAMILY_OF: dict[str, str] = {cls: family for family, classes in FAMILIES.items() for cls in classes}

CLASS_NAMES: tuple[str, ...] = tuple(_FAMILY_OF)
"""Every event class, family bases included, in catalogue order."""

CATALOGUE_NAMES: tuple[str, ...] = tuple(name for name in _NAMES if not name.startswith("checkpoint_"))
"""The names of the checkpointing catalogue (without crewpoint's checkpoint lifecycle events)."""

if TYPE_CHECKING:  # the classes (and the lazily computed set below) for type checkers
    from crewpoint.events.index import *  # noqa: F403

    NEVER_EMITTED: frozenset[str]
    """Names that are accepted (subscriptions, ``on_events``) but that the runtime never emits."""


def class_name(event_name: str) -> str:
    """The naming rule from an event name to its class: words capitalised (LLM, MCP, A2A upper), ``Event`` added."""
    return "".join(_ACRONYMS.get(word, word.capitalize()) for word in event_name.lower().split("_")) + "Event"


def __getattr__(name: str) -> Any:
    if name == "NEVER_EMITTED":
        value: Any = frozenset(event for event, cls in EVENT_TYPES.items() if not cls.emitted)
    elif name in _FAMILY_OF:
        value = getattr(importlib.import_module(f"crewpoint.events.family_{_FAMILY_OF[name]}"), name)
    else:
        raise AttributeError(f"module 'crewpoint.events.types' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *_FAMILY_OF, "NEVER_EMITTED"])


class _EventTypes(Mapping[str, type[BaseEvent]]):
    """Event name -> class; a class is built when first looked up."""

    def __getitem__(self, name: str) -> type[BaseEvent]:
        if name not in _NAME_SET:
            raise KeyError(name)
        cls: type[BaseEvent] = globals().get(class_name(name)) or __getattr__(class_name(name))
        return cls

    def __contains__(self, name: object) -> bool:
        return name in _NAME_SET

    def __iter__(self) -> Iterator[str]:
        return iter(_NAMES)

    def __len__(self) -> int:
        return len(_NAMES)

    def __repr__(self) -> str:
        return f"<{len(_NAMES)} crewpoint event types>"


_NAME_SET = frozenset(_NAMES)

EVENT_TYPES: Mapping[str, type[BaseEvent]] = _EventTypes()
"""Event name -> class, in catalogue order, checkpoint lifecycle events last."""


def event_class(name: str) -> type[BaseEvent]:
    try:
        return EVENT_TYPES[name]
    except KeyError:
        raise ValueError(f"unknown event type {name!r}; see crewpoint.events.EVENT_TYPES") from None


def parse_event(data: Mapping[str, Any]) -> BaseEvent:
    """Rebuild an event from its ``compact()`` dict.

    An unknown ``type`` (a newer version's event, say) gives a plain :class:`BaseEvent` keeping every field.
    Data that does not fit its known class raises ``pydantic.ValidationError`` (a ``ValueError``).
    """
    name = str(data.get("type"))
    cls = EVENT_TYPES[name] if name in _NAME_SET else BaseEvent
    return cls.model_validate(dict(data))


# -- writing the index from the family modules --------------------------------------------------------------


def family_classes(family: str) -> list[type[BaseEvent]]:
    """The event classes a family module defines, in source order: its ``*Event`` subclasses of BaseEvent."""
    module = importlib.import_module(f"crewpoint.events.family_{family}")
    return [
        value
        for key, value in vars(module).items()
        if key.endswith("Event")
        and isinstance(value, type)
        and issubclass(value, BaseEvent)
        and value.__module__ == module.__name__
    ]


def render_index() -> str:
    """The text of ``index.py`` for the family modules as they are; ValueError names a class that breaks a rule."""
    found = {path.stem.removeprefix("family_") for path in Path(__file__).resolve().parent.glob("family_*.py")}
    if found != set(FAMILY_ORDER):
        odd = ", ".join(f"family_{name}" for name in sorted(found ^ set(FAMILY_ORDER)))
        raise ValueError(f"{odd}: every family module, and only those, must be named in types.FAMILY_ORDER")
    families: dict[str, list[str]] = {}
    names: list[str] = []
    for family in FAMILY_ORDER:
        families[family] = []
        for cls in family_classes(family):
            families[family].append(cls.__name__)
            name = cls.model_fields["type"].default
            if name == BaseEvent.model_fields["type"].default:
                continue  # a family base: no name of its own
            if class_name(name) != cls.__name__ or name in names:
                raise ValueError(f"{cls.__name__} (type {name!r}) breaks the naming rule or repeats a name")
            names.append(name)
    return _INDEX_TEMPLATE.format(
        names="".join(f'    "{name}",\n' for name in names),
        families="".join(
            f'    "{family}": (\n' + "".join(f'        "{cls}",\n' for cls in classes) + "    ),\n"
            for family, classes in families.items()
        ),
        imports="".join(f"    from crewpoint.events.family_{f} import *  # noqa: F403\n" for f in sorted(families)),
    )


_INDEX_TEMPLATE = '''\
"""The event catalogue's index, written from the family modules by ``python -m crewpoint.events``.

Do not edit: change the classes in ``family_*.py`` and run that command (a test fails until this file matches).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

CheckpointEventType = Literal[
{names}]
"""Every event name, in catalogue order, checkpoint lifecycle last; ``"*"`` (all events) is accepted separately."""

FAMILIES: dict[str, tuple[str, ...]] = {{
{families}}}
"""Family (module ``crewpoint.events.family_<family>``) -> the event classes it defines, in order."""

if TYPE_CHECKING:  # every event class, for type checkers (at run time a family is built on first use)
{imports}'''


def main(argv: list[str]) -> int:
    """``python -m crewpoint.events`` writes ``index.py``; with ``--check`` it only says whether it is current."""
    # lazy: a module only this command reads
    from crewpoint.generated import write_or_check

    path = Path(__file__).resolve().with_name("index.py")
    try:
        text = render_index()
    except ValueError as error:
        print(f"crewpoint.events: {error}", file=sys.stderr)
        return 2
    return write_or_check(path, text, "python -m crewpoint.events", argv)
