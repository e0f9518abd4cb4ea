"""Knowledge: text an agent can look things up in, split into passages and found by keyword overlap.

``StringKnowledgeSource`` holds text; ``TextFileKnowledgeSource`` reads files when first queried (a path that
does not exist is refused when the source is made). A checkpoint stores each file's contents as well as its
path, so a restored source answers the same way even after the file moved or changed.
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationInfo, model_validator

from crewpoint.events import (
    KnowledgeQueryCompletedEvent,
    KnowledgeQueryFailedEvent,
    KnowledgeQueryStartedEvent,
    KnowledgeSearchQueryCompletedEvent,
    KnowledgeSearchQueryFailedEvent,
    KnowledgeSearchQueryStartedEvent,
    event_bus,
)
from crewpoint.memory import keywords
from crewpoint.serialize import CheckpointState, callbacks_trusted, class_path, load_class, state_fields

log = logging.getLogger("crewpoint.knowledge")

CHUNK_SIZE = 400
_PARAGRAPH_RE = re.compile(r"\n\s*\n")
_SENTENCE_RE = re.compile(r"(?<=[.!?。！？])\s+")
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def _pack(parts: Iterable[str], size: int, sep: str) -> list[str]:
    chunks: list[str] = []
    current = ""
    for part in parts:
        if current and len(current) + len(sep) + len(part) > size:
            chunks.append(current)
            current = ""
        current = f"{current}{sep}{part}" if current else part
    if current:
        chunks.append(current)
    return chunks


def _split_long(paragraph: str, size: int) -> list[str]:
    """Split a paragraph longer than ``size`` on sentence, then word, then character boundaries."""
    pieces: list[str] = []
    for sentence in _SENTENCE_RE.split(paragraph):
        sentence = " ".join(sentence.split())
        if not sentence:
            continue
        if len(sentence) <= size:
            pieces.append(sentence)
            continue
        words: list[str] = []
        for word in sentence.split(" "):
            words.extend(word[i : i + size] for i in range(0, len(word), size))
        pieces.extend(_pack(words, size, " "))
    return _pack(pieces, size, " ")


def chunk_text(text: str, size: int = CHUNK_SIZE) -> list[str]:
    """Passages of about ``size`` characters, cut on paragraph and sentence boundaries where possible.

    Short paragraphs are joined until the next would pass ``size``; a longer paragraph is cut between
    sentences.
    """
    chunks: list[str] = []
    current: list[str] = []
    for raw in _PARAGRAPH_RE.split(text):
        paragraph = raw.strip()
        if not paragraph:
            continue
        if len(paragraph) > size:
            chunks.extend(_pack(current, size, "\n\n"))
            current = []
            chunks.extend(_split_long(paragraph, size))
        else:
            current.append(paragraph)
    chunks.extend(_pack(current, size, "\n\n"))
    return chunks


def _class_path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class BaseKnowledgeSource(BaseModel):
    """A body of text to search. Subclasses implement :meth:`load_texts`."""

    model_config = ConfigDict(arbitrary_types_allowed=True, defer_build=True)

    chunk_size: Annotated[int, CheckpointState] = Field(default=CHUNK_SIZE, gt=20)
    metadata: Annotated[dict[str, Any], CheckpointState] = Field(default_factory=dict)

    _chunks: list[str] | None = PrivateAttr(default=None)
    _chunk_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    def load_texts(self) -> list[str]:
        """The source's documents as text."""
        raise NotImplementedError(f"{type(self).__name__} does not implement load_texts()")

    def chunks(self) -> list[str]:
        """The source's passages (computed once, on first use)."""
        with self._chunk_lock:
            if self._chunks is None:
                self._chunks = [c for text in self.load_texts() for c in chunk_text(text, self.chunk_size)]
            return list(self._chunks)

    def to_state(self) -> dict[str, Any]:
        """The source as JSON data: its class path, fields and passages (what an untrusted restore searches)."""

        state: dict[str, Any] = {"class": class_path(type(self)), "fields": self.model_dump(mode="json")}
        try:
            state["chunks"] = self.chunks()
        except Exception as exc:  # a source that cannot be read now is saved without passages
            log.debug("knowledge source %s not read for its checkpoint: %s", type(self).__name__, exc)
        return state

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> BaseKnowledgeSource:
        return cls.model_validate(state.get("fields", {}))


class StringKnowledgeSource(BaseKnowledgeSource):
    """Knowledge from a string."""

    content: Annotated[str, CheckpointState]

    def load_texts(self) -> list[str]:
        return [self.content]


class StoredKnowledgeSource(BaseKnowledgeSource):
    """Passages saved in a checkpoint: what a source comes back as when the checkpoint is not trusted.

    It reads nothing: no file, no URL. ``origin`` names the class it was saved from.
    """

    passages: list[str] = Field(default_factory=list)
    origin: str = ""

    def load_texts(self) -> list[str]:
        return list(self.passages)

    def chunks(self) -> list[str]:
        return list(self.passages)


class TextFileKnowledgeSource(BaseKnowledgeSource):
    """Knowledge from text files (UTF-8), read when first queried.

    Paths are resolved against the working directory when the source is made, and every path must exist then
    (a ValueError names the missing ones). A source restored from a checkpoint uses the contents saved with
    it; a file whose contents were not saved is read when queried, and a FileNotFoundError says so if it is
    gone.
    """

    file_paths: list[Path]

    _contents: dict[str, str] = PrivateAttr(default_factory=dict)
    _read_lock: threading.Lock = PrivateAttr(default_factory=threading.Lock)

    @model_validator(mode="after")
    def _resolve_paths(self, info: ValidationInfo) -> TextFileKnowledgeSource:
        context = info.context or {}
        restoring = "contents" in context
        captured: dict[str, str] = dict(context.get("contents") or {})
        self.file_paths = [Path(p).expanduser().resolve() for p in self.file_paths]
        missing = [str(p) for p in self.file_paths if str(p) not in captured and not p.is_file()]
        if missing and not restoring:
            raise ValueError(f"knowledge file not found: {', '.join(missing)}")
        self._contents = {str(p): captured[str(p)] for p in self.file_paths if str(p) in captured}
        return self

    def _read(self, path: Path) -> str:
        key = str(path)
        with self._read_lock:
            if key not in self._contents:
                try:
                    self._contents[key] = path.read_text(encoding="utf-8", errors="replace")
                except OSError as exc:
                    raise FileNotFoundError(
                        f"knowledge file {key} cannot be read ({exc.strerror or exc}); restore it or remove "
                        "it from the agent's knowledge sources"
                    ) from exc
            return self._contents[key]

    def load_texts(self) -> list[str]:
        return [self._read(p) for p in self.file_paths]

    def to_state(self) -> dict[str, Any]:
        """Paths and, for every file that can be read now, its contents."""
        state = super().to_state()
        state.pop("chunks", None)  # the contents below are the passages' source
        contents: dict[str, str] = {}
        for path in self.file_paths:
            try:
                contents[str(path)] = self._read(path)
            except FileNotFoundError:
                continue
        state["contents"] = contents
        return state

    @classmethod
    def _from_state(cls, state: dict[str, Any]) -> BaseKnowledgeSource:
        return cls.model_validate(state.get("fields", {}), context={"contents": state.get("contents") or {}})


def knowledge_source_from_state(state: dict[str, Any]) -> BaseKnowledgeSource:
    """Rebuild a source saved by ``to_state``.

    Trusted (``CREWPOINT_DESERIALIZE_CALLBACKS=1``), the saved class comes back with its fields. Otherwise a
    string source comes back as it is and any other source as the passages saved with it
    (:class:`StoredKnowledgeSource`): a checkpoint never makes crewpoint read a file or reach a server.
    """

    path = str(state.get("class", ""))
    if callbacks_trusted():
        cls = load_class(path, BaseKnowledgeSource, "knowledge source class")
        return cls._from_state(state)
    fields = state.get("fields") if isinstance(state.get("fields"), dict) else {}
    assert isinstance(fields, dict)
    if path == _class_path(StringKnowledgeSource) and isinstance(fields.get("content"), str):
        return StringKnowledgeSource.model_validate(state_fields(StringKnowledgeSource, fields, trusted=False))
    passages = state.get("chunks")
    if not isinstance(passages, list):
        size = fields.get("chunk_size", CHUNK_SIZE)
        contents = state.get("contents") if isinstance(state.get("contents"), dict) else {}
        assert isinstance(contents, dict)
        passages = [c for text in contents.values() if isinstance(text, str) for c in chunk_text(text, size)]
    return StoredKnowledgeSource(passages=[str(p) for p in passages], origin=path)


def _score(wanted: set[str], passage: str) -> tuple[int, int]:
    words = [w for w in _WORD_RE.findall(passage.lower()) if w in wanted]
    return len(set(words)), len(words)


class Knowledge:
    """Searchable knowledge over one or more sources."""

    def __init__(
        self,
        sources: Sequence[BaseKnowledgeSource],
        *,
        agent_id: str | None = None,
        crew_id: str | None = None,
    ) -> None:
        self.sources: list[BaseKnowledgeSource] = list(sources)
        self.agent_id = agent_id
        self.crew_id = crew_id

    def _search(self, text: str, limit: int) -> list[str]:
        wanted = keywords(text)
        if not wanted or limit <= 0:
            return []
        seen: set[str] = set()
        ranked: list[tuple[int, int, int, str]] = []
        for source in self.sources:
            for passage in source.chunks():
                if passage in seen:
                    continue
                seen.add(passage)
                distinct, total = _score(wanted, passage)
                if distinct:
                    ranked.append((-distinct, -total, len(ranked), passage))
        ranked.sort()
        return [passage for *_, passage in ranked[:limit]]

    def query(
        self,
        text: str,
        limit: int = 3,
        *,
        agent_id: str | None = None,
        task_id: str | None = None,
        agent_role: str | None = None,
    ) -> list[str]:
        """Up to ``limit`` passages sharing the most keywords with ``text`` (then most matches, then order).

        A source that cannot be read raises after a ``knowledge_query_failed`` event.
        """
        ids: dict[str, Any] = {
            "agent_id": agent_id or self.agent_id,
            "task_id": task_id,
            "crew_id": self.crew_id,
            "agent_role": agent_role,
        }
        event_bus.emit(self, KnowledgeQueryStartedEvent(query=text, **ids))
        try:
            event_bus.emit(self, KnowledgeSearchQueryStartedEvent(query=text, **ids))
            try:
                found = self._search(text, limit)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                event_bus.emit(self, KnowledgeSearchQueryFailedEvent(query=text, error=error, **ids))
                raise
            event_bus.emit(self, KnowledgeSearchQueryCompletedEvent(query=text, results_count=len(found), **ids))
        except Exception as exc:
            event_bus.emit(self, KnowledgeQueryFailedEvent(query=text, error=f"{type(exc).__name__}: {exc}", **ids))
            raise
        event_bus.emit(self, KnowledgeQueryCompletedEvent(query=text, results_count=len(found), **ids))
        return found

    def to_state(self) -> dict[str, Any]:
        return {"sources": [source.to_state() for source in self.sources]}

    @classmethod
    def from_state(cls, state: dict[str, Any], *, agent_id: str | None = None, crew_id: str | None = None) -> Knowledge:
        sources = [knowledge_source_from_state(s) for s in state.get("sources", [])]
        return cls(sources, agent_id=agent_id, crew_id=crew_id)


__all__ = [
    "BaseKnowledgeSource",
    "Knowledge",
    "StoredKnowledgeSource",
    "StringKnowledgeSource",
    "TextFileKnowledgeSource",
    "chunk_text",
    "knowledge_source_from_state",
]
