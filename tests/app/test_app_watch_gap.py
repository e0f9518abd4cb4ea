"""A checkpoint written after the app's first read began and before its watch was in place still shows."""

from __future__ import annotations

from pathlib import Path

from support.reading import browser
from support.stores import make_store
from support.waiting import wait_until

from crewpoint import Agent, CheckpointConfig, Crew, Task
from crewpoint.checkpoint import ops
from crewpoint.tui.app import CheckpointApp
from crewpoint.tui.feed import StoreReader


def one_more_run(store: str) -> str:
    agent = Agent(role="Writer", goal="write", backstory="")
    crew = Crew(
        name="late-crew",
        agents=[agent],
        tasks=[Task(description="say hi", expected_output="hi", agent=agent)],
        checkpoint=CheckpointConfig(location=store),
    )
    crew.kickoff()
    (late,) = [m for m in ops.list_checkpoints(store) if m.entity_name == "late-crew"]
    return late.id


async def test_a_checkpoint_written_before_the_watch_is_in_place_is_shown(tmp_path: Path) -> None:
    store = make_store(str(tmp_path / "store"))
    reader = StoreReader(store)
    reader.start()
    first = reader.listed.result(timeout=60)  # the app's first read is done ...
    late = one_more_run(store)  # ... then a run writes, before the app has begun to watch
    assert late not in {m.id for m in first.metas}
    app = CheckpointApp(store, follow=True, reader=reader)
    async with app.run_test(size=(100, 30)) as pilot:
        screen = browser(pilot)
        await wait_until(pilot, lambda: late in {m.id for m in screen.feed.metas}, timeout=60)
