"""``RuntimeState``: the live state of one run, its event history, lineage, and checkpoint capture."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
import signal
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import crewpoint.telemetry as telemetry
from crewpoint._version import __version__
from crewpoint.budget import STATUS as BUDGET_STATUS
from crewpoint.budget import BudgetExceeded
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.checkpoint.program import command_app, origin_of, refuse_kickoff_while_loading
from crewpoint.checkpoint.prune_plan import prune_store
from crewpoint.checkpoint.record import new_record
from crewpoint.checkpoint.restore import load_record
from crewpoint.checkpoint.schema import SCHEMA_VERSION
from crewpoint.checkpoint.writer import writer
from crewpoint.entities import Entity, kind_of
from crewpoint.events import (
    EVENT_TYPES,
    CheckpointCompletedEvent,
    CheckpointFailedEvent,
    CheckpointStartedEvent,
    event_bus,
)
from crewpoint.events.base import BaseEvent
from crewpoint.events.record import EventRecord
from crewpoint.providers import provider_for, shown_location
from crewpoint.providers.base import BaseProvider, CheckpointRecord
from crewpoint.providers.prune import PruneStrategy
from crewpoint.providers.refs import check_branch
from crewpoint.providers.run_mark import hold, release
from crewpoint.providers.runs import BEAT_INTERVAL, RunInfo, this_host
from crewpoint.text import clip
from crewpoint.usage import UsageLedger, finished_units

log = logging.getLogger("crewpoint.checkpoint")

_current: contextvars.ContextVar[RuntimeState | None] = contextvars.ContextVar("crewpoint_state", default=None)

HANDLED_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP", "SIGTSTP", "SIGCONT")


def current_state() -> RuntimeState | None:
    """The state of the run executing in this context, if any."""
    return _current.get()


def new_branch_name() -> str:
    return "fork-" + time.strftime("%Y%m%d-%H%M%S") + "-" + uuid.uuid4().hex[:4]


class RuntimeState:
    """One run's state: the root entity, inputs, event history, lineage, and its checkpoints."""

    def __init__(
        self,
        root: Entity,
        config: CheckpointConfig | None,
        inputs: dict[str, Any] | None = None,
        *,
        events: EventRecord | None = None,
        branch: str = "main",
        lineage: str | None = None,
        parent_id: str | None = None,
        sequence: int = 0,
        resumed_from: str | None = None,
    ) -> None:
        self.root = root
        self.config = config
        self.inputs: dict[str, Any] = dict(inputs or {})
        self.events = events if events is not None else EventRecord()
        self.branch = branch
        self.lineage = lineage or uuid.uuid4().hex
        self.checkpoint_id: str | None = parent_id
        """The newest checkpoint of this run (at first: the one it resumes from). It may be on its way to the
        store; once every write is done (the end of a run) it is the newest actually written."""
        self.written_id: str | None = parent_id
        self.own: set[str] = set()
        """The checkpoints this run wrote: with :attr:`prunes_own_only`, the only ones its pruning may delete."""
        self.prunes_own_only = False
        """The run's entity was rebuilt from a checkpoint (not the program's own object): which entity and branch
        it is, the checkpoint says, so ``max_checkpoints`` trims only what this run wrote itself."""
        """The newest checkpoint of this run actually written (or the one it resumes from)."""
        self.sequence = sequence
        self.resumed_from = resumed_from
        self.source_run: str | None = None
        self.exports_traces = False
        """Its spans are exported (:mod:`crewpoint.telemetry`): its configuration asks for it, or the run it runs in."""
        """The run that wrote the checkpoint this one resumes, forks or answers (its trace links to that run's)."""
        self.last_ref: str | None = None
        self.written = 0
        self.failed = 0
        self.failures: list[str] = []
        """One line per checkpoint that could not be written (the newest last)."""
        self.pending_signal: str | None = None
        """A stopping signal (SIGINT, SIGTERM, SIGHUP) received whose event is not emitted yet."""
        self.waiting = False
        """The run stopped to wait for a person's feedback (its checkpoint holds the request): its record reads
        ``waiting`` when it closes."""
        self.stopping = False
        """The run's own work is over (it ended, failed or was stopped): :func:`running` is closing it, and a
        stopping signal that arrives now is held until the closing is done instead of cutting it short."""
        self._origin: dict[str, Any] | None = None
        self._origin_known = False
        self.run_id = uuid.uuid4().hex[:16]
        self.heartbeat: Heartbeat | None = None
        self.run_started = 0.0
        """When :func:`running` began this run (0: not running)."""
        self.usage = UsageLedger()
        """What this run's LLM calls used, per task or method, agent and model (``usage.rows`` in its checkpoints)."""
        self._usage_units: dict[str, str] = {}  # the units this run started (task id or method name) -> label
        self._usage_roles: dict[str, str] = {}  # agent id -> role
        self._usage_method: str | None = None  # the flow method running now
        # the last capture's events: the history's own dicts and the copies a body holds
        self._events_stored: tuple[list[dict[str, Any]], list[dict[str, Any]]] = ([], [])
        self.outer: RuntimeState | None = None
        """The run this one runs inside (a crew kicked off in a flow's method): its usage is counted there too."""
        self._lock = threading.Lock()

    @property
    def origin(self) -> dict[str, Any] | None:
        """Where the run's entity came from (script or module, attribute), found once, at the first checkpoint."""
        if not self._origin_known:
            self._origin, self._origin_known = origin_of(self.root), True
        return self._origin

    # -- lineage ------------------------------------------------------------------------------------
    @property
    def parent_id(self) -> str | None:
        """The checkpoint the next one will name as its parent."""
        return self.checkpoint_id

    def fork(self, branch: str | None = None) -> str:
        """Continue on a new branch: the next checkpoint's parent is the current one. The branch name is
        checked here, before any work (one rule everywhere: :func:`crewpoint.providers.refs.check_branch`)."""
        self.branch = check_branch(branch) if branch else new_branch_name()
        return self.branch

    # -- capture ------------------------------------------------------------------------------------
    def capture(self, trigger: str) -> CheckpointRecord:
        """Snapshot the run now, on the caller's thread: exactly the state at this moment."""
        with self._lock:
            self.sequence += 1
            checkpoint_id = uuid.uuid4().hex
            parent = self.checkpoint_id
            self.checkpoint_id = checkpoint_id
            sequence = self.sequence
        now = time.time()
        done, total = self.root.progress()
        entity = self.root.to_state()
        usage, summary = self.usage_section(entity)
        body = {
            "schema_version": SCHEMA_VERSION,
            "version": __version__,
            "entity": entity,
            "inputs": dict(self.inputs),
            "events": self._stored_events(),
            "lineage": {
                "id": checkpoint_id,
                "parent_id": parent,
                "branch": self.branch,
                "lineage": self.lineage,
                "sequence": sequence,
                "resumed_from": self.resumed_from,
            },
            "trigger": trigger,
            "created_at": now,
            "origin": self.origin,
            "usage": usage,
        }
        name = self.root.entity_name
        return new_record(
            body,
            entity_name=name,
            tasks_done=done,
            tasks_total=total,
            run_id=self.run_id,
            usage=summary,
            from_ledger=True,
        )

    def _stored_events(self) -> list[dict[str, Any]]:
        """The event history as a checkpoint stores it: copies of the recorded events, each made once. An event
        the last capture had (the history only grows, and a recorded event is never changed) keeps the copy made
        then, so a capture copies only the events that came since, and the stores' codec, which knows an item it
        encoded by the item itself, encodes only those."""
        compacts = self.events.compacts()
        known, events = self._events_stored
        count = len(known)
        if count > len(compacts) or compacts[:count] != known:
            count, events = 0, []
        events = [*events[:count], *map(dict, compacts[count:])]
        self._events_stored = (compacts, events)
        return events

    # -- usage ----------------------------------------------------------------------------------------
    def take_source_usage(self, section: Any) -> None:
        """Start from a source checkpoint's ``usage`` section (a resume or a fork): its ``before`` and ``rows`` are
        what the chain spent before this run (:meth:`UsageLedger.start_from`)."""
        if isinstance(section, dict):
            self.usage.start_from([row for key in ("before", "rows") for row in section.get(key) or ()])

    def usage_section(self, entity: dict[str, Any]) -> tuple[dict[str, Any], str]:
        """The body's ``usage``: this run's rows, the chain's before it, and those of the units it took over;
        and the metadata's usage summary of the same rows."""
        usage = self.usage
        reused = usage.stored_reused(finished_units(entity), self._usage_units) if usage.before else []
        rows, summary = usage.stored_and_summary()
        return {"rows": rows, "before": usage.stored_before(), "reused": reused}, summary

    def _count_usage(self, event: BaseEvent, agent: str | None = None) -> None:
        """Count an ``llm_call_completed``: in the flow method running now, else the task it names."""
        usage = getattr(event, "usage", None)
        if not isinstance(usage, dict):
            return
        unit = self._usage_method or event.task_id
        label = self._usage_units.get(unit, unit) if unit is not None else self.root.entity_name
        agent = agent or getattr(event, "agent_role", None) or self._usage_roles.get(event.agent_id or "")
        self.usage.add(usage, unit, label, agent)
        if self.outer is not None and self.outer is not self:
            self.outer._count_usage(event, agent)

    def _follow_units(self, event: BaseEvent) -> None:
        kind = event.type
        if kind == "task_started" and event.task_id:
            self._usage_units[event.task_id] = clip(str(getattr(event, "task_name", None) or event.task_id), 80)
        elif kind == "method_execution_started":
            name = str(getattr(event, "method_name", "") or "")
            self._usage_method, self._usage_units[name] = name, name
        elif kind in ("method_execution_finished", "method_execution_failed"):
            self._usage_method = None
        role = getattr(event, "agent_role", None)
        if event.agent_id and isinstance(role, str) and role:
            self._usage_roles[event.agent_id] = role

    def _provider_for(self, location: str | None) -> tuple[BaseProvider, str]:

        if location is None:
            config = self.config or CheckpointConfig()
            return config.provider, config.location
        if self.config is not None and str(location) == self.config.location:
            return self.config.provider, self.config.location
        return provider_for(str(location)), str(location)

    def submit(self, record: CheckpointRecord, config: CheckpointConfig) -> None:
        """Hand a captured record to the background writer (best effort; pruning after the write).

        Writes happen in capture order. Just before a record is written, a parent that failed to be written
        is replaced by the newest checkpoint that was, so the chain never names a missing parent.
        """

        def done(ref: str | None, error: BaseException | None) -> None:
            if error is not None or ref is None:
                self._write_failed(record, config.location, error)
                return
            self._written_in(config.provider, config.location, record, ref)
            if config.max_checkpoints:
                self._prune(config.provider, config.location, config.max_checkpoints)

        if self.heartbeat is None and _current.get() is self:  # checkpoints by an agent's config alone
            self.heartbeat = Heartbeat(self, config.provider, config.location)  # so it reads finished once it ends
        self._started(record, config.location)
        writer.submit(config.provider, config.location, record, done)

    def _write_done(self, record: CheckpointRecord, ref: str) -> None:

        self.written += 1
        self.last_ref = ref
        self.written_id = record.meta.id
        self.own.add(record.meta.id)
        heartbeat = self.heartbeat
        if heartbeat is not None and not heartbeat.recorded:
            heartbeat.beat()  # the store exists now: record the run at once rather than at the next beat
        event_bus.emit(
            self,
            CheckpointCompletedEvent(
                checkpoint_id=record.meta.id,
                location=ref,
                trigger=record.meta.trigger,
                branch=record.meta.branch,
            ),
        )

    def _write_failed(self, record: CheckpointRecord, location: str, error: BaseException | None) -> None:

        reason = " ".join(str(error).split()) if error is not None else "no reference returned"
        with self._lock:
            self.failed += 1
            if self.checkpoint_id == record.meta.id:  # the next checkpoint's parent: the newest written
                self.checkpoint_id = self.written_id
        self.failures.append(f"checkpoint {record.meta.id[:12]} ({record.meta.trigger}) was not written: {reason}")
        event_bus.emit(
            self,
            CheckpointFailedEvent(checkpoint_id=record.meta.id, location=shown_location(location), error=reason),
        )

    def failure_summary(self) -> str | None:
        """One line telling what was not written, or ``None`` when every checkpoint was."""
        if not self.failed:
            return None
        latest = self.written_id[:12] if self.written_id else "none"
        plural = "s were" if self.failed != 1 else " was"
        return f"{self.failed} checkpoint{plural} not written ({self.failures[-1]}); latest written: {latest}"

    def _prune(self, provider: BaseProvider, location: str, keep: int) -> None:
        """``max_checkpoints``: keep the newest ``keep`` checkpoints of this run's entity on its branch (the
        seed's bound for repeated runs). Never the checkpoint it resumed from or the one it wrote last, never
        another live run's, never one an unanswered request waits at, never a fork point or the first checkpoint
        of a fork (see ``PruneStrategy``).

        ``keep`` comes only from the running program's configuration: a restored run never reads it from a
        checkpoint (``config_from_state``), so a checkpoint cannot make a run delete anything.
        """
        protect = frozenset(p for p in (self.resumed_from, self.written_id, self.checkpoint_id) if p)
        strategy = PruneStrategy(
            keep=keep,
            branch=self.branch,
            entity=(self.root.entity_kind, self.root.entity_name),
            protect=protect,
            own_run=self.run_id,
            only=frozenset(self.own) if self.prunes_own_only else None,
        )
        try:
            prune_store(provider, location, strategy, source=self)
        except Exception as exc:
            log.warning("pruning %s failed: %s", location, exc)

    def _started(self, record: CheckpointRecord, location: str) -> None:
        """``checkpoint_started``: a checkpoint was captured and is on its way to the store."""
        event = CheckpointStartedEvent(
            checkpoint_id=record.meta.id,
            location=shown_location(location),
            trigger=record.meta.trigger,
            branch=record.meta.branch,
        )
        # In a copy of the context: a ``*_started`` event opens a nesting scope, and this one is closed (by
        # checkpoint_completed) on the writer's thread, if at all; the run's own events must not nest under it.
        contextvars.copy_context().run(event_bus.emit, self, event)

    def checkpoint(self, location: str | Path | None = None, trigger: str = "manual") -> str:
        """Write a checkpoint now and return where it went (a file path, or ``db#id``); a failed write raises
        :class:`CheckpointError` (and is counted and reported like a failed background write)."""
        provider, loc = self._provider_for(None if location is None else str(location))
        writer.flush()
        record = self.capture(trigger)
        with self._writing(record, loc):
            ref = provider.write(loc, record)
            provider.flush()
        return self._written_in(provider, loc, record, ref)

    @contextlib.contextmanager
    def _writing(self, record: CheckpointRecord, location: str) -> Iterator[None]:
        """A checkpoint written now (not by the background writer): started, and counted as failed if it fails."""
        self._started(record, location)
        try:
            yield
        except Exception as exc:
            self._write_failed(record, location, exc)
            raise

    def _written_in(self, provider: BaseProvider, location: str, record: CheckpointRecord, ref: str) -> str:
        self._write_done(record, ref)
        self._recorded_in(provider, location)
        return ref

    def _recorded_in(self, provider: BaseProvider, location: str) -> None:
        """The run's record is kept in ``location`` too from now on, a store it wrote a checkpoint to (a handler's
        ``state.checkpoint("./elsewhere")``): each store it wrote to reads it running, then closed as it ends."""
        heartbeat = self.heartbeat
        if heartbeat is None and _current.get() is self:  # a run with no store of its own writes here
            self.heartbeat = Heartbeat(self, provider, location)
        elif heartbeat is not None:
            heartbeat.include(provider, location)

    async def acheckpoint(self, location: str | Path | None = None, trigger: str = "manual") -> str:
        import asyncio

        provider, loc = self._provider_for(None if location is None else str(location))
        await asyncio.to_thread(writer.flush)
        record = self.capture(trigger)
        with self._writing(record, loc):
            ref = await provider.awrite(loc, record)
            await asyncio.to_thread(provider.flush)
        return self._written_in(provider, loc, record, ref)

    # -- events ----------------------------------------------------------------------------------------
    def on_event(self, source: Any, event: BaseEvent) -> None:
        """Record the event and, when the configuration asks for it, capture a checkpoint at it."""
        if event.type.startswith("checkpoint_"):
            return
        if event.type == "llm_call_completed":
            self._count_usage(event)
        elif event.type in _UNIT_EVENTS:
            self._follow_units(event)
        self.events.add(event)
        config = self.root.checkpoint_config_for(event)
        if config is not None and config.wants(event.type) and event.type not in _WRITTEN_BY_THE_RUN:
            self.submit(self.capture(event.type), config)

    @classmethod
    def from_checkpoint(cls, ref: str | Path) -> CheckpointRecord:
        """Read and migrate the checkpoint at ``ref`` (a file, a folder, ``db#id``)."""
        return load_record(str(ref))

    @classmethod
    async def afrom_checkpoint(cls, ref: str | Path) -> CheckpointRecord:
        import asyncio

        return await asyncio.to_thread(cls.from_checkpoint, ref)


_WRITTEN_BY_THE_RUN = frozenset({"human_feedback_requested", "budget_exceeded"})
"""Events whose checkpoint the run always writes itself, once (a request to wait on, a budget stop)."""

_UNIT_EVENTS = frozenset(
    {
        "task_started",
        "method_execution_started",
        "method_execution_finished",
        "method_execution_failed",
        "agent_execution_started",
        "lite_agent_execution_started",
    }
)


def _observer(source: Any, event: BaseEvent) -> None:
    state = _current.get()
    if state is not None:
        state.on_event(source, event)


_observer_installed = False


def _install_observer() -> None:
    global _observer_installed
    if not _observer_installed:
        event_bus.add_observer(_observer)
        _observer_installed = True


def running(state: RuntimeState) -> Running:
    """Make ``state`` the current run (``with running(state):``): events are recorded and may trigger
    checkpoints; signals are caught. See :class:`Running`."""
    return Running(state)


class Running:
    """The context of one run: events are recorded and may trigger checkpoints; signals are caught.

    SIGINT, SIGTERM and SIGHUP stop the run by raising (KeyboardInterrupt, SystemExit); their event, and the
    checkpoint it may trigger, is emitted once the stack has unwound, so no lock is held when it is written.
    A stopping signal that arrives while the run is being set up or closed (its last checkpoints flushed, its
    record closed) never cuts that short: it is held, its event emitted once the run's work is over, and it
    stops the program when the run is closed. Either way a run stopped by a signal has the signal's checkpoint
    (when its configuration asks for one) as its newest. SIGTSTP and SIGCONT are emitted from a short-lived
    thread and do not stop the run's thread.
    """

    def __init__(self, state: RuntimeState) -> None:
        self.state = state
        self._previous: dict[int, Any] = {}
        self._token: contextvars.Token[RuntimeState | None] | None = None

    def __enter__(self) -> RuntimeState:

        state = self.state
        refuse_kickoff_while_loading()  # a program loaded by --app may not start a run while it loads
        if state.config is not None:  # a store that cannot be written is refused before any work is done
            state.config.provider.check_writable(str(state.config.location))
        _install_observer()
        state.stopping = True  # a signal during the set-up is held, and raised once the run is set up
        state.pending_signal = None
        state.waiting = False
        self._previous = _install_signal_handlers(state)
        outer = _current.get()
        state.outer = outer if outer is not state else None
        self._token = _current.set(state)
        state.run_started = time.time()
        config = state.config
        state.heartbeat = Heartbeat(state, config.provider, config.location) if config is not None else None
        telemetry.start_run(state)
        state.stopping = False
        held = state.pending_signal
        if held is not None:  # Ctrl+C while the run was being set up: it stops before any work
            stop = _stop_for(held)
            try:
                raise stop
            except BaseException as exc:
                self.__exit__(type(exc), exc, exc.__traceback__)
                raise
        return state

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: Any) -> None:
        state = self.state
        state.stopping = True  # from here a signal is held: the run's last checkpoints are written whole
        stopped = exc
        status = "waiting" if state.waiting else "finished"
        raise_held: BaseException | None = None
        try:
            if exc is not None:
                status = "interrupted" if isinstance(exc, KeyboardInterrupt | SystemExit) else "failed"
                status = BUDGET_STATUS if isinstance(exc, BudgetExceeded) else status
                signal_name, state.pending_signal = state.pending_signal, None
                if signal_name is not None:
                    _emit_signal(state, signal_name)
            writer.flush()
            held, state.pending_signal = state.pending_signal, None
            if held is not None and stopped is None:  # stopped as it ended: the signal's checkpoint is the newest
                _emit_signal(state, held)
                status = "interrupted"
                stopped = raise_held = _stop_for(held)
        finally:
            _restore_signal_handlers(self._previous)
            if self._token is not None:
                _current.reset(self._token)
                self._token = None
            state.stopping = False
            telemetry.end_run(state, status, stopped)
            heartbeat, state.run_started = state.heartbeat, 0.0  # started here, or at the run's first checkpoint
            if heartbeat is not None:
                heartbeat.stop(status)
                state.heartbeat = None
            summary = state.failure_summary()
            if summary is not None:
                log.warning("%s", summary)
            if isinstance(stopped, KeyboardInterrupt) and current_state() is None:
                hint = resume_hint(state)
                if hint is not None:  # shown under the traceback of a Ctrl+C that ends the program
                    stopped.add_note(hint)
        if raise_held is not None:
            raise raise_held  # the program stops as the signal asked, now that the run is closed


def _stop_for(name: str) -> BaseException:
    """The exception a stopping signal raises in the run's thread."""
    return KeyboardInterrupt() if name == "SIGINT" else SystemExit(128 + int(getattr(signal, name)))


def resume_hint(state: RuntimeState) -> str | None:
    """The line telling how to resume an interrupted run from its newest checkpoint: crewpoint's command (with
    the program, when known, as ``--app``) or ``kickoff(from_checkpoint=...)`` in the program itself. None when
    the run wrote nothing."""
    command = resume_command(state)
    if command is None or state.last_ref is None:
        return None
    origin = state.origin or {}
    attr = origin.get("attr")
    name = attr if isinstance(attr, str) and attr.isidentifier() else state.root.entity_kind
    if kind_of(state.root.entity_kind).named_by_class and name != state.root.entity_kind:
        name += "()"  # the origin names the class (a flow's): the program makes one to resume
    python = f"{name}.kickoff(from_checkpoint={shown_location(state.last_ref)!r})"
    return f"crewpoint: interrupted; resume with: {command}, or in your program: {python}"


def resume_command(state: RuntimeState) -> str | None:
    """``crewpoint checkpoint resume ID --location STORE`` for the run's newest written checkpoint, with the
    program, when known, as ``--app``; None when the run wrote nothing."""
    import shlex

    if state.config is None or state.written_id is None:
        return None
    location = shlex.quote(shown_location(state.config.location))
    command = f"crewpoint checkpoint resume {state.written_id} --location {location}"
    program = command_app(state.origin)
    if program is not None:
        command += f" --app {shlex.quote(program)}"
    return command


class Heartbeat:
    """Keeps a small record of the run in its store (pid, host, start, last beat, status) while it runs, and in
    every other store the run wrote a checkpoint to (:meth:`include`)."""

    def __init__(self, state: RuntimeState, provider: BaseProvider, location: str) -> None:

        self.state = state
        self.location = location
        self.provider = provider
        self.others: dict[str, BaseProvider] = {}
        """The other stores the run wrote to, by location: their records beat and close with this one."""
        self.recorded = False
        self._beat_lock = threading.Lock()
        now = time.time()
        self.info = RunInfo(
            run_id=state.run_id,
            pid=os.getpid(),
            host=this_host(),
            started_at=state.run_started or now,
            last_beat=now,
            branch=state.branch,
            lineage=state.lineage,
            entity_kind=state.root.entity_kind,
            entity_name=state.root.entity_name,
            checkpoint_id=state.checkpoint_id,
        )
        self._stop = threading.Event()

        self._mark = hold(state.run_id)  # shows this process is the run its record names (``x`` in the app)
        self.beat()
        self._thread = threading.Thread(target=self._loop, name="crewpoint-heartbeat", daemon=True)
        self._thread.start()

    def beat(self, status: str = "running") -> None:
        """Write the run's record through the store's provider (which makes no store for it)."""
        with self._beat_lock:
            state = self.state
            self.info = self.info.beat(status=status, branch=state.branch, checkpoint_id=state.checkpoint_id)
            for location, provider in [(self.location, self.provider), *self.others.items()]:
                try:
                    written = provider.write_run(location, self.info)
                except Exception as exc:  # a heartbeat is a convenience: never stop the run for it
                    log.debug("heartbeat for %s not written: %s", location, exc)
                    continue
                self.recorded = self.recorded or (written and location == self.location)

    def include(self, provider: BaseProvider, location: str) -> None:
        """Keep the run's record in ``location`` too (written now, then at each beat and as the run ends)."""
        if location == self.location or location in self.others:
            return
        with self._beat_lock:
            self.others[location] = provider
        self.beat()

    def _loop(self) -> None:

        while not self._stop.wait(BEAT_INTERVAL):
            self.beat()

    def stop(self, status: str) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.beat(status)

        release(self._mark)
        self._mark = None


def emit_in(state: RuntimeState, event: BaseEvent) -> BaseEvent:
    """Emit ``event`` as ``state``'s run's (recorded in its history), even from a run it holds inside it."""
    token = _current.set(state)
    try:
        return event_bus.emit(state.root, event)
    finally:
        _current.reset(token)


def _emit_signal(state: RuntimeState, name: str) -> None:

    emit_in(state, EVENT_TYPES[name](signal_number=getattr(signal, name, None)))
    writer.flush()


def _install_signal_handlers(state: RuntimeState) -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous: dict[int, Any] = {}
    for name in HANDLED_SIGNALS:
        signum = getattr(signal, name, None)
        if signum is None:
            continue
        try:
            previous[signum] = signal.signal(signum, _make_handler(state, name))
        except (ValueError, OSError):
            continue
    return previous


def _restore_signal_handlers(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        try:
            signal.signal(signum, handler)
        except (ValueError, OSError, TypeError):
            pass


def _closing(state: RuntimeState, frame: Any) -> bool:
    """Whether the run's thread is inside :meth:`Running.__exit__` of ``state``'s run (which may not have
    marked the run as stopping yet: a signal can land on the method's first instruction)."""
    while frame is not None:
        if frame.f_code is _EXIT_CODE and getattr(frame.f_locals.get("self"), "state", None) is state:
            return True
        frame = frame.f_back
    return False


_EXIT_CODE = Running.__exit__.__code__


def _make_handler(state: RuntimeState, name: str) -> Any:
    def handler(received: int, frame: Any) -> None:
        if name in ("SIGINT", "SIGTERM", "SIGHUP"):
            if state.pending_signal is None and (state.stopping or _closing(state, frame)):
                # The run is being set up or closed (its last checkpoints written, its record closed): the
                # signal is held and raised once that is done (see Running). Raising here would cut it short.
                state.pending_signal = name
                return
            state.pending_signal = state.pending_signal or name
            state.stopping = True  # set before raising: a second signal cannot interrupt the unwinding
            if name == "SIGINT":
                raise KeyboardInterrupt
            raise SystemExit(128 + received)

        def in_background() -> None:
            _emit_signal(state, name)
            if name == "SIGTSTP":
                os.kill(os.getpid(), signal.SIGSTOP)

        threading.Thread(target=in_background, name=f"crewpoint-{name}", daemon=True).start()

    return handler
