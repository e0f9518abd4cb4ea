"""A machine without Chromium or the PostgreSQL binaries: their tests are skipped, each naming the command that
installs what is missing, and counted in pytest's closing line; under CI the same tests fail instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import systems

TESTS = Path(__file__).resolve().parents[1]
SELECTED = [
    "tests/app/test_serve.py::test_read_only_in_the_browser_offers_no_resume_or_fork",
    "tests/providers/test_postgres_copy.py::test_a_store_moves_into_postgres_and_back_out_whole",
]


def run_pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The two tests above in a pytest of their own, on a PATH without Chromium and with PostgreSQL hidden."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    environment = {k: v for k, v in os.environ.items() if k not in ("CI", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS")}
    environment.update(PATH=str(empty), CREWPOINT_TESTS_WITHOUT="postgresql", **env)
    argv = [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--basetemp", str(tmp_path / "t")]
    return subprocess.run(
        [*argv, *SELECTED],
        cwd=TESTS.parent,
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_chromium_or_postgresql_their_tests_skip_naming_the_command(tmp_path: Path) -> None:
    done = run_pytest(tmp_path)
    closing = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 skipped" in closing and "failed" not in closing, closing
    assert f"chromium is not installed: {systems.install_command('chromium')}" in done.stdout
    assert f"is not installed: {systems.install_command('postgresql')}" in done.stdout


def test_under_ci_a_missing_part_fails_the_run(tmp_path: Path) -> None:
    done = run_pytest(tmp_path, CI="true")
    closing = done.stdout.strip().splitlines()[-1]
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 error" in closing and "skipped" not in closing, closing  # postgres stops in its fixture
    assert "chromium is not installed" in done.stdout and "PostgreSQL server (initdb) is not installed" in done.stdout


def test_the_install_command_names_sudo_only_for_an_ordinary_user(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    assert systems.install_command("chromium") == "sudo apt-get install chromium"
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert systems.install_command("postgresql") == "apt-get install postgresql"


def test_chromium_is_looked_up_on_the_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CREWPOINT_TESTS_WITHOUT", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(systems.MissingPart, match="chromium is not installed"):
        systems.chromium()
    browser = tmp_path / "chromium"
    browser.write_text("#!/bin/sh\n")
    browser.chmod(0o755)
    assert systems.chromium() == str(browser)


def test_the_install_script_names_what_it_could_not_install_and_fails_only_under_ci(tmp_path: Path) -> None:
    tools = tmp_path / "tools"  # a machine without apt-get or Chromium
    tools.mkdir()
    for tool in ("id", "tee", "mkdir"):
        (tools / tool).symlink_to(subprocess.run(["which", tool], capture_output=True, text=True).stdout.strip())
    script = [subprocess.run(["which", "bash"], capture_output=True, text=True).stdout.strip()]
    script.append(str(TESTS.parent / "scripts" / "system-packages"))
    environment = {"PATH": str(tools), "HOME": str(tmp_path)}
    done = subprocess.run([*script, "chromium"], env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    sudo = "" if os.geteuid() == 0 else "sudo "
    assert (
        done.stderr
        == f"system-packages: chromium is not installed, its tests will be skipped: {sudo}apt-get install chromium\n"
    )
    under_ci = subprocess.run([*script, "chromium"], env={**environment, "CI": "true"}, capture_output=True, text=True)
    assert under_ci.returncode == 1 and "under CI every part must be installed" in under_ci.stderr
    unknown = subprocess.run([*script, "chrome"], env=environment, capture_output=True, text=True)
    assert unknown.returncode == 2 and "unknown part 'chrome'" in unknown.stderr
