"""Rebuilding a CrewAI checkpoint by the allow-list of :mod:`crewpoint.formats.crewai.allowlist`, and finding the
models it names where CrewAI builds an LLM.

The walk follows :data:`~crewpoint.formats.crewai.allowlist.SHAPES` from the checkpoint's root: each field's
rule says whether its value is kept, rebuilt (a model, an embedder, a memory, a checkpoint setting, a nested
shape) or left out. What is left out is recorded by its path in the checkpoint (a name that is not a plain
identifier shows as ``?``), so the user is told.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from crewpoint.formats.crewai.allowlist import (
    CHECKPOINT,
    CODE,
    EMBEDDER,
    ENTITY_SHAPES,
    KEEP,
    LLM,
    MEMORY,
    MEMORY_STORAGES,
    SHAPES,
    STORAGE,
    empty,
    rebuild_embedder,
    rebuild_llm,
)
from crewpoint.providers.base import CheckpointError

_SHOWN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]{0,63}")


@dataclass
class Rebuilt:
    """A rebuilt checkpoint: the copy, the models it names (as rebuilt) and what was left out (paths)."""

    dump: dict[str, Any]
    models: list[Any] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)


def _plain(value: Any) -> bool:
    """A value no rule could turn into code or reach: empty, a flag or a number."""
    return empty(value) or isinstance(value, (bool, int, float))


def _name(key: str) -> str:
    return key if _SHOWN_NAME.fullmatch(key) else "?"


class _Builder:
    def __init__(self, store: str, kind: str) -> None:
        self.store, self.kind = store, kind
        self.models: list[Any] = []
        self.left_out: list[str] = []

    def leave_out(self, path: str, value: Any) -> None:
        if not empty(value):
            self.left_out.append(path)

    def value(self, rule: str, value: Any, path: str) -> Any:
        """``value`` under ``rule``; raises _Drop when it is left out."""
        if rule == KEEP:
            return value
        if rule == CODE:
            if empty(value):
                return value
            raise _Drop
        if rule == LLM:
            if value is None:
                return None
            llm = rebuild_llm(value)
            if llm is None:
                raise _Drop
            self.models.append(llm)
            return llm
        if rule == EMBEDDER:
            if value is None:
                return None
            embedder = rebuild_embedder(value)
            if embedder is None:
                raise _Drop
            return embedder
        if rule == MEMORY:
            return value if isinstance(value, bool) or value is None else self.shape("memory", value, path)
        if rule == STORAGE:
            if value is None or value in MEMORY_STORAGES:
                return value
            raise _Drop
        if rule == CHECKPOINT:
            return self.checkpoint(value)
        if rule.startswith("[") and rule.endswith("]"):
            if not isinstance(value, list):
                return value if value is None else self.value(rule[1:-1], value, path)
            return [
                item if _scalar(item) else self.value(rule[1:-1], item, f"{path}[{i}]") for i, item in enumerate(value)
            ]
        if rule.startswith("{") and rule.endswith("}"):
            if not isinstance(value, Mapping):
                return None if value is None else _raise_drop()
            return {str(k): self.value(rule[1:-1], v, path) for k, v in value.items()}
        if rule == "entity":
            kind = value.get("entity_type") if isinstance(value, Mapping) else None
            if kind not in ENTITY_SHAPES:
                raise CheckpointError(
                    f"the CrewAI checkpoint holds an entity of unknown type {kind!r}: only crews, flows and agents are"
                    " handed to CrewAI"
                )
            return self.shape(ENTITY_SHAPES[str(kind)], value, path)
        return self.shape(rule, value, path)

    def shape(self, name: str, value: Any, path: str) -> Any:
        if value is None or isinstance(value, str):
            return value  # an id in the model's place
        if not isinstance(value, Mapping):
            raise _Drop
        fields = SHAPES[name]
        default = fields.get("*")
        out: dict[str, Any] = {}
        for key, item in value.items():
            rule = fields.get(key, default) if isinstance(key, str) and key != "*" else None
            where = f"{path}.{_name(str(key))}" if path else _name(str(key))
            if rule is None:
                if _plain(item):
                    out[key] = item
                else:
                    self.leave_out(where, item)
                continue
            try:
                out[key] = self.value(rule, item, where)
            except _Drop:
                self.leave_out(where, item)
        return out

    def checkpoint(self, setting: Any) -> Any:
        """A checkpoint setting that writes into the store the checkpoint came from and deletes nothing (pruning is
        the program's to ask for); ``on_events`` kept when it is a list of event names."""
        if not isinstance(setting, Mapping):
            return setting if isinstance(setting, bool) or setting is None else _raise_drop()
        out: dict[str, Any] = {
            "location": self.store,
            "max_checkpoints": None,
            "provider": {"provider_type": self.kind},
            "restore_from": None,
        }
        events = setting.get("on_events")
        if isinstance(events, list) and all(isinstance(e, str) for e in events):
            out["on_events"] = events
        return out


class _Drop(Exception):
    """The value is left out of the copy."""


def _raise_drop() -> Any:
    raise _Drop


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bool, int, float))


def rebuild(dump: Mapping[str, Any], store: str, kind: str) -> Rebuilt:
    """The copy of the CrewAI checkpoint ``dump`` CrewAI may resume without trusting it (see the module's
    docstring). New checkpoints go to ``store``, a CrewAI store of ``kind`` (``json`` or ``sqlite``)."""
    builder = _Builder(store, kind)
    try:
        copy = builder.shape("state", dump, "")
    except _Drop:
        copy = {}
    assert isinstance(copy, dict)
    return Rebuilt(copy, builder.models, builder.left_out)


def models_of(dump: Mapping[str, Any]) -> Iterator[Any]:
    """Every model the checkpoint ``dump`` names where CrewAI builds an LLM, as saved (names and mappings)."""
    yield from _Finder().find("state", dump)


class _Finder:
    def find(self, rule: str, value: Any) -> Iterator[Any]:
        if rule == LLM:
            if isinstance(value, str) or (isinstance(value, Mapping) and rebuild_llm(value) is not None):
                yield value
        elif rule == MEMORY:
            if isinstance(value, Mapping):
                yield from self.find("memory", value)
        elif rule.startswith("[") and rule.endswith("]"):
            for item in value if isinstance(value, list) else [value]:
                yield from self.find(rule[1:-1], item)
        elif rule.startswith("{") and rule.endswith("}"):
            for item in value.values() if isinstance(value, Mapping) else []:
                yield from self.find(rule[1:-1], item)
        elif rule == "entity":
            kind = value.get("entity_type") if isinstance(value, Mapping) else None
            if kind in ENTITY_SHAPES:
                yield from self.find(ENTITY_SHAPES[str(kind)], value)
        elif rule in SHAPES and isinstance(value, Mapping):
            fields = SHAPES[rule]
            for key, item in value.items():
                sub = fields.get(key, fields.get("*")) if isinstance(key, str) else None
                if sub is not None and sub not in (KEEP, CODE):
                    yield from self.find(sub, item)
