"""How code is named in checkpoints, and the trust rule that decides what a checkpoint may bring back.

A checkpoint is data. Code (LLM classes, tools, callbacks, guardrails, knowledge sources, flow classes) is saved
as dotted paths: module-level functions and classes only, ``__main__.name`` for those of the user's script.
Rebuilding from a checkpoint, a class resolves only when the running program already defines it and it is of the
expected kind, and nothing is imported; a function (callback, guardrail, tool function) or anything that needs an
import comes back only when the user trusts the checkpoint and sets ``CREWPOINT_DESERIALIZE_CALLBACKS=1``. No
package is exempt, crewpoint included. State is read back by declaration: untrusted, a checkpoint sets only the
fields a class declares as :data:`CheckpointState` (``Annotated[float, CheckpointState]``); every other field comes
from the program (its live object when bound, its class defaults on a rebuild). Lambdas, closures, bound methods,
``functools.partial`` objects, callable instances and builtins cannot be named: passing one where a callback is
saved warns, and it does not come back after a restore.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from crewpoint.text import a_or_an

if TYPE_CHECKING:
    from pydantic import BaseModel

T = TypeVar("T")
M = TypeVar("M", bound="BaseModel")

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


def _in_program(module_name: str) -> bool:
    return module_name in _program_modules


def callable_path(fn: object) -> str | None:
    """The dotted path ``"pkg.module.func"`` that names ``fn``, or None when there is none.

    Only plain module-level functions qualify: a function whose module attribute of the same name is the
    function itself. Functions of the user's program (a script run as ``__main__``, or loaded through
    ``--app``) are named ``__main__.func``, as the script sees them. Lambdas, nested functions, methods,
    ``functools.partial``, callable instances and builtins give None.
    """
    if not inspect.isfunction(fn):
        return None
    name = fn.__name__
    qualname = fn.__qualname__
    module_name = fn.__module__
    if name == "<lambda>" or "<locals>" in qualname or "." in qualname or qualname != name or not module_name:
        return None
    module = sys.modules.get(module_name)
    if module is None:
        return None
    attr = getattr(module, name, None)
    if attr is not fn and getattr(attr, "func", None) is not fn:  # a @tool keeps its function as .func
        return None
    return f"__main__.{name}" if _in_program(module_name) else f"{module_name}.{name}"


def class_path(cls: type) -> str:
    """The dotted path that names ``cls``: ``__main__.Name`` for a class of the user's program."""
    module = "__main__" if _in_program(cls.__module__) else cls.__module__
    return f"{module}.{cls.__qualname__}"


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


_ENTITY_MODULES = frozenset({"crewpoint.crew", "crewpoint.agent", "crewpoint.task", "crewpoint.flow"})


def maker() -> tuple[str, str] | None:
    """``(module, function)`` of the module-level function that is constructing an entity right now, if any.

    Recorded at construction so a checkpoint can say which factory made its crew (``module:factory``).
    """
    frame = sys._getframe(1)
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".", 1)[0] not in ("pydantic", "pydantic_core") and module not in _ENTITY_MODULES:
            name = frame.f_code.co_name
            if name.startswith("<") or frame.f_code.co_qualname != name:
                return None
            return (module, name)
        frame = frame.f_back  # type: ignore[assignment]
    return None


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
    """True when the user trusts checkpoints: ``CREWPOINT_DESERIALIZE_CALLBACKS=1``."""
    return os.environ.get(TRUST_ENV) == "1"


WAYS_OUT = (
    f"set {TRUST_ENV}=1 if you trust this checkpoint, or resume your own program: "
    "crew.kickoff(from_checkpoint=...), or `crewpoint checkpoint resume ID --app FILE.py:crew`"
)


def _split(path: str) -> tuple[str, str]:
    if not isinstance(path, str) or not _PATH_RE.match(path):
        raise ValueError(f"{path!r} is not a dotted path like 'package.module.function'")
    module_name, _, attr = path.rpartition(".")
    return module_name, attr


def defined(path: str) -> Any:
    """The object ``path`` names if the running program already has it, else None. Imports nothing.

    ``__main__.name`` is looked up in the user's program (the script run as ``__main__``, or loaded through
    ``--app``); any other module must already be imported.
    """
    try:
        module_name, attr = _split(path)
    except ValueError:
        return None
    names = _program_modules if module_name == "__main__" else [module_name]
    for name in names:
        module = sys.modules.get(name)
        if module is not None and attr in vars(module):
            return vars(module)[attr]
    return None


def import_path(path: str) -> Any:
    """Import the object a dotted path names (``__main__.name`` from the user's program).

    Only for checkpoints the user trusts: callers check :func:`callbacks_trusted` first. Raises ValueError naming
    the path when it is malformed or cannot be imported.
    """
    module_name, attr = _split(path)
    if module_name == "__main__":
        found = defined(path)
        if found is None:
            raise ValueError(
                f"cannot find {path!r}: it belongs to the script that wrote the checkpoint, which is not running "
                "here; name it with --app FILE.py:attr, or resume from that script with kickoff(from_checkpoint=...)"
            )
        return found
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise ValueError(f"cannot import {path!r}: module {module_name!r} failed to import ({exc})") from exc
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ValueError(f"cannot import {path!r}: module {module_name!r} has no attribute {attr!r}") from None


def load_callable(path: str, what: str = "callback", *, trusted: bool | None = None) -> Callable[..., Any]:
    """The callable a checkpoint names as ``what``, imported only when ``CREWPOINT_DESERIALIZE_CALLBACKS=1``.

    A function is code: a checkpoint that is not trusted never picks one, not even one of crewpoint's. Raises
    ValueError naming the field and the ways out, or naming the path when it cannot be used.
    """
    if not (callbacks_trusted() if trusted is None else trusted):
        raise ValueError(f"this checkpoint names the {what} {path!r}; {WAYS_OUT}")

    obj = import_path(path)
    if not callable(obj):
        raise ValueError(f"cannot use {path!r} as a {what}: it names {a_or_an(type(obj).__name__)}, not a callable")
    return obj  # type: ignore[no-any-return]


def load_class(
    path: str, base: type[T], what: str, *, trusted: bool | None = None, ways_out: str = WAYS_OUT
) -> type[T]:
    """The class a checkpoint names as ``what``, which must be a subclass of ``base``.

    Untrusted, it resolves only when the running program already defines it, and nothing is imported; trusted
    (``CREWPOINT_DESERIALIZE_CALLBACKS=1``), it is imported as saved. ``ways_out`` ends the refusal: what the
    user can do instead (the default names a crew's).
    """
    obj = defined(path)
    if obj is None:
        if not (callbacks_trusted() if trusted is None else trusted):
            raise ValueError(
                f"this checkpoint names the {what} {path!r}, which this program does not define; {ways_out}"
            )
        obj = import_path(path)
    if not (isinstance(obj, type) and issubclass(obj, base)):
        raise ValueError(f"this checkpoint names the {what} {path!r}, which is not a {base.__name__}")
    return obj


class _CheckpointStateMarker:
    """The marker behind :data:`CheckpointState` (one instance, compared by identity)."""

    _instance: _CheckpointStateMarker | None = None

    def __new__(cls) -> _CheckpointStateMarker:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "CheckpointState"

    def __reduce__(self) -> str:
        return "CheckpointState"


CheckpointState = _CheckpointStateMarker()
"""Declares a pydantic field as checkpoint state: ``temperature: Annotated[float, CheckpointState] = 0.2``.

Without ``CREWPOINT_DESERIALIZE_CALLBACKS=1`` a rebuild from a checkpoint sets only the fields a class declares
this way; every other field takes its class default (and a live object bound to a checkpoint keeps its own).
A declaration is inherited: a subclass that redefines a declared field keeps it declared.
"""


def declared_state(cls: type[BaseModel]) -> frozenset[str]:
    """The names of the fields ``cls`` (or any class it inherits them from) declares as checkpoint state."""
    names: set[str] = set()
    for klass in cls.__mro__:
        fields = vars(klass).get("__pydantic_fields__")
        if not isinstance(fields, dict):
            continue
        for name, info in fields.items():
            if any(isinstance(m, _CheckpointStateMarker) for m in getattr(info, "metadata", ())):
                names.add(name)
    return frozenset(name for name in names if name in cls.model_fields)


def state_fields(cls: type[BaseModel], saved: Mapping[str, Any], *, trusted: bool | None = None) -> dict[str, Any]:
    """The saved fields a checkpoint may set on ``cls``: all of them when trusted, else the declared ones."""
    if callbacks_trusted() if trusted is None else trusted:
        return dict(saved)
    declared = declared_state(cls)
    return {k: v for k, v in saved.items() if k in declared}


def rebuild(
    cls: type[M],
    saved: Mapping[str, Any],
    what: str,
    *,
    given: Mapping[str, Any] | None = None,
    trusted: bool | None = None,
) -> M:
    """An instance of ``cls`` from a checkpoint's ``saved`` fields under the trust rule.

    Untrusted, only the fields ``cls`` declares as :data:`CheckpointState` are read from ``saved``; ``given``
    (values the caller has already vetted, such as a restored callback) is applied on top; every other field
    takes its class default. A required field that nothing fills stops the rebuild with one line saying to bind
    the program. Raises ValueError.
    """
    values = {**state_fields(cls, saved, trusted=trusted), **(given or {})}
    missing = [name for name, info in cls.model_fields.items() if info.is_required() and name not in values]
    if missing:
        raise ValueError(
            f"cannot rebuild the {what} {class_path(cls)!r} from this checkpoint: its field {missing[0]!r} has no "
            "default and is not declared as checkpoint state; resume your own program instead: "
            "crew.kickoff(from_checkpoint=...) or `crewpoint checkpoint resume ID --app FILE.py:crew` "
            f"(or set {TRUST_ENV}=1 if you trust this checkpoint)"
        )
    try:
        return cls.model_validate(values)
    except ValueError as exc:
        text = " ".join(str(exc).split())
        where = f"the checkpoint's fields for the {what} {class_path(cls)!r}"
        raise ValueError(f"{where} are invalid: {text[:300]}") from None
