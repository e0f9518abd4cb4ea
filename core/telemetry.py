"""Runs as OpenTelemetry traces: one listener on the event bus turns a run's events into spans, exported over OTLP/HTTP.

Off unless configured: ``CheckpointConfig(otel=...)`` in the program, ``[tool.crewpoint] otel`` in the project's
pyproject.toml, or the standard ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` variables
(the first one set wins; ``otel=False`` or ``OTEL_SDK_DISABLED=true`` turns it off). Until then nothing of
OpenTelemetry is imported and no connection is made. It needs the ``crewpoint[otel]`` extra.

The spans follow the GenAI semantic conventions of :data:`SEMCONV_VERSION`: ``invoke_workflow {crew or flow}`` per
run, ``invoke_agent {role or method}`` per task or flow method, ``chat {model}`` per LLM call (CLIENT) and
``execute_tool {tool}`` per tool use, with crewpoint's own ``crewpoint.*`` attributes (:mod:`crewpoint.telemetry_spans`
makes them). The run's thread only queues what each event says; spans are made on a thread of their own and leave
in batches from a bounded queue: a slow or dead collector never slows or fails a run, and it is said once, in one
warning.
"""

from __future__ import annotations

import logging
import os
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crewpoint.events.base import BaseEvent
    from crewpoint.runtime import RuntimeState
    from crewpoint.telemetry_spans import SpanMaker
    from crewpoint.usage import UsageRow

log = logging.getLogger("crewpoint.telemetry")

SEMCONV_VERSION = "1.41.0"
"""The version of OpenTelemetry's semantic conventions whose GenAI spans and attributes crewpoint writes."""

ENDPOINT_ENVS = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")
CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
SETTING_KEYS = frozenset({"endpoint", "headers", "service_name", "capture_content"})
QUEUE_SIZE = 2048
EXPORT_TIMEOUT_S = 5.0


class TelemetryError(ValueError):
    """An ``otel`` setting that cannot be used (one line: where, and what is wrong)."""


@dataclass(frozen=True)
class Settings:
    """Where spans go: ``endpoint`` the collector's base URL (``/v1/traces`` is added) or None for the standard
    variables; ``headers`` sent with each export (never shown); ``source`` says which setting turned export on."""

    source: str
    endpoint: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    service_name: str | None = None
    capture_content: bool = False


def check_setting(value: object, where: str) -> bool | dict[str, Any]:
    """An ``otel`` setting as given (True, False, or a table of :data:`SETTING_KEYS`), or :class:`TelemetryError`."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, Mapping):
        raise TelemetryError(f"{where}: otel must be true, false or a table, not {type(value).__name__}")
    unknown = sorted(set(map(str, value)) - SETTING_KEYS)
    if unknown:
        raise TelemetryError(
            f"{where}: unknown otel key(s) {', '.join(unknown)}; known: {', '.join(sorted(SETTING_KEYS))}"
        )
    for key in ("endpoint", "service_name"):
        if key in value and not isinstance(value[key], str):
            raise TelemetryError(f"{where}: otel {key} must be text")
    headers = value.get("headers", {})
    if not isinstance(headers, Mapping) or not all(isinstance(v, str) for v in headers.values()):
        raise TelemetryError(f"{where}: otel headers must be a table of text values")
    if not isinstance(value.get("capture_content", False), bool):
        raise TelemetryError(f"{where}: otel capture_content must be true or false")
    return dict(value)


def _project_setting(start: str | None = None) -> tuple[object, str] | None:
    """``[tool.crewpoint] otel`` of the nearest pyproject.toml at or above the working folder, or None."""
    folder = os.path.realpath(start or os.getcwd())
    while True:
        pyproject = os.path.join(folder, "pyproject.toml")
        if os.path.isfile(pyproject):
            try:
                with open(pyproject, "rb") as stream:
                    data = tomllib.load(stream)
            except (OSError, tomllib.TOMLDecodeError):
                return None  # the program's own setting does not depend on a pyproject another command reports
            tool = data.get("tool")
            settings = tool.get("crewpoint") if isinstance(tool, dict) else None
            if not isinstance(settings, dict) or "otel" not in settings:
                return None
            return settings["otel"], f"{pyproject} [tool.crewpoint] otel"
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in ("1", "true", "yes", "on")


def settings_for(
    setting: object = None, environ: Mapping[str, str] | None = None, start: str | None = None
) -> Settings | None:
    """Whether and where a run exports: the program's ``otel=`` setting, else the project's, else the standard
    variables; None when none asks for it (or one says false)."""
    env = os.environ if environ is None else environ
    if _truthy(env.get("OTEL_SDK_DISABLED")):
        return None
    capture = _truthy(env.get(CAPTURE_ENV))
    where = "otel="
    if setting is None:
        found = _project_setting(start)
        if found is not None:
            setting, where = found
    if setting is not None:
        checked = check_setting(setting, where)
        if checked is False:
            return None
        if isinstance(checked, dict):
            return Settings(
                source=where,
                endpoint=checked.get("endpoint"),
                headers=dict(checked.get("headers", {})),
                service_name=checked.get("service_name"),
                capture_content=capture or bool(checked.get("capture_content", False)),
            )
    for name in ENDPOINT_ENVS:
        if env.get(name, "").strip():
            return Settings(source=name, capture_content=capture)
    if setting is True:
        return Settings(source=where, endpoint="http://localhost:4318", capture_content=capture)
    return None


# -- what a run's calls cost, as `crewpoint checkpoint cost` prices them -------------------------------------------


def prices_in_force() -> Any:
    """The prices ``crewpoint checkpoint cost`` uses in the working folder (None when its overrides are unusable)."""
    from crewpoint.cost import PricesError, load_prices

    try:
        return load_prices()
    except PricesError:
        return None


def call_cost(usage: dict[str, Any], prices: Any) -> float | None:
    """One call's cost, priced as ``crewpoint checkpoint cost`` prices its row."""
    from crewpoint.cost import price_row

    prices = prices if prices is not None else prices_in_force()
    if not usage.get("model") or prices is None:
        return None
    cost = price_row({**usage, "unit": None, "label": "", "agent": None, "requests": 1}, prices)
    return float(round(cost.usd, 6)) if cost.usd is not None else None


def run_cost(rows: list[UsageRow], prices: Any) -> float | None:
    """What a run's calls cost: its usage ``rows`` priced (the figure ``crewpoint checkpoint cost`` shows)."""
    from crewpoint.cost import price_rows

    prices = prices if prices is not None else prices_in_force()
    return None if prices is None else price_rows(rows, prices).cost_usd


# -- the exporter: one per process, made the first time a run asks for it --------------------------------------------

_lock = threading.Lock()
_maker: SpanMaker | None = None
_settings: Settings | None = None


def start_run(state: RuntimeState) -> None:
    """Called as a run starts: export its spans when configured (the listener is added once per process)."""
    global _maker, _settings
    config = state.config
    outer = state.outer
    state.exports_traces = False
    try:
        settings = settings_for(getattr(config, "otel", None))
    except TelemetryError as exc:
        log.warning("traces are not exported: %s", exc)
        return
    if settings is None:  # a crew kicked off in an exporting flow's method is part of the flow's trace
        state.exports_traces = outer is not None and outer.exports_traces
        return
    state.exports_traces = True
    with _lock:
        if _maker is not None and settings != _settings:  # the program set another collector: spans go there now
            _stop()
        if _maker is None:
            try:
                # lazy: the SDK loads only when export is configured
                from crewpoint.telemetry_spans import SpanMaker
            except ImportError:
                log.warning(
                    "traces are not exported (%s asks for them): OpenTelemetry is not installed; "
                    "pip install 'crewpoint[otel]'",
                    settings.source,
                )
                _settings = settings
                return
            _maker, _settings = SpanMaker(settings), settings
            # lazy: crewpoint.events.bus is loaded by the run already; this module stays cheap to import
            from crewpoint.events.bus import event_bus

            event_bus.add_observer(_observe)


def _observe(source: Any, event: BaseEvent) -> None:
    maker = _maker
    if maker is not None:
        maker.on_event(source, event)


def end_run(state: RuntimeState, status: str, error: BaseException | None = None) -> None:
    """Called as a run closes: its spans still open end (a failure, a budget stop or a signal with ``error.type``)."""
    maker = _maker
    if maker is not None:
        maker.end_run(state, status, error)


def _stop() -> None:
    global _maker, _settings
    maker, _maker, _settings = _maker, None, None
    if maker is not None:
        # lazy: crewpoint.events.bus is loaded by the run already; this module stays cheap to import
        from crewpoint.events.bus import event_bus

        event_bus.remove_observer(_observe)
        maker.shutdown()


def shutdown() -> None:
    """Send what is queued and stop exporting, until a run configured for it starts again."""
    with _lock:
        _stop()


def flush(timeout_s: float = EXPORT_TIMEOUT_S) -> bool:
    """Send the spans waiting in the queue now (tests, a program about to exit); True when the queue emptied in
    time (spans a dead collector refused are dropped, and said once)."""
    maker = _maker
    return True if maker is None else maker.flush(timeout_s)
