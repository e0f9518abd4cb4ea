"""The ``crewpoint`` command. Headless commands never import textual; the app is imported only to run it.

Exit codes: 0 success, 1 the run or command failed, 2 bad input (a wrong path, an unknown id, a damaged or
newer-version checkpoint), 130 interrupted.

Heavy modules (pydantic, the engine, rich) are imported inside the commands so ``crewpoint --help`` stays fast.
"""

from __future__ import annotations

import itertools
import json
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NoReturn

import click

from crewpoint.tui.diagnostics import ExitCode
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.ops import CheckpointInfo, DiffEntry, PreparedRun
    from crewpoint.providers.base import CheckpointMeta

EXIT_FAILED = ExitCode.FAILED
EXIT_BAD_INPUT = ExitCode.BAD_INPUT
EXIT_INTERRUPTED = ExitCode.INTERRUPTED


def fail(message: str, code: int = EXIT_BAD_INPUT) -> NoReturn:
    """One line on stderr, no traceback, and exit."""
    click.echo(f"crewpoint: {visible(message, one_line=True)}", err=True)
    sys.exit(code)


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _debug(ctx: click.Context) -> bool:
    return bool((ctx.find_root().obj or {}).get("debug"))


@contextmanager
def _bad_input(ctx: click.Context) -> Iterator[None]:
    """Errors a user can meet become one line on stderr and exit 2 (a traceback with ``--debug``)."""
    from crewpoint.providers.base import CheckpointError

    try:
        yield
    except (CheckpointError, ValueError, OSError, LookupError) as exc:
        if _debug(ctx):
            raise
        fail(one_line(exc), EXIT_BAD_INPUT)


def _emit_json(data: Any) -> None:
    """JSON on stdout; the control characters JSON leaves as they are (DEL, C1) are written as ``\\u`` escapes."""
    text = json.dumps(data, indent=2, ensure_ascii=False, default=str)
    click.echo("".join(f"\\u{ord(c):04x}" if "\x7f" <= c <= "\x9f" else c for c in text))


class _Main(click.Group):
    """The root group: an unexpected error is one line (its traceback with ``--debug``); Ctrl-C exits 130."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.ClickException, click.exceptions.Exit, click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("crewpoint: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except BrokenPipeError:  # the reader went away (``crewpoint checkpoint list | head``)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(EXIT_FAILED)
        except Exception as exc:
            if _debug(ctx):
                raise
            fail(f"{one_line(exc)} (run with --debug for the traceback)", EXIT_FAILED)


@click.group(cls=_Main, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="crewpoint", prog_name="crewpoint")
@click.option("--debug", is_flag=True, help="Show tracebacks instead of one-line errors.")
@click.pass_context
def main(ctx: click.Context, debug: bool) -> None:
    """crewpoint: durable multi-agent runs.

    \b
    Exit codes: 0 ok, 1 the run failed, 2 bad input, 130 interrupted.
    Data goes to stdout, diagnostics to stderr; NO_COLOR turns colours off.
    """
    ctx.ensure_object(dict)
    ctx.obj["debug"] = debug


@main.command()
@click.option("--location", default="./.checkpoints", show_default=True, help="Where checkpoints are written.")
@click.option("--delay", default=0.0, show_default=True, type=float, help="Seconds per offline LLM call.")
@click.option(
    "--provider",
    type=click.Choice(["json", "sqlite"]),
    default="json",
    show_default=True,
    help="Checkpoint storage.",
)
@click.option(
    "--live",
    is_flag=True,
    help="Open the app on a fresh demo store (a run and a fork) while a slow demo run writes into it.",
)
@click.option("--force", is_flag=True, help="With --live: replace LOCATION even when it holds other things.")
@click.pass_context
def demo(ctx: click.Context, location: str, delay: float, provider: str, live: bool, force: bool) -> None:
    """Run the bundled example crew and flow on the offline model, checkpointing as they go."""
    from crewpoint.demo import run_demo

    if provider == "sqlite" and location == "./.checkpoints":
        location = "./.checkpoints.db"
    if live:
        _live_demo(location, provider, delay or 3.0, force=force)
        return
    from crewpoint.events import CheckpointFailedEvent, event_bus

    lost: list[str] = []

    def on_failed(source: Any, event: CheckpointFailedEvent) -> None:
        lost.append(event.error or "unknown error")

    event_bus.register(CheckpointFailedEvent, on_failed)
    try:
        result, flow_result = run_demo(location=location, delay=delay, provider=provider)
    except KeyboardInterrupt:
        click.echo("interrupted: resume from the latest checkpoint to continue", err=True)
        sys.exit(130)
    except Exception as exc:
        if ctx.obj.get("debug"):
            raise
        fail(str(exc), EXIT_FAILED)
    finally:
        event_bus.off(on_failed)
    for output in result.tasks_output:
        click.echo(f"== {output.name or output.description} ({output.agent})")
        click.echo(output.raw)
        click.echo()
    click.echo(f"== triage flow\n{flow_result}")
    if lost:  # the runs finished, but not every checkpoint reached the store
        plural = "s were" if len(lost) != 1 else " was"
        fail(f"{len(lost)} checkpoint{plural} not written to {location}: {lost[-1]}", EXIT_FAILED)
    click.echo(f"\ncheckpoints: {location}", err=True)


def _clear_demo_location(location: str, force: bool) -> None:
    """Make room for a fresh demo store: an empty folder, nothing, or a demo store made earlier is replaced;
    anything else only with ``force``."""
    import shutil

    from crewpoint.demo import is_demo_store

    if os.path.islink(location):
        fail(f"{location} is a link: choose another --location")
    if os.path.isdir(location):
        if os.listdir(location) and not is_demo_store(location) and not force:
            fail(
                f"{location} is not empty and is not a demo store: choose another --location, "
                "or add --force to delete what it holds"
            )
        shutil.rmtree(location)
    elif os.path.exists(location):
        if not is_demo_store(location) and not force:
            fail(f"{location} exists and is not a demo store: choose another --location, or add --force to replace it")
        for path in (location, f"{location}-wal", f"{location}-shm"):
            if os.path.exists(path):
                os.remove(path)


def _live_demo(location: str, provider: str, delay: float, *, force: bool = False) -> None:
    """A finished run and a fork in a fresh store, a slow run writing into it, and the app watching it all."""
    import subprocess

    from crewpoint.demo import seed_demo_store

    _clear_demo_location(location, force)
    click.echo(f"making a demo store at {location} …", err=True)
    seed_demo_store(location, provider)
    child = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "crewpoint.tui.cli",
            "demo",
            "--location",
            location,
            "--provider",
            provider,
            "--delay",
            str(delay),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        from crewpoint.tui.app import make_app

        make_app(location).run()
    finally:
        if child.poll() is None:
            child.terminate()
            child.wait(timeout=10)


# -- crewpoint checkpoint ----------------------------------------------------------------------------------------

LOCATION_HELP = (
    "Checkpoint folder, SQLite database or postgresql:// URL (default: $CREWPOINT_CHECKPOINT_LOCATION, else"
    " ./.checkpoints, else ./.checkpoints.db)."
)


@main.group(invoke_without_command=True)
@click.option(
    "--location", "-l", metavar="PATH", default=None, envvar="CREWPOINT_CHECKPOINT_LOCATION", help=LOCATION_HELP
)
@click.option("--read-only", is_flag=True, help="Open the app with resume, fork, edit, cancel and prune turned off.")
@click.pass_context
def checkpoint(ctx: click.Context, location: str | None, read_only: bool) -> None:
    """Browse checkpoints in the terminal app; or list, inspect, resume, fork, compare and prune them.

    \b
    Without a subcommand this opens the terminal app on the store.
    IDs may be given by a unique prefix; an ambiguous prefix lists the matches.
    Exit codes: 0 ok, 1 the run failed, 2 bad input, 130 interrupted.
    """
    ctx.ensure_object(dict)
    ctx.obj["location"] = location
    if ctx.invoked_subcommand is not None:
        return
    with _bad_input(ctx):
        from crewpoint.checkpoint.ops import find_store
        from crewpoint.providers.base import CheckpointNotFound
        from crewpoint.tui.diagnostics import no_checkpoints

        try:
            store = find_store(location)
        except CheckpointNotFound:
            if location is not None and os.path.isdir(location):
                fail(no_checkpoints(location))
            raise
    try:
        from crewpoint.tui.app import make_app
    except ImportError as exc:
        if _debug(ctx):
            raise
        fail(f"the terminal app cannot start: {one_line(exc)}", EXIT_FAILED)
    make_app(store, read_only=read_only).run()


def _location_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--location", "-l", metavar="PATH", default=None, help=LOCATION_HELP)(fn)


def _location(ctx: click.Context, given: str | None) -> str | None:
    return given if given is not None else (ctx.obj or {}).get("location")


# -- list ------------------------------------------------------------------------------------------------------


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def _short_id(checkpoint_id: str) -> str:
    """An id as list views show it: crewpoint's first 12 characters; CrewAI's ids (``<time>_<uuid8>``) whole,
    since their unique part is at the end."""
    return checkpoint_id if "_" in checkpoint_id else checkpoint_id[:12]


def _written_by(meta: CheckpointMeta) -> str:
    if meta.version.startswith("crewai "):
        return f"{meta.version} (a CrewAI store, read-only)"
    if meta.version.startswith("copy of crewai "):
        return f"crewpoint, a {meta.version} checkpoint"
    return f"crewpoint {meta.version or '?'}, schema {meta.schema_version}"


def _row(meta: CheckpointMeta) -> list[str]:
    return [visible(cell, one_line=True) for cell in _cells(meta)]


def _cells(meta: CheckpointMeta) -> list[str]:
    if meta.damaged:
        return [
            _short_id(meta.id),
            _when(meta.created_at),
            meta.branch or "?",
            "-",
            "DAMAGED",
            meta.damaged,
            "-",
            _size(meta.size),
        ]
    entity = f"{meta.entity_kind} {meta.entity_name}".strip()
    progress = f"{meta.tasks_done}/{meta.tasks_total}"
    parent = _short_id(meta.parent_id) if meta.parent_id else "-"
    when = _when(meta.created_at)
    return [_short_id(meta.id), when, meta.branch, parent, meta.trigger, entity, progress, _size(meta.size)]


def _table(header: list[str] | None, rows: list[list[str]], widths: list[int] | None = None) -> list[int]:
    """Print ``rows`` (after ``header``, when given) in columns; ``widths`` keeps the columns of earlier rows.
    Returns the widths used."""
    shown = [header, *rows] if header is not None else rows
    if widths is None:
        widths = [max(len(str(r[i])) for r in shown) for i in range(len(shown[0]))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in shown]
    click.echo("\n".join(lines))  # one write per chunk: listing 10,000 rows stays fast
    return widths


@checkpoint.command("list")
@click.argument("location_arg", metavar="[LOCATION]", required=False)
@click.option("--branch", "-b", default=None, help="Only this branch.")
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="Show at most N checkpoints.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array of checkpoint metadata.")
@click.pass_context
def list_command(
    ctx: click.Context, location_arg: str | None, branch: str | None, limit: int | None, as_json: bool
) -> None:
    """List checkpoints, newest first (reads no checkpoint bodies).

    \b
    Columns: id, time, branch, parent, trigger, entity, progress (tasks done/total), size, and the status of
    the run that wrote it (live, done, interrupted, crashed, failed; - when unknown).
    """
    from crewpoint.checkpoint import ops
    from crewpoint.providers.base import CheckpointNotFound
    from crewpoint.tui.diagnostics import no_checkpoints

    where = _location(ctx, location_arg)
    with _bad_input(ctx):
        try:
            store = ops.find_store(where)
        except CheckpointNotFound:
            if where is not None and os.path.isdir(where):
                fail(no_checkpoints(where))
            raise
        if limit is not None or as_json:
            metas = ops.list_checkpoints(store, branch=branch, limit=limit)
            chunks: Iterator[list[CheckpointMeta]] = iter([metas])
        else:  # a full table streams: the first rows show while a big store is still being read
            chunks = _chunks(ops.iter_checkpoints(store, branch), LIST_CHUNK)
            metas = next(chunks, [])
            chunks = itertools.chain([metas], chunks)
    runs = _runs(store)
    if as_json:
        statuses = _statuses(metas, runs)
        _emit_json([{**m.to_dict(), "status": statuses.get(m.id)} for m in metas])
        return
    if not metas:
        if branch:
            click.echo(f"no checkpoints on branch {branch} in {store}", err=True)
        else:
            click.echo(f"no checkpoints: {no_checkpoints(store)}", err=True)
        return
    header = ["ID", "TIME", "BRANCH", "PARENT", "TRIGGER", "ENTITY", "PROGRESS", "SIZE", "STATUS"]
    widths: list[int] | None = None
    with _bad_input(ctx):
        for chunk in chunks:
            statuses = _statuses(chunk, runs)
            rows = [[*_row(m), statuses.get(m.id, "-")] for m in chunk]
            widths = _table(header if widths is None else None, rows, widths)


LIST_CHUNK = 2000
"""Rows a full ``list`` reads before it prints; the columns are as wide as the first chunk needs."""


def _chunks(items: Iterator[CheckpointMeta], size: int) -> Iterator[list[CheckpointMeta]]:
    while chunk := list(itertools.islice(items, size)):
        yield chunk


def _runs(store: str) -> list[Any]:
    from crewpoint.providers.runs import read_runs

    try:
        return read_runs(store)
    except Exception:  # run records only add a column
        return []


def _statuses(metas: list[CheckpointMeta], runs: list[Any]) -> dict[str, str]:
    """Checkpoint id → the status of the run that wrote it, from the store's run records."""
    from crewpoint.tui.widgets.store_index import StoreIndex

    return StoreIndex.build(metas, "", runs).statuses()


# -- info ------------------------------------------------------------------------------------------------------


def _bar(done: int, total: int, width: int = 20) -> str:
    filled = round(width * done / total) if total else 0
    percent = f"{100 * done // total}%" if total else "-"
    return f"[{'#' * filled}{'-' * (width - filled)}] {done}/{total} {percent}"


def _indent(text: str, prefix: str) -> str:
    return "\n".join(prefix + line for line in str(text).splitlines() or [""])


def _say(text: str = "") -> None:
    """A line of ``info``: checkpoint text with its control characters shown, not sent."""
    click.echo(visible(text))


def _print_info(info: CheckpointInfo, lineage: list[CheckpointMeta]) -> None:
    meta = info.meta
    done, total = info.progress
    unit = {"crew": "tasks", "flow": "methods", "agent": "run"}.get(info.kind, "steps")
    rows = [
        ("checkpoint", meta.id),
        ("location", meta.location or "-"),
        ("created", _when(meta.created_at)),
        ("branch", f"{meta.branch} (sequence {meta.sequence})"),
        ("parent", meta.parent_id or "- (first checkpoint of its run)"),
        ("lineage", meta.lineage),
        ("trigger", meta.trigger),
        ("entity", f"{info.kind} {info.name}"),
        ("written by", _written_by(meta)),
        ("progress", f"{_bar(done, total)} {unit} done"),
    ]
    for key, value in rows:
        _say(f"{key:<11} {value}")
    if len(lineage) > 1:
        _say("\nancestry (newest first)")
        for m in lineage:
            _say(f"  {_short_id(m.id)}  {m.branch:<12} {m.trigger:<20} {m.tasks_done}/{m.tasks_total}")
    _say("\ninputs")
    if info.inputs:
        for key, value in info.inputs.items():
            _say(f"  {key} = {value}")
    else:
        _say("  (none)")
    missing = [p for p in info.placeholders if p not in info.inputs]
    if missing:
        _say(f"  placeholders without a value: {', '.join(missing)}")
    if info.tasks:
        _say(f"\n{'tasks' if info.kind == 'crew' else 'run'}")
        for task in info.tasks:
            status = "[done]   " if task.done else "[pending]"
            agent = f" ({task.agent})" if task.agent else ""
            _say(f"  {status} {task.index + 1}. {task.name}{agent}")
            if task.context is not None:
                _say(f"              context: {', '.join(str(i + 1) for i in task.context) or 'none'}")
            if task.output is not None:
                _say(_indent(_clip(task.output, 400), "              "))
    if info.kind == "flow":
        _say("\nflow state")
        _say(_indent(json.dumps(info.flow_state, indent=2, ensure_ascii=False, default=str), "  "))
        _say("\nmethod outputs")
        for i, (name, value) in enumerate(info.method_outputs):
            _say(f"  {i + 1}. {name}: {_clip(json.dumps(value, ensure_ascii=False, default=str), 200)}")
        if not info.method_outputs:
            _say("  (none yet)")
    _say(f"\nevents recorded: {len(info.events)}")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


@checkpoint.command()
@click.argument("ref", metavar="[PATH | DB#ID | DIR | ID]", required=False)
@_location_option
@click.option("--json", "as_json", is_flag=True, help="Print the checkpoint as JSON.")
@click.pass_context
def info(ctx: click.Context, ref: str | None, location: str | None, as_json: bool) -> None:
    """Show one checkpoint: metadata, ancestry, inputs and each task's status and output.

    A folder or database shows its latest checkpoint; an id (or unique prefix) is looked up in --location.
    """
    from crewpoint.checkpoint import ops

    with _bad_input(ctx):
        where = _location(ctx, location)
        record = ops.load(ref if ref is not None else ops.find_store(where), where)
        described = ops.describe(record)
        lineage = ops.ancestors(ops.store_of(record), record.meta.id)
    if as_json:
        data = described.to_dict()
        data["ancestry"] = [m.id for m in lineage]
        _emit_json(data)
        return
    _print_info(described, lineage)


# -- resume and fork --------------------------------------------------------------------------------------------

PROGRESS_HELP = "rich: a progress display on stderr; json: one JSON object per event on stdout."
APP_HELP = (
    "Your program, whose crew, flow or agent runs with the checkpoint's state: FILE.py:attr or module:attr "
    "(a Crew/Flow/Agent, its class, or a function making one). Default: [tool.crewpoint] app in pyproject.toml; "
    "without one, the entity is rebuilt from the checkpoint alone."
)


def _app_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--app", "app", metavar="FILE.py:ATTR", default=None, help=APP_HELP)(fn)


def _run(
    ctx: click.Context,
    ref: str,
    location: str | None,
    progress: str,
    *,
    fork: bool,
    branch: str | None = None,
    inputs: tuple[str, ...] = (),
    outputs: tuple[str, ...] = (),
    app: str | None = None,
) -> None:
    import crewpoint.demo  # noqa: F401  # the bundled demo's crew, tools and flow are part of this program
    from crewpoint.checkpoint import ops
    from crewpoint.checkpoint.program import project_app
    from crewpoint.tui.progress import make_progress, result_text

    where = _location(ctx, location)
    crewai_store = _crewai_store(where, ref)
    if crewai_store is not None:
        _crewai_run(ctx, crewai_store, ref, progress, fork=fork, branch=branch, inputs=inputs, outputs=outputs)
        return
    prepared: PreparedRun | None = None
    try:
        with _bad_input(ctx):
            app = app or project_app()
            new_inputs = ops.parse_assignments(inputs, "--input")
            edits = ops.parse_assignments(outputs, "--set-output")
            full = ops.resolve_id(where, ref)
            record = ops.load(full, where)
            new_outputs = {ops.resolve_task(record, key): text for key, text in edits.items()}
            prepared = ops.prepare_run(
                full,
                fork=fork,
                branch=branch,
                inputs=new_inputs or None,
                outputs=new_outputs or None,
                location=where,
                record=record,
                app=app,
            )
            if fork:
                from crewpoint.checkpoint.plan import check_fork

                check_fork(record, prepared.plan, new_inputs)
        if not fork:
            later = [m for m in ops.children(prepared.store, prepared.source.id) if m.branch == prepared.branch]
            if later:
                click.echo(
                    f"note: {prepared.source.id[:12]} already continues on branch {prepared.branch} "
                    f"(next: {later[0].id[:12]}); this run writes beside it. Use fork for a separate branch.",
                    err=True,
                )
        reporter = make_progress(progress, prepared)
        with reporter:
            try:
                result = prepared.kickoff()
            except KeyboardInterrupt:
                reporter.interrupted()
                raise
            except Exception as exc:
                reporter.failed(exc)
                if _debug(ctx):
                    raise
                fail(f"the run failed: {one_line(exc)}", EXIT_FAILED)
            reporter.finished(result)
    except KeyboardInterrupt:
        latest = prepared.latest_id if prepared is not None else ref
        hint = f"crewpoint checkpoint resume {latest}"
        store = where if where is not None else prepared.store if prepared is not None else None
        if store is not None and (where is not None or not _found_by_default(store)):
            hint += f" --location {shlex.quote(store)}"
        click.echo(f"interrupted; resume with: {hint}", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if progress != "json":
        text = result_text(result)
        click.echo(text if isinstance(text, str) else json.dumps(text, ensure_ascii=False, default=str))
    state = prepared.state if prepared is not None else None
    lost = state.failure_summary() if state is not None else None
    if lost is not None:  # the run finished, but not every checkpoint reached the store
        fail(lost, EXIT_FAILED)


def _crewai_store(where: str | None, ref: str) -> str | None:
    """The CrewAI store ``ref`` (an id in ``where``, a file or ``db#id``) is in, or None for crewpoint's own."""
    from crewpoint.checkpoint import ops
    from crewpoint.providers import crewai_provider_for, split_ref
    from crewpoint.providers.base import CheckpointError

    path = split_ref(ref)[0]
    candidate = ref if os.path.exists(path) else None
    try:
        store = candidate if candidate is not None else ops.find_store(where)
    except CheckpointError:
        return None
    if crewai_provider_for(store) is None:
        return None
    return store


def _crewai_run(
    ctx: click.Context,
    store: str,
    ref: str,
    progress: str,
    *,
    fork: bool,
    branch: str | None,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
) -> None:
    """Resume or fork a CrewAI checkpoint: a fork is written in CrewAI's format; the user's CrewAI runs it.

    With ``--progress json`` (the app's run panel) notes are JSON ``log`` events on stdout, the fork is a
    ``checkpoint`` event, and CrewAI's own output follows line by line.
    """
    import subprocess

    from crewpoint.checkpoint import ops
    from crewpoint.providers import crewai_provider_for, split_ref
    from crewpoint.providers.crewai_fork import crewai_environment, fork_checkpoint, resume_command
    from crewpoint.providers.refs import match_prefix

    streaming = progress == "json"

    def say(text: str) -> None:
        if streaming:
            click.echo(json.dumps({"event": "log", "text": text}, ensure_ascii=False))
        else:
            click.echo(text, err=True)

    path, ref_id = split_ref(store)
    is_file = os.path.isfile(path) and path.endswith(".json")
    with _bad_input(ctx):
        provider = crewai_provider_for(store)
        assert provider is not None
        if fork:
            done = fork_checkpoint(
                store,
                None if (is_file or ref == store) else ref,
                branch=branch,
                inputs=ops.parse_assignments(inputs, "--input"),
                outputs=ops.parse_assignments(outputs, "--set-output"),
            )
            store, target = done.store, done.checkpoint_id
            names = done.task_names
            said = f"forked {done.source.id} to {done.checkpoint_id} on branch {done.branch} (CrewAI format)"
            if done.edited:
                said += "; edited " + ", ".join(f"{i + 1}. {names[i]}" for i in done.edited)
            if done.reset:
                said += "; reset " + ", ".join(f"{i + 1}. {names[i]}" for i in done.reset)
            if done.will_run != done.reset:
                said += "; CrewAI runs " + (", ".join(str(i + 1) for i in done.will_run) or "nothing")
            if streaming:
                event = {"event": "checkpoint", "checkpoint_id": target, "branch": done.branch, "ref": done.ref}
                click.echo(json.dumps(event, ensure_ascii=False))
            else:
                click.echo(done.ref)
            say(said)
        else:
            metas = provider.list(path)
            wanted = ref_id or (None if ref == store else ref)
            if is_file:
                wanted = metas[0].id if metas else None
            if wanted is None:
                raise ValueError(f"name the checkpoint to resume in {path}")
            target = match_prefix([m.id for m in metas], wanted, path)
            if is_file:
                from crewpoint.providers.crewai_json import store_root

                store = store_root(path)
        meta = next(m for m in provider.list(split_ref(store)[0]) if m.id == target)
    command = resume_command(meta.location, meta.entity_kind)
    if command is None:
        message = (
            "this is a CrewAI checkpoint, which CrewAI runs, and CrewAI is not installed here "
            f"(no `crewai` command; CREWPOINT_CREWAI_PYTHON names a Python that has it): resume {meta.location}"
        )
        if fork:
            say(f"note: {message}")
            return
        fail(message, EXIT_FAILED)
    say(f"CrewAI resumes {meta.location} ({command[0]})")
    sys.stdout.flush()
    try:
        code = subprocess.call(command, env=crewai_environment())
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    if code != 0:
        fail(f"the CrewAI run failed (exit {code})", EXIT_FAILED)


def _found_by_default(store: str) -> bool:
    """Would ``crewpoint checkpoint`` find ``store`` without ``--location``?"""
    from crewpoint.checkpoint import ops
    from crewpoint.providers.base import CheckpointError

    try:
        return os.path.abspath(ops.find_store(None)) == os.path.abspath(store)
    except CheckpointError:
        return False


@checkpoint.command()
@click.argument("ref", metavar="ID")
@_location_option
@_app_option
@click.option("--progress", type=click.Choice(["rich", "json"]), default="rich", show_default=True, help=PROGRESS_HELP)
@click.pass_context
def resume(ctx: click.Context, ref: str, location: str | None, app: str | None, progress: str) -> None:
    """Continue a run from checkpoint ID; finished tasks are not run again.

    ID is a checkpoint id or unique prefix (looked up in --location), a checkpoint file, or DB#ID.
    The run's result is printed on stdout. Exit 1 if the run fails, 130 if interrupted.
    """
    _run(ctx, ref, location, progress, fork=False, app=app)


@checkpoint.command()
@click.argument("ref", metavar="ID")
@_location_option
@click.option("--branch", "-b", default=None, help="Name of the new branch (default: fork-<time>-<suffix>).")
@click.option("--input", "inputs", multiple=True, metavar="KEY=VALUE", help="Change a kickoff input (repeatable).")
@click.option(
    "--set-output",
    "outputs",
    multiple=True,
    metavar="N=TEXT",
    help="Replace finished task N's output; N is a number from 1 or a task name (repeatable).",
)
@_app_option
@click.option("--progress", type=click.Choice(["rich", "json"]), default="rich", show_default=True, help=PROGRESS_HELP)
@click.pass_context
def fork(
    ctx: click.Context,
    ref: str,
    location: str | None,
    branch: str | None,
    inputs: tuple[str, ...],
    outputs: tuple[str, ...],
    app: str | None,
    progress: str,
) -> None:
    """Start a new branch from checkpoint ID and run it, optionally with edited inputs or task outputs.

    Tasks whose text uses a changed input, tasks whose output you replace with --set-output, and the tasks
    that depend on them are the only ones run again. The original branch is left untouched.
    """
    _run(ctx, ref, location, progress, fork=True, branch=branch, inputs=inputs, outputs=outputs, app=app)


# -- diff ------------------------------------------------------------------------------------------------------


def _use_color() -> bool:
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def _print_diff(a: CheckpointMeta, b: CheckpointMeta, entries: list[DiffEntry]) -> None:
    import difflib

    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, no_color=not _use_color(), force_terminal=_use_color() or None)

    def say(*parts: tuple[str, str]) -> None:
        console.print(Text.assemble(*((visible(text), style) for text, style in parts)), soft_wrap=True)

    say(("--- ", "red"), (f"{_short_id(a.id)}  {a.branch}  {a.trigger}  {a.tasks_done}/{a.tasks_total}", "red"))
    say(("+++ ", "green"), (f"{_short_id(b.id)}  {b.branch}  {b.trigger}  {b.tasks_done}/{b.tasks_total}", "green"))
    if not entries:
        say(("no differences", "dim"))
        return
    section = None
    for entry in entries:
        if entry.section != section:
            section = entry.section
            say(("", ""))
            say((section.replace("_", " "), "bold"))
        before, after = _show(entry.before), _show(entry.after)
        multiline = "\n" in before or "\n" in after or len(before) + len(after) > 100
        if entry.section != "outputs" or not multiline:
            say((f"  {entry.key}: ", "bold"), (before, "red"), (" → ", ""), (after, "green"))
            continue
        say((f"  {entry.key}", "bold"))
        old = "" if entry.before is None else str(entry.before)
        new = "" if entry.after is None else str(entry.after)
        if "\n" not in old and "\n" not in new:
            removed, added = _word_diff(old, new)
            console.print(Text("    - ", style="red") + removed, soft_wrap=True)
            console.print(Text("    + ", style="green") + added, soft_wrap=True)
            continue
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2):
            if line.startswith(("---", "+++")):
                continue
            say(("    " + line, _LINE_STYLES.get(line[:1], "")))


def _word_diff(old: str, new: str) -> tuple[Any, Any]:
    """Two ``rich.text.Text`` lines with the words that changed underlined (plain text without colour)."""
    import difflib

    from rich.text import Text

    a, b = old.split(" "), new.split(" ")
    before, after = Text(style="red"), Text(style="green")
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        changed = op != "equal"
        if i2 > i1:
            before.append(visible(" ".join(a[i1:i2]) + " "), style="bold underline" if changed else "")
        if j2 > j1:
            after.append(visible(" ".join(b[j1:j2]) + " "), style="bold underline" if changed else "")
    before.rstrip()
    after.rstrip()
    return before, after


_LINE_STYLES = {"@": "cyan", "-": "red", "+": "green"}


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value if value else '""'
    return json.dumps(value, ensure_ascii=False, default=str)


@checkpoint.command()
@click.argument("first", metavar="ID1")
@click.argument("second", metavar="ID2")
@_location_option
@click.option("--json", "as_json", is_flag=True, help="Print the differences as a JSON array.")
@click.pass_context
def diff(ctx: click.Context, first: str, second: str, location: str | None, as_json: bool) -> None:
    """Compare two checkpoints: inputs, task statuses and outputs, flow state and method outputs."""
    from crewpoint.checkpoint import ops

    with _bad_input(ctx):
        where = _location(ctx, location)
        a = ops.load(first, where)
        b = ops.load(second, where)
        entries = ops.diff(a, b)
    if as_json:
        _emit_json(
            {
                "from": a.meta.id,
                "to": b.meta.id,
                "changes": [
                    {"section": e.section, "key": e.key, "before": e.before, "after": e.after} for e in entries
                ],
            }
        )
        return
    _print_diff(a.meta, b.meta, entries)


# -- prune -----------------------------------------------------------------------------------------------------


@checkpoint.command()
@click.argument("location_arg", metavar="[LOCATION]", required=False)
@click.option("--keep", type=click.IntRange(min=0), default=None, help="Keep the newest N checkpoints per branch.")
@click.option(
    "--older-than",
    "older_than",
    metavar="AGE",
    default=None,
    help="Delete checkpoints older than AGE (7d, 24h, 30m, 45s).",
)
@click.option("--branch", "-b", default=None, help="Only prune this branch.")
@click.option("--dry-run", is_flag=True, help="Show what would be deleted; delete nothing.")
@click.option("--force", is_flag=True, help="Also delete fork points (checkpoints another branch starts from).")
@click.option("--json", "as_json", is_flag=True, help="Print the deleted checkpoints as JSON.")
@click.pass_context
def prune(
    ctx: click.Context,
    location_arg: str | None,
    keep: int | None,
    older_than: str | None,
    branch: str | None,
    dry_run: bool,
    force: bool,
    as_json: bool,
) -> None:
    """Delete old checkpoints. Fork points are kept unless --force; --dry-run deletes nothing."""
    from crewpoint.checkpoint import ops

    if keep is None and older_than is None:
        fail("prune needs --keep N or --older-than AGE (or both)")
    with _bad_input(ctx):
        store = ops.find_store(_location(ctx, location_arg))
        seconds = ops.parse_age(older_than) if older_than is not None else None
        plan = ops.plan_prune(store, keep=keep, older_than=seconds, branch=branch, force=force)
        deleted = 0 if dry_run else ops.delete_checkpoints(store, [m.id for m in plan.doomed])
    if as_json:
        _emit_json(
            {
                "store": store,
                "dry_run": dry_run,
                "deleted": [] if dry_run else [m.to_dict() for m in plan.doomed],
                "would_delete": [m.to_dict() for m in plan.doomed] if dry_run else [],
                "kept_fork_points": sorted(plan.kept_fork_points),
                "kept_live": sorted(plan.kept_live),
                "damaged": plan.damaged,
            }
        )
        return
    verb = "would delete" if dry_run else "deleted"
    for meta in plan.doomed:
        line = f"{verb}  {meta.id[:12]}  {_when(meta.created_at)}  {meta.branch}  {meta.trigger}"
        click.echo(visible(line, one_line=True))
    count = len(plan.doomed) if dry_run else deleted
    summary = f"{count} checkpoint{'s' if count != 1 else ''} {'would be deleted' if dry_run else 'deleted'} in {store}"
    if plan.kept_fork_points:
        n = len(plan.kept_fork_points)
        summary += f"; kept {n} fork point{'s' if n != 1 else ''} (--force deletes them)"
    if plan.kept_live:
        summary += f"; kept {len(plan.kept_live)} of running runs"
    if plan.damaged:
        summary += f"; {plan.damaged} damaged left as they are (see list)"
    click.echo(summary, err=True)


# -- serve -----------------------------------------------------------------------------------------------------


@checkpoint.command()
@_location_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; others are warned about.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one).")
@click.option(
    "--token",
    envvar="CREWPOINT_SERVE_TOKEN",
    default=None,
    help="Access token every request must carry (default: a new random one; env CREWPOINT_SERVE_TOKEN).",
)
@click.option("--read-only", is_flag=True, help="Browsers can watch but not resume, fork, edit, cancel or prune.")
@click.pass_context
def serve(ctx: click.Context, location: str | None, host: str, port: int, token: str | None, read_only: bool) -> None:
    """Serve the app to web browsers until Ctrl-C; prints the URL to open, with the access token in it.

    \b
    Each browser gets its own app on the store: every screen, key and dialog, live refresh and run status.
    Listens on 127.0.0.1 unless --host says otherwise (with a warning). Exit 2 on a bad token or a busy port.
    """
    from crewpoint.checkpoint import ops

    with _bad_input(ctx):
        store = ops.find_store(_location(ctx, location))
        store = store if "://" in store else os.path.abspath(store)  # the app processes may start elsewhere
        read_only = read_only or bool((ctx.parent.params if ctx.parent else {}).get("read_only"))
        try:
            from crewpoint.tui.serve import check_token, exposure_warning, serve_app
        except ImportError as exc:
            if _debug(ctx):
                raise
            fail(f"serving the app needs textual-serve: {one_line(exc)}", EXIT_FAILED)
        if token is not None:
            check_token(token)
        warning = exposure_warning(host, port)
        if warning is not None:
            click.echo(f"crewpoint: {warning}", err=True)

        def ready(url: str) -> None:
            click.echo(url)
            click.echo(f"serving {store}{' read-only' if read_only else ''}; Ctrl-C stops", err=True)

        serve_app(store, host=host, port=port, token=token, read_only=read_only, ready=ready)


# -- copy ------------------------------------------------------------------------------------------------------


@checkpoint.command()
@click.argument("source", metavar="SRC")
@click.argument("target", metavar="DST")
@click.option("--json", "as_json", is_flag=True, help="Print what was copied as JSON.")
@click.pass_context
def copy(ctx: click.Context, source: str, target: str, as_json: bool) -> None:
    """Copy every checkpoint of the store SRC into the crewpoint store DST, keeping lineage.

    \b
    SRC is any store: crewpoint's JSON folder or SQLite file, or CrewAI's own JSON folder or SQLite file.
    DST is a crewpoint store (a folder, or a .db file for SQLite), made if missing; copying again adds only
    what is new. Keys (api_key values and key-looking strings) are masked on the way. CrewAI ids become
    crewpoint ids with '-' for '_'.
    """
    from crewpoint.checkpoint import ops
    from crewpoint.providers.crewai_copy import copy_store

    with _bad_input(ctx):
        store = ops.find_store(source)
        report = copy_store(store, target)
    if as_json:
        _emit_json(
            {
                "source": report.source,
                "target": report.target,
                "copied": report.copied,
                "already_there": report.existing,
                "damaged_skipped": report.damaged,
            }
        )
        return
    summary = f"copied {len(report.copied)} checkpoint{'s' if len(report.copied) != 1 else ''} to {target}"
    if report.existing:
        summary += f"; {len(report.existing)} already there"
    if report.damaged:
        summary += f"; skipped {len(report.damaged)} damaged: {', '.join(report.damaged[:5])}"
    click.echo(summary, err=True)


def run() -> Any:  # pragma: no cover - console entry alias
    return main()


if __name__ == "__main__":  # python -m crewpoint.tui.cli
    main()
