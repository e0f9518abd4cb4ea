"""In a real terminal (tmux): from the command to the first drawn checkpoint row, on large stores.

    python bench/terminal_first_row.py [FOLDER]

Makes the stores in FOLDER once (1,000 and 10,000 JSON, 10,000 and 100,000 SQLite), then for each starts
``crewpoint checkpoint --location STORE`` in a detached 80x24 tmux session and reads the pane until a checkpoint
row shows. Polls the pane every 5 ms: this is a timing, not a test. Prints the median of five.
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the shared helpers (support)

from support.stores import fill_store

ROW = re.compile(r"[├└]─ (▶ |▼ )?\d+/\d+  ")
"""A checkpoint row of the tree: its progress comes first."""
STORES = {"1,000 JSON": ("json", 1000), "10,000 JSON": ("json", 10_000), "10,000 SQLite": ("db", 10_000)}
BIG = {"100,000 SQLite": ("db", 100_000)}


def make(folder: Path, kind: str, count: int) -> str:
    from crewpoint.providers import JsonProvider, SqliteProvider

    path = folder / (f"s{count}.db" if kind == "db" else f"s{count}")
    if not path.exists():
        fill_store(SqliteProvider() if kind == "db" else JsonProvider(fsync=False), str(path), count)
    return str(path)


def first_row(location: str, timeout: float = 30.0) -> float:
    session = f"bench-{uuid.uuid4().hex[:8]}"
    command = f"{sys.executable} -m crewpoint.tui.cli checkpoint --location {location}"
    started = time.perf_counter()
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", command], check=True)
    try:
        while time.perf_counter() - started < timeout:
            pane = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True).stdout
            if ROW.search(pane):
                return time.perf_counter() - started
            time.sleep(0.005)
        raise TimeoutError(f"no checkpoint row from {location} in {timeout} s")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def main() -> None:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "bench-stores").resolve()
    folder.mkdir(parents=True, exist_ok=True)
    os.chdir(folder)
    for name, (kind, count) in {**STORES, **BIG}.items():
        location = make(folder, kind, count)
        first_row(location)  # warm the file cache
        times = [first_row(location) for _ in range(5)]
        print(f"{name:>16}: first checkpoint row after {statistics.median(times):.2f} s (min {min(times):.2f})")


if __name__ == "__main__":
    main()
