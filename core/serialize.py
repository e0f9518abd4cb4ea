"""How callables are saved in checkpoints: as dotted paths of module-level functions, and nothing else.

A checkpoint is data. Restoring one may name functions to import; they are imported only when the user trusts
the checkpoint and sets ``CREWPOINT_DESERIALIZE_CALLBACKS=1``. Lambdas, closures, bound methods,
``functools.partial`` objects, callable instances and builtins cannot be named this way: passing one where a
callback is saved warns, and the callback does not come back after a restore.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import warnings
from collections.abc import Callable
from typing import Any

TRUST_ENV = "CREWPOINT_DESERIALIZE_CALLBACKS"

_PATH_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")
_INTERNAL_PACKAGES = frozenset({"crewpoint", "pydantic", "pydantic_core"})

# Modules that stand for the user's program: functions and classes defined in them are saved as
# ``__main__.name``, and ``__main__.name`` resolves in them. A script loaded through ``--app`` is added.
_program_modules: list[str] = ["__main__"]


def register_program_module(name: str) -> None:
    """Treat module ``name`` as the user's program (see :data:`_program_modules`)."""
    if name not in _program_modules:
        _program_modules.append(name)


def program_modules() -> list[str]:
    """The names of the modules that stand for the user's program, ``"__main__"`` first."""
    return list(_program_modules)


def callable_path(fn: object) -> str | None:
    """The dotted path ``"pkg.module.func"`` that imports ``fn`` back, or None when there is none.

    Only plain module-level functions qualify: a function whose module attribute of the same name is the
    function itself. Lambdas, nested functions, methods, ``functools.partial``, callable instances, builtins
    and functions defined in ``__main__`` give None.
    """
    if not inspect.isfunction(fn):
        return None
    name = fn.__name__
    qualname = fn.__qualname__
    module_name = fn.__module__
    if name == "<lambda>" or "<locals>" in qualname or "." in qualname or qualname != name:
        return None
    if not module_name or module_name == "__main__":
        return None
    module = sys.modules.get(module_name)
    if module is None:
        try:
            module = importlib.import_module(module_name)
        except Exception:
            return None
    if getattr(module, name, None) is not fn:
        return None
    return f"{module_name}.{name}"


def _caller_stacklevel() -> int:
    """The ``stacklevel`` that points a warning at the first frame outside crewpoint and pydantic."""
    level = 2  # 1 is the function calling warnings.warn, 2 its caller
    frame = sys._getframe(2)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".", 1)[0] not in _INTERNAL_PACKAGES:
            return level
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return 2


def check_savable(fn: Callable[..., Any] | None, what: str, *, stacklevel: int | None = None) -> None:
    """Warn when ``fn`` is set but cannot be saved in a checkpoint.

    The warning points at the user's code (the first frame outside crewpoint and pydantic) unless
    ``stacklevel`` is given.
    """
    if fn is None or callable_path(fn) is not None:
        return
    warnings.warn(
        f"{what} callback cannot be saved in a checkpoint: pass a module-level function",
        UserWarning,
        stacklevel=stacklevel if stacklevel is not None else _caller_stacklevel(),
    )


def callbacks_trusted() -> bool:
    """True when the user allows checkpoints to import the callbacks they name."""
    return os.environ.get(TRUST_ENV) == "1"


def import_path(path: str) -> Any:
    """Import the object a dotted path names, without the trust check (for crewpoint's own classes).

    Raises ValueError naming the path when it is malformed or cannot be imported.
    """
    if not isinstance(path, str) or not _PATH_RE.match(path):
        raise ValueError(f"{path!r} is not a dotted path like 'package.module.function'")
    module_name, _, attr = path.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ValueError(f"cannot import {path!r}: module {module_name!r} failed to import ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"cannot import {path!r}: module {module_name!r} has no attribute {attr!r}") from None


def load_callable(path: str) -> Callable[..., Any]:
    """Import the callable a checkpoint names, only when ``CREWPOINT_DESERIALIZE_CALLBACKS=1``.

    Raises ValueError saying what to do when the variable is not set, and ValueError naming the path when it
    cannot be imported or does not name a callable.
    """
    if not callbacks_trusted():
        raise ValueError(
            f"this checkpoint names the callback {path!r}; set {TRUST_ENV}=1 to import it if you trust the "
            "checkpoint, or restore with from_checkpoint() and set the callback again before kickoff()"
        )
    obj = import_path(path)
    if not callable(obj):
        raise ValueError(f"cannot use {path!r} as a callback: it names a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]
