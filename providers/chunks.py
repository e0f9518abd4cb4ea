"""Content-addressed splitting of checkpoint bodies, so consecutive checkpoints share what did not change.

A body (a JSON-ready dict) becomes a small *manifest* plus *chunks*, each chunk keyed by the sha256 of its
exact JSON bytes:

* a list longer than ``FANOUT`` becomes a tree: runs of ``FANOUT`` items are leaves, ``FANOUT`` leaf hashes
  make a node, and so on up to one root. Appending to the list rewrites only the last leaf and the nodes above
  it; changing one item rewrites its leaf and that leaf's ancestors. A run whose JSON is short (at most
  ``LEAF_MAX``) is one leaf as is; otherwise its items go through these rules one by one;
* a dict with more than ``MAP_KEYS`` keys becomes the same kind of tree over its ``[key, value]`` pairs;
* any other value (string, short list, dict) whose JSON is longer than ``INLINE_MAX`` is stored whole as one
  chunk, after its large parts (long lists, big dicts, long strings) went through these rules.

Everything else stays inline. References in the encoded JSON are one-key dicts whose key starts with NUL;
a dict of the body that has keys starting with NUL is wrapped (``ESC``), so every body round-trips exactly,
key order included, as ``json.loads(json.dumps(body))`` would. Encoding works on JSON text produced by the
C encoder, so splitting a large body costs little more than serialising it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

FANOUT = 16
INLINE_MAX = 256
LEAF_MAX = 4096
MAP_KEYS = 64

REF = "\x00c"
LIST = "\x00l"
MAP = "\x00m"
ESC = "\x00d"

_ENCODE = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode
_NUL = "\\u0000"
_NUL_BYTES = b"\\u0000"
_REF_OPEN = '{"\\u0000c":"'
_LIST_OPEN = '{"\\u0000l":"'
_MAP_OPEN = '{"\\u0000m":"'
_ESC_OPEN = '{"\\u0000d":'
_NODE = "\x00n"


def _node_text(depth: int, items_text: str) -> str:
    """A tree node: ``{"\\u0000n": depth, "v": [...]}``; items at depth 0, child hashes above."""
    return '{"\\u0000n":' + str(depth) + ',"v":' + items_text + "}"


def json_bytes(text: str) -> bytes:
    """UTF-8 bytes of JSON text; a lone surrogate becomes its ``\\u`` escape, which reads back the same."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def to_json_bytes(obj: Any) -> bytes:
    """Compact JSON bytes of ``obj`` (key order kept)."""
    return json_bytes(_ENCODE(obj))


class MissingChunk(Exception):
    """A chunk a manifest refers to is not in the store."""


@dataclass(slots=True)
class Chunk:
    payload: bytes
    children: frozenset[bytes]


@dataclass(slots=True)
class Split:
    manifest: bytes
    roots: frozenset[bytes]
    chunks: dict[bytes, Chunk] = field(default_factory=dict)
    size: int = 0  # length of the body as compact JSON


# An encoded value: its JSON text, the length of the original value's JSON, the chunks it refers to directly.
Node = tuple[str, int, frozenset[bytes]]
_NONE: frozenset[bytes] = frozenset()


def _flat(children: Iterable[Any]) -> bool:
    """No direct child that will certainly be split on its own (so encoding the parent whole is worth a try)."""
    for child in children:
        if isinstance(child, str):
            if len(child) > LEAF_MAX:
                return False
        elif isinstance(child, list | tuple):
            if len(child) > FANOUT:
                return False
        elif isinstance(child, dict) and len(child) > MAP_KEYS:
            return False
    return True


def _key_text(key: Any) -> str:
    if isinstance(key, str):
        return _ENCODE(key)
    return _ENCODE({key: 0})[1:-3]  # json's own conversion of int, float, bool and None keys


def _union(nodes: Sequence[Node]) -> frozenset[bytes]:
    refs = [n[2] for n in nodes if n[2]]
    if not refs:
        return _NONE
    return refs[0] if len(refs) == 1 else frozenset().union(*refs)


class _Splitter:
    def __init__(self) -> None:
        self.chunks: dict[bytes, Chunk] = {}

    def store(self, text: str, children: Iterable[bytes]) -> bytes:
        data = json_bytes(text)
        digest = hashlib.sha256(data).digest()
        if digest not in self.chunks:
            self.chunks[digest] = Chunk(data, frozenset(children))
        return digest

    @staticmethod
    def ref(opening: str, digest: bytes, size: int) -> Node:
        return opening + digest.hex() + '"}', size, frozenset((digest,))

    def whole(self, value: Any) -> Node | None:
        """``value`` encoded in one go if that is small enough to inline or to keep as one chunk."""
        text = _ENCODE(value)
        if len(text) > LEAF_MAX or _NUL in text:
            return None
        if len(text) <= INLINE_MAX:
            return text, len(text), _NONE
        return self.ref(_REF_OPEN, self.store(text, ()), len(text))

    def value(self, value: Any, top: bool = False) -> Node:
        if isinstance(value, str):
            text = _ENCODE(value)
            if len(text) > INLINE_MAX:
                return self.ref(_REF_OPEN, self.store(text, ()), len(text))
            return text, len(text), _NONE
        if isinstance(value, list | tuple):
            if len(value) > FANOUT:
                return self.list_tree(value)
            if not top and _flat(value):
                found = self.whole(value)
                if found is not None:
                    return found
            parts = [self.value(item) for item in value]
            text = "[" + ",".join(p[0] for p in parts) + "]"
            size = sum(p[1] for p in parts) + max(len(parts) - 1, 0) + 2
            return self.maybe_chunk(text, size, _union(parts), top)
        if isinstance(value, dict):
            if len(value) > MAP_KEYS:
                return self.map_tree(value)
            if not top and _flat(value.values()):
                found = self.whole(value)
                if found is not None:
                    return found
            keys = [_key_text(k) for k in value]
            parts = [self.value(item) for item in value.values()]
            text = "{" + ",".join(k + ":" + p[0] for k, p in zip(keys, parts, strict=True)) + "}"
            size = sum(len(k) + 1 + p[1] for k, p in zip(keys, parts, strict=True)) + max(len(parts) - 1, 0) + 2
            if any(isinstance(k, str) and k.startswith("\x00") for k in value):
                text = _ESC_OPEN + text + "}"
            return self.maybe_chunk(text, size, _union(parts), top)
        text = _ENCODE(value)
        return text, len(text), _NONE

    def maybe_chunk(self, text: str, size: int, refs: frozenset[bytes], top: bool) -> Node:
        if top or len(text) <= INLINE_MAX:
            return text, size, refs
        return self.ref(_REF_OPEN, self.store(text, refs), size)

    def leaf(self, run: Sequence[Any], pairs: bool) -> tuple[bytes, int]:
        """Store one run of items (``[key, value]`` pairs for a map); return its hash and JSON size."""
        if _flat(v for _, v in run) if pairs else _flat(run):
            text = _ENCODE(run)
            if len(text) <= LEAF_MAX and _NUL not in text:
                # "[a,b]" holds the items, commas and brackets; a pair "[k,v]" stands for "k:v" in the dict.
                size = len(text) - 2 - (len(run) - 1) - (2 * len(run) if pairs else 0)
                return self.store(_node_text(0, text), ()), size
        if pairs:
            encoded = [(_ENCODE(k), self.value(v)) for k, v in run]
            parts = [p for _, p in encoded]
            text = ",".join("[" + k + "," + p[0] + "]" for k, p in encoded)
            size = sum(len(k) + 1 + p[1] for k, p in encoded)
        else:
            parts = [self.value(item) for item in run]
            text = ",".join(p[0] for p in parts)
            size = sum(p[1] for p in parts)
        return self.store(_node_text(0, "[" + text + "]"), _union(parts)), size

    def tree(self, opening: str, items: Sequence[Any], pairs: bool) -> Node:
        level: list[bytes] = []
        size = len(items) - 1 + 2
        for start in range(0, len(items), FANOUT):
            digest, run_size = self.leaf(items[start : start + FANOUT], pairs)
            level.append(digest)
            size += run_size
        depth = 1
        while len(level) > 1:
            nodes = []
            for start in range(0, len(level), FANOUT):
                group = level[start : start + FANOUT]
                listed = ",".join('"' + d.hex() + '"' for d in group)
                nodes.append(self.store(_node_text(depth, "[" + listed + "]"), group))
            level = nodes
            depth += 1
        return self.ref(opening, level[0], size)

    def list_tree(self, items: Sequence[Any]) -> Node:
        return self.tree(_LIST_OPEN, items, pairs=False)

    def map_tree(self, mapping: dict[Any, Any]) -> Node:
        items = [[k if isinstance(k, str) else json.loads(_key_text(k)), v] for k, v in mapping.items()]
        return self.tree(_MAP_OPEN, items, pairs=True)


def split(body: dict[str, Any]) -> Split:
    """Encode ``body`` into a manifest (compact JSON bytes) and the chunks it needs.

    Raises ``TypeError``/``ValueError`` if the body is not JSON-ready.
    """
    splitter = _Splitter()
    text, size, roots = splitter.value(body, top=True)
    return Split(json_bytes(text), roots, splitter.chunks, size)


Loader = Callable[[list[bytes]], dict[bytes, bytes]]


class _Joiner:
    def __init__(self, load: Loader) -> None:
        self.load = load
        self.raw: dict[str, bytes] = {}
        self.parsed: dict[str, Any] = {}
        self.nuls: dict[str, int] = {}
        self.taken: set[str] = set()

    def fetch_all(self, encoded: Any) -> None:
        """Load every chunk reachable from ``encoded``, one batch per tree level."""
        pending: set[str] = set()
        _refs(encoded, pending)
        while pending:
            wanted = sorted(pending)
            found = self.load([bytes.fromhex(h) for h in wanted])
            following: set[str] = set()
            for hex_digest in wanted:
                data = found.get(bytes.fromhex(hex_digest))
                if data is None:
                    raise MissingChunk(hex_digest)
                obj = json.loads(data)
                self.raw[hex_digest] = data
                self.parsed[hex_digest] = obj
                self.nuls[hex_digest] = nuls = data.count(_NUL_BYTES)
                if nuls > 1 or (nuls == 1 and not _is_leaf(obj)):
                    _refs(obj, following)
            pending = following - self.parsed.keys()

    def fresh(self, hex_digest: str) -> Any:
        """The parsed chunk; a chunk used twice is parsed again, so the body never shares objects."""
        if hex_digest in self.taken:
            return json.loads(self.raw[hex_digest])
        self.taken.add(hex_digest)
        return self.parsed[hex_digest]

    def value(self, encoded: Any) -> Any:
        if isinstance(encoded, dict):
            if len(encoded) == 1:
                ((key, inner),) = encoded.items()
                if key.startswith("\x00"):
                    if key == REF:
                        if self.nuls[inner] == 0:
                            return self.fresh(inner)
                        return self.value(self.parsed[inner])
                    if key == LIST:
                        items: list[Any] = []
                        self.entries(inner, items, pairs=False)
                        return items
                    if key == MAP:
                        found: list[Any] = []
                        self.entries(inner, found, pairs=True)
                        return dict(found)
                    if key == ESC:
                        return {k: self.value(e) for k, e in inner.items()}
                    raise ValueError(f"unknown reference {key!r}")
            return {k: self.value(e) for k, e in encoded.items()}
        if isinstance(encoded, list):
            return [self.value(e) for e in encoded]
        return encoded

    def entries(self, hex_digest: str, out: list[Any], pairs: bool) -> None:
        node = self.parsed[hex_digest]
        if node[_NODE] > 0:
            for child in node["v"]:
                self.entries(child, out, pairs)
        elif self.nuls[hex_digest] == 1:
            out.extend(self.fresh(hex_digest)["v"])
        elif pairs:
            out.extend((k, self.value(e)) for k, e in node["v"])
        else:
            out.extend(self.value(e) for e in node["v"])


def _is_leaf(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get(_NODE) == 0


def _refs(encoded: Any, into: set[str]) -> None:
    """Add the hashes ``encoded`` (a manifest or a parsed chunk) refers to directly."""
    if isinstance(encoded, dict):
        if len(encoded) == 1:
            ((key, inner),) = encoded.items()
            if key in (REF, LIST, MAP):
                into.add(inner)
                return
            if key == ESC:
                for item in inner.values():
                    _refs(item, into)
                return
        depth = encoded.get(_NODE)
        if depth is not None:
            if depth > 0:
                into.update(encoded["v"])
            else:
                _refs(encoded["v"], into)
            return
        for item in encoded.values():
            _refs(item, into)
    elif isinstance(encoded, list):
        for item in encoded:
            _refs(item, into)


def children_of(payload: bytes) -> set[bytes]:
    """Hashes a manifest or a stored chunk refers to directly."""
    if _NUL_BYTES not in payload:
        return set()
    found: set[str] = set()
    _refs(json.loads(payload), found)
    return {bytes.fromhex(h) for h in found}


def join(manifest: bytes, load: Loader) -> dict[str, Any]:
    """Rebuild the body ``manifest`` describes; ``load`` returns ``{hash: payload}`` for a list of hashes.

    Raises :class:`MissingChunk` if a chunk is gone.
    """
    encoded = json.loads(manifest)
    joiner = _Joiner(load)
    joiner.fetch_all(encoded)
    body = joiner.value(encoded)
    if not isinstance(body, dict):
        raise ValueError("manifest does not describe a dict")
    return body
