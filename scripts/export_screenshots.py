"""Regenerate the README screenshots: drive the app on a freshly made demo store and save SVGs.

    python scripts/export_screenshots.py [OUT_DIR]   (default: screenshots/)

The store is a demo run on the offline model (slowed down a little so a run can be caught while it goes) plus a
fork of its second checkpoint. Nothing here reads an API key, and no key can appear in the pictures.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the shared test helpers

from support.reading import screen_text
from support.waiting import settle, wait_until
from textual.widgets import Input, TextArea

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.crew import Crew
from crewpoint.demo import DEMO_INPUTS, demo_crew
from crewpoint.screens.browser import BrowserScreen
from crewpoint.tui.app import make_app
from crewpoint.tui.widgets.task_card import TaskCard

SIZE = (140, 40)
STORE = ".checkpoints"
PROGRAM = "research.py"
"""The user's program the fork runs with (its model slowed down a little so the run can be caught going)."""


def make_store(folder: Path) -> None:
    """A demo crew run (4 checkpoints on main) and a fork of its second checkpoint onto ``experiment``."""
    location = str(folder / STORE)
    demo_crew(delay=0.4, checkpoint=CheckpointConfig(location=location)).kickoff(inputs=DEMO_INPUTS)
    main = sorted(ops.list_checkpoints(location), key=lambda m: m.sequence)
    forked = Crew.fork(CheckpointConfig(restore_from=main[1].location), branch="experiment")
    forked.kickoff(inputs={**DEMO_INPUTS, "audience": "new hires"})
    (folder / PROGRAM).write_text(
        "from crewpoint.demo import demo_crew\n\ncrew = demo_crew(delay=0.4)\n", encoding="utf-8"
    )


async def shoot(out: Path) -> list[Path]:
    app = make_app(STORE, watch=False)
    saved: list[Path] = []

    def save(name: str) -> None:
        app.save_screenshot(name, path=str(out))
        saved.append(out / name)

    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        main = sorted((m for m in screen.metas if m.branch == "main"), key=lambda m: m.sequence)
        experiment = [m for m in screen.metas if m.branch == "experiment"]
        newest = max(experiment, key=lambda m: m.sequence)

        screen.ckpt_tree.reveal(newest.id)
        await settle(pilot)
        save("tree-with-fork.svg")

        screen.ckpt_tree.reveal(main[-1].id)
        await settle(pilot)
        await pilot.press("2")
        await settle(pilot)
        research = next(card for card in screen.query(TaskCard) if card.task_info.name == "research")
        research.query_one(
            TextArea
        ).text = (
            "- Re-running finished LLM steps wastes budget.\n- Long pipelines crash mid-way; checkpoints keep progress."
        )
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.pause()
        save("tasks-tab.svg")

        await pilot.press("f")
        await pilot.pause(0.3)
        app.screen.query_one("#fork-branch", Input).value = "tighter-research"
        app.screen.query_one("#fork-app Input", Input).value = f"{PROGRAM}:crew"
        await settle(pilot)
        save("fork-confirm.svg")

        await pilot.press("y")
        await wait_until(pilot, lambda: screen.run_panel.running and "outline done" in screen_text(pilot))
        await pilot.pause(0.1)
        save("live-run.svg")
        await wait_until(pilot, lambda: not screen.run_panel.running)
        await settle(pilot)

        screen.ckpt_tree.reveal(newest.id)
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)
        save("branch-graph.svg")
    return saved


REVIEW = """\
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.feedback import human_feedback
from crewpoint.flow import Flow, listen, start


class PostReview(Flow):
    @start()
    @human_feedback(
        message="Publish this post? Pick an outcome, or write what to change.",
        emit=["approved", "needs_changes", "rejected"],
        default_outcome="approved",
    )
    def draft(self):
        return (
            "# Checkpoints for agent crews\\n\\n"
            "Long pipelines crash mid-way; a checkpoint after each task keeps what was done.\\n"
            "Resume runs only what is left, and a fork tries a change on a branch of its own.\\n\\n"
            "[draft] Closing paragraph still to write."
        )

    @listen("approved")
    def publish(self, result):
        return "published"


flow = PostReview(checkpoint=CheckpointConfig(location=".checkpoints"))

if __name__ == "__main__":
    flow.kickoff()
"""
"""A flow whose draft waits for a person's review: the Answer dialog's picture."""


async def shoot_answer(out: Path, folder: Path) -> Path:
    """The Answer dialog on a run that waits for a person (a flow run in its own process, told to wait)."""
    folder.mkdir()
    (folder / "review.py").write_text(REVIEW, encoding="utf-8")
    env = {**os.environ, "CREWPOINT_FEEDBACK": "wait"}
    subprocess.run([sys.executable, "review.py"], cwd=folder, env=env, check=False, capture_output=True)
    back = os.getcwd()
    os.chdir(folder)  # the app's paths read as a user in the project sees them
    app = make_app(STORE, watch=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen) and screen.waiting_runs() == 1
        await pilot.press("a")
        await wait_until(pilot, lambda: app.screen is not screen)
        app.screen.query_one("#answer-feedback", TextArea).text = "Write the closing paragraph, then publish."
        app.screen.query_one("#answer-app Input", Input).value = "review.py:flow"
        await settle(pilot)
        app.save_screenshot("answer-dialog.svg", path=str(out))
    os.chdir(back)
    return out / "answer-dialog.svg"


async def shoot_cost(out: Path, folder: Path) -> list[Path]:
    """The Cost tab and the fork confirmation's estimate, on a real priced run (a 3-task crew on gpt-4o against the
    local test server, with known usage) and its fork, rewritten with fixed ids, times and durations."""
    from support.cost_runs import build, fix, fixed_id, usage_server

    folder.mkdir()
    with usage_server() as server:
        build(str(folder / "raw"), server.base_url)
    back = os.getcwd()
    os.chdir(folder)  # the app's paths read as a user in the project sees them
    fix(str(folder / "raw"), STORE)
    app = make_app(STORE, watch=False)
    saved: list[Path] = []
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        screen.ckpt_tree.reveal(fixed_id(4))  # the fork's newest checkpoint: task 3 ran twice on its chain
        await settle(pilot)
        await pilot.press("8")
        await settle(pilot)
        app.save_screenshot("cost-tab.svg", path=str(out))
        saved.append(out / "cost-tab.svg")

        await pilot.press("1")
        screen.ckpt_tree.reveal(fixed_id(3))  # main's last checkpoint, task 2's output replaced: task 3 runs again
        screen.edits.keep(fixed_id(3), outputs={1: "A shorter outline."})
        screen.edits_changed(fixed_id(3), redraw=True)
        await settle(pilot)
        screen.ckpt_tree.focus()
        await pilot.press("f")
        await settle(pilot)
        app.screen.query_one("#fork-branch", Input).value = "shorter-outline"
        app.screen.query_one("#fork-app Input", Input).value = ""
        await settle(pilot)
        app.save_screenshot("fork-estimate.svg", path=str(out))
        saved.append(out / "fork-estimate.svg")
    os.chdir(back)
    return saved


async def shoot_browser(out: Path) -> Path:
    """The app served to a real headless Chromium (``crewpoint checkpoint serve``), as a PNG of the page."""
    from chromium import Chromium, stop_group

    server = subprocess.Popen(
        [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "serve", "--location", STORE, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        assert server.stdout is not None
        url = server.stdout.readline().decode().strip()
        async with Chromium(width=1280, height=720) as page:
            await page.open(url)
            await page.wait_for_text("experiment")
            await page.evaluate("document.querySelector('.xterm-helper-textarea').focus()")
            await page.wait_for_text("Filter")  # the footer shows its keys once the page has focus
            path = out / "browser.png"
            path.write_bytes(await page.screenshot())
            return path
    finally:
        stop_group(server)
        if server.stdout is not None:
            server.stdout.close()


FLEET_PROGRAM = "fleet_crew.py"
"""The program the fleet's workers run: the demo crew, each model call slowed so runs are caught going."""


async def shoot_fleet(out: Path, folder: Path) -> Path:
    """The app on a PostgreSQL store with a fleet: three runs submitted to two workers, one worker killed with its
    runs; the tree shows a run going on a worker, one recovering and one queued, the header the counts."""
    import signal

    from pg_server import LocalServer
    from support.waiting import wait_for

    from crewpoint.tui.cli.fleet_engine import status

    folder.mkdir()
    (folder / FLEET_PROGRAM).write_text(
        "from crewpoint.demo import demo_crew\n\ncrew = demo_crew(delay=2.0)\n", encoding="utf-8"
    )
    server = await asyncio.to_thread(LocalServer().start)
    location = f"{server.url}?schema=fleet"
    env = {**os.environ, **server.env(), "CREWPOINT_CHECKPOINT_LOCATION": location}
    os.environ["PGPASSFILE"] = str(server.passfile)
    cli = [sys.executable, "-m", "crewpoint.tui.cli"]
    workers: list[subprocess.Popen[bytes]] = []

    def worker() -> subprocess.Popen[bytes]:
        argv = [*cli, "worker", "--app", f"{FLEET_PROGRAM}:crew", "--heartbeat", "0.5", "--stalled-after", "2"]
        proc = subprocess.Popen(argv, cwd=folder, env=env, stderr=subprocess.DEVNULL, start_new_session=True)
        workers.append(proc)
        return proc

    try:
        for topic in ("agents", "queues", "retries"):
            argv = [*cli, "submit", f"{FLEET_PROGRAM}:crew", "--input", f"topic={topic}", "--input", "audience=x"]
            subprocess.run(argv, cwd=folder, env=env, check=True, capture_output=True)
        first, _ = worker(), worker()

        def jobs_with_checkpoints(count: int) -> bool:
            from crewpoint.checkpoint.stores import list_checkpoints

            runs = {m.lineage for m in list_checkpoints(location)}
            return sum(1 for j in status(location)[1] if j.status == "doing" and j.lineage in runs) >= count

        await asyncio.to_thread(wait_for, lambda: jobs_with_checkpoints(2), "two runs going", 120)
        os.killpg(first.pid, signal.SIGKILL)  # a worker and its run, as a host that dies
        first.wait()
        app = make_app(location, watch=True)
        async with app.run_test(size=SIZE) as pilot:
            screen = app.screen
            assert isinstance(screen, BrowserScreen)
            await wait_until(pilot, lambda: "1 recovering" in (screen.title or ""), timeout=60)
            await wait_until(pilot, lambda: "● running on" in screen_text(pilot), timeout=30)
            screen.ckpt_tree.focus()
            await pilot.pause(0.3)
            app.save_screenshot("fleet.svg", path=str(out))
        return out / "fleet.svg"
    finally:
        for proc in workers:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        await asyncio.to_thread(server.stop)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "screenshots")
    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    for key in [k for k in os.environ if k.endswith("_API_KEY")]:
        del os.environ[key]
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        make_store(Path(tmp))
        for path in asyncio.run(shoot(out)):
            print(path)
        print(asyncio.run(shoot_answer(out, Path(tmp) / "review")))
        for path in asyncio.run(shoot_cost(out, Path(tmp) / "cost")):
            print(path)
        print(asyncio.run(shoot_browser(out)))
        print(asyncio.run(shoot_fleet(out, Path(tmp) / "fleet")))


if __name__ == "__main__":
    main()
