"""Conversation and crew memory, knowledge sources and their checkpoint state."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from crewpoint.events import (
    BaseEvent,
    KnowledgeEvent,
    MemoryEvent,
    event_bus,
)
from crewpoint.knowledge import (
    BaseKnowledgeSource,
    Knowledge,
    StoredKnowledgeSource,
    StringKnowledgeSource,
    TextFileKnowledgeSource,
    chunk_text,
    knowledge_source_from_state,
)
from crewpoint.memory import CrewMemory, ShortTermMemory
from crewpoint.serialize import TRUST_ENV

PARIS = "Paris is the capital of France. The Eiffel Tower stands in Paris."
BERLIN = "Berlin is the capital of Germany. The Brandenburg Gate stands in Berlin."
PYTHON = "Python is a programming language. It favours readable code."


@pytest.fixture
def seen() -> Iterator[list[BaseEvent]]:
    events: list[BaseEvent] = []
    with event_bus.scoped_handlers():
        for cls in (MemoryEvent, KnowledgeEvent):
            event_bus.register(cls, lambda source, event: events.append(event))
        yield events


def _json(state: dict[str, Any]) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(json.dumps(state))
    return loaded


# -- conversation memory ------------------------------------------------------------------------------------


def test_short_term_memory_keeps_messages_in_order_and_round_trips() -> None:
    memory = ShortTermMemory()
    memory.add("system", "You are a researcher.")
    memory.add("user", "Find [bold]facts[/bold].")
    memory.add("assistant", "Final Answer: done")
    assert [m["role"] for m in memory.messages] == ["system", "user", "assistant"]
    assert len(memory) == 3

    restored = ShortTermMemory.from_state(_json(memory.to_state()))
    assert restored.messages == memory.messages
    restored.add("user", "more")
    assert len(memory) == 3  # the restored copy is independent


# -- crew memory ----------------------------------------------------------------------------------------------


def test_save_keeps_items_and_emits_events(seen: list[BaseEvent]) -> None:
    memory = CrewMemory(crew_id="crew-1")
    item = memory.save("Paris facts gathered", {"task": "t1"}, agent_id="a1", task_id="t1")
    assert item is not None
    assert [i.value for i in memory.items] == ["Paris facts gathered"]
    assert memory.items[0].metadata == {"task": "t1"}
    assert [e.type for e in seen] == ["memory_save_started", "memory_save_completed"]
    assert all(e.crew_id == "crew-1" and e.agent_id == "a1" and e.task_id == "t1" for e in seen)
    assert seen[1].value == "Paris facts gathered"  # type: ignore[attr-defined]


def test_save_with_unsavable_metadata_fails_softly(seen: list[BaseEvent]) -> None:
    memory = CrewMemory()
    assert memory.save("value", {"when": object()}) is None
    assert memory.items == []
    assert [e.type for e in seen] == ["memory_save_started", "memory_save_failed"]
    assert "TypeError" in (seen[1].error or "")  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        memory.save("value", {"when": object()}, raise_errors=True)


def test_search_ranks_by_keyword_overlap_then_recency(seen: list[BaseEvent]) -> None:
    memory = CrewMemory()
    memory.save(PYTHON)
    memory.save(PARIS)
    memory.save(BERLIN)
    memory.save("Notes on the capital markets of Europe.")
    seen.clear()

    found = memory.search("What is the CAPITAL of France?")
    assert [i.value for i in found] == [PARIS, "Notes on the capital markets of Europe.", BERLIN]
    assert found[0].score == 2
    assert [e.type for e in seen] == ["memory_query_started", "memory_query_completed"]
    assert seen[1].results_count == 3  # type: ignore[attr-defined]

    assert [i.value for i in memory.search("capital", limit=1)] == ["Notes on the capital markets of Europe."]
    assert memory.search("the of is") == []  # stop words alone match nothing
    assert memory.search("quantum chromodynamics") == []


def test_retrieve_for_builds_a_short_block(seen: list[BaseEvent]) -> None:
    memory = CrewMemory()
    memory.save(PARIS)
    memory.save("x " * 400 + "Paris")
    seen.clear()

    block = memory.retrieve_for("Write about Paris")
    lines = block.splitlines()
    assert lines[0] == "Relevant memories:"
    assert len(lines) == 3
    assert all(len(line) <= 310 for line in lines)
    assert PARIS in block
    types = [e.type for e in seen]
    assert types[0] == "memory_retrieval_started" and types[-1] == "memory_retrieval_completed"
    assert "memory_query_completed" in types

    assert memory.retrieve_for("Quantum chromodynamics") == ""


def test_memory_state_round_trip_keeps_order_and_numbering() -> None:
    memory = CrewMemory()
    memory.save(PARIS, {"task": "t1"})
    memory.save(BERLIN, {"task": "t2"})
    restored = CrewMemory.from_state(_json(memory.to_state()), crew_id="crew-2")
    assert [(i.value, i.metadata) for i in restored.items] == [(PARIS, {"task": "t1"}), (BERLIN, {"task": "t2"})]
    assert restored.crew_id == "crew-2"

    restored.save("Lyon is a city in France with a capital of gastronomy reputation.")
    newest = restored.items[-1]
    assert newest.sequence > max(i.sequence for i in memory.items)
    # the new item is the most recent: it wins a tie with Paris on "capital france"
    assert restored.search("capital France")[0].value == newest.value


def test_restore_item_adds_without_events(seen: list[BaseEvent]) -> None:
    memory = CrewMemory()
    memory.restore_item(PARIS, {"task": "t1"})
    assert [i.value for i in memory.items] == [PARIS]
    assert seen == []


# -- chunking -----------------------------------------------------------------------------------------------


def test_chunks_follow_paragraph_and_sentence_boundaries() -> None:
    paragraphs = [f"Paragraph {n} says something short." for n in range(30)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, 400)
    assert all(len(c) <= 400 for c in chunks)
    assert len(chunks) > 1
    for chunk in chunks:  # whole paragraphs, never cut in the middle
        assert all(p in paragraphs for p in chunk.split("\n\n"))
    assert "\n\n".join(chunks) == text

    long_paragraph = " ".join(f"Sentence number {n} talks about topic {n}." for n in range(60))
    pieces = chunk_text(long_paragraph, 400)
    assert all(len(p) <= 400 for p in pieces)
    assert all(p.endswith(".") for p in pieces)
    assert " ".join(pieces) == long_paragraph

    unbroken = "word" * 300
    assert "".join(chunk_text(unbroken, 400)) == unbroken


# -- knowledge ------------------------------------------------------------------------------------------------


def test_knowledge_from_strings_ranks_passages(seen: list[BaseEvent]) -> None:
    knowledge = Knowledge(
        [StringKnowledgeSource(content=PYTHON), StringKnowledgeSource(content=f"{PARIS}\n\n{'z ' * 200}\n\n{BERLIN}")],
        crew_id="crew-1",
    )
    found = knowledge.query("Which tower stands in Paris?", agent_id="a1", task_id="t1")
    assert found == [PARIS, BERLIN]  # three keywords beat one ("stands")
    assert [e.type for e in seen] == [
        "knowledge_query_started",
        "knowledge_search_query_started",
        "knowledge_search_query_completed",
        "knowledge_query_completed",
    ]
    assert seen[-1].results_count == 2  # type: ignore[attr-defined]
    assert all(e.crew_id == "crew-1" and e.agent_id == "a1" and e.task_id == "t1" for e in seen)

    assert knowledge.query("capital city", limit=5) == [PARIS, BERLIN]  # a tie keeps document order
    assert knowledge.query("Berlin Brandenburg gate stands", limit=1) == [BERLIN]
    assert knowledge.query("readable programming language")[0] == PYTHON
    assert knowledge.query("nothing matches here zzzq") == []


def test_text_files_are_read_when_queried(tmp_path: Path) -> None:
    doc = tmp_path / "cities.txt"
    doc.write_text("placeholder", encoding="utf-8")
    source = TextFileKnowledgeSource(file_paths=[doc])
    doc.write_text(f"{PARIS}\n\n{'filler ' * 80}\n\n{BERLIN}", encoding="utf-8")  # changed before first query
    knowledge = Knowledge([source])
    assert knowledge.query("Brandenburg Gate") == [BERLIN]


def test_missing_file_is_refused_at_construction(tmp_path: Path) -> None:
    missing = tmp_path / "nope.txt"
    with pytest.raises(ValueError, match="knowledge file not found") as info:
        TextFileKnowledgeSource(file_paths=[missing])
    assert str(missing) in str(info.value)


def test_relative_paths_resolve_against_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "notes.md").write_text(PYTHON, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    source = TextFileKnowledgeSource(file_paths=["notes.md"])
    monkeypatch.chdir(tmp_path.parent)
    assert Knowledge([source]).query("programming") == [PYTHON]


def test_file_removed_before_first_query_fails_clearly(tmp_path: Path, seen: list[BaseEvent]) -> None:
    doc = tmp_path / "gone.txt"
    doc.write_text(PARIS, encoding="utf-8")
    knowledge = Knowledge([TextFileKnowledgeSource(file_paths=[doc])])
    doc.unlink()
    with pytest.raises(FileNotFoundError, match=r"gone\.txt"):
        knowledge.query("Paris")
    assert [e.type for e in seen] == [
        "knowledge_query_started",
        "knowledge_search_query_started",
        "knowledge_search_query_failed",
        "knowledge_query_failed",
    ]


def test_knowledge_state_restores_after_the_file_is_deleted(tmp_path: Path) -> None:
    doc = tmp_path / "cities.txt"
    doc.write_text(f"{PARIS}\n\n{'filler ' * 80}\n\n{BERLIN}", encoding="utf-8")
    knowledge = Knowledge([TextFileKnowledgeSource(file_paths=[doc]), StringKnowledgeSource(content=PYTHON)])
    before = knowledge.query("Eiffel Tower Paris")
    state = _json(knowledge.to_state())
    doc.unlink()

    restored = Knowledge.from_state(state)
    assert restored.query("Eiffel Tower Paris") == before == [PARIS]
    assert restored.query("readable code") == [PYTHON]
    again = Knowledge.from_state(_json(restored.to_state()))  # a restored source saves its contents again
    assert again.query("Brandenburg") == [BERLIN]


def test_state_keeps_the_text_as_it_was_when_saved(tmp_path: Path) -> None:
    doc = tmp_path / "facts.txt"
    doc.write_text(PARIS, encoding="utf-8")
    state = _json(TextFileKnowledgeSource(file_paths=[doc]).to_state())
    doc.write_text(BERLIN, encoding="utf-8")
    restored = knowledge_source_from_state(state)
    assert restored.chunks() == [PARIS]


class GlossarySource(BaseKnowledgeSource):
    terms: dict[str, str]

    def load_texts(self) -> list[str]:
        return [f"{term}: {meaning}" for term, meaning in self.terms.items()]


def test_custom_source_comes_back_as_its_saved_passages_unless_trusted(monkeypatch: pytest.MonkeyPatch) -> None:
    state = _json(GlossarySource(terms={"lineage": "the root run's id"}).to_state())
    monkeypatch.delenv(TRUST_ENV, raising=False)
    stored = knowledge_source_from_state(state)
    assert isinstance(stored, StoredKnowledgeSource) and stored.origin.endswith("GlossarySource")
    assert Knowledge([stored]).query("what is lineage") == ["lineage: the root run's id"]
    monkeypatch.setenv(TRUST_ENV, "1")
    restored = knowledge_source_from_state(state)
    assert isinstance(restored, GlossarySource)
    assert Knowledge([restored]).query("what is lineage") == ["lineage: the root run's id"]


def test_restore_with_an_unsaved_missing_file_fails_only_when_queried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TRUST_ENV, "1")  # trusted: the saved paths are read when their contents were not saved
    doc = tmp_path / "later.txt"
    doc.write_text(PARIS, encoding="utf-8")
    state = _json(TextFileKnowledgeSource(file_paths=[doc]).to_state())
    state["contents"] = {}  # as if the file could not be read when the checkpoint was taken
    doc.unlink()
    restored = Knowledge.from_state({"sources": [state]})
    with pytest.raises(FileNotFoundError, match="restore it or remove it"):
        restored.query("Paris")
