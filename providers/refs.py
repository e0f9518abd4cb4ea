"""Checkpoint ids, branch names and ``location#id`` references: the rules every provider shares.

Ids and branch names end up in file names and folder paths (JSON) or in rows (SQLite); both providers accept
exactly the same set so a checkpoint can move between stores.
"""

from __future__ import annotations

import os
import re

from crewpoint.providers.base import (
    AmbiguousCheckpoint,
    CheckpointError,
    CheckpointMeta,
    CheckpointNotFound,
    CheckpointRecord,
)
from crewpoint.providers.formats import foreign_formats, format_of_id
from crewpoint.providers.usage_meta import MAX_RUN_ID, MAX_USAGE_TEXT, checked_usage, usage_problem

# No underscore: the JSON provider separates file-name fields with "_".
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,127}")
MAX_BRANCH = 200
_YEAR_10000 = 253402300800.0


def check_branch(name: object) -> str:
    """Return ``name`` if it is a good name for a new branch, else raise :class:`CheckpointError`.

    This is the one rule for naming branches, checked when a fork is made, before any work, by the API
    (``fork(branch=...)``), the command line and the app (:func:`branch_problem`). A branch may contain ``/``
    (``fork/2024-x``); each part must be non-empty, must not start with ``.`` (which also rules out ``.`` and
    ``..``) nor end with ``.json`` (the JSON store's file names); no whitespace, backslash or control character.
    """
    problem = branch_problem(name)
    if problem is not None:
        raise CheckpointError(problem)
    assert isinstance(name, str)
    return name


def check_stored_branch(name: object) -> str:
    """Return ``name`` if a store can keep it safely, else raise. As :func:`check_branch`, but whitespace is
    allowed: branches named before the naming rule refused it stay readable and can be continued."""
    problem = stored_branch_problem(name)
    if problem is not None:
        raise CheckpointError(problem)
    assert isinstance(name, str)
    return name


_GOOD_BRANCHES: set[str] = set()
_STORABLE_BRANCHES: set[str] = set()


def branch_problem(name: object) -> str | None:
    """Why ``name`` is not a good name for a new branch (one line), or ``None`` when it is."""
    return _problem(name, _GOOD_BRANCHES, new=True)


def stored_branch_problem(name: object) -> str | None:
    """Why a store cannot keep a branch of this name (one line), or ``None``."""
    return _problem(name, _STORABLE_BRANCHES, new=False)


def _problem(name: object, known: set[str], new: bool) -> str | None:
    if isinstance(name, str) and name in known:
        return None
    try:
        _check_branch(name, new)
    except CheckpointError as exc:
        return str(exc)
    if len(known) < 4096:
        known.add(name)  # type: ignore[arg-type]
    return None


def _check_branch(name: object, new: bool) -> str:
    if not isinstance(name, str) or not name:
        raise CheckpointError("invalid branch name: it is empty")
    if len(name) > MAX_BRANCH:
        raise CheckpointError(f"invalid branch name {name[:40]!r}...: longer than {MAX_BRANCH} characters")
    if name.startswith("/"):
        raise CheckpointError(f"invalid branch name {name!r}: it is an absolute path")
    if "\\" in name or any(ord(c) < 32 or ord(c) == 127 or (new and c.isspace()) for c in name):
        raise CheckpointError(f"invalid branch name {name!r}: spaces, backslashes and control characters are refused")
    for part in name.split("/"):
        if part == "..":
            raise CheckpointError(f"invalid branch name {name!r}: '..' would leave the checkpoint store")
        if not part:
            raise CheckpointError(f"invalid branch name {name!r}: empty part between slashes")
        if part.startswith("."):
            raise CheckpointError(f"invalid branch name {name!r}: a part may not start with '.'")
        if part.endswith(".json"):
            raise CheckpointError(f"invalid branch name {name!r}: a part may not end with '.json'")
    return name


MAX_SEQUENCE = 2**63 - 1
"""The largest sequence number a store keeps (SQLite's INTEGER); a larger one is refused on write and makes a
stored record damaged, so it can never sort above every later checkpoint."""

_TEXT_FIELDS = ("trigger", "entity_kind", "entity_name", "version")
_COUNT_FIELDS = ("tasks_done", "tasks_total", "schema_version", "body_length")
DIGEST_LENGTH = 64
"""A body digest as stored: sha256 in hex (one that is not hex never matches a body, so its read fails)."""


def meta_problem(meta: CheckpointMeta) -> str | None:
    """Why ``meta`` cannot be trusted (one line), or ``None``. Every field is checked for its type, so a
    record whose metadata was edited by hand or damaged can be shown as damaged instead of breaking a sort."""
    # One expression for the usual case (a listing checks every record); the reason is found only when it fails.
    m = meta
    if (
        type(m.id) is str
        and type(m.lineage) is str
        and type(m.trigger) is str
        and type(m.entity_kind) is str
        and type(m.entity_name) is str
        and type(m.version) is str
        and type(m.sequence) is int
        and 0 <= m.sequence <= MAX_SEQUENCE
        and type(m.created_at) in (float, int)
        and 0 <= m.created_at < _YEAR_10000
        and type(m.tasks_done) is int
        and type(m.tasks_total) is int
        and type(m.schema_version) is int
        and type(m.body_length) is int
        and m.tasks_done >= 0
        and m.tasks_total >= 0
        and m.schema_version >= 0
        and m.body_length >= 0
        and type(m.digest) is str
        and len(m.digest) in (0, DIGEST_LENGTH)
        and type(m.run_id) is str
        and type(m.usage) is str
        and len(m.run_id) <= MAX_RUN_ID
        and len(m.usage) <= MAX_USAGE_TEXT
        and m.branch in _STORABLE_BRANCHES
        and ID_RE.fullmatch(m.id)
        and (m.parent_id is None or (type(m.parent_id) is str and ID_RE.fullmatch(m.parent_id)))
    ):
        return None
    return _meta_problem(meta)


def _meta_problem(meta: CheckpointMeta) -> str | None:
    if not isinstance(meta.id, str) or not ID_RE.fullmatch(meta.id):
        return f"invalid checkpoint id {meta.id!r}"
    if meta.parent_id is not None and (not isinstance(meta.parent_id, str) or not ID_RE.fullmatch(meta.parent_id)):
        return f"invalid parent id {meta.parent_id!r}"
    problem = stored_branch_problem(meta.branch)
    if problem is not None:
        return problem
    if not isinstance(meta.lineage, str):
        return f"lineage must be text, not {type(meta.lineage).__name__}"
    sequence = meta.sequence
    if type(sequence) is not int or not 0 <= sequence <= MAX_SEQUENCE:
        return f"sequence must be an integer from 0 to 2**63-1, not {_short(sequence)}"
    created = meta.created_at
    if type(created) not in (int, float) or not 0 <= created < _YEAR_10000:
        return f"created_at must be a time in seconds, not {_short(created)}"
    for name in _TEXT_FIELDS:
        if not isinstance(getattr(meta, name), str):
            return f"{name} must be text, not {type(getattr(meta, name)).__name__}"
    for name in _COUNT_FIELDS:
        value = getattr(meta, name)
        if type(value) is not int or value < 0:
            return f"{name} must be a count, not {_short(value)}"
    digest = meta.digest
    if not isinstance(digest, str) or len(digest) not in (0, DIGEST_LENGTH):
        return f"digest must be a sha256 in hex, not {_short(digest)}"
    return usage_problem(meta.run_id, meta.usage)


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def check_meta(meta: CheckpointMeta) -> CheckpointMeta:
    """Return ``meta`` if a store can keep it (see :func:`meta_problem`), else raise :class:`CheckpointError`."""
    problem = meta_problem(meta)
    if problem is not None:
        raise CheckpointError(f"checkpoint {meta.id!r}: {problem}" if isinstance(meta.id, str) else problem)
    return meta


def check_record(record: CheckpointRecord) -> CheckpointMeta:
    """The metadata a store keeps of ``record``: :func:`check_meta`'s, with a usage summary its body does not bear
    out kept as damaged (``usage_meta.DAMAGED``), so a record copied in from elsewhere never lists a figure its
    body does not hold. A run's own record (``usage_from_ledger``) made both from one ledger: not summed again."""
    meta = check_meta(record.meta)
    if record.usage_from_ledger:
        return meta
    usage = checked_usage(meta.usage, record.body)
    return meta if usage == meta.usage else meta.with_(usage=usage)


def damaged_meta(meta: CheckpointMeta, reason: str) -> CheckpointMeta:
    """``meta`` marked damaged, with every field a list view sorts or groups on made safe to use."""
    seq = meta.sequence if type(meta.sequence) is int and 0 <= meta.sequence <= MAX_SEQUENCE else 0
    created = meta.created_at
    if type(created) not in (int, float) or not 0 <= created < _YEAR_10000:
        created = 0.0
    return CheckpointMeta(
        id=meta.id if isinstance(meta.id, str) else str(meta.id),
        parent_id=meta.parent_id if isinstance(meta.parent_id, str) else None,
        branch=meta.branch if isinstance(meta.branch, str) else "",
        lineage=meta.lineage if isinstance(meta.lineage, str) else "",
        sequence=seq,
        created_at=float(created),
        trigger=meta.trigger if isinstance(meta.trigger, str) else "",
        entity_kind=meta.entity_kind if isinstance(meta.entity_kind, str) else "",
        entity_name=meta.entity_name if isinstance(meta.entity_name, str) else "",
        size=meta.size if type(meta.size) is int else 0,
        location=meta.location,
        damaged=reason,
    )


def checked(meta: CheckpointMeta) -> CheckpointMeta:
    """``meta`` as it is when it can be trusted, else marked damaged with the reason."""
    problem = meta_problem(meta)
    return meta if problem is None else damaged_meta(meta, problem)


def short_id(checkpoint_id: str, width: int = 8, *, typeable: bool = False) -> str:
    """An id as views show it, the one rule for the app and the command line: crewpoint's ids (random hex) by
    their first ``width`` characters; another format's ids as its adapter says (a time-stamped id, whose start is
    shared by every checkpoint of that second, by its random part; or, when ``typeable`` (a command line takes
    ids by their start), whole)."""
    return format_of_id(checkpoint_id).short_id(checkpoint_id, width, typeable)


def split_ref(ref: str) -> tuple[str, str | None]:
    """Split ``path#id`` into ``(path, id)``; a plain path gives ``(path, None)``.

    A ``#`` followed by something that is not an id (``/tmp/a#b/store``) is part of the path, and so is a
    ``#`` in a path that exists as written (a folder named ``run#1`` is that folder, never ``run`` cut short).
    """
    location, sep, fragment = ref.rpartition("#")
    if not sep or not location:
        return ref, None
    if os.path.lexists(ref):
        return ref, None
    if not fragment:
        return location, None
    if ID_RE.fullmatch(fragment) or any(f.takes_ref_id(fragment) for f in foreign_formats()):
        return location, fragment
    return ref, None


def match_prefix(ids: list[str], prefix: str, where: str) -> str:
    """The one id equal to ``prefix`` or starting with it; raise if none or several match."""
    if not prefix:
        raise CheckpointNotFound(f"empty checkpoint id for {where}")
    if prefix in ids:
        return prefix
    matches = sorted({i for i in ids if i.startswith(prefix)})
    if not matches:
        raise CheckpointNotFound(f"no checkpoint {prefix!r} in {where}")
    if len(matches) > 1:
        raise AmbiguousCheckpoint(prefix, matches)
    return matches[0]
