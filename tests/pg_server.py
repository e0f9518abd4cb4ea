"""A throw-away PostgreSQL server for tests, benchmarks and trying crewpoint out.

The machine's PostgreSQL binaries (``/usr/lib/postgresql/<version>/bin``, or ``pg_config --bindir``) make a
cluster in a temporary folder with ``initdb`` and run it with ``pg_ctl`` on a free port of 127.0.0.1 and on a
unix socket inside that folder. ``initdb`` refuses to run as root, so under root the server runs as the
``postgres`` user (created by the Debian package). Connections over TCP need a password: it is random, kept in a
``.pgpass`` file (mode 0600) that ``PGPASSFILE`` points at, and never appears in a location.

The tests share one server per test process (:func:`session_server`): under pytest-xdist each worker starts its
own on first use and stops it when the worker ends; every test gets a schema of its own on it (:func:`store_url`).
A machine without the binaries raises :class:`BinariesMissing`, which the tests report as a skip naming the
package to install (a failure under CI).

A watchdog process holds a pipe to the process that started the server; when that process ends, however it
ends (even by ``kill -9``), the pipe closes and the watchdog stops the server and removes the folder.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from support import systems
from support.systems import MissingPart

SERVER_USER = "postgres"
DATABASE = "crewpoint"
USER = "crewpoint"

_WATCHDOG = r"""
import os, shutil, subprocess, sys
sys.stdin.buffer.read()  # returns when the process that started the server ends, however it ends
command = sys.argv[1:]
subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
shutil.rmtree(os.environ["CREWPOINT_PG_FOLDER"], ignore_errors=True)
"""


class ServerError(RuntimeError):
    """The server could not be started; the message says why and what to do."""


class BinariesMissing(MissingPart, ServerError):
    """The machine has no PostgreSQL server binaries (a skip in the tests, except under CI)."""


def find_bindir() -> Path:
    """The folder of the newest installed PostgreSQL server binaries."""
    try:
        return systems.postgres_bindir()
    except MissingPart as missing:
        raise BinariesMissing(missing.what, missing.package) from None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _as_server_user() -> list[str]:
    if os.geteuid() != 0:
        return []
    if shutil.which("runuser"):
        return ["runuser", "-u", SERVER_USER, "--"]
    return ["setpriv", f"--reuid={SERVER_USER}", f"--regid={SERVER_USER}", "--init-groups", "--"]


@dataclass
class LocalServer:
    """One PostgreSQL cluster in a temporary folder. Use :meth:`start` and :meth:`stop` (or ``with``)."""

    port: int = 0
    folder: Path = field(default_factory=lambda: Path())
    password: str = ""
    fsync: bool = True
    _watchdog: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """The location of the server's crewpoint database (no password: it comes from ``PGPASSFILE``)."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"

    @property
    def socket_dir(self) -> Path:
        return self.folder / "pg"

    @property
    def passfile(self) -> Path:
        return self.folder / "pgpass"

    @property
    def log(self) -> Path:
        return self.folder / "pg" / "server.log"

    def env(self) -> dict[str, str]:
        """Environment variables that let libpq clients log in (``PGPASSFILE``)."""
        return {"PGPASSFILE": str(self.passfile)}

    def start(self) -> LocalServer:
        bindir = find_bindir()
        self.folder = Path(tempfile.mkdtemp(prefix="crewpoint-pg-"))
        os.chmod(self.folder, 0o711)  # the server user passes through to its own folder
        pg = self.socket_dir
        pg.mkdir(mode=0o700)
        self.password = os.urandom(18).hex()
        pwfile = pg / "pwfile"
        pwfile.write_text(self.password + "\n")
        if os.geteuid() == 0:
            shutil.chown(pg, SERVER_USER, SERVER_USER)
            shutil.chown(pwfile, SERVER_USER, SERVER_USER)
        self._start_watchdog(bindir)
        as_user = _as_server_user()
        data = pg / "data"
        self._run(
            [
                *as_user,
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                USER,
                "-E",
                "UTF8",
                "--locale=C",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                f"--pwfile={pwfile}",
                "--no-sync",
            ],
            "initdb",
        )
        pwfile.unlink()
        fd = os.open(self.passfile, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(f"127.0.0.1:*:*:{USER}:{self.password}\nlocalhost:*:*:{USER}:{self.password}\n")
        options = (
            f"-c listen_addresses=127.0.0.1 -k {pg} -c max_connections=300 -c fsync={'on' if self.fsync else 'off'}"
        )
        for attempt in range(5):
            self.port = free_port()
            try:
                self._run(
                    [
                        *as_user,
                        str(bindir / "pg_ctl"),
                        "-D",
                        str(data),
                        "-l",
                        str(self.log),
                        "-w",
                        "-t",
                        "60",
                        "-o",
                        f"-p {self.port} {options}",
                        "start",
                    ],
                    "pg_ctl start",
                )
                break
            except ServerError:
                if attempt == 4:
                    raise
        self._run(
            [*as_user, str(bindir / "createdb"), "-h", str(pg), "-p", str(self.port), "-U", USER, DATABASE], "createdb"
        )
        return self

    def restart(self) -> None:
        """Stop the server (ending every session) and start it again on the same port."""
        command = [*_as_server_user(), str(find_bindir() / "pg_ctl"), "-D", str(self.socket_dir / "data")]
        self._run([*command, "-l", str(self.log), "-w", "-m", "fast", "restart"], "pg_ctl restart")

    def _start_watchdog(self, bindir: Path) -> None:
        stop = [
            *_as_server_user(),
            str(bindir / "pg_ctl"),
            "-D",
            str(self.socket_dir / "data"),
            "-m",
            "immediate",
            "-w",
            "stop",
        ]
        self._watchdog = subprocess.Popen(
            [sys.executable, "-c", _WATCHDOG, *stop],
            stdin=subprocess.PIPE,
            env={**os.environ, "CREWPOINT_PG_FOLDER": str(self.folder)},
            start_new_session=True,  # a Ctrl-C to the test run does not stop it before it has cleaned up
        )

    def _run(self, command: list[str], what: str) -> None:
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            detail = (done.stderr or done.stdout).strip().replace(self.password, "***") if self.password else ""
            raise ServerError(f"{what} failed ({done.returncode}): {detail}\n{log}")

    def stop(self) -> None:
        """Stop the server and remove its folder (the watchdog does both once the pipe closes)."""
        watchdog, self._watchdog = self._watchdog, None
        if watchdog is None:
            return
        assert watchdog.stdin is not None
        watchdog.stdin.close()
        watchdog.wait(timeout=120)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()


_session: LocalServer | None = None


def session_server() -> LocalServer:
    """The server of this test run, started on first use (and ``PGPASSFILE`` set for every client of it).

    It is stopped by :func:`stop_session_server` at the end of the run, or by its watchdog if the run dies.
    """
    global _session
    if _session is None:
        server = LocalServer().start()
        os.environ.update(server.env())
        _session = server
    return _session


def stop_session_server() -> None:
    global _session
    server, _session = _session, None
    if server is not None:
        server.stop()


def store_url(name: str, server: LocalServer | None = None) -> str:
    """A location for a fresh store on the session's server: its own schema, named after ``name``."""
    import re

    schema = "t_" + re.sub(r"[^a-z0-9_]", "_", name.lower())[:40]
    return f"{(server or session_server()).url}?schema={schema}"
