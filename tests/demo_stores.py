"""Demo stores for the tests: real runs of the demo crew on the offline model."""

from __future__ import annotations

from typing import Any

from crewpoint import CheckpointConfig
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.events import event_bus
from crewpoint.providers import JsonProvider, SqliteProvider


def make_store(
    location: str = ".checkpoints", *, stop_after: int | None = None, delay: float = 0.0, **config: Any
) -> str:
    """Run the demo crew checkpointing into ``location``; with ``stop_after`` the run is interrupted (as by
    Ctrl-C) right after that many tasks finished."""
    provider = SqliteProvider() if location.endswith(".db") else JsonProvider(fsync=False)
    crew = demo_crew(delay=delay, checkpoint=CheckpointConfig(location=location, provider=provider, **config))
    finished: list[str] = []

    def interrupt(source: object, event: object) -> None:
        finished.append("task")
        if stop_after is not None and len(finished) == stop_after:
            raise KeyboardInterrupt

    event_bus.register("task_completed", interrupt)
    try:
        crew.kickoff(inputs=DEMO_INPUTS)
    except KeyboardInterrupt:
        assert stop_after is not None
    finally:
        event_bus.off(interrupt)
    return location
