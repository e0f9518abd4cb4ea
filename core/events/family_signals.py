"""Event classes: System signals. Built when first used (see :mod:`crewpoint.events.types`)."""

from __future__ import annotations

import signal
from typing import Literal

from crewpoint.events.base import BaseEvent


def _signum(name: str) -> int | None:
    sig = getattr(signal, name, None)
    return int(sig) if sig is not None else None


class SignalEvent(BaseEvent):
    """The process received a signal; ``signal_number`` is its number here (None where it does not exist)."""

    signal_number: int | None = None


class SigtermEvent(SignalEvent):
    type: Literal["SIGTERM"] = "SIGTERM"
    signal_number: int | None = _signum("SIGTERM")


class SigintEvent(SignalEvent):
    type: Literal["SIGINT"] = "SIGINT"
    signal_number: int | None = _signum("SIGINT")


class SighupEvent(SignalEvent):
    type: Literal["SIGHUP"] = "SIGHUP"
    signal_number: int | None = _signum("SIGHUP")


class SigtstpEvent(SignalEvent):
    type: Literal["SIGTSTP"] = "SIGTSTP"
    signal_number: int | None = _signum("SIGTSTP")


class SigcontEvent(SignalEvent):
    type: Literal["SIGCONT"] = "SIGCONT"
    signal_number: int | None = _signum("SIGCONT")
