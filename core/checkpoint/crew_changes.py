"""A crew's tasks when the program changed since its checkpoint: each task's fingerprint, the saved tasks matched to
the program's by identity, and one verdict per task (:mod:`crewpoint.checkpoint.changes`).

A task is matched to a saved one by its name, else by its fingerprint (a renamed task), else by its place, said in
a note. A saved output is used only on the task it was matched to: a task with another name is never given it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from crewpoint.checkpoint.changes import ChangePlan, Verdict, VerdictWord, changed_parts, part_hash
from crewpoint.providers.dependencies import readers, reads_of

PART_WORDS = {
    "description": "description",
    "expected_output": "expected output",
    "role": "agent role",
    "goal": "agent goal",
    "backstory": "agent backstory",
    "model": "model",
    "settings": "settings",
    "tools": "tools",
    "context": "context",
    "guardrail": "guardrail",
    "output_schema": "output schema",
}
"""A fingerprint's parts, as a reason names them ("description changed")."""

BEFORE_FINGERPRINTS = "written before fingerprints: tasks matched by name and position"


def _name_of(thing: Any) -> str | None:
    if thing is None:
        return None
    if isinstance(thing, str):
        return thing
    return str(getattr(thing, "__name__", None) or type(thing).__name__)


def task_parts(crew: Any, index: int) -> dict[str, Any]:
    """What decides task ``index``'s output: its templates, its agent and model, tools, what it reads, its checks."""
    task = crew.tasks[index]
    agent = task.agent
    llm = agent.get_llm() if agent is not None else None
    tools = [*(getattr(agent, "tools", None) or []), *(getattr(task, "tools", None) or [])]
    reads = task.context if task.context is not None else crew.tasks[:index]
    schemas = [_name_of(getattr(task, key, None)) for key in ("output_pydantic", "output_json", "response_format")]
    return {
        "description": task.description,
        "expected_output": task.expected_output,
        "role": agent.role if agent is not None else None,
        "goal": agent.goal if agent is not None else None,
        "backstory": agent.backstory if agent is not None else None,
        "model": str(llm.model) if llm is not None else None,
        "settings": {
            "temperature": getattr(llm, "temperature", None),
            "max_iter": getattr(agent, "max_iter", None),
            "guardrail_max_retries": task.guardrail_max_retries,
            "human_input": task.human_input,
        },
        "tools": sorted(([str(t.name), t.args_spec] for t in tools), key=lambda tool: str(tool[0])),
        "context": [t.label for t in reads],
        "guardrail": _name_of(task.guardrail),
        "output_schema": [s for s in schemas if s is not None],
    }


HASHES_KEPT = 4096
"""How many parts' hashes :func:`task_fingerprint` remembers (all are forgotten at once beyond it)."""

_hashes: dict[Any, str] = {}
"""Each part's hash (:func:`part_hash`) by its value, frozen: a crew's tasks share most of their parts (the agent,
its model and settings, the tools) and a program is fingerprinted again at each run and check, so a value is hashed
once, not at every task's checkpoint."""


def _frozen(value: Any) -> Any:
    """``value`` as a key that is equal only for values whose canonical JSON is the same; None for one that cannot
    be a key (it is hashed each time)."""
    kind = type(value)
    if value is None or kind in (str, int, bool):
        return kind, value
    if kind is float:
        return kind, repr(value)  # -0.0 == 0.0, but their JSON differs
    if kind is list:
        items = tuple(map(_frozen, value))
        return None if None in items else (list, items)
    if kind is dict and all(type(key) is str for key in value):
        pairs = tuple(sorted((key, _frozen(item)) for key, item in value.items()))
        return None if any(item is None for _, item in pairs) else (dict, pairs)
    return None


def task_fingerprint(crew: Any, index: int) -> dict[str, str]:
    """The fingerprint (:func:`crewpoint.checkpoint.changes.fingerprint`) of :func:`task_parts`, each value hashed
    once."""
    prints: dict[str, str] = {}
    for name, value in sorted(task_parts(crew, index).items()):
        key = _frozen(value)
        known = _hashes.get(key) if key is not None else None
        if known is None:
            known = part_hash(value)
            if key is not None:
                if len(_hashes) >= HASHES_KEPT:
                    _hashes.clear()
                _hashes[key] = known
        prints[name] = known
    return prints


def _label(saved: Mapping[str, Any]) -> str:
    name = saved.get("name") or " ".join(str(saved.get("description") or "").split())[:48]
    return str(name)


def _unique(names: Sequence[str | None]) -> dict[str, int]:
    seen: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        if name:
            seen.setdefault(name, []).append(i)
    return {name: found[0] for name, found in seen.items() if len(found) == 1}


def match_tasks(
    saved: Sequence[Mapping[str, Any]],
    names: Sequence[str | None],
    prints: Sequence[Mapping[str, str]],
    labels: Sequence[str],
) -> tuple[list[int | None], list[str]]:
    """For each program task (``names``, ``prints``, ``labels``), the index of its saved task or None; and the
    notes to say."""
    order: list[int | None] = [None] * len(names)
    taken: set[int] = set()
    notes: list[str] = []
    saved_names = [s.get("name") or None for s in saved]
    ours, theirs = _unique(names), _unique(saved_names)
    for name, i in ours.items():  # 1. by name
        j = theirs.get(name)
        if j is not None:
            order[i] = j
            taken.add(j)
    for i, print_ in enumerate(prints):  # 2. by fingerprint: the same task, renamed or unnamed
        if order[i] is not None:
            continue
        same = [j for j, s in enumerate(saved) if j not in taken and s.get("fingerprint") == dict(print_)]
        if same:
            j = i if i in same else same[0]
            order[i] = j
            taken.add(j)
    for i, label in enumerate(labels):  # 3. by place, when neither side names another task
        if order[i] is not None or i >= len(saved) or i in taken:
            continue
        if names[i] and saved_names[i] and names[i] != saved_names[i]:
            continue
        if names[i] in theirs or (saved_names[i] and saved_names[i] in ours):
            continue
        order[i] = i
        taken.add(i)
        if saved[i].get("fingerprint") is not None:
            notes.append(
                f"task {i + 1} ({label}) matched to the checkpoint's task {i + 1} ({_label(saved[i])}) by position "
                "only: name your tasks"
            )
    return order, notes


def resolve_choice(ref: str, names: Sequence[str]) -> int:
    """The program task a ``--keep``/``--rerun`` names: a number from 1 or a name; else a one-line ValueError."""
    if ref.isdigit() and 1 <= int(ref) <= len(names):
        return int(ref) - 1
    if ref in names:
        return list(names).index(ref)
    known = ", ".join(repr(n) for n in names)
    raise ValueError(f"no task {ref!r} in the program: name one of {known} or a number from 1 to {len(names)}")


def crew_change_plan(
    saved: Sequence[Mapping[str, Any]],
    crew: Any,
    keep: Collection[str] = (),
    rerun: Collection[str] = (),
    compare: bool = True,
    prints: Sequence[Mapping[str, str]] | None = None,
) -> tuple[ChangePlan, list[int | None]]:
    """The plan for running the program's ``crew`` from the saved tasks, and each program task's saved index.

    ``compare`` False: the crew is the checkpoint's own (rebuilt from it), matched place by place.
    ``keep``/``rerun``: tasks (names or numbers from 1) whose saved output is used anyway, or not used.
    ``prints``: the crew's task fingerprints, when the caller made them once for many checkpoints.
    """
    tasks = crew.tasks
    labels = [t.label for t in tasks]
    if compare:
        prints = prints if prints is not None else [task_fingerprint(crew, i) for i in range(len(tasks))]
        order, notes = match_tasks(saved, [t.name for t in tasks], prints, labels)
    else:
        prints = [dict(s.get("fingerprint") or {}) for s in saved]
        order, notes = list[int | None](range(len(tasks))), []
    kept_anyway = {resolve_choice(r, labels) for r in keep}
    forced = {resolve_choice(r, labels) for r in rerun}
    old = any(s.get("output") is not None and s.get("fingerprint") is None for s in saved)
    if old and compare:
        notes.insert(0, BEFORE_FINGERPRINTS)
    words: list[VerdictWord] = []
    reasons: list[list[str]] = []
    runs: set[int] = set()
    for i, j in enumerate(order):
        if j is None:
            if i in kept_anyway:
                raise ValueError(f"--keep {labels[i]!r}: the task is new, the checkpoint holds no output for it")
            words.append("new")
            reasons.append(["not in the checkpoint"])
            runs.add(i)
            continue
        said: list[str] = []
        saved_print = saved[j].get("fingerprint")
        parts = changed_parts(saved_print, prints[i]) if compare and saved_print is not None else []
        said += [f"{PART_WORDS.get(p, p)} changed" for p in parts]
        if saved[j].get("name") and saved[j].get("name") != tasks[i].name:
            said.append(f"renamed from {saved[j]['name']!r}")
        if i != j:
            said.append(f"moved from {j + 1} to {i + 1}")
        words.append("changed" if parts else "moved" if i != j else "kept")
        has_output = saved[j].get("output") is not None
        if not has_output:
            said.append("not run at the checkpoint")
            runs.add(i)
        elif parts and i in kept_anyway:
            said.append("its saved output kept (--keep)")
        elif parts or i in forced:
            runs.add(i)
            if i in forced:
                said.append("re-run asked (--rerun)")
        reasons.append(said)
    place = {id(t): i for i, t in enumerate(tasks)}
    contexts = [None if t.context is None else [place[id(c)] for c in t.context if id(c) in place] for t in tasks]
    reads = reads_of(contexts)
    dependents = readers(reads, runs)
    runs |= dependents
    for k in sorted(dependents):
        read = [labels[r] for r in sorted(reads[k] & runs)]
        j = order[k]
        if read and j is not None and saved[j].get("output") is not None:  # it would have been kept
            reasons[k].append(f"reads {read[0]!r}, which runs")
    verdicts = [Verdict(labels[i], words[i], i, order[i], i in runs, tuple(reasons[i])) for i in range(len(tasks))]
    for j, s in enumerate(saved):
        if j in order:
            continue
        why = "its saved output is not used" if s.get("output") is not None else "it had not run"
        verdicts.append(Verdict(_label(s), "dropped", None, j, False, ("not in the program", why)))
    return ChangePlan(tuple(verdicts), tuple(notes)), order
