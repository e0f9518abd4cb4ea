"""Start a throw-away PostgreSQL server to try crewpoint's PostgreSQL store; Ctrl-C stops it and removes it.

    python scripts/pg_local.py

It prints the location to use and the ``PGPASSFILE`` to export in the shells that use it (the password is in
that file, never in the location). The server runs from the machine's PostgreSQL binaries (the ``postgresql``
package), as the ``postgres`` user when started by root, on a free port of 127.0.0.1.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from pg_server import LocalServer, ServerError


def main() -> int:
    try:
        server = LocalServer().start()
    except ServerError as exc:
        print(f"cannot start PostgreSQL: {exc}", file=sys.stderr)
        return 1
    try:
        print(f"export PGPASSFILE={server.passfile}")
        print(f"export CREWPOINT_CHECKPOINT_LOCATION={server.url}")
        print(f"# crewpoint checkpoint --location {server.url}", flush=True)
        print("PostgreSQL is running; Ctrl-C stops it and removes its folder.", file=sys.stderr, flush=True)
        signal.sigwait({signal.SIGINT, signal.SIGTERM})
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    sys.exit(main())
