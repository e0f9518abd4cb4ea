"""One rule says which tasks an edit invalidates, for crewpoint's crews and CrewAI's dumps alike."""

from __future__ import annotations

from crewpoint import Agent, Crew, Task
from crewpoint.formats.crewai.fork import dependents as crewai_dependents
from crewpoint.providers.dependencies import readers, reads_of


def test_a_task_reads_its_context_or_every_task_before_it() -> None:
    reads = reads_of([None, None, [0], None])
    assert reads == [frozenset(), frozenset({0}), frozenset({0}), frozenset({0, 1, 2})]
    assert readers(reads, {1}) == {3}  # task 2 reads only task 0
    assert readers(reads, {0}) == {1, 2, 3}
    assert readers(reads, {2, 3}) == set()


def test_a_crew_and_a_crewai_dump_of_the_same_shape_invalidate_the_same_tasks() -> None:
    agent = Agent(role="Writer", goal="write", backstory="")
    research = Task(description="research", expected_output="notes", agent=agent)
    outline = Task(description="outline", expected_output="outline", agent=agent, context=[research])
    draft = Task(description="draft", expected_output="draft", agent=agent, context=[outline])
    facts = Task(description="facts", expected_output="facts", agent=agent, context=[research])
    crew = Crew(agents=[agent], tasks=[research, outline, draft, facts])
    dump = [
        {"id": "r"},
        {"id": "o", "context": ["r"]},
        {"id": "d", "context": [{"id": "o"}]},
        {"id": "f", "context": ["r"]},
    ]
    for index in range(4):
        assert set(crew.dependents(index)) == crewai_dependents(dump, {index}), index
    assert crew.dependents(1) == [2]  # the draft reads the outline; the facts do not
