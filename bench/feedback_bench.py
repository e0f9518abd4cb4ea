"""What answering a waiting run costs next to resuming it: ``crewpoint checkpoint answer`` and ``crewpoint checkpoint
resume`` of the same waiting checkpoint, each a whole process as a user runs it, timed from its start until its
first new checkpoint is in the store (the answer's ``human_feedback_received``, the resume's
``human_feedback_requested`` when it waits again).

Each run starts from its own copy of one store (so each finds the same state: the request unanswered, no claim),
the two alternate (each side first in every other pair) so the machine's drift lands on both, and the figure is the
median of the pairs' ratios (goal at most 1.5). The first new checkpoint is seen by watching the copy's branch
folder, where a JSON store's checkpoint appears whole (written to a hidden temp file, then renamed).
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from run import Row, bench_env

GOAL = 1.5
PAIRS = 11

PROGRAM = textwrap.dedent(
    """
    import sys

    from crewpoint.checkpoint.config import CheckpointConfig
    from crewpoint.feedback import FeedbackPending
    from crewpoint.flow import Flow, human_feedback, listen, start


    class Review(Flow):
        @start()
        def research(self):
            return "notes on owls"

        @listen(research)
        @human_feedback(message="Publish the draft?", emit=["approved", "rejected"], default_outcome="rejected")
        def draft(self, notes):
            return f"A draft from {notes}"

        @listen("approved")
        def publish(self, result):
            return "published"

        @listen("rejected")
        def redo(self, result):
            return "redone"


    flow = Review(checkpoint=CheckpointConfig(location="store"))

    if __name__ == "__main__":
        sys.exit(75 if isinstance(flow.kickoff(), FeedbackPending) else 0)
    """
)


def _crewpoint() -> list[str]:
    """The ``crewpoint`` command as installed beside this Python (else the module)."""
    script = Path(sys.executable).parent / "crewpoint"
    return [str(script)] if script.exists() else [sys.executable, "-m", "crewpoint.tui.cli"]


def prepare(folder: Path) -> tuple[Path, str]:
    """A project whose store holds one run waiting for a person; the project and the waiting checkpoint's id."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "review.py").write_text(PROGRAM)
    env = {**bench_env(), "CREWPOINT_FEEDBACK": "wait"}
    done = subprocess.run([sys.executable, "review.py"], cwd=folder, env=env, capture_output=True, text=True)
    if done.returncode != 75:
        raise RuntimeError(f"the review flow did not wait: {done.stderr.strip()[-300:]}")
    from crewpoint.checkpoint.ops import list_checkpoints

    (waiting,) = [m for m in list_checkpoints(str(folder / "store")) if m.trigger == "human_feedback_requested"]
    return folder, waiting.id


def _names(branch: Path) -> set[str]:
    return {name for name in os.listdir(branch) if not name.startswith(".")} if branch.is_dir() else set()


def first_new_checkpoint(project: Path, checkpoint_id: str, verb: str, copy: Path) -> float:
    """Seconds from starting ``crewpoint checkpoint VERB`` on a fresh copy of the store until its first new
    checkpoint is there; the process then runs to its end (not counted) before the next one starts."""
    if copy.exists():
        shutil.rmtree(copy)
    shutil.copytree(project / "store", copy / "store")
    shutil.copy(project / "review.py", copy / "review.py")
    branch = copy / "store" / "main"
    before = _names(branch)
    extra = ["--outcome", "approved"] if verb == "answer" else []
    args = [*_crewpoint(), "checkpoint", verb, checkpoint_id, "--location", "store", *extra, "--app", "review.py:flow"]
    env = {**bench_env(), "CREWPOINT_FEEDBACK": "wait"}
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=copy, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    while not _names(branch) - before:
        if child.poll() is not None and not _names(branch) - before:
            raise RuntimeError(f"{verb} wrote no checkpoint: {child.stderr.read().decode()[-300:]}")  # type: ignore[union-attr]
        time.sleep(0.0005)
    seconds = time.perf_counter() - start
    child.communicate()
    if child.returncode not in (0, 75):
        raise RuntimeError(f"{verb} failed with exit {child.returncode}")
    return seconds


def measure(folder: Path, pairs: int = PAIRS) -> list[Row]:
    project, waiting = prepare(folder / "project")
    copy = folder / "copy"
    first_new_checkpoint(project, waiting, "answer", copy)  # warm up: bytecode and the page cache
    first_new_checkpoint(project, waiting, "resume", copy)
    answers: list[float] = []
    resumes: list[float] = []
    for i in range(pairs):
        order = ("answer", "resume") if i % 2 == 0 else ("resume", "answer")
        for verb in order:
            (answers if verb == "answer" else resumes).append(first_new_checkpoint(project, waiting, verb, copy))
    ratio = statistics.median(a / r for a, r in zip(answers, resumes, strict=True))
    note = (
        f"answer {statistics.median(answers) * 1000:.0f} ms, resume {statistics.median(resumes) * 1000:.0f} ms "
        f"(medians of {pairs}, JSON store)"
    )
    return [Row("answer → first new checkpoint / resume → first new checkpoint", ratio, "×", GOAL, note)]


def bench_feedback_answer() -> list[Row]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return measure(Path(tmp))


def feedback_benches() -> list[Callable[[], list[Row]]]:
    return [bench_feedback_answer]
