"""What a flow's resume keeps when its methods changed since the checkpoint: a verdict per method.

A flow's checkpoint keeps a fingerprint of every method of its class (:func:`flow_fingerprints`): the hash of the
method's source (dedented; its code object's bytecode and constants when there is no source), what it listens to
(``@start``, ``@listen``/``@router`` conditions) and, for a router, the labels it routes to. It also keeps which
state keys each method wrote. :func:`flow_change_plan` compares the saved fingerprints with the program's: a changed
method runs again, and so does every method that listens to one that runs again, however far down; the other
methods that completed keep their saved outputs.
"""

from __future__ import annotations

import inspect
import textwrap
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from crewpoint.checkpoint.changes import ChangePlan, Verdict, changed_parts, fingerprint

if TYPE_CHECKING:
    from crewpoint.flow import Flow

__all__ = ["flow_change_plan"]

BEFORE_FINGERPRINTS = "this checkpoint was written before fingerprints: its completed methods are kept as they are"

_fingerprints: weakref.WeakKeyDictionary[type[Any], dict[str, dict[str, str]]] = weakref.WeakKeyDictionary()
_wiring: weakref.WeakKeyDictionary[type[Any], dict[str, set[str]]] = weakref.WeakKeyDictionary()
"""Made once per flow class: a plan over many checkpoints reads each method's source once."""


def method_names(cls: type[Flow[Any]]) -> list[str]:
    """The flow's methods in the order they are declared: its entry points, then its listeners and routers."""
    names = list(cls._starts)
    names += [name for name, _ in cls._listeners if name not in names]
    return names


def _source(fn: Any) -> str:
    """A method's source from its ``def`` on (its decorators are its wiring, a part of their own), dedented; its
    code's bytecode and constants when the source cannot be read."""
    fn = inspect.unwrap(fn)
    try:
        lines = textwrap.dedent(inspect.getsource(fn)).splitlines()
        first = next((i for i, line in enumerate(lines) if line.startswith(("def ", "async def "))), 0)
        return "\n".join(lines[first:])
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return repr((code.co_code, code.co_consts)) if code is not None else repr(fn)


def _listens(cls: type[Flow[Any]], name: str) -> list[str]:
    """What wakes the method, in words: "start" for an entry point, then its condition's names ("and" or "or")."""
    words = ["start"] if name in cls._starts else []
    cond = next((c for listener, c in cls._listeners if listener == name), None)
    if cond is not None and cond.names:
        words.append((" and " if cond.mode == "and" else " or ").join(cond.names))
    return words


def _routes(cls: type[Flow[Any]], name: str) -> list[str]:
    """A router's labels, as far as they can be told without running it; none for another method."""
    # lazy: crewpoint.flow loads pydantic, which a plan over checkpoints alone does not need until a flow is there
    from crewpoint.flow import _router_labels

    return sorted(_router_labels(getattr(cls, name))) if name in cls._routers else []


def flow_fingerprints(cls: type[Flow[Any]]) -> dict[str, dict[str, str]]:
    """Each method of the flow class: its ``source``, ``listens`` and ``routes`` parts' short hashes (made once)."""
    cached = _fingerprints.get(cls)
    if cached is None:
        cached = _fingerprints[cls] = {
            name: fingerprint(
                {
                    "source": _source(getattr(cls, name)),
                    "listens": _listens(cls, name),
                    "routes": _routes(cls, name),
                }
            )
            for name in method_names(cls)
        }
    return cached


def _reason(cls: type[Flow[Any]], name: str, part: str) -> str:
    if part == "listens":
        words = _listens(cls, name)
        return f"listens to {', '.join(words)} now" if words else "listens to nothing now"
    if part == "routes":
        routes = _routes(cls, name)
        return f"routes to {', '.join(routes)} now" if routes else "routes nowhere now"
    return f"{part} changed"


def _wakes(cls: type[Flow[Any]]) -> dict[str, set[str]]:
    """For each method, the methods it wakes: those listening to its name or, for a router, to one of its
    labels (a label no router is seen to return is taken as any router's)."""
    cached = _wiring.get(cls)
    if cached is not None:
        return cached
    routes = {name: set(_routes(cls, name)) for name in cls._routers}
    known = set(method_names(cls)).union(*routes.values())
    wakes: dict[str, set[str]] = {name: set() for name in method_names(cls)}
    for listener, cond in cls._listeners:
        for word in cond.names:
            if word in wakes:
                wakes[word].add(listener)
            for router, labels in routes.items():
                if word in labels or word not in known:
                    wakes[router].add(listener)
    _wiring[cls] = wakes
    return wakes


def reruns(cls: type[Flow[Any]], changed: Iterable[str]) -> set[str]:
    """The changed methods and every method that listens to one of them, however far down."""
    wakes = _wakes(cls)
    out: set[str] = set()
    todo = list(changed)
    while todo:
        name = todo.pop()
        if name not in out:
            out.add(name)
            todo.extend(wakes.get(name, ()))
    return out


def _dropped_reason(name: str, wrote: Mapping[str, Any]) -> str:
    """What became of the state a dropped method wrote, as far as the checkpoint says."""
    keys = wrote.get(name)
    if isinstance(keys, list) and keys:
        return f"the state keys it wrote keep their saved values: {', '.join(map(str, keys))}"
    if isinstance(keys, list):
        return "it wrote no state key"
    return "the checkpoint does not say which state keys it wrote"


def flow_change_plan(saved_entity_state: Mapping[str, Any], flow: Flow[Any] | type[Flow[Any]]) -> ChangePlan:
    """One verdict per method of ``flow`` (the program's flow, or its class) against the flow saved in the
    checkpoint (the body's ``entity``), then one per saved method the program dropped.

    ``kept``: same fingerprint (it runs when it had not completed, or when it listens to a method that runs again);
    ``changed``: it runs again, the reasons name the parts ("source changed", "listens to research now"); ``new``: it
    runs; ``dropped``: its saved output is not used, and a note names the state keys it wrote. A checkpoint written
    before fingerprints gets one note and every method ``kept``, as resumes were before.
    """
    cls = flow if isinstance(flow, type) else type(flow)
    names = method_names(cls)
    outputs = [str(entry[0]) for entry in saved_entity_state.get("method_outputs") or ()]
    first = {name: outputs.index(name) for name in dict.fromkeys(outputs)}
    saved: Mapping[str, Mapping[str, str]] = saved_entity_state.get("method_fingerprints") or {}
    if not saved:
        verdicts = [Verdict(n, "kept", i, first.get(n), n not in first) for i, n in enumerate(names)]
        return ChangePlan(tuple(verdicts), (BEFORE_FINGERPRINTS,))
    current = flow_fingerprints(cls)
    differs = {n: changed_parts(saved[n], current[n]) for n in names if n in saved}
    changed = {n for n, parts in differs.items() if parts}
    new = {n for n in names if n not in saved}
    reach = {n: reruns(cls, [n]) for n in changed | new}
    again = set().union(*reach.values())
    verdicts = []
    for i, name in enumerate(names):
        done = first.get(name)
        if name in new:
            verdicts.append(Verdict(name, "new", i, None, True))
        elif name in changed:
            reasons = tuple(_reason(cls, name, part) for part in differs[name])
            verdicts.append(Verdict(name, "changed", i, done, True, reasons))
        else:
            after = sorted(n for n, woken in reach.items() if name in woken)
            why = tuple(f"listens to '{n}', which runs" for n in after if done is not None)
            verdicts.append(Verdict(name, "kept", i, done, done is None or name in again, why))
    wrote: Mapping[str, Any] = saved_entity_state.get("state_writers") or {}
    gone = [name for name in saved if name not in current]
    notes = []
    for name in gone:
        reason = _dropped_reason(name, wrote)
        verdicts.append(Verdict(name, "dropped", None, first.get(name), False, (reason,)))
        notes.append(f"'{name}' was dropped, its saved output is not used: {reason}")
    return ChangePlan(tuple(verdicts), tuple(notes))


def rerun_set(plan: ChangePlan) -> frozenset[str] | None:
    """The completed methods whose saved outputs a resume must not use, or None when the plan changes nothing (the
    saved outputs are replayed in their order, as before)."""
    if plan.unchanged:
        return None
    return frozenset(v.name for v in plan.verdicts if v.runs or v.verdict == "dropped")


def plan_lines(flow_name: str, plan: ChangePlan) -> list[str]:
    """The plan as the lines a resume says once: one per changed, new or dropped method, then its notes."""
    after = {v.name for v in plan.verdicts if v.verdict == "kept" and v.runs and v.saved is not None}
    lines = []
    for v in plan.verdicts:
        if v.verdict == "changed":
            then = sorted(n for n in after if any(f"'{v.name}'" in r for r in _reasons_of(plan, n)))
            tail = f", and so does {', '.join(repr(n) for n in then)}" if then else ""
            lines.append(f"flow {flow_name}: method '{v.name}' changed ({'; '.join(v.reasons)}): it runs again{tail}")
        elif v.verdict == "new":
            lines.append(f"flow {flow_name}: method '{v.name}' is new: it runs")
        elif v.verdict == "dropped":
            lines.append(f"flow {flow_name}: method {next(n for n in plan.notes if n.startswith(repr(v.name)))}")
    notes = [n for n in plan.notes if n == BEFORE_FINGERPRINTS]
    return lines + [f"flow {flow_name}: {n}" for n in notes]


def _reasons_of(plan: ChangePlan, name: str) -> tuple[str, ...]:
    return next((v.reasons for v in plan.verdicts if v.name == name), ())


def state_keys_written(before: Any, after: Any) -> list[str]:
    """The top-level state keys a method set or changed (both states as JSON-ready dicts)."""
    if not isinstance(before, Mapping) or not isinstance(after, Mapping):
        return []
    return sorted(str(k) for k, v in after.items() if k not in before or before[k] != v)
