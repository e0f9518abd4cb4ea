"""A listed row: a checkpoint's metadata for a listing of many rows, made from what a store read with one tuple
call (:class:`~crewpoint.providers.base.CheckpointMeta` is a named tuple: a row is one), and the column checks
a listing makes of 10,000 rows at once.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from operator import itemgetter
from typing import Any

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.refs import _YEAR_10000, DIGEST_LENGTH, ID_RE, MAX_SEQUENCE, stored_branch_problem
from crewpoint.providers.usage_meta import MAX_RUN_ID, MAX_USAGE_TEXT

ListedRow = CheckpointMeta
"""A listed row is the checkpoint's metadata (the name says where it came from: a listing)."""

_make = tuple.__new__
_BY_TIME = itemgetter(*(ListedRow._fields.index(name) for name in ("created_at", "sequence", "id")))
_RUN_BRANCH = itemgetter(*(ListedRow._fields.index(name) for name in ("lineage", "branch", "sequence")))

listed_row: Callable[[Sequence[Any]], ListedRow] = partial(_make, ListedRow)
"""The row of ``values``, every field's value in order (no check of their count or types): a call without a
Python frame, so ``map(listed_row, rows)`` makes a table's rows at the speed of making tuples."""


def row_of(meta: CheckpointMeta) -> ListedRow:
    """``meta`` as a row: itself (a damaged record, read on its own, among rows read from an index)."""
    return meta


def as_metas(rows: list[ListedRow]) -> list[CheckpointMeta]:
    """``rows`` as metadata: themselves."""
    return rows


def as_rows(metas: list[CheckpointMeta]) -> list[ListedRow]:
    """``metas`` as rows: themselves."""
    return metas


def newest_rows(rows: list[ListedRow]) -> list[ListedRow]:
    """``rows`` newest first, in the order :func:`~crewpoint.providers.prune.newest_first` gives metadata: by
    time (sorted by the rows' own items, not by attribute), then, should a clock step have put a run's branch out
    of sequence order, by ``newest_first`` itself."""
    ordered = sorted(rows, key=_BY_TIME, reverse=True)
    last: dict[tuple[str, str], int] = {}
    for lineage, branch, sequence in map(_RUN_BRANCH, ordered):
        if last.get((lineage, branch), sequence) < sequence:
            # lazy: the prune rules (heapq, their dataclasses) load only for a store whose clock stepped back
            from crewpoint.providers.prune import newest_first

            return as_rows(newest_first(as_metas(rows)))
        last[lineage, branch] = sequence
    return ordered


def as_meta(row: ListedRow) -> CheckpointMeta:
    """``row`` as metadata: itself."""
    return row


_TEXT = {str}
_COUNT = {int}
_TIME = {int, float}
_DIGESTS = {0, DIGEST_LENGTH}
_AT = {name: i for i, name in enumerate(ListedRow._fields)}
_TEXTS = [_AT[n] for n in ("id", "branch", "lineage", "trigger", "entity_kind", "entity_name", "version", "digest")]
_TEXTS += [_AT["run_id"], _AT["usage"]]
_COUNTS = [_AT[n] for n in ("sequence", "tasks_done", "tasks_total", "schema_version", "body_length")]


def all_sound(rows: list[ListedRow]) -> bool:
    """Does every row pass :func:`~crewpoint.providers.refs.meta_problem` (every field of its type and in its
    range, ids and branch names that a store may hold)? The same checks, made column by column: a listing checks
    10,000 rows at once this way. When it says no, the caller asks ``meta_problem`` of each row for its reason."""
    if not rows:
        return True
    columns = list(zip(*rows, strict=True))
    if not all(set(map(type, columns[i])) <= _TEXT for i in _TEXTS):
        return False
    if not all(set(map(type, columns[i])) <= _COUNT and min(columns[i]) >= 0 for i in _COUNTS):
        return False
    ids, parents, branches, times = columns[0], columns[1], columns[2], columns[_AT["created_at"]]
    if max(columns[_AT["sequence"]]) > MAX_SEQUENCE or not set(map(len, columns[_AT["digest"]])) <= _DIGESTS:
        return False
    if max(map(len, columns[_AT["run_id"]])) > MAX_RUN_ID or max(map(len, columns[_AT["usage"]])) > MAX_USAGE_TEXT:
        return False
    if not set(map(type, times)) <= _TIME:
        return False
    try:
        total = sum(times)  # NaN anywhere makes it NaN, which min and max may pass over
    except OverflowError:
        return False
    if total != total or min(times) < 0 or max(times) >= _YEAR_10000:
        return False
    named = [p for p in parents if p is not None]
    if not set(map(type, named)) <= _TEXT or not _all_ids([*ids, *named]):
        return False
    return all(stored_branch_problem(branch) is None for branch in set(branches))


def _all_ids(ids: list[str]) -> bool:
    """Does every one of ``ids`` (text) match :data:`~crewpoint.providers.refs.ID_RE` (a letter or digit, then
    up to 127 letters, digits, dots and dashes, all ASCII)? Asked of the column at once; the pattern itself is
    the judge when the answer is no (an id the column check cannot vouch for is looked at on its own)."""
    lengths = set(map(len, ids))
    if _ID_SHAPE and lengths and min(lengths) >= 1 and max(lengths) <= _ID_LENGTH:
        chars = "".join(ids)
        firsts = "".join(map(_FIRST, ids))
        if (  # ASCII, and nothing left once the letters, digits, dots and dashes are taken out
            chars.isascii()
            and not chars.encode("ascii").translate(None, _ID_BYTES)
            and not firsts.encode("ascii").translate(None, _ID_FIRST_BYTES)
        ):
            return True
    return all(map(ID_RE.fullmatch, ids))


_ID_LENGTH = 128
_ID_SHAPE = ID_RE.pattern == r"[A-Za-z0-9][A-Za-z0-9.\-]{0,127}"
"""Whether ids are still of the shape :func:`_all_ids` checks by columns (else it asks the pattern of each)."""
_ID_FIRST_BYTES = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_ID_BYTES = _ID_FIRST_BYTES + b".-"
_FIRST = itemgetter(0)
