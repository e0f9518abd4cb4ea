"""The user's program: where a run's entity came from, and loading it again to resume or fork a checkpoint.

A checkpoint is data; the code that runs it comes from the user's program. An *app spec* names that program:
``path/to/script.py:attr`` or ``package.module:attr``, where the attribute is a Crew, Flow or Agent, its class,
or a zero-argument factory (``:attr`` may be left out when the module holds exactly one such object).

Each checkpoint records its entity's origin (script path or module, and the attribute when it can be found),
so the terminal app can pre-fill the spec; nothing is ever run because a checkpoint names it: the command line
needs ``--app`` (or ``[tool.crewpoint] app`` in the project's pyproject.toml), and the app shows the file it
will run before it runs it.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crewpoint.providers.base import CheckpointError, CheckpointRecord

#: The name a script loaded through ``--app`` gets in ``sys.modules``. Saved paths to its functions and
#: classes read ``__main__.name``, as when the script runs on its own.
APP_MODULE = "__crewpoint_app__"

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ATTR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class AppError(CheckpointError):
    """An app spec that cannot be loaded; the message says what to fix."""


# -- the origin recorded in each checkpoint --------------------------------------------------------------------


def origin_of(entity: object) -> dict[str, Any] | None:
    """Where ``entity`` came from: ``{"file": ..., "module": ..., "attr": ...}``, or None when unknown.

    ``attr`` names the module-level variable holding the entity, or its class for a flow; ``module`` is set when
    the program is an importable module rather than a script.
    """
    from crewpoint.serialize import program_modules

    for name in program_modules():
        module = sys.modules.get(name)
        if module is None:
            continue
        origin = _origin_in(module, entity)
        if origin is not None:
            return origin
    made = _made_by(entity)
    if made is not None:
        return made
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    path = getattr(main, "__file__", None)
    if path is None:
        return None
    return {"file": os.path.abspath(path), "module": _real_name(spec), "attr": None}


def _made_by(entity: object) -> dict[str, Any] | None:
    """The module-level factory function (or flow class) that made ``entity``, when there is one."""
    from crewpoint.serialize import program_modules

    cls = type(entity)
    if cls.__name__ not in ("Crew", "Agent"):
        module_name, attr = cls.__module__, cls.__qualname__
    else:
        made_in = getattr(entity, "_made_in", None)
        if not made_in:
            return None
        module_name, attr = made_in
    module = sys.modules.get(module_name)
    if module is None or not _ATTR_RE.match(attr) or getattr(module, attr, None) is None:
        return None
    path = getattr(module, "__file__", None)
    if path is None:
        return None
    real = None if module_name in program_modules() else _real_name(getattr(module, "__spec__", None))
    return {"file": os.path.abspath(path), "module": real, "attr": attr}


def _origin_in(module: Any, entity: object) -> dict[str, Any] | None:
    path = getattr(module, "__file__", None)
    if path is None:
        return None
    attr = None
    for key, value in list(vars(module).items()):
        if value is entity and _ATTR_RE.match(key):
            attr = key
            break
    if attr is None:
        cls = type(entity)
        if cls.__module__ == module.__name__ and getattr(module, cls.__qualname__, None) is cls:
            if cls.__name__ not in ("Crew", "Agent"):
                attr = cls.__qualname__
    if attr is None and module.__name__ == APP_MODULE:
        attr = getattr(module, "__crewpoint_attr__", None)
    if attr is None:
        return None
    return {"file": os.path.abspath(path), "module": _real_name(getattr(module, "__spec__", None)), "attr": attr}


def _real_name(spec: Any) -> str | None:
    name = getattr(spec, "name", None)
    if not name or name in ("__main__", APP_MODULE) or name.endswith(".__main__"):
        return None
    return str(name)


def suggested_app(record: CheckpointRecord) -> str | None:
    """The app spec to pre-fill for ``record``: the project's default, else the checkpoint's recorded origin."""
    default = project_app()
    if default:
        return default
    origin = record.body.get("origin")
    if not isinstance(origin, Mapping):
        return None
    attr = origin.get("attr")
    suffix = f":{attr}" if isinstance(attr, str) and _ATTR_RE.match(attr) else ""
    module = origin.get("module")
    if isinstance(module, str) and _MODULE_RE.match(module):
        return module + suffix
    path = origin.get("file")
    if isinstance(path, str) and path.endswith(".py"):
        try:
            path = os.path.relpath(path)
        except ValueError:
            pass
        return path + suffix
    return None


def project_app(start: str | os.PathLike[str] | None = None) -> str | None:
    """``[tool.crewpoint] app`` from the nearest pyproject.toml at or above ``start`` (the working folder)."""
    import tomllib

    folder = Path(start or os.getcwd()).resolve()
    for candidate in (folder, *folder.parents):
        pyproject = candidate / "pyproject.toml"
        if not pyproject.is_file():
            continue
        try:
            data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        app = data.get("tool", {}).get("crewpoint", {}).get("app")
        if not isinstance(app, str) or not app.strip():
            return None
        target, sep, attr = app.strip().rpartition(":") if ":" in app else (app.strip(), "", "")
        if target.endswith(".py") and not os.path.isabs(target):
            target = str(candidate / target)
        return f"{target}{sep}{attr}"
    return None


# -- loading the program ----------------------------------------------------------------------------------------


def split_spec(spec: str) -> tuple[str, str | None]:
    """``"file.py:attr"`` → ``("file.py", "attr")``; the attribute may be left out."""
    text = spec.strip()
    if not text:
        raise AppError("empty --app: name the program as FILE.py:attr or package.module:attr")
    target, sep, attr = text.rpartition(":")
    if not sep or (len(target) == 1 and target.isalpha()):  # no attribute (or a bare Windows drive letter)
        return text, None
    if not _ATTR_RE.match(attr):
        raise AppError(f"--app {spec!r}: {attr!r} is not an attribute name (use FILE.py:attr or module:attr)")
    return target, attr


def app_file(spec: str) -> str:
    """The file ``spec`` will execute (a script path, or the module's source file), without running anything."""
    target, _ = split_spec(spec)
    if target.endswith(".py") or os.sep in target or "/" in target:
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise AppError(f"--app {spec!r}: {path}: no such file")
        return path
    if not _MODULE_RE.match(target):
        raise AppError(f"--app {spec!r}: {target!r} is neither a .py file nor a module name")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        found = importlib.util.find_spec(target)
    except (ImportError, ValueError) as exc:
        raise AppError(f"--app {spec!r}: cannot find module {target!r} ({exc})") from None
    if found is None or not found.origin:
        raise AppError(f"--app {spec!r}: no module named {target!r} on the path")
    return str(found.origin)


def load_app(spec: str, kind: str) -> Any:
    """Run the program ``spec`` names and return its entity of ``kind`` (crew, flow, agent).

    A script is loaded as its own module (not as ``__main__``, so its ``if __name__ == "__main__":`` block does
    not run); its folder goes on ``sys.path`` so its sibling modules import as they do when it runs.
    """
    target, attr = split_spec(spec)
    path = app_file(spec)
    if target.endswith(".py") or os.sep in target or "/" in target:
        module = _load_script(path)
    else:
        try:
            module = importlib.import_module(target)
        except Exception as exc:
            raise AppError(f"--app {spec!r}: importing {target} failed: {type(exc).__name__}: {exc}") from exc
    return _entity_from(module, attr, kind, spec)


def _load_script(path: str) -> Any:
    from crewpoint.serialize import register_program_module

    folder = os.path.dirname(path)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    spec = importlib.util.spec_from_file_location(APP_MODULE, path)
    if spec is None or spec.loader is None:
        raise AppError(f"--app: cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[APP_MODULE] = module
    register_program_module(APP_MODULE)
    try:
        spec.loader.exec_module(module)
    except SystemExit as exc:
        raise AppError(f"--app: {path} exited while loading (exit {exc.code})") from None
    except Exception as exc:
        raise AppError(f"--app: {path} failed while loading: {type(exc).__name__}: {exc}") from exc
    return module


def _kind_class(kind: str) -> type[Any]:
    from crewpoint.checkpoint.restore_entities import entity_class

    try:
        return entity_class(kind)
    except CheckpointError as exc:
        raise AppError(str(exc)) from None


def _entity_from(module: Any, attr: str | None, kind: str, spec: str) -> Any:
    cls = _kind_class(kind)
    if attr is None:
        found = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (isinstance(value, cls) or (kind == "flow" and _is_own_flow_class(value, module, cls)))
        ]
        if len(found) != 1:
            what = ", ".join(found) if found else "none"
            raise AppError(f"--app {spec!r}: name the {kind} to use as FILE:attr (found {what})")
        attr = found[0]
    if not hasattr(module, attr):
        raise AppError(f"--app {spec!r}: the program has no attribute {attr!r}")
    value = getattr(module, attr)
    if isinstance(value, cls):
        return value
    if isinstance(value, type) and issubclass(value, cls) and kind == "flow":
        return value()
    if callable(value) and not isinstance(value, type):
        try:
            made = value()
        except Exception as exc:
            raise AppError(f"--app {spec!r}: calling {attr}() failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(made, cls):
            return made
        raise AppError(f"--app {spec!r}: {attr}() returned a {type(made).__name__}, not a {kind}")
    raise AppError(f"--app {spec!r}: {attr} is a {type(value).__name__}, not a {kind} or a function making one")


def _is_own_flow_class(value: Any, module: Any, flow: type[Any]) -> bool:
    return isinstance(value, type) and issubclass(value, flow) and value.__module__ == module.__name__
