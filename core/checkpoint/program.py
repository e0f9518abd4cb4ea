"""The user's program: where a run's entity came from, and loading it again to resume or fork a checkpoint.

A checkpoint is data; the code that runs it comes from the user's program. An *app spec* names that program:
``path/to/script.py:attr`` or ``package.module:attr``, where the attribute is a Crew, Flow or Agent, its class,
a ``@CrewBase`` project class (the crew of its ``@crew`` method: ``MyCrew().crew()``) or a zero-argument factory
(``:attr`` may be left out when the module holds exactly one such object).

The program to run is the user's: ``--app``, ``[tool.crewpoint] app`` in the project's pyproject.toml, or what is
typed in the app's dialogs. Each checkpoint records its entity's origin (script path or module, and the attribute
when it can be found; never a file of crewpoint's own), and the dialogs may *suggest* it, saying so, only when it is
a file inside the current project (not the standard library, an installed package or crewpoint). Checking a spec
(:func:`app_file`, :func:`suggested_app`) never imports anything: module names are resolved to files by reading
folders on ``sys.path``. Only :func:`load_app`, on the user's word, runs the program; a program that starts a run
while it is loaded is stopped (:class:`KickoffWhileLoading`).
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import re
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from crewpoint.entities import entity_class, kind_of
from crewpoint.project import ProjectError, is_project_class, project_crew
from crewpoint.providers.base import CheckpointError, CheckpointRecord
from crewpoint.serialize import program_modules, register_program_module
from crewpoint.text import a_or_an

#: The name a script loaded through ``--app`` gets in ``sys.modules``. Saved paths to its functions and
#: classes read ``__main__.name``, as when the script runs on its own.
APP_MODULE = "__crewpoint_app__"

#: The bundled demo: the one module of crewpoint's own recorded as an origin (by name, never as a file), so the
#: command line loads it for the demo's own checkpoints only.
DEMO_MODULE = "crewpoint.demo"

_MODULE_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ATTR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_PACKAGES = ("crewpoint", "crewpoint.providers", "crewpoint.tui", "crewpoint.screens")
_PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")


class AppError(CheckpointError):
    """An app spec that cannot be loaded; the message says what to fix."""


class KickoffWhileLoading(AppError):
    """The program named by ``--app`` started a run while it was being loaded."""


# -- what is crewpoint's, what is the project's ------------------------------------------------------------------


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


@functools.cache
def _crewpoint_folders() -> tuple[str, ...]:
    """The folders of crewpoint's own packages, as installed and as their real paths (an editable install links)."""
    folders: set[str] = set()
    for name in _PACKAGES:
        try:
            spec = importlib.util.find_spec(name)  # the parent, ``crewpoint``, is imported already
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        for location in spec.submodule_search_locations or ():
            folders.update((os.path.abspath(location), os.path.realpath(location)))
        if spec.origin:
            folders.add(os.path.dirname(os.path.realpath(spec.origin)))
    return tuple(sorted(folders))


def is_crewpoint_file(path: str) -> bool:
    """Is ``path`` one of crewpoint's own files (its packages, by their path or the real path they link to)?"""
    candidates = {os.path.abspath(path), os.path.realpath(path)}
    return any(_inside(p, f) for p in candidates for f in _crewpoint_folders())


@functools.cache
def _installed_folders() -> tuple[str, ...]:
    """The standard library, site-packages and the interpreter's prefixes: never part of a user's project."""
    import site
    import sysconfig

    found: set[str] = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib", "scripts", "data"):
        value = sysconfig.get_paths().get(key)
        if value:
            found.add(value)
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix):
        found.add(prefix)
    try:
        found.update(site.getsitepackages())
        found.add(site.getusersitepackages())
    except AttributeError:  # an embedded interpreter without them
        pass
    return tuple(sorted({os.path.realpath(f) for f in found if f and os.path.realpath(f) != os.sep}))


def project_root(start: str | os.PathLike[str] | None = None) -> Path:
    """The current project: the nearest folder at or above ``start`` (the working folder) holding a pyproject.toml,
    setup.py, setup.cfg or .git, else the working folder itself."""
    folder = Path(start or os.getcwd()).resolve()
    for candidate in (folder, *folder.parents):
        if any((candidate / marker).exists() for marker in _PROJECT_MARKERS):
            return candidate
    return folder


def project_file(path: str, root: str | os.PathLike[str] | None = None) -> str | None:
    """The real path of ``path`` when it is a regular ``.py`` file inside the current project and none of crewpoint's,
    the standard library's or an installed package's; else None."""
    if not path.endswith(".py") or "\0" in path:
        return None
    real = os.path.realpath(path)
    if not os.path.isfile(real) or not real.endswith(".py"):
        return None
    if not _inside(real, str(Path(root).resolve() if root is not None else project_root())):
        return None
    if is_crewpoint_file(path) or any(_inside(real, folder) for folder in _installed_folders()):
        return None
    return real


# -- the origin recorded in each checkpoint --------------------------------------------------------------------


def origin_of(entity: object) -> dict[str, Any] | None:
    """Where ``entity`` came from: ``{"file": ..., "module": ..., "attr": ...}``, or None when unknown.

    ``attr`` names the module-level variable holding the entity, or its class for a flow; ``module`` is set when
    the program is an importable module rather than a script. crewpoint's own files are never recorded (a run
    resumed by crewpoint's command line without ``--app`` has no origin); the bundled demo is recorded by its
    module name alone.
    """
    origin = _not_crewpoints(_find_origin(entity))
    if origin is None and _continues_the_demo(entity):
        return {"file": None, "module": DEMO_MODULE, "attr": None}
    return origin


def _continues_the_demo(entity: object) -> bool:
    """Is ``entity`` the bundled demo's crew or flow, rebuilt from one of its checkpoints? The command line loads the
    demo only for those, so a resume or fork of a demo checkpoint is the demo's too, and so are its checkpoints."""
    demo = sys.modules.get(DEMO_MODULE)
    names = getattr(demo, "DEMO_ENTITIES", ())
    return demo is not None and getattr(entity, "entity_name", None) in names


def _not_crewpoints(origin: dict[str, Any] | None) -> dict[str, Any] | None:
    if origin is None or not isinstance(origin.get("file"), str) or not is_crewpoint_file(origin["file"]):
        return origin
    if origin.get("module") == DEMO_MODULE:
        return {"file": None, "module": DEMO_MODULE, "attr": origin.get("attr")}
    return None


def _find_origin(entity: object) -> dict[str, Any] | None:

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
    real = os.path.realpath(path)
    if any(_inside(real, folder) for folder in _installed_folders()):  # an installed command (crewpoint's own)
        return None
    return {"file": os.path.abspath(path), "module": _real_name(spec), "attr": None}


def _made_by(entity: object) -> dict[str, Any] | None:
    """The module-level factory function (or flow class) that made ``entity``, when there is one."""
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


def is_demo_checkpoint(record: CheckpointRecord) -> bool:
    """Was ``record`` written by the bundled demo (its origin is the demo module)? Only then does the command line
    load the demo's crew, tools and flow."""
    origin = record.body.get("origin") if isinstance(record.body, Mapping) else None
    return isinstance(origin, Mapping) and origin.get("module") == DEMO_MODULE


# -- what the dialogs pre-fill ------------------------------------------------------------------------------------


class SuggestedApp(str):
    """An app spec the dialogs pre-fill, with ``source``: where the suggestion comes from, said beside it."""

    source: str

    def __new__(cls, spec: str, source: str) -> SuggestedApp:
        made = super().__new__(cls, spec)
        made.source = source
        return made


def suggested_app(record: CheckpointRecord) -> SuggestedApp | None:
    """The app spec to pre-fill for ``record``: the project's default, else the checkpoint's recorded origin when it
    is a file inside the current project (:func:`project_file`). Nothing is imported to decide."""
    found = _project_setting()
    if found is not None:
        spec, pyproject = found
        return SuggestedApp(spec, f"[tool.crewpoint] app in {_shown_path(pyproject)}")
    body = record.body if isinstance(record.body, Mapping) else {}
    recorded = origin_spec(body.get("origin"))
    if recorded is None:
        return None
    return SuggestedApp(recorded, "recorded in the checkpoint (a file of this project): check it is yours")


def origin_spec(origin: object) -> str | None:
    """The app spec of a recorded origin when it is a file inside the current project (:func:`project_file`), as
    typed in the working folder: ``module:attr`` when the working folder imports the file by that name, else its
    path from here. None for any other origin. Nothing is imported to decide."""
    if not isinstance(origin, Mapping):
        return None
    attr = origin.get("attr")
    suffix = f":{attr}" if isinstance(attr, str) and _ATTR_RE.match(attr) else ""
    path = origin.get("file")
    if not isinstance(path, str):
        return None
    real = project_file(path)
    if real is None:
        return None
    module = origin.get("module")
    if isinstance(module, str) and _MODULE_RE.match(module) and locate_module(module) == real:
        return module + suffix
    return _shown_path(real) + suffix


def command_app(origin: object, given: str | None = None) -> str | None:
    """The program a command crewpoint prints names with ``--app``, so that it runs what the run ran when pasted in
    the working folder: ``given`` (the ``--app`` the run was started with), else the recorded origin when it is a
    file of the current project (:func:`origin_spec`), else the project's default (``[tool.crewpoint] app``).
    None when there is none (a run rebuilt from its checkpoint alone goes on the same way)."""
    if given:
        return given
    spec = origin_spec(origin)
    found = _project_setting()
    if found is None:
        return spec
    target, sep, attr = found[0].rpartition(":") if ":" in found[0] else (found[0], "", "")
    default = (_shown_path(target) if target.endswith(".py") else target) + sep + attr
    if spec is None or _same_file(spec, found[0]):  # the project's own spelling of the program that ran
        return default
    return spec


def _same_file(spec: str, other: str) -> bool:
    """Do two app specs name the same file (found without importing)?"""
    try:
        return os.path.realpath(app_file(spec)) == os.path.realpath(app_file(other))
    except AppError:
        return False


def app_placeholder(kind: str, body: Mapping[str, Any] | None = None) -> str:
    """``FILE.py:ATTR`` as a hint names the program of a ``kind`` checkpoint: the recorded origin's spec when it is
    a file of this project, else ``FILE.py:crew``, ``FILE.py:agent`` or, for a flow, ``FILE.py:`` and its class."""
    spec = command_app((body or {}).get("origin"))
    if spec is not None:
        return spec
    entity = (body or {}).get("entity")
    saved = entity.get("class") if isinstance(entity, Mapping) else None
    name = saved.rpartition(".")[2] if isinstance(saved, str) else ""
    return f"FILE.py:{name if _ATTR_RE.match(name) else kind}"


def _shown_path(path: str | os.PathLike[str]) -> str:
    try:
        relative = os.path.relpath(path)
    except ValueError:
        return str(path)
    return str(path) if relative.startswith(os.pardir) else relative


def project_app(start: str | os.PathLike[str] | None = None) -> str | None:
    """``[tool.crewpoint] app`` from the nearest pyproject.toml at or above ``start`` (the working folder)."""
    found = _project_setting(start)
    return found[0] if found is not None else None


def _project_setting(start: str | os.PathLike[str] | None = None) -> tuple[str, Path] | None:
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
        tool = data.get("tool")
        settings = tool.get("crewpoint") if isinstance(tool, dict) else None
        app = settings.get("app") if isinstance(settings, dict) else None
        if not isinstance(app, str) or not app.strip():
            return None
        target, sep, attr = app.strip().rpartition(":") if ":" in app else (app.strip(), "", "")
        if target.endswith(".py") and not os.path.isabs(target):
            target = str(candidate / target)
        return f"{target}{sep}{attr}", pyproject
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


def _is_script(target: str) -> bool:
    return target.endswith(".py") or os.sep in target or "/" in target


def app_file(spec: str) -> str:
    """The file ``spec`` will execute (a script path, or the module's source file), without importing anything:
    a module name is looked up in the folders of ``sys.path`` (:func:`locate_module`)."""
    target, _ = split_spec(spec)
    if _is_script(target):
        path = os.path.abspath(target)
        if not os.path.isfile(path):
            raise AppError(f"--app {spec!r}: {path}: no such file")
        return path
    if not _MODULE_RE.match(target):
        raise AppError(f"--app {spec!r}: {target!r} is neither a .py file nor a module name")
    found = locate_module(target)
    if found is None:
        raise AppError(f"--app {spec!r}: no module named {target!r} in the folders on the path (nothing was imported)")
    return found


def locate_module(name: str) -> str | None:
    """The source file that importing ``name`` would run, found by reading folders (the working folder, then
    ``sys.path``), never by importing: a regular package's ``__init__.py`` wins over a same-named ``.py``, as in
    Python, and the rest of the name is looked up inside it. None when no source file is found (a builtin, an
    extension module, a zip archive or an import hook: name such a program by its file)."""
    if not _MODULE_RE.match(name):
        return None
    first, *rest = name.split(".")
    entries = [os.getcwd(), *(entry or os.getcwd() for entry in sys.path)]
    folders = [e for e in dict.fromkeys(os.path.abspath(e) for e in entries) if os.path.isdir(e)]
    namespace: list[str] = []
    for folder in folders:
        package = os.path.join(folder, first)
        if os.path.isfile(os.path.join(package, "__init__.py")):
            return _locate_in(package, rest)
        if os.path.isfile(package + ".py"):
            return os.path.abspath(package + ".py") if not rest else None
        if os.path.isdir(package):
            namespace.append(package)
    for package in namespace:  # a namespace package spans every folder that has it
        found = _locate_in(package, rest)
        if found is not None:
            return found
    return None


def _locate_in(package: str, rest: list[str]) -> str | None:
    folder = package
    for index, part in enumerate(rest):
        last = index == len(rest) - 1
        inner = os.path.join(folder, part)
        if os.path.isfile(os.path.join(inner, "__init__.py")) or (os.path.isdir(inner) and not last):
            folder = inner
            continue
        if last and os.path.isfile(inner + ".py"):
            return os.path.abspath(inner + ".py")
        return None
    init = os.path.join(folder, "__init__.py")
    return os.path.abspath(init) if os.path.isfile(init) else None


_loading: list[str] = []
"""The programs being loaded by :func:`load_app` (innermost last); a run started meanwhile is refused."""
_kickoffs: list[str] = []


def refuse_kickoff_while_loading() -> None:
    """Called as every run starts: while ``--app`` loads a program, a run it starts stops the load with one line
    (a script whose module level calls ``kickoff()`` would otherwise run a whole fresh crew before resuming)."""
    if _loading:
        _kickoffs.append(_loading[-1])
        raise KickoffWhileLoading(_kickoff_message(_loading[-1]))


def _kickoff_message(path: str) -> str:
    return (
        f"--app: {_shown_path(path)} starts a run while it is loaded (a kickoff() at module level): "
        'put that code under `if __name__ == "__main__":` so --app can load it without running it'
    )


@contextmanager
def _no_kickoff(path: str) -> Iterator[None]:
    _loading.append(path)
    started = len(_kickoffs)
    try:
        yield
    except KickoffWhileLoading:
        raise AppError(_kickoff_message(path)) from None
    finally:
        _loading.pop()
    if len(_kickoffs) > started:  # the program caught the refusal and went on loading
        raise AppError(_kickoff_message(path))


def load_app(spec: str, kind: str) -> Any:
    """Run the program ``spec`` names and return its entity of ``kind`` (crew, flow, agent).

    A script is loaded as its own module (not as ``__main__``, so its ``if __name__ == "__main__":`` block does
    not run); its folder goes on ``sys.path`` so its sibling modules import as they do when it runs. A program that
    starts a run while it loads is stopped before the run does any work.
    """
    target, attr = split_spec(spec)
    if _is_script(target):
        module = _load_script(app_file(spec))
    else:
        if not _MODULE_RE.match(target):
            raise AppError(f"--app {spec!r}: {target!r} is neither a .py file nor a module name")
        if os.getcwd() not in sys.path and "" not in sys.path:
            sys.path.insert(0, os.getcwd())
        try:
            with _no_kickoff(locate_module(target) or target):
                module = importlib.import_module(target)
        except AppError:
            raise
        except ModuleNotFoundError as exc:
            if exc.name is not None and (target == exc.name or target.startswith(exc.name + ".")):
                raise AppError(f"--app {spec!r}: no module named {exc.name!r} on the path") from None
            raise AppError(f"--app {spec!r}: importing {target} failed: {type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            raise AppError(f"--app {spec!r}: importing {target} failed: {type(exc).__name__}: {exc}") from exc
    return _entity_from(module, attr, kind, spec)


def _load_script(path: str) -> Any:

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
        with _no_kickoff(path):
            spec.loader.exec_module(module)
    except AppError:
        raise
    except SystemExit as exc:
        raise AppError(f"--app: {path} exited while loading (exit {exc.code})") from None
    except Exception as exc:
        raise AppError(f"--app: {path} failed while loading: {type(exc).__name__}: {exc}") from exc
    return module


def _kind_class(kind: str) -> type[Any]:

    try:
        return entity_class(kind)
    except CheckpointError as exc:
        raise AppError(str(exc)) from None


def _entity_from(module: Any, attr: str | None, kind: str, spec: str) -> Any:

    cls = _kind_class(kind)
    by_class = kind_of(kind).named_by_class  # a flow: the program may name its class, which is made here
    has_projects = kind_of(kind).has_tasks  # a crew: the program may name a @CrewBase class, whose @crew is run
    if attr is None:
        found = [
            name
            for name, value in vars(module).items()
            if not name.startswith("_")
            and (
                isinstance(value, cls)
                or (by_class and _is_own_class(value, module, cls))
                or (has_projects and _is_own_project(value, module))
            )
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
    if isinstance(value, type) and issubclass(value, cls) and by_class:
        return value()
    if has_projects and is_project_class(value):
        return _project_entity(value, attr, spec, cls)
    if callable(value) and not isinstance(value, type):
        try:
            made = value()
        except Exception as exc:
            raise AppError(f"--app {spec!r}: calling {attr}() failed: {type(exc).__name__}: {exc}") from exc
        if isinstance(made, cls):
            return made
        if has_projects and is_project_class(type(made)):
            return _project_entity(lambda: made, attr, spec, cls)
        raise AppError(f"--app {spec!r}: {attr}() returned {a_or_an(type(made).__name__)}, not {a_or_an(kind)}")
    raise AppError(
        f"--app {spec!r}: {attr} is {a_or_an(type(value).__name__)}, not {a_or_an(kind)} or a function making one"
    )


def _project_entity(make: Any, attr: str, spec: str, cls: type[Any]) -> Any:
    """The crew of a ``@CrewBase`` class (or of the instance a factory made): ``MyCrew().crew()``."""
    try:
        made = project_crew(make())
    except Exception as exc:
        detail = str(exc) if isinstance(exc, ProjectError) else f"{type(exc).__name__}: {exc}"
        raise AppError(f"--app {spec!r}: making the crew of {attr} failed: {detail}") from exc
    if not isinstance(made, cls):
        got = a_or_an(type(made).__name__)
        raise AppError(f"--app {spec!r}: the @crew method of {attr} returned {got}, not a Crew")
    return made


def _is_own_project(value: Any, module: Any) -> bool:
    return is_project_class(value) and value.__module__ == module.__name__


def _is_own_class(value: Any, module: Any, base: type[Any]) -> bool:
    return isinstance(value, type) and issubclass(value, base) and value.__module__ == module.__name__
