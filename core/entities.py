"""The kinds of entity crewpoint checkpoints (crew, flow, agent): one protocol, one registry, one shared base.

- :class:`Entity` declares everything Crew, Flow and Agent share, so ``mypy --strict`` checks each of them
  against all of it (each class module asserts ``_: type[Entity] = Crew``).
- :data:`ENTITY_KINDS` maps a kind (the ``entity_kind`` a checkpoint records) to its class and to what people
  are shown about it: the word for its units of work and how its progress reads. Code that treats kinds
  differently asks :func:`kind_of` instead of comparing kind names (``tests/architecture/test_entity_registry.py`` scans
  for such comparisons).
- :class:`CheckpointedEntity` writes what every kind shares once: the classmethods (``from_checkpoint``,
  ``afrom_checkpoint``, ``fork``), ``runtime_state`` and the run's checkpoint settings; :func:`in_thread` makes a
  kind's ``akickoff`` from its ``kickoff``.

To add a kind: write its class on :class:`CheckpointedEntity` with ``KIND``, and add its :class:`EntityKind`
below. This module is cheap to import (no pydantic, no textual): the headless ``list`` and the app's tree use it,
and a kind's class is imported only when asked for.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, ParamSpec, Protocol, Self, TypeVar, cast

from crewpoint.providers.base import CheckpointError

if TYPE_CHECKING:
    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.events.base import BaseEvent
    from crewpoint.runtime import RuntimeState


class Entity(Protocol):
    """What a checkpointable root (crew, flow, agent) provides: running, its checkpoint state, binding a
    checkpoint to it, and the resume-and-fork interface the CLI and the app use for every kind alike."""

    KIND: ClassVar[str]
    id: str
    checkpoint: CheckpointConfig | bool | None

    # -- running
    def kickoff(self, inputs: Any = None, /, *, from_checkpoint: CheckpointConfig | str | Path | None = None) -> Any:
        """Run (``inputs``: a crew's or flow's inputs, an agent's messages); ``from_checkpoint`` binds first."""
        ...

    async def akickoff(
        self, inputs: Any = None, /, *, from_checkpoint: CheckpointConfig | str | Path | None = None
    ) -> Any: ...

    def resume(self) -> Any:
        """Continue the run a checkpoint was bound or rebuilt into, with the edits applied."""
        ...

    # -- what a checkpoint records
    @property
    def entity_kind(self) -> str: ...

    @property
    def entity_name(self) -> str: ...

    def to_state(self) -> dict[str, Any]:
        """The entity's state for a checkpoint body: only fields the body's declaration names
        (:mod:`crewpoint.checkpoint.schema`)."""
        ...

    @classmethod
    def from_state(cls, data: Mapping[str, Any]) -> Self:
        """Rebuild from the checked state ``load_body`` hands on: every declared field is there, its default filled."""
        ...

    def progress(self) -> tuple[int, int]:
        """Units of work done and in all (see :attr:`EntityKind.unit`)."""
        ...

    def checkpoint_config_for(self, event: BaseEvent) -> CheckpointConfig | None: ...

    # -- binding a checkpoint to a live entity
    def shape_mismatch(self, data: Mapping[str, Any]) -> str | None: ...

    def bind_state(self, data: Mapping[str, Any]) -> None:
        """Take a checkpoint's checked state (as :meth:`from_state` does) onto this live entity."""
        ...

    def attach_runtime(self, runtime: RuntimeState, inputs: dict[str, Any]) -> None: ...

    @property
    def runtime_state(self) -> RuntimeState | None: ...

    # -- resuming and forking
    @classmethod
    def check_edits(
        cls, data: Mapping[str, Any], inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None
    ) -> None: ...

    def apply_edits(self, inputs: Mapping[str, Any] | None, outputs: Mapping[int, str] | None) -> None: ...

    def rerun(self) -> list[int]: ...

    @classmethod
    def planning_copy(cls, data: Mapping[str, Any], inputs: Mapping[str, Any]) -> Self | None: ...

    @classmethod
    def from_checkpoint(cls, config: CheckpointConfig | str | Path) -> Self: ...

    @classmethod
    async def afrom_checkpoint(cls, config: CheckpointConfig | str | Path) -> Self: ...

    @classmethod
    def fork(cls, config: CheckpointConfig | str | Path, branch: str | None = None) -> Self: ...


_P = ParamSpec("_P")
_R = TypeVar("_R")


def in_thread(method: Callable[_P, _R]) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """The async twin of ``method`` (``akickoff = in_thread(kickoff)``): the same parameters, the same call run in a
    worker thread, so an event loop goes on while a run's model calls block."""

    @functools.wraps(method)
    async def twin(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        import asyncio

        return await asyncio.to_thread(method, *args, **kwargs)

    twin.__name__ = "a" + method.__name__
    twin.__qualname__ = twin.__qualname__.removesuffix(method.__name__) + twin.__name__
    return twin


class CheckpointedEntity:
    """The part of :class:`Entity` that is the same for every kind, written once. A subclass sets ``KIND``."""

    KIND: ClassVar[str]
    if TYPE_CHECKING:
        checkpoint: CheckpointConfig | bool | None
        _runtime: RuntimeState | None

    @property
    def entity_kind(self) -> str:
        return self.KIND

    @property
    def runtime_state(self) -> RuntimeState | None:
        """The run this entity is in: None before its first kickoff, and once restored until it runs again."""
        return self._runtime

    def checkpoint_config_for(self, event: BaseEvent) -> CheckpointConfig | None:
        """The checkpoint settings of the run (before it runs, the entity's own); a crew's tasks and agents may
        set their own."""
        # lazy: the settings load pydantic, which this module's readers (list, the app's tree) never need
        from crewpoint.checkpoint.config import resolve

        return self._runtime.config if self._runtime is not None else resolve(self.checkpoint)

    @classmethod
    def from_checkpoint(cls, config: CheckpointConfig | str | Path) -> Self:
        """Rebuild the entity saved in a checkpoint (``CheckpointConfig(restore_from=...)``, a path, ``db#id`` or
        an id), as this class: ``kickoff()`` then continues its run, skipping the work already done."""
        return cls._restored(config, None)

    @classmethod
    async def afrom_checkpoint(cls, config: CheckpointConfig | str | Path) -> Self:
        import asyncio

        return await asyncio.to_thread(cls.from_checkpoint, config)

    @classmethod
    def fork(cls, config: CheckpointConfig | str | Path, branch: str | None = None) -> Self:
        """Restore a checkpoint onto a new branch (auto-named when ``branch`` is omitted)."""
        return cls._restored(config, branch or "")

    @classmethod
    def _restored(cls, config: CheckpointConfig | str | Path, fork_branch: str | None) -> Self:
        # lazy: crewpoint.checkpoint.restore_entities imports this module back (cycle)
        from crewpoint.checkpoint.restore_entities import restore

        entity = restore(config, cls.KIND, fork_branch=fork_branch, entity_cls=cast("type[Entity]", cls))
        if not isinstance(entity, cls):  # build_entity rebuilds as ``cls`` itself, so this never happens
            raise TypeError(f"{cls.__name__}.from_checkpoint rebuilt {type(entity).__name__}, not {cls.__name__}")
        return entity

    def _bind_checkpoint(self, ref: CheckpointConfig | str | Path) -> None:
        """``kickoff(from_checkpoint=...)``: apply the checkpoint's state to this object, which keeps its code."""
        # lazy: crewpoint.checkpoint.restore_entities imports this module back (cycle)
        from crewpoint.checkpoint.restore_entities import restore

        restore(ref, self.KIND, fork_branch=None, target=cast("Entity", self))


@dataclass(frozen=True)
class EntityKind:
    """One kind of entity: its class and how people are shown its work."""

    kind: str
    unit: str
    """What one unit of its work is called wherever progress is shown (``2/4 tasks``, ``3 steps``)."""
    units: str
    load: Callable[[], type[Entity]] | None = None
    """Imports and returns the kind's class (None for a kind crewpoint has no class for)."""
    has_tasks: bool = False
    """Its units are tasks (with agents, inputs, outputs a fork can edit, each re-run only when an edit reaches
    it); a checkpoint of another kind holds no task outputs to edit."""
    has_state: bool = False
    """It keeps a state of its own and the output of each step run (a flow's ``state`` and method outputs)."""
    open_ended: bool = False
    """How many of its units run is decided as it runs (a flow's routers): its progress reads as a count of
    units run, not ``done/total``."""
    named_by_class: bool = False
    """A program names it by its class (``--app app.py:MyFlow``), and a rebuild needs the program's class."""

    def noun(self, n: int) -> str:
        """The word for ``n`` units: ``task`` for one, ``tasks`` for any other number."""
        return self.unit if n == 1 else self.units

    def count(self, n: int) -> str:
        """``1 task``, ``3 steps``."""
        return f"{n} {self.noun(n)}"

    def progress(self, done: int, total: int) -> str:
        """A checkpoint's progress as people read it: ``2/4`` tasks of a crew; a flow's units run so far,
        ``step 3``, since its routers decide how many run ("" when nothing is counted)."""
        if not total:
            return ""
        return f"{self.unit} {done}" if self.open_ended else f"{done}/{total}"

    @property
    def cls(self) -> type[Entity]:
        if self.load is None:
            raise CheckpointError(f"unknown entity kind {self.kind!r}")
        return self.load()


def _crew() -> type[Entity]:
    # lazy: crewpoint.crew imports this module back (cycle)
    from crewpoint.crew import Crew

    return Crew


def _flow() -> type[Entity]:
    # lazy: crewpoint.flow imports this module back (cycle)
    from crewpoint.flow import Flow

    return Flow


def _agent() -> type[Entity]:
    # lazy: crewpoint.agent imports this module back (cycle)
    from crewpoint.agent import Agent

    return Agent


ENTITY_KINDS: Mapping[str, EntityKind] = {
    entry.kind: entry
    for entry in (
        EntityKind("crew", "task", "tasks", _crew, has_tasks=True),
        EntityKind("flow", "step", "steps", _flow, has_state=True, open_ended=True, named_by_class=True),
        EntityKind("agent", "kickoff", "kickoffs", _agent),
    )
}
"""Every kind crewpoint checkpoints, by the ``entity_kind`` its checkpoints record."""


def kind_of(kind: str) -> EntityKind:
    """The registry's entry for ``kind``; a kind it does not know (a damaged record, another tool's) reads as
    plain steps and has no class."""
    found = ENTITY_KINDS.get(kind)
    return found if found is not None else EntityKind(kind, "step", "steps")


def entity_class(kind: str) -> type[Entity]:
    """crewpoint's class for an entity kind; each has the same resume and fork interface (:class:`Entity`).
    An unknown kind raises :class:`~crewpoint.providers.base.CheckpointError`."""
    return kind_of(kind).cls
