"""The floor under ``crewpoint checkpoint list STORE``: the least work that prints the same bytes.

``python list_floor.py STORE`` reads what a listing reads (a JSON store's ``.index.jsonl``, a SQLite store's
``checkpoints`` table), orders it newest first, works out each run's status and prints the same table, with the
standard library only (no crewpoint import). It does none of the checks a real listing owes its user: it trusts
the index without looking at the files and the table without looking for each row's body (``--checks`` adds
those two), reads no run records and assumes every record is whole and every text plain, which is why the bench
compares its output with crewpoint's byte for byte before it reports a ratio.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from typing import Any

COLUMNS = ("id", "parent_id", "branch", "lineage", "sequence", "created_at", "trigger")
COLUMNS += ("entity_kind", "entity_name", "tasks_done", "tasks_total", "size", "usage")
HEADER = ["ID", "TIME", "BRANCH", "PARENT", "TRIGGER", "ENTITY", "PROGRESS", "SIZE", "COST", "STATUS"]
CHUNK = 2000  # crewpoint's columns are as wide as its first 2,000 rows need


def json_rows(root: str, checks: bool = False) -> list[tuple[Any, ...]]:
    """The index's rows as :data:`COLUMNS` (its size column is the file's size). ``checks``: also what a
    listing must do to trust its index, look at every checkpoint file (``lstat``), and keep only the rows whose
    file has the size and time the index recorded."""
    with open(os.path.join(root, ".index.jsonl"), "rb") as f:
        data = f.read().strip(b"\n")
    items = json.loads(b"[" + data.replace(b"\n", b",") + b"]")
    at = {name: i for i, name in enumerate(["size", "mtime_ns", *items[0]["fields"]])}
    at["size"] = 0
    picks = [at[c] for c in COLUMNS]
    unique = {item[at["id"]]: item for item in items[1:]}  # an appended line replaces an earlier one
    if checks:
        files = _files(root)
        unique = {i: item for i, item in unique.items() if files.get(i) == (item[0], item[1])}
    return [tuple(item[i] for i in picks) for item in unique.values()]


def _files(root: str) -> dict[str, tuple[int, int]]:
    """Checkpoint id → (size, mtime_ns) of each checkpoint file (``<sequence>_<time>_<id>_<parent>.json``)."""
    out = {}
    folders = [os.path.join(root, name) for name in os.listdir(root) if not name.startswith(".")]
    while folders:
        folder = folders.pop()
        for entry in os.scandir(folder):
            if entry.name.endswith(".json"):
                stat = entry.stat(follow_symlinks=False)
                out[entry.name.split("_")[2]] = (stat.st_size, stat.st_mtime_ns)
            elif entry.is_dir(follow_symlinks=False):
                folders.append(entry.path)
    return out


def sqlite_rows(path: str, checks: bool = False) -> list[tuple[Any, ...]]:
    """The table's rows as :data:`COLUMNS`. ``checks``: only the rows whose body row is there and not empty (a
    listing tells those apart without reading a body)."""
    columns = ", ".join(f"c.{c}" for c in COLUMNS)
    query = f"SELECT {columns} FROM checkpoints c"
    if checks:
        query += " JOIN bodies b ON b.id = c.id WHERE length(b.manifest) > 0"
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return con.execute(query).fetchall()
    finally:
        con.close()


def statuses(rows: list[tuple[Any, ...]]) -> dict[tuple[Any, ...], str]:
    """(lineage, branch, kind, name) → the status word of that run's branch: none, since the floor reads no run
    records and a checkpoint with no record of its run reads ``-`` (its age or its saying the work is complete
    says nothing of how its run ended)."""
    return {}


def size_text(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def cost_text(usage: str) -> str:
    """The COST cell of a usage summary: what its chain's rows cost. The floor prices only the offline model
    (nothing), the one the bench's stores record; any other model reads ``?`` here (crewpoint prices it, so the
    bench's byte comparison would tell)."""
    if not usage:
        return "-"
    try:
        chain = json.loads(usage)["chain"]
    except (ValueError, KeyError, TypeError):
        return "?"
    if not chain:
        return "-"
    if any(entry[1] != "offline" for entry in chain):
        return "?"
    return ("~" if any(entry[-1] for entry in chain) else "") + "$0.0000"


def table(rows: list[tuple[Any, ...]]) -> str:
    rows.sort(key=lambda r: (r[5], r[4], r[0]), reverse=True)
    status = statuses(rows)
    costs = {usage: cost_text(usage) for usage in {r[12] for r in rows}}
    strftime, localtime = time.strftime, time.localtime
    cells = [
        [
            r[0][:12],
            strftime("%Y-%m-%d %H:%M:%S", localtime(r[5])),
            r[2],
            r[1][:12] if r[1] else "-",
            r[6],
            f"{r[7]} {r[8]}" if r[8] and r[8] != r[7] else f"{r[7]} (unnamed)",
            f"{r[9]}/{r[10]}",
            size_text(r[11]),
            costs[r[12]],
            status.get((r[3], r[2], r[7], r[8]), "-"),
        ]
        for r in rows
    ]
    first = [HEADER, *cells[:CHUNK]]
    widths = [max(len(row[i]) for row in first) for i in range(len(HEADER))]
    line = "  ".join(f"{{:<{w}}}" for w in widths).format
    return "".join(line(*row).rstrip() + "\n" for row in [HEADER, *cells])


def main(store: str, checks: bool = False) -> None:
    rows = sqlite_rows(store, checks) if os.path.isfile(store) else json_rows(store, checks)
    sys.stdout.write(table(rows))


if __name__ == "__main__":
    main(sys.argv[1], "--checks" in sys.argv[2:])
