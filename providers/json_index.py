"""The JSON store's index: ``<store>/.index.jsonl``, a cache of the metadata of its checkpoint files.

A header line names the fields; then one JSON array per checkpoint file, ``[size, mtime_ns, *stored metadata
values]``. Lines that do not parse are skipped (the file's header is read instead). The index is only a cache:
deleting it costs one slower listing, and a failed write of it is ignored.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from operator import itemgetter
from stat import S_ISREG
from typing import Any

from crewpoint.providers.base import CheckpointMeta, new_meta
from crewpoint.providers.files import O_CLOEXEC, O_NOFOLLOW, O_NONBLOCK, NotRegular, atomic_write, read_regular
from crewpoint.providers.listed import ListedRow, listed_row, row_of

INDEX = ".index.jsonl"
_COMPUTED = ("size", "location", "damaged")
STORED_FIELDS = tuple(f for f in CheckpointMeta._fields if f not in _COMPUTED)
"""The metadata a checkpoint file's header records (all but what a listing computes)."""

_DIGEST_FIELDS = ("body_length", "digest")
INDEX_FIELDS = tuple(f for f in STORED_FIELDS if f not in _DIGEST_FIELDS)
"""What the index keeps of each file: its metadata but the body's length and digest, which only a read uses
(a listing checks a file's size against its header when it reads the header, and indexes only files that pass)."""
INDEX_VERSION = 3
"""Version 2 indexes only files whose size matched their header's body length when indexed; an index of an
earlier version may hold a cut file as whole, so it is not used (the next listing reads the headers again).
Version 3 adds each checkpoint's run id and usage summary; a version 2 index is migrated when read (its lines
get "" for both, what a file written before them holds) and written back as version 3."""
_NEW_IN_3 = ("run_id", "usage")
_FIELDS_2 = tuple(f for f in INDEX_FIELDS if f not in _NEW_IN_3)
_INDEX_HEADER = json.dumps({"crewpoint_index": INDEX_VERSION, "fields": INDEX_FIELDS}, separators=(",", ":"))
_ID = 2 + INDEX_FIELDS.index("id")
_KEY, _SIZE, _MTIME = itemgetter(_ID), itemgetter(0), itemgetter(1)
_LISTS, _INTS = {list}, {int}
_HEADER_VALUE = json.loads(_INDEX_HEADER)
BRANCH_AT = 2 + INDEX_FIELDS.index("branch")
"""Where an index line holds the branch its file was listed under."""
POSITIONAL = INDEX_FIELDS == tuple(CheckpointMeta._fields)[: len(INDEX_FIELDS)]
"""Whether the index's fields are ``CheckpointMeta``'s first fields in order, so a line builds one positionally."""


ROW_TAIL = (None, 0, "")
"""What a row of an index line holds after its values, size and location: not damaged, no body length or
digest (only a read uses them)."""
ROW_POSITIONAL = (*INDEX_FIELDS, "size", "location", "damaged", *_DIGEST_FIELDS) == ListedRow._fields
"""Whether an index line's values, its file's size and path and :data:`ROW_TAIL` are a :class:`ListedRow` in order."""


def index_values(meta: CheckpointMeta) -> list[Any]:
    return [getattr(meta, f) for f in INDEX_FIELDS]


def meta_of(line: list[Any], size: int, location: str) -> CheckpointMeta:
    if POSITIONAL:
        return new_meta(*line[2:], size, location)
    return CheckpointMeta(**dict(zip(INDEX_FIELDS, line[2:], strict=True)), size=size, location=location)


def row_from(line: list[Any], size: int, location: str) -> ListedRow:
    """The row of an index line (whose length :func:`load_index` checked), its file's size and path."""
    if ROW_POSITIONAL:
        return listed_row((*line[2:], size, location, *ROW_TAIL))
    return row_of(meta_of(line, size, location))


def index_line(size: int, mtime_ns: int, values: list[Any]) -> str:
    # lazy: providers.chunks loads hashlib and zlib; only a write makes an index line
    from crewpoint.providers.chunks import encode_json

    return encode_json([size, mtime_ns, *values])


def load_index(root: str) -> tuple[dict[str, list[Any]], int]:
    """``{id: [size, mtime_ns, *values]}`` and the number of lines read."""
    try:
        data = read_regular(os.path.join(root, INDEX), follow=False)
    except (OSError, NotRegular):
        return {}, 0
    data = data.strip(b"\n")
    if not data:
        return {}, 0
    try:
        items = json.loads(b"[" + data.replace(b"\n", b",") + b"]")
    except (ValueError, RecursionError):
        items = list(_each_line(data.split(b"\n")))
    if items and isinstance(items[0], dict) and items[0].get("crewpoint_index") == 2:
        items = _from_version_2(root, items)
    width = 2 + len(INDEX_FIELDS)
    lines = items[1:]
    if (  # the usual index, as this module writes it: its header, then lines of its width, checked at once
        items
        and items[0] == _HEADER_VALUE
        and set(map(type, lines)) <= _LISTS
        and set(map(len, lines)) <= {width}
        and set(map(type, map(_SIZE, lines))) <= _INTS
        and set(map(type, map(_MTIME, lines))) <= _INTS
    ):
        return dict(zip(map(_KEY, lines), lines, strict=True)), len(items)
    out: dict[str, list[Any]] = {}
    for item in items:
        if isinstance(item, list):
            if len(item) == width and isinstance(item[0], int) and isinstance(item[1], int):
                out[item[_ID]] = item
        elif (
            not isinstance(item, dict)
            or item.get("fields") != list(INDEX_FIELDS)
            or item.get("crewpoint_index") != INDEX_VERSION
        ):
            return {}, len(items)
    return out, len(items)


def _from_version_2(root: str, items: list[Any]) -> list[Any]:
    """The lines of a version 2 index as version 3 lines (written back), or ``items`` as they are when the header
    is not the one version 2 wrote."""
    if items[0].get("fields") != list(_FIELDS_2):
        return items
    at = 2 + INDEX_FIELDS.index(_NEW_IN_3[0])
    width = 2 + len(_FIELDS_2)
    lines = [[*item[:at], "", "", *item[at:]] for item in items[1:] if isinstance(item, list) and len(item) == width]
    rewrite_index(root, [index_line(line[0], line[1], line[2:]) for line in lines])
    return [_HEADER_VALUE, *lines]


def _each_line(lines: list[bytes]) -> Iterator[Any]:
    for line in lines:
        try:
            yield json.loads(line)
        except (ValueError, RecursionError):
            continue


def append_index(root: str, lines: list[str]) -> None:
    try:
        fd = os.open(
            os.path.join(root, INDEX),
            os.O_WRONLY | os.O_APPEND | os.O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK,
            0o600,
        )
    except OSError:
        return  # a link (never followed out of the store) or no write access: the index is only a cache
    try:
        if not S_ISREG(os.fstat(fd).st_mode):
            return
        if os.fstat(fd).st_size == 0:
            os.fchmod(fd, 0o600)
            lines = [_INDEX_HEADER, *lines]
        os.write(fd, _lines_bytes(lines))
    except OSError:
        pass
    finally:
        os.close(fd)


def rewrite_index(root: str, lines: list[str]) -> None:
    try:
        atomic_write(root, INDEX, _lines_bytes([_INDEX_HEADER, *lines]), fsync=False)
    except OSError:
        pass


def _lines_bytes(lines: list[str]) -> bytes:
    # A lone surrogate in metadata: backslashreplace writes it as the JSON escape that reads back exactly.
    return "".join(line + "\n" for line in lines).encode("utf-8", "backslashreplace")
