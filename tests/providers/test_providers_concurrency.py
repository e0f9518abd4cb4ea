"""Checkpoint stores under concurrent use by real processes and threads."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.waiting import wait_for

from crewpoint.providers import (
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
    DamagedCheckpoint,
    JsonProvider,
    SqliteProvider,
)

WRITER = r"""
import sys, time
from pathlib import Path
from crewpoint.providers import CheckpointMeta, CheckpointRecord, provider_for

location, tag, count, size, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
branch = sys.argv[6] if len(sys.argv) > 6 else "main"
Path(go + "." + tag).touch()  # ready: started and imported
while not Path(go).exists():
    time.sleep(0.001)
provider = provider_for(location)
parent = None
for n in range(1, count + 1):
    cid = f"{tag}-{n:05d}"
    meta = CheckpointMeta(id=cid, parent_id=parent, branch=branch, lineage=tag, sequence=n,
                          created_at=time.time(), trigger="task_completed", entity_name=tag)
    body = {"writer": tag, "n": n, "events": [{"i": i, "pad": "x" * 64} for i in range(n % 40)],
            "blob": "y" * size}
    provider.write(location, CheckpointRecord(meta, body))
    parent = cid
"""


def start_writers(location: str, go: Path, jobs: list[tuple[str, int, int, str]]) -> list[subprocess.Popen[bytes]]:
    return [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, location, tag, str(count), str(size), str(go), branch],
            stderr=subprocess.PIPE,
        )
        for tag, count, size, branch in jobs
    ]


def ready(go: Path, processes: list[subprocess.Popen[bytes]]) -> None:
    """Wait until every writer has started and waits for ``go``, so that they begin writing together."""
    tags = [process.args[4] for process in processes]  # type: ignore[index]
    wait_for(lambda: all(Path(f"{go}.{tag}").exists() for tag in tags), "every writer to be ready", timeout=120)


def wait_all(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err.decode()


def assert_overlapped(metas: list[CheckpointMeta]) -> None:
    """The two writers really ran at the same time: each wrote while the other was writing."""
    spans = {}
    for tag in {m.lineage for m in metas}:
        times = [m.created_at for m in metas if m.lineage == tag]
        spans[tag] = (min(times), max(times))
    (a_start, a_end), (b_start, b_end) = spans.values()
    assert a_start < b_end and b_start < a_end, spans


def expected_body(tag: str, n: int, size: int) -> dict[str, object]:
    return {"writer": tag, "n": n, "events": [{"i": i, "pad": "x" * 64} for i in range(n % 40)], "blob": "y" * size}


def test_two_processes_write_one_sqlite_file_at_once(tmp_path: Path) -> None:
    location = str(tmp_path / "shared.db")
    go = tmp_path / "go"
    writers = start_writers(location, go, [("alpha", 300, 100, "main"), ("beta", 300, 100, "main")])
    ready(go, writers)
    go.touch()
    wait_all(writers)

    provider = SqliteProvider()
    metas = provider.list(location)
    assert len(metas) == 600
    assert_overlapped(metas)
    for tag in ("alpha", "beta"):
        mine = [m for m in metas if m.lineage == tag]
        assert [m.sequence for m in mine] == list(range(300, 0, -1))
    for meta in metas:
        record = provider.read(location, meta.id)
        assert record.body == expected_body(meta.lineage, meta.sequence, 100)
    assert provider.collect_garbage(location) == 0
    assert list(tmp_path.glob(".shared.db.*")) == []
    provider.close()


def test_two_processes_write_branches_of_one_json_folder(tmp_path: Path) -> None:
    location = str(tmp_path / "store")
    go = tmp_path / "go"
    writers = start_writers(location, go, [("alpha", 150, 50, "main"), ("beta", 150, 50, "fork/beta")])
    ready(go, writers)
    go.touch()
    wait_all(writers)

    provider = JsonProvider()
    metas = provider.list(location)
    assert len(metas) == 300
    assert_overlapped(metas)
    assert {m.branch for m in metas} == {"main", "fork/beta"}
    assert all(m.damaged is None for m in metas)
    for meta in metas:
        assert provider.read(meta.location).body == expected_body(meta.lineage, meta.sequence, 50)
    assert not [p for p in Path(location).rglob("*.tmp")]


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_a_reader_never_sees_a_partial_checkpoint(tmp_path: Path, kind: str) -> None:
    location = str(tmp_path / ("store" if kind == "json" else "store.db"))
    go = tmp_path / "go"
    size = 300_000
    (writer,) = start_writers(location, go, [("solo", 60, size, "main")])
    go.touch()
    provider = JsonProvider() if kind == "json" else SqliteProvider()
    reads = 0
    deadline = time.monotonic() + 60
    while (writer.poll() is None or reads == 0) and time.monotonic() < deadline:
        try:
            metas = provider.list(location)
        except CheckpointNotFound:
            continue
        for meta in metas[:3]:
            try:
                record = provider.read(meta.location)
            except CheckpointNotFound:
                continue  # pruned or replaced under us is fine; a damaged read is not
            except DamagedCheckpoint as exc:  # pragma: no cover - the failure this test looks for
                pytest.fail(f"read a partial checkpoint: {exc}")
            assert record.body == expected_body("solo", meta.sequence, size)
            reads += 1
    wait_all([writer])
    assert reads > 0
    assert len(provider.list(location)) == 60
    if isinstance(provider, SqliteProvider):
        provider.close()


def test_threads_share_one_sqlite_provider(tmp_path: Path) -> None:
    location = str(tmp_path / "store.db")
    provider = SqliteProvider()
    errors: list[BaseException] = []

    def work(tag: str) -> None:
        try:
            for n in range(1, 51):
                meta = CheckpointMeta(
                    id=f"{tag}-{n}",
                    parent_id=None,
                    branch=tag,
                    lineage=tag,
                    sequence=n,
                    created_at=time.time(),
                    trigger="t",
                )
                provider.write(location, CheckpointRecord(meta, {"n": n, "items": list(range(n))}))
                assert provider.read(location, f"{tag}-{n}").body["n"] == n
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert errors == []
    assert len(provider.list(location)) == 200
    assert len(provider._stores) == 1
    provider.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")
def test_a_forked_child_gets_its_own_sqlite_connection(tmp_path: Path) -> None:
    location = str(tmp_path / "store.db")
    provider = SqliteProvider()

    def meta(cid: str, n: int) -> CheckpointMeta:
        return CheckpointMeta(
            id=cid, parent_id=None, branch="main", lineage=cid, sequence=n, created_at=time.time(), trigger="t"
        )

    provider.write(location, CheckpointRecord(meta("parent-1", 1), {"who": "parent"}))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 1
        try:
            provider.write(location, CheckpointRecord(meta("child-1", 1), {"who": "child"}))
            code = 0 if provider.read(location, "parent-1").body == {"who": "parent"} else 2
        finally:
            os._exit(code)
    provider.write(location, CheckpointRecord(meta("parent-2", 2), {"who": "parent"}))
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert provider.read(location, "child-1").body == {"who": "child"}
    assert {m.id for m in provider.list(location)} == {"parent-1", "parent-2", "child-1"}
    provider.close()
