"""``crewpoint checkpoint list`` itself, without click: the ``list`` command runs it, and so does the
``crewpoint`` entry point when ``checkpoint list`` comes with only arguments this module fully understands
(:func:`listing_args`), so that a listing builds no command line (click and what it imports are a tenth of a
big listing's time). Anything else (``--help``, ``--debug``, an unknown or repeated option, a value that looks
like an option) is click's to parse, and it gives the same bytes and exit codes
(``tests/cli/test_list_fast_path.py``)."""

from __future__ import annotations

import gc
import itertools
import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn, cast

from crewpoint.checkpoint import stores as ops
from crewpoint.providers import is_postgres_location, provider_for
from crewpoint.providers.base import CheckpointNotFound
from crewpoint.providers.files import allow_processes
from crewpoint.providers.runs import read_runs
from crewpoint.tui.cli.errors import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    bad_input,
    echo,
    emit_json,
    fail,
    one_line,
    quiet_exit,
    show_warning,
)
from crewpoint.tui.cli.tables import ListingCosts, print_listing
from crewpoint.tui.diagnostics import no_checkpoints
from crewpoint.tui.store_index import ListingStatuses, waiting_requests

if TYPE_CHECKING:
    import click

    from crewpoint.providers.base import CheckpointMeta

LIST_CHUNK = 2000
"""Rows a full ``list`` reads before it prints; the columns are as wide as the first chunk needs."""
LOCATION_ENV = "CREWPOINT_CHECKPOINT_LOCATION"
"""Where ``crewpoint checkpoint`` finds its store when no location is given (its ``--location``'s envvar)."""
HEADER = ["ID", "TIME", "BRANCH", "PARENT", "TRIGGER", "ENTITY", "PROGRESS", "SIZE", "COST", "STATUS"]


def run_list(
    ctx: click.Context | None,
    where: str | None,
    branch: str | None,
    limit: int | None,
    as_json: bool,
    chunk: int = LIST_CHUNK,
) -> None:
    """List the store at ``where`` (``ctx``: the command's, for ``--debug``; ``None`` without click)."""
    allow_processes()  # a CrewAI store listed the first time is read by two processes
    with _collecting_no_cycles():
        _list(ctx, where, branch, limit, as_json, chunk)


@contextmanager
def _collecting_no_cycles() -> Iterator[None]:
    """No cyclic garbage collection while a listing runs: its rows hold no cycles, and collecting them as they
    pile up (10,000 rows, their cells) would cost a listing a tenth of its time. Reference counting still frees
    each as it goes; the collector is on again afterwards (it is the process's, in a test too)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _list(
    ctx: click.Context | None, where: str | None, branch: str | None, limit: int | None, as_json: bool, size: int
) -> None:
    with bad_input(ctx):
        try:
            store = ops.find_store(where)
        except CheckpointNotFound:
            if where is not None and "://" not in where and os.path.isdir(where):
                fail(no_checkpoints(where))
            raise
        if limit is not None or as_json:
            metas = ops.list_checkpoints(store, branch=branch, limit=limit)
            chunks: Iterator[list[CheckpointMeta]] = iter([metas])
        else:  # a full table streams: the first rows show while a big store is still being read
            chunks = _chunks(_listed(store, branch), size)
            metas = next(chunks, [])
            chunks = itertools.chain([metas], chunks)
    runs, requests = waiting_requests(store, _runs(store))
    costs = ListingCosts()
    fleet = _fleet_states(store)
    if as_json:
        statuses = _with_fleet(ListingStatuses(runs).of(metas), metas, fleet)
        with bad_input(ctx):
            emit_json(
                [
                    {
                        **m.to_dict(),
                        **costs.figures(m.usage),
                        "status": statuses.get(m.id),
                        "request": _asked(requests.get(m.id)),
                    }
                    for m in metas
                ]
            )
        return
    if not metas:
        if branch:
            echo(f"no checkpoints on branch {branch} in {store}", err=True)
        else:
            echo(f"no checkpoints: {no_checkpoints(store)}", err=True)
        return
    widths: list[int] | None = None
    status_of = ListingStatuses(runs)
    with bad_input(ctx):
        for part in chunks:
            statuses = _with_fleet(status_of.of(part), part, fleet)
            widths = print_listing(HEADER if widths is None else None, part, statuses, widths, costs)


def _listed(store: str, branch: str | None) -> Iterator[CheckpointMeta]:
    """The store's checkpoints newest first, for the table: as rows (one tuple each, no object per field) from
    a store that lists them so (JSON, SQLite), else as its metadata. The table reads only their fields, which a
    :class:`~crewpoint.providers.listed.ListedRow` has by the same names."""
    provider = provider_for(store)
    rows = getattr(provider, "iter_list_rows", None)
    if rows is None:
        return ops.iter_checkpoints(store, branch)
    return cast("Iterator[CheckpointMeta]", rows(store, branch))


def _chunks(items: Iterator[CheckpointMeta], size: int) -> Iterator[list[CheckpointMeta]]:
    while chunk := list(itertools.islice(items, size)):
        yield chunk


LISTED_REQUEST = ("request_id", "message", "label", "method", "task_index", "outcomes", "default_outcome")
"""What ``list --json`` says of a pending request (the output under review is ``info``'s to show)."""


def _asked(request: dict[str, Any] | None) -> dict[str, Any] | None:
    return {k: request[k] for k in LISTED_REQUEST if k in request} if request is not None else None


FLEET_SHOWN = {None, "live", "crashed", "lost", "interrupted"}
"""The statuses a run's record gives that the fleet knows better while it queues, runs or recovers the run."""


def _fleet_states(store: str) -> dict[str, str]:
    """Lineage → ``queued``, ``running on HOST`` or ``recovering`` for the runs of the fleet on a PostgreSQL store
    (none elsewhere, or where the fleet's tables are missing)."""
    if not is_postgres_location(store):
        return {}
    try:
        # lazy: the fleet's engine reads its tables with psycopg, which only a PostgreSQL store has loaded
        from crewpoint.tui.cli.fleet_engine import run_states

        return run_states(store)
    except Exception:  # the fleet's states only refine a column
        return {}


def _with_fleet(statuses: dict[str, str], metas: list[CheckpointMeta], fleet: dict[str, str]) -> dict[str, str]:
    if not fleet:
        return statuses
    for meta in metas:
        word = fleet.get(meta.lineage)
        if word is not None and statuses.get(meta.id) in FLEET_SHOWN:
            statuses[meta.id] = word
    return statuses


def _runs(store: str) -> list[Any]:
    try:
        return read_runs(store)
    except Exception:  # run records only add a column
        return []


# -- the entry point's fast path ---------------------------------------------------------------------------------

_GROUP_OPTIONS = {"--location": "location", "-l": "location"}
_LIST_OPTIONS = {
    "--branch": "branch",
    "-b": "branch",
    "--limit": "limit",
    "-n": "limit",
    "--location": "list_location",
    "-l": "list_location",
}


def listing_args(args: list[str]) -> tuple[str | None, str | None, int | None, bool] | None:
    """``crewpoint``'s arguments (``sys.argv[1:]``) as the location, branch, limit and ``--json`` of a listing,
    when they are ``checkpoint [--location PATH] list [LOCATION | --location PATH] [--branch B] [--limit N]
    [--json]`` exactly as click would read them; else ``None`` (click parses them, for help, errors and every
    other command, and refuses a store named twice)."""
    if args[:1] != ["checkpoint"] or "_CREWPOINT_COMPLETE" in os.environ:
        return None
    given: dict[str, str] = {}
    rest = args[1:]
    while rest and rest[0] != "list":
        if not _take(rest, _GROUP_OPTIONS, given):
            return None
    if not rest:
        return None
    rest = rest[1:]
    positional: list[str] = []
    as_json = False
    while rest:
        arg = rest[0]
        if arg == "--json" and not as_json:
            as_json = True
            rest.pop(0)
        elif arg[:1] != "-" and arg and not positional:
            positional.append(rest.pop(0))
        elif not _take(rest, _LIST_OPTIONS, given):
            return None
    limit = given.get("limit")
    if limit is not None and not (limit.isascii() and limit.isdigit()):
        return None
    if positional and "list_location" in given:
        return None
    where = positional[0] if positional else given.get("list_location") or given.get("location")
    where = where if where is not None else os.environ.get(LOCATION_ENV) or None
    return where, given.get("branch"), None if limit is None else int(limit), as_json


def _take(rest: list[str], options: dict[str, str], given: dict[str, str]) -> bool:
    """Take the option at the head of ``rest`` (``--name VALUE``, ``-n VALUE`` or ``--name=VALUE``) into
    ``given``; False when it is not one of ``options``, is given twice, or its value could be read otherwise."""
    name, eq, value = rest[0].partition("=")
    if eq and not name.startswith("--"):
        return False
    key = options.get(name)
    if key is None or key in given:
        return False
    if eq:
        rest.pop(0)
    else:
        if len(rest) < 2:
            return False
        value = rest[1]
        del rest[:2]
    if value[:1] == "-" or not value:
        return False
    given[key] = value
    return True


def list_fast(args: list[str]) -> None:
    """Run ``crewpoint checkpoint list`` from ``args`` and exit, as the command line would, when
    :func:`listing_args` understands them; return (having done nothing) when it does not."""
    parsed = listing_args(args)
    if parsed is None:
        return
    _run_and_exit(*parsed)


def _run_and_exit(where: str | None, branch: str | None, limit: int | None, as_json: bool) -> NoReturn:
    """What the root group does around a command (``crewpoint.tui.cli.root``): warnings on one line, Ctrl-C exits
    130, a reader that goes away ends quietly, any other error is one line and exit 1."""
    warnings.showwarning = show_warning
    try:
        run_list(None, where, branch, limit, as_json)
    except KeyboardInterrupt:
        echo("crewpoint: interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except BrokenPipeError:
        quiet_exit()
    except Exception as exc:
        fail(f"{one_line(exc)} (run with --debug for the traceback)", EXIT_FAILED)
    sys.exit(0)
