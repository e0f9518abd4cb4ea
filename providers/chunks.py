"""Content-addressed splitting of checkpoint bodies, so consecutive checkpoints share what did not change.

A body (a JSON-ready dict) becomes a small *manifest* plus *chunks*, each chunk keyed by the sha256 of its
exact JSON bytes:

* a list longer than ``FANOUT`` becomes a tree. Its items are cut into leaves where the content says so (an
  item whose checksum is 0 modulo ``BOUNDARY`` ends a leaf), and leaf hashes are grouped into nodes the same
  way, up to one root. Because the cuts follow content, not positions, appending, changing, inserting or
  dropping items (a sliding window included) rewrites only the leaves around the change and the nodes above
  them. Short items sit in their leaf; longer ones are chunks of their own;
* a dict with more than ``MAP_KEYS`` keys becomes the same kind of tree over its ``[key, value]`` pairs;
* any other value (string, short list, dict) whose JSON is longer than ``INLINE_MAX`` is stored whole as one
  chunk, after its large parts (long lists, big dicts, long strings) went through these rules.

Everything else stays inline. References in the encoded JSON are one-key dicts whose key starts with NUL;
a dict of the body that has keys starting with NUL is wrapped (``ESC``), so every body round-trips exactly,
key order included, as ``json.loads(json.dumps(body))`` would.

Encoding works on JSON text made by the C encoder, each part encoded once. Given the :class:`Memo` of the
previous split, list items and whole leaves whose content (compared as marshal bytes, so ``1``, ``1.0`` and
``True`` differ) did not change are taken from it instead of being encoded and hashed again: the next
checkpoint of a run costs little more than what changed. With or without a memo the result is the same.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

FANOUT = 16  # lists up to this many items are plain lists; longer ones become trees
MAP_KEYS = 64  # dicts up to this many keys are plain dicts; bigger ones become trees
INLINE_MAX = 256  # a string or container this long or shorter stays inside its parent
ITEM_INLINE = 512  # a list item this long or shorter stays inside its leaf
LEAF_MAX = 4096  # a value up to this long, without long parts, is kept as one chunk
BOUNDARY = 16  # on average one entry in BOUNDARY ends a leaf or a node
RUN_BYTES = 16384  # a leaf also ends once this long ...
RUN_MAX = 64  # ... and a leaf or node once this many entries long

REF = "\x00c"
LIST = "\x00l"
MAP = "\x00m"
ESC = "\x00d"
_NODE = "\x00n"

_NUL = "\\u0000"
_NUL_BYTES = b"\\u0000"
_REF_OPEN = '{"\\u0000c":"'
_LIST_OPEN = '{"\\u0000l":"'
_MAP_OPEN = '{"\\u0000m":"'
_ESC_OPEN = '{"\\u0000d":'


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)
# json.dumps's own C encoder, built once: compact, key order kept, non-ASCII as is.
_c_encoder = (
    None
    if _c_make_encoder is None
    else _c_make_encoder(None, _not_json, json.encoder.encode_basestring, None, ":", ",", False, False, True)
)
_py_encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)


def encode_json(value: Any) -> str:
    """Compact JSON text of ``value``, as ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``."""
    if _c_encoder is not None:
        return "".join(_c_encoder(value, 0))
    return _py_encoder.encode(value)  # pragma: no cover - Python builds without the C accelerator


def json_bytes(text: str) -> bytes:
    """UTF-8 bytes of JSON text; a lone surrogate becomes its ``\\u`` escape, which reads back the same."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace")


def _node_text(depth: int, entries: Sequence[str]) -> str:
    """A tree node: ``{"\\u0000n": depth, "v": [...]}``; items at depth 0, child hashes above."""
    return '{"\\u0000n":' + str(depth) + ',"v":[' + ",".join(entries) + "]}"


def _ends_run(text: str) -> bool:
    return zlib.crc32(text.encode("utf-8", "surrogatepass")) % BOUNDARY == 0


class MissingChunk(Exception):
    """A chunk a manifest refers to is not in the store."""


class BadChunk(ValueError):
    """A body cannot be rebuilt safely: a chunk that does not match its hash, references nested deeper than
    :data:`MAX_DEPTH`, or a body that expands past its bound. The message is one line."""


MAX_DEPTH = 256
"""Levels of chunk references a body may have (a split body has a few; a crafted chain has thousands)."""
MAX_EXPANDED = 1 << 30
"""Bytes of chunk payload a body may expand to when the store records no size for it."""


@dataclass(slots=True)
class Chunk:
    payload: bytes
    children: frozenset[bytes]


# An encoded value: its JSON text, the length of the original value's JSON, the chunks it refers to directly.
Node = tuple[str, int, frozenset[bytes]]
_NONE: frozenset[bytes] = frozenset()


@dataclass(slots=True)
class _Run:
    """A leaf of a list, as cut by an earlier split: reused whole while the same items sit at the same place."""

    end: int
    key: bytes  # the exact content of its items (marshal bytes)
    digest: bytes
    size: int
    chunks: dict[bytes, Chunk]  # the leaf and every chunk its items need


@dataclass(slots=True)
class Memo:
    """What one split remembers for the next: encoded list items by content, and the leaves of each list
    of the body (by its path), so that unchanged parts are neither encoded nor hashed again."""

    items: dict[bytes, tuple[Node, dict[bytes, Chunk]]] = field(default_factory=dict)
    runs: dict[tuple[Any, ...], dict[int, _Run]] = field(default_factory=dict)


@dataclass(slots=True)
class Split:
    manifest: bytes
    roots: frozenset[bytes]
    chunks: dict[bytes, Chunk] = field(default_factory=dict)
    size: int = 0  # length of the body as compact JSON, in characters
    memo: Memo = field(default_factory=Memo)


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


def _key(key: Any) -> str:
    """A dict key as JSON writes it (int, float, bool and None keys become strings)."""
    if isinstance(key, str):
        return key
    return str(json.loads(encode_json({key: 0})[1:-3]))


def _union(nodes: Sequence[Node]) -> frozenset[bytes]:
    refs = [n[2] for n in nodes if n[2]]
    if not refs:
        return _NONE
    return refs[0] if len(refs) == 1 else frozenset().union(*refs)


def _content(value: Any) -> bytes | None:
    """The exact content of plain JSON data as bytes (types, key order and all); None for anything else.

    Equal bytes mean equal data, so an encoding made for one is right for the other.
    """
    try:
        return marshal.dumps(value, 2)
    except ValueError:
        return None


Path = tuple[Any, ...] | None


class _Splitter:
    def __init__(self, memo: Memo) -> None:
        self.chunks: dict[bytes, Chunk] = {}
        self.memo = memo
        self.next = Memo()

    def store(self, text: str, children: Iterable[bytes]) -> bytes:
        data = json_bytes(text)
        digest = hashlib.sha256(data).digest()
        if digest not in self.chunks:
            self.chunks[digest] = Chunk(data, frozenset(children))
        return digest

    def reuse(self, chunks: dict[bytes, Chunk]) -> None:
        for digest, chunk in chunks.items():
            self.chunks.setdefault(digest, chunk)

    @staticmethod
    def ref(opening: str, digest: bytes, size: int) -> Node:
        return opening + digest.hex() + '"}', size, frozenset((digest,))

    def encoded(self, text: str, inline: int) -> Node | None:
        """A value from its JSON ``text`` when that needs no splitting: inline up to ``inline``, else one
        chunk up to ``LEAF_MAX``. None when it must be split (too long, or keys that need escaping)."""
        if len(text) > LEAF_MAX or _NUL in text:
            return None
        if len(text) <= inline:
            return text, len(text), _NONE
        return self.ref(_REF_OPEN, self.store(text, ()), len(text))

    def value(self, value: Any, path: Path, top: bool = False, whole: bool = True) -> Node:
        """Encode ``value`` found at ``path`` in the body (None below a list item).

        ``whole=False`` when it is already known to be too large to keep in one piece.
        """
        if isinstance(value, str):
            text = encode_json(value)
            if len(text) > INLINE_MAX:
                return self.ref(_REF_OPEN, self.store(text, ()), len(text))
            return text, len(text), _NONE
        if isinstance(value, list | tuple):
            if len(value) > FANOUT:
                return self.list_tree(value, path)
            if whole and not top and _flat(value):
                found = self.encoded(encode_json(value), INLINE_MAX)
                if found is not None:
                    return found
            parts = [self.value(v, None if path is None else (*path, n)) for n, v in enumerate(value)]
            text = "[" + ",".join(p[0] for p in parts) + "]"
            size = sum(p[1] for p in parts) + max(len(parts) - 1, 0) + 2
            return self.maybe_chunk(text, size, _union(parts), top)
        if isinstance(value, dict):
            if len(value) > MAP_KEYS:
                return self.map_tree(value)
            if whole and not top and _flat(value.values()):
                found = self.encoded(encode_json(value), INLINE_MAX)
                if found is not None:
                    return found
            keys = [encode_json(_key(k)) for k in value]
            parts = [self.value(v, None if path is None else (*path, k)) for k, v in value.items()]
            text = "{" + ",".join(k + ":" + p[0] for k, p in zip(keys, parts, strict=True)) + "}"
            size = sum(len(k) + 1 + p[1] for k, p in zip(keys, parts, strict=True)) + max(len(parts) - 1, 0) + 2
            if any(isinstance(k, str) and k.startswith("\x00") for k in value):
                text = _ESC_OPEN + text + "}"
            return self.maybe_chunk(text, size, _union(parts), top)
        text = encode_json(value)
        return text, len(text), _NONE

    def maybe_chunk(self, text: str, size: int, refs: frozenset[bytes], top: bool) -> Node:
        if top or len(text) <= INLINE_MAX:
            return text, size, refs
        return self.ref(_REF_OPEN, self.store(text, refs), size)

    def item(self, value: Any) -> tuple[Node, dict[bytes, Chunk]]:
        """One list item (inline, one chunk, or split further) and the chunks it needs; remembered by content."""
        if not isinstance(value, dict | list | tuple):
            node = self.value(value, None)
            return node, {d: self.chunks[d] for d in node[2]}
        key = _content(value)
        known = None if key is None else self.next.items.get(key) or self.memo.items.get(key)
        if known is None:
            outer, self.chunks = self.chunks, {}
            try:
                node = self.fresh_item(value)
            finally:
                made, self.chunks = self.chunks, outer
            known = (node, made)
        if key is not None:
            self.next.items[key] = known
        self.reuse(known[1])
        return known

    def fresh_item(self, value: Any) -> Node:
        text = encode_json(value)
        found = self.encoded(text, ITEM_INLINE)
        if found is not None:
            return found
        return self.value(value, None, whole=len(text) <= LEAF_MAX)

    def leaf(self, nodes: list[tuple[Node, dict[bytes, Chunk]]]) -> tuple[bytes, int, dict[bytes, Chunk]]:
        digest = self.store(_node_text(0, [n[0][0] for n in nodes]), _union([n[0] for n in nodes]))
        chunks = {digest: self.chunks[digest]}
        for _, made in nodes:
            chunks.update(made)
        return digest, sum(n[0][1] for n in nodes), chunks

    def list_tree(self, values: Sequence[Any], path: Path) -> Node:
        """A long list as a tree. Leaves end where an item's checksum says so (or when too long), so a
        leaf depends only on its own items; one cut at the same place last time is reused unencoded."""
        earlier = self.memo.runs.get(path, {}) if path is not None else {}
        runs: dict[int, _Run] = {}
        leaves: list[bytes] = []
        total = 0
        count = len(values)
        start = index = length = 0
        pending: list[tuple[Node, dict[bytes, Chunk]]] = []
        while index < count:
            if not pending:
                run = earlier.get(index)
                if run is not None and run.end <= count and _content(values[index : run.end]) == run.key:
                    self.reuse(run.chunks)
                    leaves.append(run.digest)
                    total += run.size
                    runs[index] = run
                    index = run.end
                    continue
                start, length = index, 0
            node = self.item(values[index])
            pending.append(node)
            length += len(node[0][0]) + 1
            index += 1
            if _ends_run(node[0][0]) or len(pending) >= RUN_MAX or length >= RUN_BYTES:
                digest, size, chunks = self.leaf(pending)
                key = _content(values[start:index]) if path is not None else None
                if key is not None:
                    runs[start] = _Run(index, key, digest, size, chunks)
                leaves.append(digest)
                total += size
                pending = []
        if pending:  # the last leaf ends with the list, not at a cut: it is not remembered
            digest, size, _ = self.leaf(pending)
            leaves.append(digest)
            total += size
        if path is not None:
            self.next.runs[path] = runs
        return self.ref(_LIST_OPEN, self.nodes(leaves), total + count - 1 + 2)

    def map_tree(self, mapping: dict[Any, Any]) -> Node:
        pairs: list[tuple[Node, dict[bytes, Chunk]]] = []
        for key, value in mapping.items():
            key_text = encode_json(_key(key))
            (text, size, refs), made = self.item(value)
            pairs.append((("[" + key_text + "," + text + "]", len(key_text) + 1 + size, refs), made))
        leaves: list[bytes] = []
        pending: list[tuple[Node, dict[bytes, Chunk]]] = []
        length = 0
        for pair in pairs:
            pending.append(pair)
            length += len(pair[0][0]) + 1
            if _ends_run(pair[0][0]) or len(pending) >= RUN_MAX or length >= RUN_BYTES:
                leaves.append(self.leaf(pending)[0])
                pending, length = [], 0
        if pending:
            leaves.append(self.leaf(pending)[0])
        # a pair "[k,v]" stands for "k:v" in the dict
        size = sum(p[0][1] for p in pairs) + len(pairs) - 1 + 2
        return self.ref(_MAP_OPEN, self.nodes(leaves), size)

    def nodes(self, level: list[bytes]) -> bytes:
        """Group leaf hashes into nodes (cut by hash, as leaves are cut by content) up to one root."""
        depth = 1
        while len(level) > 1:
            hexes = ['"' + d.hex() + '"' for d in level]
            cuts: list[tuple[int, int]] = []
            start = 0
            for n, digest in enumerate(level):
                if digest[0] % BOUNDARY == 0 or n + 1 - start >= RUN_MAX:
                    cuts.append((start, n + 1))
                    start = n + 1
            if start < len(level):
                cuts.append((start, len(level)))
            if len(cuts) == len(level):  # every child ended a node: group by count so the tree narrows
                cuts = [(i, min(i + BOUNDARY, len(level))) for i in range(0, len(level), BOUNDARY)]
            level = [self.store(_node_text(depth, hexes[a:b]), level[a:b]) for a, b in cuts]
            depth += 1
        return level[0]


def split(body: dict[str, Any], memo: Memo | None = None) -> Split:
    """Encode ``body`` into a manifest (compact JSON bytes) and the chunks it needs.

    ``memo`` is the :attr:`Split.memo` of an earlier split (only read, never changed): what was encoded
    then is not encoded again, so the next checkpoint of a run costs little more than what changed.
    Raises ``TypeError``/``ValueError`` if the body is not JSON-ready.
    """
    splitter = _Splitter(Memo() if memo is None else memo)
    text, size, roots = splitter.value(body, (), top=True)
    return Split(json_bytes(text), roots, splitter.chunks, size, splitter.next)


Loader = Callable[[list[bytes]], dict[bytes, bytes]]


class _Joiner:
    def __init__(self, load: Loader, budget: int) -> None:
        self.load = load
        self.raw: dict[str, bytes] = {}
        self.parsed: dict[str, Any] = {}
        self.nuls: dict[str, int] = {}
        self.taken: set[str] = set()
        self.budget = budget

    def spend(self, hex_digest: str) -> None:
        """Count a chunk's bytes each time the body uses it: a manifest that fans out (a chunk used a million
        times) stops at the bound instead of filling memory."""
        self.budget -= len(self.raw[hex_digest])
        if self.budget < 0:
            raise BadChunk("the body expands beyond the size its store records (chunks used over and over)")

    def fetch_all(self, encoded: Any) -> None:
        """Load every chunk reachable from ``encoded``, one batch per tree level, each checked against its
        hash; at most :data:`MAX_DEPTH` levels."""
        pending: set[str] = set()
        _refs(encoded, pending)
        depth = 0
        while pending:
            depth += 1
            if depth > MAX_DEPTH:
                raise BadChunk(f"chunk references nest deeper than {MAX_DEPTH} levels")
            wanted = sorted(pending)
            found = self.load([bytes.fromhex(h) for h in wanted])
            following: set[str] = set()
            for hex_digest in wanted:
                data = found.get(bytes.fromhex(hex_digest))
                if data is None:
                    raise MissingChunk(hex_digest)
                if hashlib.sha256(data).hexdigest() != hex_digest:
                    raise BadChunk(f"chunk {hex_digest[:12]} does not match its hash (altered or damaged)")
                obj = json.loads(data)
                self.raw[hex_digest] = data
                self.parsed[hex_digest] = obj
                self.nuls[hex_digest] = nuls = data.count(_NUL_BYTES)
                if nuls > 1 or (nuls == 1 and not _is_leaf(obj)):
                    _refs(obj, following)
            pending = following - self.parsed.keys()

    def fresh(self, hex_digest: str) -> Any:
        """The parsed chunk; a chunk used twice is parsed again, so the body never shares objects."""
        self.spend(hex_digest)
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
                        self.spend(inner)
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
        if self.nuls[hex_digest] != 1:
            self.spend(hex_digest)  # (a leaf of plain items is counted by fresh)
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
    """Hashes a manifest or a stored chunk refers to directly (none for one that does not parse)."""
    if _NUL_BYTES not in payload:
        return set()
    found: set[str] = set()
    try:
        _refs(json.loads(payload), found)
        return {bytes.fromhex(h) for h in found if isinstance(h, str)}
    except (ValueError, TypeError, AttributeError, RecursionError):
        return set()


def manifest_problem(stored: bytes, length: object, digest: object) -> str | None:
    """Why a stored (zlib-compressed) manifest does not match the length and digest its row records, or None."""
    try:
        manifest = zlib.decompress(stored)
    except zlib.error:
        return "its body's manifest is corrupt"
    if len(manifest) != length or hashlib.sha256(manifest).hexdigest() != digest:
        return "its body's manifest does not match the digest its row records"
    return None


def join(manifest: bytes, load: Loader, size: int | None = None) -> dict[str, Any]:
    """Rebuild the body ``manifest`` describes; ``load`` returns ``{hash: payload}`` for a list of hashes.

    Every chunk is checked against its hash, references nest at most :data:`MAX_DEPTH` levels, and the chunks
    used add up to at most six times ``size`` (the body's length as compact JSON, as the store records it) plus
    some room, or :data:`MAX_EXPANDED` without one. Raises :class:`MissingChunk` if a chunk is gone and
    :class:`BadChunk` (a ``ValueError``) when a check fails.
    """
    budget = MAX_EXPANDED if size is None or size <= 0 else 6 * size + (1 << 16) + len(manifest)
    try:
        encoded = json.loads(manifest)
        joiner = _Joiner(load, budget)
        joiner.fetch_all(encoded)
        body = joiner.value(encoded)
    except RecursionError:
        raise BadChunk("the body's data nests too deeply") from None
    except MemoryError:
        raise BadChunk("the body's data is too large to rebuild") from None
    if not isinstance(body, dict):
        raise ValueError("manifest does not describe a dict")
    return body
