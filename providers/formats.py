"""Checkpoint formats: which tool a record's body, id or store belongs to, and the adapter that answers for it.

crewpoint's own format is run by the engine. Another tool's format is read through its read-only providers (in
this package), translated into crewpoint's typed body, and forked and run by its adapter, which sits above the
schema (:mod:`crewpoint.formats` registers it here by name). The engine, the command line, the app and the
read-only providers ask this registry; none of them compares a format's name or parses another tool's ids.

Importing this module is cheap (no first-party import): an adapter loads on first use, and its own imports
(its fork planner, its runner) load only when one of those is asked for.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from crewpoint.providers.base import BaseProvider, CheckpointMeta

NATIVE = "crewpoint"
"""The format crewpoint writes and its engine runs; a body without a ``format`` is in it."""


@dataclass(frozen=True)
class ForeignFork:
    """What a fork of another tool's checkpoint changes (nothing written): changed inputs, edited outputs and
    the tasks (0-based) the other tool will run."""

    changed_inputs: dict[str, Any]
    edited_outputs: dict[int, str]
    rerun: list[int]


@dataclass(frozen=True)
class ForeignRunRequest:
    """A resume or fork of another tool's checkpoint, as the command line asks its format to run it."""

    store: str
    ref: str
    """The checkpoint (an id, a prefix, or ``store`` itself for its newest)."""
    fork: bool
    branch: str | None
    inputs: dict[str, str]
    outputs: dict[str, str]
    say: Callable[[str], None]
    """Gets notes for people."""
    forked: Callable[[dict[str, str]], None]
    """Gets the fork written (its ``checkpoint_id``, ``branch`` and ``ref``)."""


@dataclass(frozen=True)
class ForeignRun:
    """What resuming or forking another tool's checkpoint did: the other tool's exit code, or None when nothing
    was run (``problem`` says why, e.g. the tool is not installed here)."""

    exit_code: int | None = None
    problem: str | None = None


class Format(Protocol):
    """One checkpoint format: what the rest of crewpoint asks about a record, an id or a store in it."""

    name: str
    """As a body's ``format`` says it."""
    title: str
    """As people read it (``CrewAI``)."""
    foreign: bool
    """Is it another tool's format (read, forked and run by its adapter, never by crewpoint's engine)?"""
    written_not_run: frozenset[str]
    """Triggers of checkpoints its adapter writes without running anything (a fork): never a live run."""

    def owns_id(self, checkpoint_id: str) -> bool:
        """Is ``checkpoint_id`` shaped as this format's ids (or crewpoint's copies of them)?"""
        ...

    def short_id(self, checkpoint_id: str, width: int, typeable: bool) -> str:
        """An id of this format as views show it (see :func:`crewpoint.providers.refs.short_id`)."""
        ...

    def takes_ref_id(self, fragment: str) -> bool:
        """Is ``fragment`` one of this format's ids (or a prefix of one) in a ``location#id`` reference?"""
        ...

    def written_by(self, version: str) -> str | None:
        """Who wrote a checkpoint whose metadata version is ``version``, when it is this format's; else None."""
        ...

    def owns_store(self, location: str) -> bool:
        """Is ``location`` (a path, ``db#id`` or a file) one of this format's stores?"""
        ...

    def provider_for(self, location: str) -> BaseProvider | None:
        """The provider reading ``location`` when it is one of this format's stores, else None."""
        ...

    def to_body(self, dump: Any, meta: CheckpointMeta) -> dict[str, Any]:
        """A checkpoint as this format's read-only provider read it (``dump``, keys masked) as a body in
        crewpoint's schema, the original kept under the format's name: a provider reads, its format translates."""
        ...

    def plan_fork(self, body: Mapping[str, Any], inputs: dict[str, Any], outputs: dict[int, str]) -> ForeignFork:
        """What a fork of ``body`` with these edits changes and runs; nothing is written."""
        ...

    def run(self, request: ForeignRunRequest) -> ForeignRun:
        """Resume (or fork, then resume) the checkpoint the request names with this format's own tool; bad input
        raises CheckpointError or ValueError before anything runs."""
        ...


class _Native:
    """crewpoint's own format: its ids are random hex, shown by their start; its engine plans and runs."""

    name = NATIVE
    title = "crewpoint"
    foreign = False
    written_not_run: frozenset[str] = frozenset()

    def owns_id(self, checkpoint_id: str) -> bool:
        return True

    def short_id(self, checkpoint_id: str, width: int, typeable: bool) -> str:
        return checkpoint_id[:width]

    def takes_ref_id(self, fragment: str) -> bool:
        return False  # crewpoint's ids are checked by the one id rule (refs.ID_RE)

    def written_by(self, version: str) -> str | None:
        return None

    def owns_store(self, location: str) -> bool:
        return False  # a store no other format claims is crewpoint's

    def provider_for(self, location: str) -> BaseProvider | None:
        return None

    def to_body(self, dump: Any, meta: CheckpointMeta) -> dict[str, Any]:
        raise NotImplementedError("crewpoint's stores hold its bodies as they are")

    def plan_fork(self, body: Mapping[str, Any], inputs: dict[str, Any], outputs: dict[int, str]) -> ForeignFork:
        raise NotImplementedError("crewpoint's engine plans its own forks (crewpoint.checkpoint.plan)")

    def run(self, request: ForeignRunRequest) -> ForeignRun:
        raise NotImplementedError("crewpoint's engine runs its own checkpoints (crewpoint.checkpoint.ops)")


NATIVE_FORMAT: Format = _Native()

FORMAT_PACKAGES: tuple[str, ...] = ("crewpoint.formats",)
"""Packages that register other tools' formats (each calls :func:`register_format` when imported), imported on
the registry's first lookup, as entry points are: ``import crewpoint`` loads no store code, and the stores name no
module above them."""
_packages_loaded = False

_targets: dict[str, str] = {}
_loaded: dict[str, Format] = {NATIVE: NATIVE_FORMAT}
_foreign: tuple[Format, ...] | None = None
"""The loaded foreign adapters, kept: :func:`format_of_id` runs once per row of a listing."""
_store_copy: str | None = None
_lock = threading.Lock()


def _load_packages() -> None:
    """Import the format packages once, before the registry is first read."""
    global _packages_loaded
    if _packages_loaded:
        return
    _packages_loaded = True
    for package in FORMAT_PACKAGES:
        importlib.import_module(package)


def register_format(name: str, target: str) -> None:
    """Register another tool's format ``name``, whose adapter is ``target`` (``"module:attribute"``, loaded on
    first use)."""
    global _foreign
    with _lock:
        _targets[name] = target
        _loaded.pop(name, None)
        _foreign = None


def format_named(name: str) -> Format:
    """The adapter of the format ``name``; raise LookupError for a format nobody registered."""
    _load_packages()
    with _lock:
        known = _loaded.get(name)
        target = _targets.get(name)
    if known is not None:
        return known
    if target is None:
        raise LookupError(f"no checkpoint format named {name!r}")
    module, _, attribute = target.partition(":")
    adapter: Format = getattr(importlib.import_module(module), attribute)
    with _lock:
        _loaded[name] = adapter
    return adapter


def format_names() -> list[str]:
    """Every format: crewpoint's first, then the registered ones in the order they were registered."""
    _load_packages()
    with _lock:
        return [NATIVE, *_targets]


def foreign_formats() -> tuple[Format, ...]:
    """Every other tool's format, in the order registered."""
    global _foreign
    known = _foreign
    if known is None:
        _load_packages()
        with _lock:
            names = list(_targets)
        known = _foreign = tuple(format_named(name) for name in names)
    return known


def format_of(record_or_body: Any) -> Format:
    """The format a checkpoint is in: a record's or a body's ``format`` (a body without one is crewpoint's)."""
    body = getattr(record_or_body, "body", record_or_body)
    name = body.get("format") if isinstance(body, Mapping) else getattr(body, "format", None)
    return format_named(name) if isinstance(name, str) and name else NATIVE_FORMAT


def format_of_id(checkpoint_id: str) -> Format:
    """The format whose ids look like ``checkpoint_id`` (crewpoint's when no other format's do)."""
    for adapter in foreign_formats():
        if adapter.owns_id(checkpoint_id):
            return adapter
    return NATIVE_FORMAT


def format_of_store(location: str) -> Format:
    """The format of the store at ``location`` (crewpoint's when no other format claims it)."""
    for adapter in foreign_formats():
        if adapter.owns_store(location):
            return adapter
    return NATIVE_FORMAT


def written_not_run() -> frozenset[str]:
    """Triggers of checkpoints an adapter wrote without running anything, in every format."""
    return frozenset().union(*(adapter.written_not_run for adapter in (NATIVE_FORMAT, *foreign_formats())))


def written_by(version: str) -> str | None:
    """Who wrote a checkpoint of metadata version ``version`` when another tool's format did (its adapter's
    words); None for crewpoint's own."""
    for adapter in foreign_formats():
        said = adapter.written_by(version)
        if said is not None:
            return said
    return None


def register_store_copy(target: str) -> None:
    """Register the whole-store copy (``"module:function"``): it reads any store, crewpoint's or another
    format's, translating ids a crewpoint store does not take and masking keys on the way."""
    global _store_copy
    _store_copy = target


def copy_store(source: str, target: str) -> Any:
    """Copy every checkpoint of the store ``source`` into the crewpoint store ``target`` (made if missing), by
    the registered copy; returns its report (``source``, ``target``, ``copied``, ``existing``, ``damaged``)."""
    _load_packages()
    if _store_copy is None:
        raise LookupError("no store copy is registered")
    module, _, attribute = _store_copy.partition(":")
    return getattr(importlib.import_module(module), attribute)(source, target)
