"""Claims: one answer wins. A claim stores a small JSON value under a key (a request id) unless one is there.

Every provider keeps claims (:meth:`~crewpoint.providers.base.BaseProvider.claim`); this module holds what they
share: the key rule, the value's encoding and its checks, and the file-based claim the JSON store uses (one file
per claim under the store's ``.claims/`` folder, made by ``link(2)`` from a temp file written and fsynced first,
so the first link wins and a reader never sees a half-written claim).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Mapping
from stat import S_ISDIR
from typing import Any

from crewpoint.providers.base import CheckpointError
from crewpoint.providers.files import (
    O_CLOEXEC,
    O_NOFOLLOW,
    NotRegular,
    fsync_dir,
    open_regular,
    remove_stale_temp_files,
    temp_name,
    utf8_text,
)

KEY_RE = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
"""What a claim key (a request id) may be."""
MAX_CLAIM_BYTES = 64 * 1024
"""A claim's value is small (who answered, when, a token): its JSON text is at most this many bytes."""
CLAIMS = ".claims"
"""The folder of a JSON store's claims."""
_SUFFIX = ".json"
REQUEST_ID_RE = re.compile(r"[A-Za-z0-9_.-]{1,64}")
"""What a request id may be: a part of a claim key (no ``:``, which joins it to its checkpoint)."""
_CHECKPOINT_PART = 56
"""The most characters of a checkpoint id a claim key names as they are (a longer id is named by its digest)."""


def claim_key(request_id: str, checkpoint_id: str, attempt: int = 0) -> str:
    """The claim key of the request ``request_id`` held at the checkpoint ``checkpoint_id``: a request is identified
    by both, so the same request id copied into a fork's or a resume's checkpoint is another request. ``attempt``
    counts the keys tried after a damaged claim (``.1``, ``.2``): a damaged claim never leaves a request stuck."""
    if not isinstance(request_id, str) or REQUEST_ID_RE.fullmatch(request_id) is None:
        raise CheckpointError(f"{repr(request_id)[:60]} is not a request id (1 to 64 of A-Z a-z 0-9 _ . -)")
    part = checkpoint_id
    if len(part) > _CHECKPOINT_PART or KEY_RE.fullmatch(part) is None:
        import hashlib

        part = hashlib.sha256(checkpoint_id.encode("utf-8", "surrogatepass")).hexdigest()[:_CHECKPOINT_PART]
    return f"{request_id}:{part}" + (f".{attempt}" if attempt else "")


def too_big(where: str, size: int) -> CheckpointError:
    """The error of a stored claim over :data:`MAX_CLAIM_BYTES`, told before its value is read."""
    return CheckpointError(f"{where}: damaged claim: {size} bytes, over {MAX_CLAIM_BYTES} (it is not read)")


def check_claim_key(key: object) -> str:
    """``key`` if it is a claim key; else a one-line :class:`CheckpointError`."""
    if not isinstance(key, str) or KEY_RE.fullmatch(key) is None:
        shown = repr(key)[:60]
        raise CheckpointError(f"{shown} is not a request id (1 to 128 of A-Z a-z 0-9 _ . : -)")
    return key


def encode_claim(key: str, value: object) -> str:
    """The JSON text stored for ``value`` (a mapping with string keys, JSON-ready, small), after the key's check."""
    check_claim_key(key)
    if not isinstance(value, Mapping) or not all(isinstance(k, str) for k in value):
        raise CheckpointError(f"the claim of {key} must be a mapping with text keys, not {type(value).__name__}")
    try:
        text = json.dumps(dict(value), separators=(",", ":"), allow_nan=False)  # ASCII: any store takes it
    except (TypeError, ValueError, RecursionError) as exc:
        raise CheckpointError(f"the claim of {key} is not JSON-ready: {exc}") from None
    if len(text) > MAX_CLAIM_BYTES:
        raise CheckpointError(f"the claim of {key} is over {MAX_CLAIM_BYTES} bytes (it holds who answered, not what)")
    return text


def decode_claim(data: str | bytes, where: str) -> dict[str, Any]:
    """The value a stored claim holds; a damaged one is a one-line :class:`CheckpointError` naming ``where``."""
    try:
        text = utf8_text(data) if isinstance(data, bytes) else data
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise CheckpointError(f"{where}: damaged claim: {str(exc).splitlines()[0]}") from None
    if not isinstance(value, dict):
        raise CheckpointError(f"{where}: damaged claim: it holds {type(value).__name__}, not an object")
    return value


# -- the file-based claim: one file per claim under <store>/.claims/ ------------------------------------------


def claims_folder(store: str, create: bool) -> str | None:
    """The claims folder of the JSON store folder ``store`` (made 0700 if asked), or ``None`` when there is none.
    A link or a file in its place is refused: claims are never read or written through a link."""
    folder = os.path.join(store, CLAIMS)
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CheckpointError(f"cannot read claims in {folder}: {exc.strerror}") from None
    if not S_ISDIR(mode):
        raise CheckpointError(f"{folder} is not a folder (a link or a file): claims are not kept there")
    return folder


def claim_file(store: str, key: str, value: Mapping[str, Any], fsync: bool = True) -> dict[str, Any]:
    """Claim ``key`` in the JSON store folder ``store``: the value stored, ours or the one before it.

    The value is written and fsynced to a hidden temp file, which is then linked to ``<key>.json``: ``link(2)``
    never replaces a file, so exactly one claimer's link succeeds, and the claim appears whole or not at all. A
    claimer killed before its link leaves only its temp file (removed by the next claim once its process is gone).
    """
    text = encode_claim(key, value)
    try:
        folder = claims_folder(store, create=True)
    except OSError as exc:
        raise CheckpointError(f"cannot keep claims in {store}: {exc.strerror}") from None
    assert folder is not None
    remove_stale_temp_files(folder)
    name = key + _SUFFIX
    final = os.path.join(folder, name)
    temp = os.path.join(folder, temp_name(name))
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0o600)
        try:
            view = memoryview(text.encode("ascii"))
            while view:
                view = view[os.write(fd, view) :]
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(temp, final, follow_symlinks=False)
        except FileExistsError:
            pass  # another claimer won: read theirs
        else:
            if fsync:
                fsync_dir(folder)
    except OSError as exc:
        raise CheckpointError(f"cannot claim {key} in {folder}: {exc.strerror}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(temp)
    found = read_claim_file(store, key)
    if found is None:  # the winner's file was removed between its link and our read: nothing else removes one
        raise CheckpointError(f"cannot claim {key} in {folder}: its claim vanished while it was read")
    return found


def read_claim_file(store: str, key: str) -> dict[str, Any] | None:
    """The claim of ``key`` in the JSON store folder ``store``, or ``None``."""
    check_claim_key(key)
    folder = claims_folder(store, create=False)
    if folder is None:
        return None
    path = os.path.join(folder, key + _SUFFIX)
    try:
        fd = open_regular(path, follow=False)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_CLAIM_BYTES:  # told by its size: a huge file is never read into memory
                raise too_big(path, size)
            data = handle.read(MAX_CLAIM_BYTES + 1)
    except FileNotFoundError:
        return None
    except NotRegular:
        raise CheckpointError(f"{path}: damaged claim: not a regular file") from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read the claim: {exc.strerror}") from None
    if len(data) > MAX_CLAIM_BYTES:  # it grew while it was read
        raise too_big(path, len(data))
    return decode_claim(data, path)


def claim_files(store: str) -> dict[str, dict[str, Any]]:
    """Every readable claim of the JSON store folder ``store``; a damaged one is left out here (reading or
    claiming its key says what is wrong), so it never hides the others."""
    folder = claims_folder(store, create=False)
    if folder is None:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for name in sorted(os.listdir(folder)):
        key = name[: -len(_SUFFIX)]
        if not name.endswith(_SUFFIX) or KEY_RE.fullmatch(key) is None:
            continue
        try:
            value = read_claim_file(store, key)
        except CheckpointError:
            continue
        if value is not None:
            found[key] = value
    return found


def copy_claims(reader: Any, source: str, writer: Any, target: str) -> tuple[list[str], list[str]]:
    """Carry every claim of the store ``source`` (read by the provider ``reader``) into ``target`` (``writer``), so a
    copied request answered in the source is answered in the copy. A claim already in the target wins: another
    answer there is never overwritten, and comes back as one line among the conflicts. Returns (copied keys,
    conflicts)."""
    copied: list[str] = []
    conflicts: list[str] = []
    for key, value in reader.claims(source).items():
        stood = writer.claim(target, key, value)
        if stood == value:
            copied.append(key)
            continue
        mine = f"{value.get('who') or 'someone'}: {value.get('outcome') or value.get('feedback') or 'accepted'}"
        kept = f"{stood.get('who') or 'someone'}: {stood.get('outcome') or stood.get('feedback') or 'accepted'}"
        conflicts.append(f"claim {key}: the target's answer ({kept}) stands; the source's ({mine}) was not copied")
    return copied, conflicts
