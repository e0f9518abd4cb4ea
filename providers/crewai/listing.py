"""Listing a CrewAI store fast: order from what costs nothing, facts only for the rows a view asks for.

A CrewAI store's names (or its table's columns) give every checkpoint's id, parent, branch and time, so the
order, lineages and sequences of a whole store come from a directory walk or one narrow query (:class:`Entry`,
:func:`order_entries`). What a list shows besides (kind, name, progress, trigger, version) needs the dump, so
it is learnt per row, newest first, only for the rows asked for (:class:`LazyListing`), and kept in
:class:`FactsCache` so a row is learnt once.

Learning a JSON dump reads its head and tail only (:func:`json_facts`): CrewAI writes ``entities`` before the
big ``event_record`` and ``trigger`` last. Anything unexpected (another key order, a torn file, a flow or agent
whose facts are in its events) falls back to parsing the whole file, which also names what is damaged.
Learning a SQLite row happens inside SQLite, on its JSONB (``sqlite_store.SQL_CREW_FIRST``, ``SQL_FACTS``).

A provider remembers a store's order between listings while a cheap look at the store (each file's name, size
and time; the database's ``data_version``) sees it unchanged (:class:`ListsLazily`).
"""

from __future__ import annotations

import builtins
import codecs
import functools
import json
import os
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from crewpoint.providers.base import CheckpointError, CheckpointMeta, CheckpointNotFound, CheckpointRecord
from crewpoint.providers.crewai import common
from crewpoint.providers.crewai.common import entity_name, events_of, main_entity, mask_text, progress
from crewpoint.providers.files import NotRegular, one_look, open_regular
from crewpoint.providers.refs import match_prefix
from crewpoint.providers.usage_meta import MAX_USAGE_TEXT, usage_summary

Facts = dict[str, Any]
CHUNK = 2000
"""Rows learnt at a time while a listing streams (as many as `list` prints at a time)."""
FEW = 8
"""An ancestry this short is learnt at once, without the store's cache."""
READ_ONLY = (
    "CrewAI stores are read-only in crewpoint: fork a checkpoint, or copy the store with `crewpoint checkpoint copy`"
)

_HEAD = 65_536
_TAIL = 4_096
_decoder = json.JSONDecoder()
_WHITESPACE = " \t\r\n"


@dataclass(slots=True)
class Entry:
    """One checkpoint as its name (or row) tells it, before its dump is read."""

    id: str
    parent_id: str | None
    branch: str
    created_at: float
    tiebreak: int
    """Orders checkpoints of the same second that are not parent and child (modification time, row id)."""
    size: int
    """The file's size; 0 for a database row, whose size is learnt with its facts (``facts["size"]``)."""
    location: str
    key: str
    """The cache key: the file's path in the store, or the row's id."""
    stamp: int
    """The cache stamp: the file's modification time; a database row's rowid (CrewAI never changes a row)."""
    lineage: str = ""
    sequence: int = 0

    def meta(self, facts: Facts) -> CheckpointMeta:
        """This checkpoint's metadata with ``facts`` (learnt or cached) filled in."""
        get = facts.get
        done, total, damaged = get("tasks_done", 0), get("tasks_total", 0), get("damaged")
        texts = (get("trigger", ""), get("entity_kind", ""), get("entity_name", ""), get("version", ""))
        if not (type(done) is int and type(total) is int and all(type(t) is str for t in texts)):
            texts, done, total, damaged = ("", "", "", ""), 0, 0, "unreadable cached facts: list again"
        trigger, kind, name, version = texts
        usage, size = get("usage", ""), get("size", self.size)  # a database row's size is learnt with its facts
        return CheckpointMeta(
            self.id,
            self.parent_id,
            self.branch,
            self.lineage,
            self.sequence,
            self.created_at,
            trigger,
            kind,
            name,
            done,
            total,
            1,
            version,
            usage=usage if type(usage) is str and len(usage) <= MAX_USAGE_TEXT else "",
            size=size if type(size) is int and size >= 0 else self.size,
            location=self.location,
            damaged=damaged if isinstance(damaged, str) else None,
        )


def order_entries(entries: list[Entry]) -> list[Entry]:
    """``entries`` newest first, each given its lineage (the oldest ancestor in the store) and sequence (its
    place, oldest first: by time, a parent before its children within the same second)."""
    by_id = {e.id: e for e in entries}
    known: dict[str, tuple[int, str]] = {}  # id -> (depth, root), filled along each chain once
    for entry in entries:
        if entry.id in known:
            continue
        chain: list[str] = []
        in_chain: set[str] = set()
        current: Entry | None = entry
        while current is not None and current.id not in known and current.id not in in_chain:
            chain.append(current.id)
            in_chain.add(current.id)
            current = by_id.get(current.parent_id) if current.parent_id else None
        if current is not None and current.id in known:
            depth, root = known[current.id]
            depth += 1
        else:  # the chain's top is in this store (or a loop): it is the root
            depth, root = 0, chain[-1]
        for cid in reversed(chain):
            known[cid] = (depth, root)
            depth += 1
    placed = sorted(entries, key=lambda e: (e.created_at, known[e.id][0], e.tiebreak, e.id))
    for n, entry in enumerate(placed, start=1):
        entry.lineage = known[entry.id][1]
        entry.sequence = n
    placed.reverse()
    return placed


class LazyListing:
    """A store's entries in order, with their facts learnt on demand (through ``learn``, for the entries the
    cache does not know) and remembered in ``cache``; ``lock`` guards the cache, shared by a provider's
    listings of one store."""

    def __init__(
        self,
        entries: list[Entry],
        cache: FactsCache,
        learn: Callable[[list[Entry]], dict[str, Facts]],
        lock: threading.Lock,
    ) -> None:
        self.entries = entries
        self.cache = cache
        self.learn = learn
        self.lock = lock

    def metas(self, entries: list[Entry], save: bool = True) -> list[CheckpointMeta]:
        with self.lock:
            known = {e.key: self.cache.get(e.key, e.size, e.stamp) for e in entries}
            missing = [e for e in entries if known[e.key] is None]
            if missing:
                try:
                    learnt = self.learn(missing)
                    for entry in missing:
                        facts = learnt.get(entry.key) or {"damaged": "vanished while it was read"}
                        if "damaged" not in facts:
                            self.cache.put(entry.key, entry.size, entry.stamp, facts)
                        known[entry.key] = facts
                finally:
                    if save:
                        self.cache.save()
        return [e.meta(known[e.key] or {}) for e in entries]

    def first(self, limit: int) -> list[CheckpointMeta]:
        return self.metas(self.entries[: max(0, limit)])

    def all(self) -> list[CheckpointMeta]:
        return self.metas(self.entries)

    def stream(self) -> Iterator[CheckpointMeta]:
        """The listing chunk by chunk; what was learnt is saved when it ends or is left."""
        try:
            for start in range(0, len(self.entries), CHUNK):
                yield from self.metas(self.entries[start : start + CHUNK], save=False)
        finally:
            with self.lock:
                self.cache.save()

    def pick(self, wanted: str | None, where: str) -> CheckpointMeta | None:
        """The checkpoint ``wanted`` names (an id or a unique prefix), or with None the newest one that is not
        damaged (the newest of all when every one is); None in an empty listing. Reads only what it needs."""
        if not self.entries:
            return None
        if wanted is None:
            return next((m for m in self.stream() if not m.damaged), None) or self.first(1)[0]
        full = match_prefix([e.id for e in self.entries], wanted, where)
        return self.learnt_now([next(e for e in self.entries if e.id == full)])[0]

    def learnt_now(self, entries: list[Entry]) -> list[CheckpointMeta]:
        """The metadata of a few checkpoints (one named, a short ancestry), learnt now: cheaper than reading all
        that the store's cache remembers."""
        learnt = self.learn(entries) if entries else {}
        return [e.meta(learnt.get(e.key) or {"damaged": "vanished while it was read"}) for e in entries]


class ListsLazily:
    """What a CrewAI provider lists, through the :class:`LazyListing` its ``_lazy`` gives (one per call, over a
    cache kept per store while the provider lives), and the writes it refuses: CrewAI's stores are read-only."""

    read_only = True

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._caches: dict[str, FactsCache] = {}
        self._orders: dict[str, tuple[Hashable, builtins.list[Entry], object | None]] = {}

    def _lazy(self, location: str, branch: str | None) -> LazyListing:
        raise NotImplementedError

    def _listing(
        self,
        store: str,
        look: Callable[[], Hashable],
        entries: Callable[[], builtins.list[Entry]],
        learn: Callable[[builtins.list[Entry]], dict[str, Facts]],
    ) -> LazyListing:
        """A listing of the store's entries in order, the store's cache kept to them. ``look()`` is what a cheap
        look at the store sees (each file's name, size and time; the database's version): while it is what it
        was, the order made from ``entries()`` last time still holds and is not made again. A process that
        question answered with one look (:func:`~crewpoint.providers.files.looking_once`) looks once."""
        question = one_look()
        with self._lock:
            known = self._orders.get(store)
        if known is not None and question is not None and known[2] is question:
            names, ordered = known[0], known[1]
        else:
            names = look()
            fresh = known is None or names is None or known[0] != names
            ordered = order_entries(entries()) if fresh or known is None else known[1]
        with self._lock:
            cache = self._caches.get(store)
            if cache is None:
                cache = self._caches[store] = FactsCache(store)
            if known is None or known[1] is not ordered:
                cache.keep_only({e.key for e in ordered})
            self._orders[store] = (names, ordered, question)
        return LazyListing(ordered, cache, learn, self._lock)

    def write(self, location: str, record: CheckpointRecord) -> str:
        raise CheckpointError(READ_ONLY)

    def delete(self, location: str, ids: Iterable[str]) -> int:
        raise CheckpointError(READ_ONLY)

    def list(self, location: str, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        return self._lazy(location, branch).all()

    def list_newest(self, location: str, limit: int, branch: str | None = None) -> builtins.list[CheckpointMeta]:
        return self._lazy(location, branch).first(limit)

    def iter_list(self, location: str, branch: str | None = None) -> Iterator[CheckpointMeta]:
        return self._lazy(location, branch).stream()

    def meta(self, location: str, checkpoint_id: str) -> CheckpointMeta | None:
        listing = self._lazy(location, None)
        entry = next((e for e in listing.entries if e.id == checkpoint_id), None)
        return None if entry is None else listing.metas([entry])[0]

    def find(self, location: str, prefix: str) -> CheckpointMeta:
        found = self._lazy(location, None).pick(prefix, location)
        if found is None:
            raise CheckpointNotFound(f"no checkpoints in {location}")
        return found

    def ancestors(self, location: str, checkpoint_id: str) -> builtins.list[CheckpointMeta]:
        """The checkpoint and its parents, nearest first; facts are read for them only."""
        listing = self._lazy(location, None)
        by_id = {e.id: e for e in listing.entries}
        chain: builtins.list[Entry] = []
        seen: set[str] = set()
        current = by_id.get(checkpoint_id)
        while current is not None and current.id not in seen:  # a crafted loop of parents ends here
            chain.append(current)
            seen.add(current.id)
            current = by_id.get(current.parent_id) if current.parent_id else None
        return listing.learnt_now(chain) if len(chain) <= FEW else listing.metas(chain)


# -- JSON files ------------------------------------------------------------------------------------------------


def json_facts(path: str, parse_whole: Callable[[str], dict[str, Any]]) -> Facts:
    """What a list shows of the CrewAI checkpoint file at ``path``, read from its head and tail when it can be;
    else from ``parse_whole(path)`` (which raises on a damaged file)."""
    try:
        quick = _json_facts_quick(path)
    except (OSError, ValueError, IndexError, KeyError, TypeError, AttributeError, RecursionError, NotRegular):
        quick = None
    return quick if quick is not None else describe_dump(parse_whole(path))


def _json_facts_quick(path: str) -> Facts | None:
    """A crew's facts from the file's head (its first entity up to the tasks) and tail (the trigger); None
    when the file is small enough to parse whole, or is not laid out as CrewAI 1.15 lays it out."""
    with os.fdopen(open_regular(path, follow=False), "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        head = handle.read(_HEAD)
        if size <= len(head):
            return None
        handle.seek(max(0, size - _TAIL))
        tail = handle.read()
    text = codecs.getincrementaldecoder("utf-8")().decode(head, final=False)  # a cut last character waits
    top, at = _members_before(text, _skip(text, 0), "entities")
    if text[at] != "[" or "crewai_version" not in top:
        return None
    crew, at = _members_before(text, _skip(text, at + 1), "tasks")
    if crew.get("entity_type") != "crew" or "name" not in crew:
        return None  # an entity that is not a crew first: the whole file says which entity the checkpoint is of
    crew["tasks"], end = _decoder.raw_decode(text, at)
    crew["usage_metrics"] = common.member_after(text, end, "usage_metrics")
    trigger = _last_trigger(tail.decode("utf-8", "replace"))
    if trigger is None:
        return None
    return entity_facts(crew, [], top["crewai_version"], trigger)


def _members_before(text: str, at: int, stop: str) -> tuple[dict[str, Any], int]:
    """The members of the JSON object at ``at`` decoded up to the key ``stop``, and where ``stop``'s value
    starts. Raises ValueError when the object ends (or ``text`` does) before ``stop``."""
    if text[at] != "{":
        raise ValueError("not an object")
    found: dict[str, Any] = {}
    at += 1
    while True:
        key, at = _decoder.raw_decode(text, _skip(text, at))
        at = _skip(text, at)
        if not isinstance(key, str) or text[at] != ":":
            raise ValueError("not an object member")
        at = _skip(text, at + 1)
        if key == stop:
            return found, at
        found[key], at = _decoder.raw_decode(text, at)
        at = _skip(text, at)
        if text[at] != ",":
            raise ValueError(f"no {stop!r}")
        at += 1


def _last_trigger(tail: str) -> str | None:
    """The top-level ``trigger`` CrewAI writes last: a string value followed only by the object's end."""
    at = tail.rfind('"trigger"')
    if at < 0 or tail[:at].rstrip()[-1:] not in (",", "{"):
        return None
    at = _skip(tail, at + len('"trigger"'))
    if tail[at] != ":":
        return None
    value, end = _decoder.raw_decode(tail, _skip(tail, at + 1))
    if tail[end:].strip() != "}" or not (value is None or isinstance(value, str)):
        return None
    return value or ""


def _skip(text: str, at: int) -> int:
    while text[at] in _WHITESPACE:
        at += 1
    return at


# -- what a list shows -----------------------------------------------------------------------------------------


def describe_dump(dump: dict[str, Any]) -> Facts:
    """What list views need from a whole dump: kind, name, progress, trigger, version."""
    entity = main_entity(dump)
    events = events_needed(dump, entity)
    return entity_facts(entity, events, dump.get("crewai_version"), dump.get("trigger"))


def events_needed(dump: dict[str, Any], entity: dict[str, Any]) -> list[dict[str, Any]]:

    return events_of(dump) if entity.get("entity_type") != "crew" else []


def entity_facts(entity: dict[str, Any], events: list[dict[str, Any]], version: Any, trigger: Any) -> Facts:
    done, total = progress(entity, events)
    rows = common.usage_of(entity)
    return {
        "usage": usage_summary(rows, rows),
        "entity_kind": str(entity.get("entity_type") or ""),
        "entity_name": _masked(entity_name(entity, events)),
        "tasks_done": done,
        "tasks_total": total,
        "trigger": _masked(str(trigger or "")),
        "version": f"crewai {version or '?'}",
    }


@functools.lru_cache(maxsize=1024)
def _masked(text: str) -> str:
    """:func:`mask_text` of a name or trigger (a store repeats a few of them in every row)."""
    return mask_text(text)


# -- the cache -------------------------------------------------------------------------------------------------


class FactsCache:
    """What listings learned from a store's checkpoints (kind, name, progress, trigger), kept between processes
    in crewpoint's cache folder (``$XDG_CACHE_HOME/crewpoint/crewai``), never in the CrewAI store: CrewAI's
    names hold no progress, so a listing would otherwise read every checkpoint. An entry counts only while the
    checkpoint's size and stamp (a file's size and modification time; a database row's rowid) are unchanged. Names
    are masked."""

    def __init__(self, store: str) -> None:
        import hashlib

        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        digest = hashlib.sha256(os.path.abspath(store).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = os.path.join(base, "crewpoint", "crewai", f"{digest}.json")
        self._entries: dict[str, list[Any]] | None = None  # read from the file when first asked for
        self._keep: set[str] | None = None  # the keys to keep once read
        self.dirty = False

    @property
    def entries(self) -> dict[str, list[Any]]:
        """The cached entries (the file is read once, when a listing first needs what it remembers)."""
        if self._entries is None:
            self._entries = {}
            try:
                with open(self.path, "rb") as handle:
                    loaded = json.loads(handle.read())
                if isinstance(loaded, dict) and loaded.get("version") == 2 and isinstance(loaded.get("entries"), dict):
                    self._entries = loaded["entries"]
            except (OSError, ValueError, RecursionError):
                pass
            if self._keep is not None:
                keep, self._keep = self._keep, None
                self.keep_only(keep)
        return self._entries

    def get(self, key: str, size: int, stamp: int) -> Facts | None:
        entry = self.entries.get(key)
        if isinstance(entry, list) and len(entry) == 3 and entry[0] == size and entry[1] == stamp:
            facts = entry[2]
            return facts if isinstance(facts, dict) else None
        return None

    def put(self, key: str, size: int, stamp: int, facts: Facts) -> None:
        self.entries[key] = [size, stamp, facts]
        self.dirty = True

    def keep_only(self, keys: set[str]) -> None:
        """Forget every entry but ``keys`` (once the file is read, if it is not yet)."""
        if self._entries is None:
            self._keep = keys
            return
        gone = [k for k in self._entries if k not in keys]
        for key in gone:
            del self._entries[key]
        self.dirty = self.dirty or bool(gone)

    def save(self) -> None:
        """Write the cache atomically (0600 in a 0700 folder); a cache that cannot be written is skipped."""
        if not self.dirty:
            return
        folder = os.path.dirname(self.path)
        temp = f"{self.path}.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            text = json.dumps({"version": 2, "entries": self.entries}, ensure_ascii=False, separators=(",", ":"))
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(temp, self.path)
            self.dirty = False
        except OSError:
            try:
                os.unlink(temp)
            except OSError:
                pass
