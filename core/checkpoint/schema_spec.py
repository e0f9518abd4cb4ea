"""The words the checkpoint body is declared in: a spec says what a value must be, checks it in plain code and says
its Python type.

:mod:`crewpoint.checkpoint.schema` declares the body with them once: each field's spec and default. Checking a
value (:meth:`Spec.check`) returns it with every default filled in, or raises :class:`Bad` naming the field; a
named :class:`Obj` is also a ``TypedDict`` that :func:`typed_dicts` writes out as source, so the types readers see
are generated from the same declaration (``python -m crewpoint.checkpoint.schema``).
"""

from __future__ import annotations

import keyword
import re
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal

from crewpoint.providers.base import DamagedCheckpoint
from crewpoint.providers.formats import format_names

Path = tuple[str | int, ...]


class Bad(Exception):
    """A value at ``path`` that does not fit; ``problem`` says how, in a few words. ``kind_taken``: the value was of
    the right kind and failed on its value (a count below its least), which says more than its kind would."""

    def __init__(self, path: Path, problem: str, *, kind_taken: bool = False) -> None:
        super().__init__(problem)
        self.path, self.problem, self.kind_taken = path, problem, kind_taken


class DamagedBody(DamagedCheckpoint):
    """A body that does not validate. ``field`` is the dotted path of the first wrong field (``""``: the body
    itself); the message is one line: ``checkpoint <id> is damaged: <field>: <what is wrong>``."""

    def __init__(self, source: str, field: str, problem: str) -> None:
        self.source, self.field, self.problem = source, field, problem
        where = f"{field}: " if field else ""
        super().__init__(f"checkpoint {source} is damaged: {where}{problem}")


def dotted(parts: Sequence[str | int]) -> str:
    return ".".join(str(p) for p in parts)


_TYPE_NAMES: dict[type, str] = {
    type(None): "null",
    bool: "true/false",
    int: "a number",
    float: "a number",
    str: "a string",
    list: "a list",
    tuple: "a list",
    dict: "an object",
}


def type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def shown(value: Any) -> str:
    return repr(value) if isinstance(value, (int, float, str)) and len(repr(value)) <= 24 else type_name(value)


class Spec:
    """What a value must be: :meth:`check` returns it (objects with their defaults filled in) or raises;
    :meth:`annotation` is its Python type, as the generated ``TypedDict`` writes it."""

    expected = "a value"
    python = "Any"

    def check(self, value: Any, path: Path) -> Any:
        raise NotImplementedError

    def refuse(self, value: Any, path: Path) -> Bad:
        return Bad(path, f"expected {self.expected}, not {type_name(value)}")

    def annotation(self) -> str:
        return self.python

    def parts(self) -> Sequence[Spec]:
        """The specs inside this one (where a named object may sit)."""
        return ()


class _Scalar(Spec):
    def __init__(self, expected: str, python: str, fits: Callable[[Any], bool]) -> None:
        self.expected, self.python, self._fits = expected, python, fits

    def check(self, value: Any, path: Path) -> Any:
        if not self._fits(value):
            raise self.refuse(value, path)
        return value


class _Anything(Spec):
    expected = "any value"

    def check(self, value: Any, path: Path) -> Any:
        return value


STR = _Scalar("a string", "str", lambda v: isinstance(v, str))
INT = _Scalar("a whole number", "int", lambda v: type(v) is int)
NUM = _Scalar("a number", "float", lambda v: type(v) in (int, float))
BOOL = _Scalar("true/false", "bool", lambda v: type(v) is bool)
ANY = _Anything()


class Count(Spec):
    python = "int"

    def __init__(self, least: int = 0) -> None:
        self.least = least
        self.expected = "a whole number" if least == 0 else f"a whole number from {least}"

    def check(self, value: Any, path: Path) -> Any:
        if type(value) is not int:
            raise self.refuse(value, path)
        if value < self.least:
            raise Bad(path, f"expected a whole number from {self.least}, not {value}", kind_taken=True)
        return value


class OneOf(Spec):
    """A value that fits one of ``specs``; when none takes it, the first that failed inside the value (an object
    or a list of the right kind with a wrong field) names that field, else the value is named here."""

    def __init__(self, *specs: Spec) -> None:
        self.specs = specs
        self.expected = " or ".join(dict.fromkeys(s.expected for s in specs))
        self._null_taken = False
        """A null was taken by the null member, every member before it refusing it: so is every null after (a
        member's answer depends on the value alone), without the refusals made again (most fields are null)."""

    def check(self, value: Any, path: Path) -> Any:
        if value is None and self._null_taken:
            return None
        deeper: Bad | None = None
        for spec in self.specs:
            try:
                taken = spec.check(value, path)
                if value is None and isinstance(spec, _Null):
                    self._null_taken = True
                return taken
            except Bad as bad:  # a member that took the value's kind and failed inside says most
                if deeper is None and (len(bad.path) > len(path) or bad.kind_taken):
                    deeper = bad
        raise deeper if deeper is not None else self.refuse(value, path)

    def annotation(self) -> str:
        return " | ".join(dict.fromkeys(s.annotation() for s in self.specs))

    def parts(self) -> Sequence[Spec]:
        return self.specs


class _Null(Spec):
    expected = "null"
    python = "None"

    def check(self, value: Any, path: Path) -> Any:
        if value is not None:
            raise self.refuse(value, path)
        return None


NULL = _Null()


def Nullable(spec: Spec) -> Spec:
    return OneOf(spec, NULL)


class OneValue(Spec):
    def __init__(self, *values: str) -> None:
        self.values = values
        self.expected = " or ".join(repr(v) for v in values)
        self.python = "Literal[" + ", ".join(f'"{v}"' for v in values) + "]"

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, str) or value not in self.values:
            raise Bad(path, f"expected {self.expected}, not {shown(value)}")
        return value


class KnownFormat(Spec):
    """crewpoint's format or one registered with :func:`crewpoint.providers.formats.register_format`."""

    python = "str"

    def check(self, value: Any, path: Path) -> Any:
        names = format_names()
        if not isinstance(value, str) or value not in names:
            raise Bad(path, f"expected {' or '.join(repr(n) for n in names)}, not {shown(value)}")
        return value


class Matching(Spec):
    """A string ``pattern`` matches in full (``expected`` says which, in words)."""

    python = "str"

    def __init__(self, pattern: re.Pattern[str], expected: str) -> None:
        self.pattern, self.expected = pattern, expected

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, str) or self.pattern.fullmatch(value) is None:
            raise Bad(path, f"expected {self.expected}, not {shown(value)}")
        return value


class Bounded(Spec):
    """A string of at most ``limit`` characters, a whole number from 0 to ``limit``, or a number from 0 to ``limit``
    (``kind``: ``"str"``, ``"int"``, ``"num"``): a figure of a size a real run records."""

    def __init__(self, kind: Literal["str", "int", "num"], limit: int) -> None:
        self.kind, self.limit = kind, limit
        self.expected = {"str": "a string", "int": "a whole number", "num": "a number"}[kind]
        self.python = {"str": "str", "int": "int", "num": "float"}[kind]

    def check(self, value: Any, path: Path) -> Any:
        if self.kind == "str":
            if not isinstance(value, str):
                raise self.refuse(value, path)
            if len(value) > self.limit:
                raise Bad(path, f"expected a string of at most {self.limit} characters, not {len(value)}")
            return value
        if type(value) is not int and (self.kind == "int" or type(value) is not float):
            raise self.refuse(value, path)
        if not 0 <= value <= self.limit:  # NaN fails this too
            raise Bad(path, f"expected {self.expected} from 0 to {self.limit}, not {shown(value)}")
        return value


class ListOf(Spec):
    expected = "a list"

    def __init__(self, item: Spec, least: int = 0, most: int | None = None) -> None:
        self.item, self.least, self.most = item, least, most

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, (list, tuple)):
            raise self.refuse(value, path)
        if len(value) < self.least:
            raise Bad(path, f"expected a list of at least {self.least}, not an empty one")
        if self.most is not None and len(value) > self.most:
            raise Bad(path, f"expected at most {self.most} rows, not {len(value)}")
        return [self.item.check(v, (*path, i)) for i, v in enumerate(value)]

    def annotation(self) -> str:
        return f"list[{self.item.annotation()}]"

    def parts(self) -> Sequence[Spec]:
        return (self.item,)


class Pair(Spec):
    expected = "a list of two"
    python = "list[Any]"

    def __init__(self, first: Spec, second: Spec) -> None:
        self.first, self.second = first, second

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise self.refuse(value, path) if not isinstance(value, (list, tuple)) else Bad(path, "expected a pair")
        return [self.first.check(value[0], (*path, 0)), self.second.check(value[1], (*path, 1))]

    def parts(self) -> Sequence[Spec]:
        return (self.first, self.second)


class MapOf(Spec):
    expected = "an object"

    def __init__(self, item: Spec) -> None:
        self.item = item

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise self.refuse(value, path)
        return {k: self.item.check(v, (*path, k)) for k, v in value.items()}

    def annotation(self) -> str:
        return f"dict[str, {self.item.annotation()}]"

    def parts(self) -> Sequence[Spec]:
        return (self.item,)


REQUIRED: Any = object()
"""A field's default when the field must be there."""

Field = tuple[Spec, Any] | tuple[Spec, Any, str]
"""A field of an object: its spec, its default (a value, a callable making it, or :data:`REQUIRED`) and, if it
needs one, a line saying what it holds (the generated type's field docstring)."""


class Obj(Spec):
    """An object with known fields (``name: (spec, default[, doc])``) and any other keys, kept as they are.
    ``checks`` run on the filled-in object (cross-field rules). With a ``name`` it is a ``TypedDict`` of that name
    (``doc``: its docstring); without, readers see ``dict[str, Any]``."""

    expected = "an object"

    def __init__(
        self,
        fields: Mapping[str, Field],
        *checks: Callable[[dict[str, Any], Path], None],
        name: str = "",
        doc: str = "",
    ) -> None:
        self.fields, self.checks, self.name, self.doc = fields, checks, name, doc
        self.python = name or "dict[str, Any]"
        self._known = [(key, field[0], field[1]) for key, field in fields.items()]

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise self.refuse(value, path)
        out = dict(value)
        for name, spec, default in self._known:
            if name in value:
                out[name] = spec.check(value[name], (*path, name))
            elif default is REQUIRED:
                raise Bad((*path, name), "missing")
            else:
                out[name] = default() if callable(default) else default
        for rule in self.checks:
            rule(out, path)
        return out

    def parts(self) -> Sequence[Spec]:
        return [field[0] for field in self.fields.values()]


class ByKind(Spec):
    """An object whose ``kind`` picks its spec; with a ``name``, the union of the kinds' types is a type alias."""

    expected = "an object"

    def __init__(self, kinds: Mapping[str, Obj], name: str = "") -> None:
        self.kinds, self.name = kinds, name

    def check(self, value: Any, path: Path) -> Any:
        if not isinstance(value, dict):
            raise self.refuse(value, path)
        kind = value.get("kind")
        if not isinstance(kind, str) or kind not in self.kinds:
            names = ", ".join(list(self.kinds)[:-1]) + " or " + list(self.kinds)[-1]
            raise Bad((*path, "kind"), f"expected {names}, not {shown(kind)}")
        return self.kinds[kind].check(value, path)

    def union(self) -> str:
        return " | ".join(spec.annotation() for spec in self.kinds.values())

    def annotation(self) -> str:
        return self.name or self.union()

    def parts(self) -> Sequence[Spec]:
        return list(self.kinds.values())


class Converted(Spec):
    """A value stored in another shape, turned into what ``spec`` checks by ``convert`` first (``takes``: which
    stored values to convert; ``expected``: what the stored value may be)."""

    def __init__(self, spec: Spec, takes: type, convert: Callable[[Any, Path], Any], expected: str) -> None:
        self.spec, self.takes, self.convert, self.expected = spec, takes, convert, expected

    def check(self, value: Any, path: Path) -> Any:
        if isinstance(value, self.takes):
            value = self.convert(value, path)
        return self.spec.check(value, path)

    def annotation(self) -> str:
        return self.spec.annotation()

    def parts(self) -> Sequence[Spec]:
        return (self.spec,)


# -- the types readers see, written out ----------------------------------------------------------------------


def named(root: Spec) -> Iterator[Obj | ByKind]:
    """The named objects and kinds under ``root``, each once, every one after those its fields name."""
    seen: dict[str, Spec] = {}

    def walk(spec: Spec) -> Iterator[Obj | ByKind]:
        for part in spec.parts():
            yield from walk(part)
        if isinstance(spec, (Obj, ByKind)) and spec.name:
            if spec.name in seen and seen[spec.name] is not spec:
                raise ValueError(f"two objects of the body are named {spec.name}")
            if spec.name not in seen:
                seen[spec.name] = spec
                yield spec

    yield from walk(root)


def _docstring(text: str, indent: str) -> list[str]:
    lines = textwrap.wrap(text, 120 - len(indent) - 3, break_long_words=False, break_on_hyphens=False)
    lines[0] = '"""' + lines[0]
    lines[-1] += '"""'
    return [indent + line for line in lines]


def declaration(spec: Obj | ByKind) -> str:
    """The Python source of one named object's ``TypedDict`` (or a kinds' type alias)."""
    if isinstance(spec, ByKind):
        return f"{spec.name} = {spec.union()}\n"
    if all(name.isidentifier() and not keyword.iskeyword(name) for name in spec.fields):
        lines = [f"class {spec.name}(TypedDict):"]
        if spec.doc:
            lines += [*_docstring(spec.doc, "    "), ""]
        for name, (inner, _default, *doc) in spec.fields.items():
            lines.append(f"    {name}: {inner.annotation()}")
            lines += _docstring(doc[0], "    ") if doc else []
        return "\n".join(lines) + "\n"
    lines = [f"{spec.name} = TypedDict(", f'    "{spec.name}",', "    {"]
    lines += [f'        "{name}": {inner.annotation()},' for name, (inner, *_) in spec.fields.items()]
    return "\n".join([*lines, "    },", ")"]) + "\n"
