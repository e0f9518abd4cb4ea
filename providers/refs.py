"""Checkpoint ids, branch names and ``location#id`` references: the rules every provider shares.

Ids and branch names end up in file names and folder paths (JSON) or in rows (SQLite); both providers accept
exactly the same set so a checkpoint can move between stores.
"""

from __future__ import annotations

import re

from crewpoint.providers.base import AmbiguousCheckpoint, CheckpointError, CheckpointMeta, CheckpointNotFound

# No underscore: the JSON provider separates file-name fields with "_".
ID_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.\-]{0,127}")
_FOREIGN_ID_RE = re.compile(r"\d{8}T\d{6}_[0-9a-f]{1,8}")
"""CrewAI's ids (``<YYYYmmddTHHMMSS>_<uuid8>``, or a prefix) in ``db#id`` references to its stores."""
MAX_BRANCH = 200
_YEAR_10000 = 253402300800.0


def check_id(value: object, what: str = "checkpoint id") -> str:
    """Return ``value`` if it is a usable id (letters, digits, ``.``, ``-``; at most 128), else raise."""
    if not isinstance(value, str) or not ID_RE.fullmatch(value):
        raise CheckpointError(
            f"invalid {what} {value!r}: use letters, digits, '.' and '-' (at most 128, no '_' or '/')"
        )
    return value


def check_branch(name: object) -> str:
    """Return ``name`` if it is a safe branch name, else raise :class:`CheckpointError`.

    A branch may contain ``/`` (``fork/2024-x``); each part must be non-empty, must not start with ``.``
    (which also rules out ``.`` and ``..``) nor end with ``.json`` (the JSON store's file names), and must not
    contain a backslash, NUL or control character.
    """
    if not isinstance(name, str) or not name:
        raise CheckpointError("invalid branch name: it is empty")
    if len(name) > MAX_BRANCH:
        raise CheckpointError(f"invalid branch name {name[:40]!r}...: longer than {MAX_BRANCH} characters")
    if name.startswith("/"):
        raise CheckpointError(f"invalid branch name {name!r}: it is an absolute path")
    if "\\" in name or any(ord(c) < 32 or ord(c) == 127 for c in name):
        raise CheckpointError(f"invalid branch name {name!r}: backslashes and control characters are refused")
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


def check_meta(meta: CheckpointMeta) -> CheckpointMeta:
    """Check what a store relies on: ids, branch, a sequence of 0 or more and a finite creation time."""
    check_id(meta.id)
    if meta.parent_id is not None:
        check_id(meta.parent_id, "parent id")
    check_branch(meta.branch)
    if not isinstance(meta.sequence, int) or isinstance(meta.sequence, bool) or meta.sequence < 0:
        raise CheckpointError(f"checkpoint {meta.id}: sequence must be an integer of 0 or more, not {meta.sequence!r}")
    created = meta.created_at
    if not isinstance(created, int | float) or isinstance(created, bool) or not 0 <= created < _YEAR_10000:
        raise CheckpointError(f"checkpoint {meta.id}: created_at must be a time in seconds, not {created!r}")
    return meta


def short_id(checkpoint_id: str, width: int = 8) -> str:
    """An id as narrow views show it: its first ``width`` characters; for CrewAI's ids
    (``<YYYYmmddTHHMMSS>_<uuid8>``), whose start is only the time, the part after the ``_``."""
    if _FOREIGN_ID_RE.fullmatch(checkpoint_id):
        return checkpoint_id.rpartition("_")[2]
    return checkpoint_id[:width]


def split_ref(ref: str) -> tuple[str, str | None]:
    """Split ``path#id`` into ``(path, id)``; a plain path gives ``(path, None)``.

    A ``#`` followed by something that is not an id (``/tmp/a#b/store``) is part of the path.
    """
    location, sep, fragment = ref.rpartition("#")
    if not sep or not location:
        return ref, None
    if not fragment:
        return location, None
    if ID_RE.fullmatch(fragment) or _FOREIGN_ID_RE.fullmatch(fragment):
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
