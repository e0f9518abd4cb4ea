"""The system parts some tests need beyond Python: a headless Chromium and the PostgreSQL server binaries.

A part that is missing raises :class:`MissingPart`, whose message names the one command that installs it.
``tests/conftest.py`` turns that error into a skip carrying the message (counted in pytest's closing line), except
under CI (``CI=true``), where everything is installed first and a missing part means a broken install: there it
stays a failure. ``scripts/system-packages`` installs the parts when it can; it is what ``make test`` and
``.ci/run`` call first.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


class MissingPart(RuntimeError):
    """A system part a test needs is not installed; the message says which and how to install it."""

    def __init__(self, what: str, package: str) -> None:
        self.what, self.package = what, package
        super().__init__(f"{what} is not installed: {install_command(package)}")


def install_command(package: str) -> str:
    """The one command that installs ``package`` for the user running the tests."""
    sudo = "" if os.geteuid() == 0 else "sudo "
    return f"{sudo}apt-get install {package}"


def under_ci() -> bool:
    """True on a CI machine (``CI=true``), where every part is installed first and a missing one is a failure."""
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def hidden(part: str) -> bool:
    """True when ``CREWPOINT_TESTS_WITHOUT`` (a comma-separated list: ``chromium``, ``postgresql``) asks the tests to
    run as on a machine without ``part``: how the skips are tried without uninstalling anything."""
    return part in {p.strip() for p in os.environ.get("CREWPOINT_TESTS_WITHOUT", "").split(",")}


def chromium() -> str:
    """The headless browser's executable."""
    if hidden("chromium"):
        raise MissingPart("chromium", "chromium")
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise MissingPart("chromium", "chromium")


def postgres_bindir() -> Path:
    """The folder of the newest installed PostgreSQL server binaries (``initdb``, ``pg_ctl``)."""
    if hidden("postgresql"):
        raise MissingPart("the PostgreSQL server (initdb)", "postgresql")
    candidates = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parent.parent.name) if Path(p).parent.parent.name.isdigit() else 0,
    )
    if candidates:
        return Path(candidates[-1]).parent
    found = shutil.which("initdb")
    if found:
        return Path(found).parent
    try:
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        out = None
    if out is not None and (Path(out.stdout.strip()) / "initdb").exists():
        return Path(out.stdout.strip())
    raise MissingPart("the PostgreSQL server (initdb)", "postgresql")
