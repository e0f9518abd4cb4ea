"""The bundled example: a research crew of three agents and four tasks, and a small flow, on the offline model."""

from __future__ import annotations

import os
from typing import Any

from pydantic import BaseModel

from crewpoint.agent import Agent
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.crew import Crew, CrewOutput
from crewpoint.events import event_bus
from crewpoint.flow import Flow, listen, router, start
from crewpoint.knowledge import StringKnowledgeSource
from crewpoint.llm import OfflineLLM
from crewpoint.providers import SqliteProvider, has_sqlite_header, is_url, provider_named
from crewpoint.providers.base import CheckpointError
from crewpoint.task import Task
from crewpoint.tools import tool

DEMO_INPUTS = {"topic": "durable AI agent pipelines", "audience": "engineering leads"}
DEMO_MARKER = ".crewpoint-demo"
"""A file the live demo leaves in a demo store folder, so a later demo may replace the folder and nothing else."""
DEMO_ENTITIES = frozenset({"research-crew", "TriageFlow"})
LIVE_DELAY = 12.0
"""Seconds per offline model call in the live demo's run: its crew makes five calls (the research task two), so
the run goes on for about a minute, long enough to watch it, fork it and stop it."""
LIVE_EVENTS = ["crew_kickoff_started", "task_completed", "method_execution_finished"]
"""When the live demo's run checkpoints: at once when it starts (so it shows in the app as it opens), then after
each task and each flow method."""


@tool("search_notes")
def search_notes(query: str) -> str:
    """Search the team's research notes for a query and return the matching note."""
    notes = {
        "cost": "Each LLM step costs money; re-running finished steps wastes budget.",
        "crash": "Long pipelines crash mid-way; without checkpoints all progress is lost.",
        "fork": "Editing one output and re-running only what depends on it saves time.",
    }
    words = query.lower().split()
    hits = [text for key, text in notes.items() if any(key in w for w in words)]
    return " ".join(hits) or "Notes: checkpoints make long agent runs resumable and cheap to explore."


def demo_crew(
    delay: float = 0.0, checkpoint: CheckpointConfig | bool | None = None, name: str = "research-crew"
) -> Crew:
    """Three agents, four tasks; the review task takes the research and the draft as explicit context."""
    llm = OfflineLLM(delay=delay)
    researcher = Agent(
        role="Researcher",
        goal="Find what matters about {topic}",
        backstory="A careful analyst who cites notes.",
        llm=llm,
        tools=[search_notes],
    )
    writer = Agent(role="Writer", goal="Write clearly for {audience}", backstory="A plain-spoken writer.", llm=llm)
    editor = Agent(role="Editor", goal="Make the text correct and short", backstory="A strict editor.", llm=llm)
    research = Task(
        name="research",
        description="Research {topic}: use the search_notes tool on cost and crash risks.",
        expected_output="Five bullet points",
        agent=researcher,
    )
    outline = Task(
        name="outline",
        description="Outline an article on {topic} for {audience}.",
        expected_output="A short outline",
        agent=writer,
    )
    draft = Task(
        name="draft",
        description="Write a three-paragraph draft on {topic} from the outline.",
        expected_output="Three paragraphs",
        agent=writer,
    )
    review = Task(
        name="review",
        description="Review the draft against the research and list corrections.",
        expected_output="A corrected final text",
        agent=editor,
        context=[research, draft],
    )
    return Crew(
        name=name,
        agents=[researcher, writer, editor],
        tasks=[research, outline, draft, review],
        memory=True,
        knowledge_sources=[
            StringKnowledgeSource(
                content="crewpoint writes a checkpoint after each task, so a crashed run resumes without paying "
                "again for finished work. Forks let you edit one output and re-run only its dependents."
            )
        ],
        checkpoint=checkpoint,
    )


class TriageState(BaseModel):
    ticket: str = "The nightly pipeline crashed after step 7 of 9."
    severity: str = ""
    reply: str = ""


class TriageFlow(Flow[TriageState]):
    """A small flow: classify a ticket, route it, answer it."""

    @start()
    def classify(self) -> str:
        self.state.severity = "high" if "crash" in self.state.ticket.lower() else "low"
        return self.state.severity

    @router(classify)
    def route(self, severity: str) -> str:
        return "urgent" if severity == "high" else "routine"

    @listen("urgent")
    def page_oncall(self) -> str:
        self.state.reply = "Paged on-call; resume the run from its last checkpoint."
        return self.state.reply

    @listen("routine")
    def queue_ticket(self) -> str:
        self.state.reply = "Queued for the next triage meeting."
        return self.state.reply


def run_demo(
    location: str = "./.checkpoints",
    delay: float = 0.0,
    provider: str | None = None,
    inputs: dict[str, Any] | None = None,
    *,
    from_start: bool = False,
) -> tuple[CrewOutput, Any]:
    """Run the demo crew (checkpointed at ``location``) and the triage flow; return both results. With no
    ``provider`` ("json" or "sqlite") the location picks its kind of store (a URL its URL's, ``.db`` SQLite).
    ``from_start`` checkpoints when the crew starts too (:data:`LIVE_EVENTS`), as the live demo's run does."""
    config = _demo_config(location, provider)
    if from_start:
        config = config.model_copy(update={"on_events": list(LIVE_EVENTS)})
    crew = demo_crew(delay=delay, checkpoint=config)
    result = crew.kickoff(inputs=inputs or DEMO_INPUTS)
    assert isinstance(result, CrewOutput)  # the demo crew has no human_input task: it never waits
    flow_result = TriageFlow(checkpoint=config).kickoff()
    return result, flow_result


def is_demo_store(location: str) -> bool:
    """Was ``location`` made by the live demo? A folder carries :data:`DEMO_MARKER`; a database file holds
    nothing but the demo's crew and flow."""
    if os.path.isdir(location):
        return os.path.isfile(os.path.join(location, DEMO_MARKER))

    if not os.path.isfile(location) or not has_sqlite_header(location):
        return False
    try:
        metas = SqliteProvider().list(location)
    except (CheckpointError, OSError, ValueError):
        return False
    return all(meta.entity_name in DEMO_ENTITIES for meta in metas)


def _demo_config(location: str, provider: str | None) -> CheckpointConfig:
    """Where the demo writes: ``provider`` when given for a path, else the kind the location names."""
    if provider is None or is_url(location):
        return CheckpointConfig(location=location)
    return CheckpointConfig(location=location, provider=provider_named(provider))


def seed_demo_store(location: str, provider: str | None = None) -> None:
    """A finished demo run and a fork of its second checkpoint with a shorter outline (branch ``what-if``), stopped
    after its first task as by Ctrl+C: a branch to resume (``e``) or fork (``f``). Written quickly."""
    config = _demo_config(location, provider)
    store = config.provider
    if store.kind == "json":
        os.makedirs(location, exist_ok=True)
        with open(os.path.join(location, DEMO_MARKER), "w") as marker:
            marker.write("made by `crewpoint demo --live`: the next live demo replaces this folder\n")
    crew = demo_crew(checkpoint=config)
    crew.kickoff(inputs=DEMO_INPUTS)
    second = sorted((m for m in store.list(location) if m.entity_kind == crew.entity_kind), key=lambda m: m.sequence)[1]
    fork = Crew.fork(CheckpointConfig(restore_from=second.location), branch="what-if")
    fork.override_output("outline", "1. What a crash costs  2. Checkpoints  3. Forks for what-if questions")

    def stop(source: object, event: object) -> None:
        raise KeyboardInterrupt  # once the draft is checkpointed: the review is left to do

    event_bus.register("task_completed", stop)
    try:
        fork.kickoff()
    except KeyboardInterrupt:
        pass
    finally:
        event_bus.off(stop)
