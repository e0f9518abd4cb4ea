"""A checkpoint body as the text a store keeps: the stores' own codec (where encryption or redaction could sit).

The engine hands a store a plain body; what the JSON store writes of it is made here. Each checkpoint of a run
repeats what its previous one held (the event history so far, the usage rows of tasks that did not change, the
chain's rows before the run), so the codec remembers, for the last runs it encoded, the JSON text of each item of a
body's lists by its place and the item itself, and encodes only the items that are new there: a checkpoint costs
what came since the last one, not the whole run again. An item is known by identity, so a body handed to a store,
like the record it is in, is data that is read and never changed afterwards (the engine's items are its own
copies, made once).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from operator import is_
from typing import Any

from crewpoint.providers.chunks import encode_json

RUNS_KEPT = 8
"""How many runs' item texts the codec keeps (the runs writing at once in one process, with room to spare)."""

Known = tuple[Sequence[Any], Sequence[str]]
"""A list's items as last encoded and the JSON text of each, by position."""
Items = Callable[[str, Sequence[Any]], Iterable[str]]
"""``items(field, values)``: the JSON text of each of ``values``, the items of the list at ``field``."""


class BodyCodec:
    """Encodes checkpoint bodies, remembering the JSON of their lists' items per run (its lineage and branch) and
    field, for :data:`RUNS_KEPT` runs."""

    def __init__(self) -> None:
        self._known: dict[Any, dict[str, Known]] = {}
        self._lock = threading.Lock()

    def body_text(self, body: dict[str, Any], encode: Callable[[Any], str] | None = None) -> str:
        """Everything of a JSON store's file after its metadata line: ``"body":{...}}`` and the closing newline,
        one line per field and per item of a top-level list. ``encode``: another encoder than the compact JSON
        (an ASCII one, for a body a lone surrogate keeps from UTF-8), with nothing remembered."""
        if encode is not None:
            return _layout(body, encode, lambda field, values: map(encode, values))
        lineage = body.get("lineage")
        run = (lineage.get("lineage"), lineage.get("branch")) if isinstance(lineage, dict) else None
        if run is None or not isinstance(run[0], str) or not isinstance(run[1], str):
            return _layout(body, encode_json, lambda field, values: map(encode_json, values))
        with self._lock:
            known = self._known.get(run, {})
        learned: dict[str, Known] = {}

        def items(field: str, values: Sequence[Any]) -> list[str]:
            old, old_texts = known.get(field, _NONE)
            same = list(map(is_, values, old))
            count = len(same)
            if all(same):  # the history grew: the texts of the items it had, and the new ones encoded
                texts = [*old_texts[:count], *map(encode_json, values[count:])]
            else:  # some items changed in place (a usage row): those encoded again
                texts = [old_texts[n] if kept else encode_json(values[n]) for n, kept in enumerate(same)]
                texts += map(encode_json, values[count:])
            learned[field] = (list(values), texts)
            return texts

        text = _layout(body, encode_json, items)
        with self._lock:
            self._known.pop(run, None)
            self._known[run] = learned  # the newest last: the runs beyond the kept number go first
            while len(self._known) > RUNS_KEPT:
                del self._known[next(iter(self._known))]
        return text


def _layout(body: dict[str, Any], encode: Callable[[Any], str], items: Items) -> str:
    head = '"body":'
    if not all(isinstance(k, str) for k in body):
        return head + encode(body) + "}\n"
    out = [head, "{"]
    for n, (key, value) in enumerate(body.items()):
        out.append("\n" if n == 0 else ",\n")
        out.append(encode(key))
        if type(value) is list and value:
            out.append(":[\n")
            out.append(",\n".join(items(key, value)))
            out.append("]")
        else:
            out.append(":")
            out.append(_value(key, value, encode, items))
    out.append("}}\n")
    return "".join(out)


def _value(field: str, value: Any, encode: Callable[[Any], str], items: Items) -> str:
    """A field's text; a section whose every value is a list (the body's ``usage``) with its lists' items by
    ``items``. Any other object is encoded whole, at once (an entity's parts change at every checkpoint)."""
    if type(value) is not dict or not value or set(map(type, value.values())) != {list}:
        return encode(value)
    if not all(type(k) is str for k in value):
        return encode(value)
    parts = [encode(key) + ":[" + ",".join(items(f"{field}.{key}", inner)) + "]" for key, inner in value.items()]
    return "{" + ",".join(parts) + "}"


_NONE: Known = ((), ())

codec = BodyCodec()
"""The codec of the stores that keep a body as JSON text."""
