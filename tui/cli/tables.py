"""Columns for checkpoint listings: times, sizes, short ids, rows and aligned tables."""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from operator import add, attrgetter, floordiv, itemgetter, mod
from typing import TYPE_CHECKING, Any

from crewpoint.providers.formats import NATIVE_FORMAT, format_of_id
from crewpoint.providers.formats import written_by as format_written_by
from crewpoint.providers.refs import short_id
from crewpoint.providers.usage_meta import DAMAGED, TOO_LONG, read_usage_summary
from crewpoint.text import clip, format_size
from crewpoint.tui.cli.errors import echo
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.cost import CostSummary, Prices
    from crewpoint.providers.base import CheckpointMeta


def format_time(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _minute_prefix(minute: int) -> str | None:
    """``YYYY-MM-DD HH:MM:`` of the local minute that begins at UTC second ``minute * 60``, when every second of
    it reads as that minute plus the second (the zone's offset is whole minutes and does not change within it);
    else ``None`` (such a second is formatted on its own)."""
    start, end = time.localtime(minute * 60), time.localtime(minute * 60 + 59)
    if start.tm_sec != 0 or end.tm_sec != 59 or start.tm_gmtoff != end.tm_gmtoff:
        return None
    return time.strftime("%Y-%m-%d %H:%M:", start)


ID_WIDTH = 12
"""Characters of crewpoint's ids a table shows: unique enough, and a prefix every command takes."""
CELL_WIDTH = 48
"""The widest a table cell gets: a long branch name, entity or damage reason is cut, never widens its column
past this (``info`` and ``--json`` give it whole)."""


def cli_id(checkpoint_id: str) -> str:
    """An id as the command line shows it, by the one rule (:func:`crewpoint.providers.refs.short_id`), in a form
    a user can type back into any command."""
    if len(checkpoint_id) == _NATIVE_LENGTH and not checkpoint_id.strip(_HEX) and _hex_is_native():
        return checkpoint_id[:ID_WIDTH]  # crewpoint's own id (random hex): no format's pattern to try
    return short_id(checkpoint_id, ID_WIDTH, typeable=True)


_NATIVE_LENGTH = 32
_HEX = "0123456789abcdef"
_HEX_BYTES = _HEX.encode("ascii")
_SHOWN = itemgetter(slice(0, ID_WIDTH))


def _all_hex(text: str) -> bool:
    """Is ``text`` lower-case hex digits only (the joined ids of a column, checked at once)?"""
    return text.isascii() and not text.encode("ascii").translate(None, _HEX_BYTES)


_NATIVE_LENGTHS = {_NATIVE_LENGTH}


@functools.cache
def _hex_is_native() -> bool:
    """Are ids of 32 hex digits crewpoint's own (no other format's adapter claims that shape), shown by their
    first :data:`ID_WIDTH` characters?"""
    sample = "0" * _NATIVE_LENGTH
    return format_of_id(sample) is NATIVE_FORMAT and short_id(sample, ID_WIDTH, typeable=True) == sample[:ID_WIDTH]


def entity_label(kind: str, name: str) -> str:
    """``crew research``, ``flow TriageFlow``; an entity left with its default name (a ``Crew`` without
    ``name=``) reads ``crew (unnamed)``, not ``crew crew``."""
    if not name or name == kind:
        return f"{kind} (unnamed)" if kind else "-"
    return f"{kind} {name}".strip()


def written_by(meta: CheckpointMeta) -> str:
    foreign = format_written_by(meta.version)  # another tool's checkpoint, or crewpoint's copy of one
    if foreign is not None:
        return foreign
    return f"crewpoint {meta.version or '?'}, schema {meta.schema_version}"


def table_row(meta: CheckpointMeta) -> list[str]:
    cells = _cells(meta)
    if not meta.damaged:  # every field is of its type: the row's cells are checked together
        joined = " | ".join(cells)
        if (
            joined.isprintable()
            and "  " not in joined
            and joined[:1] != " "
            and joined[-1:] != " "
            and max(map(len, cells)) <= CELL_WIDTH
        ):
            return cells  # the usual row: nothing to show, fold or cut (the same test as _plain, per cell)
    return [cell_text(cell) for cell in cells]


_FIELDS = attrgetter(
    "id", "created_at", "branch", "parent_id", "trigger", "entity_kind", "entity_name", "tasks_done", "tasks_total"
)
_FIELDS_SIZE = attrgetter("size")
_FIELDS_USAGE = attrgetter("usage")


CostCells = Callable[[Sequence[str]], list[str]]
"""A column of usage summaries (``CheckpointMeta.usage``) → their COST cells (:class:`crewpoint.tui.cli.costs`)."""


def table_rows(
    metas: Iterable[CheckpointMeta], statuses: Mapping[str, str] | None = None, costs: CostCells | None = None
) -> list[list[str]]:
    """:func:`table_row` of each of ``metas``, made column by column: each cell a column repeats (branch,
    trigger, entity, progress, size, a time's minute) made once per value, crewpoint's own ids cut without a
    check of each (the same cells, in a fraction of the time on a big listing). With ``costs``, a COST cell
    follows the size (``-`` for a damaged row). With ``statuses`` (checkpoint id → its run's status), each row
    ends with its status, ``-`` when it has none."""
    metas = list(metas)
    damaged = [i for i, meta in enumerate(metas) if meta.damaged]
    sound = [meta for meta in metas if not meta.damaged] if damaged else metas
    if not sound:
        return [_with_status(table_row(meta), meta, statuses, costs) for meta in metas]
    rows = list(map(list, zip(*_columns(sound, statuses, costs), strict=True)))
    if not damaged:
        return rows
    made = iter(rows)
    return [_with_status(table_row(meta), meta, statuses, costs) if meta.damaged else next(made) for meta in metas]


def _columns(
    sound: list[CheckpointMeta], statuses: Mapping[str, str] | None, costs: CostCells | None = None
) -> list[list[str]]:
    """The cells of :func:`table_rows`, column by column, for metas none of which is damaged."""
    ids, times, branches, parents, triggers, kinds, names, done, total = zip(*map(_FIELDS, sound), strict=True)
    columns = [
        _id_cells(ids, None),
        _time_cells(times),
        _cells_of(branches),
        _id_cells(parents, "-"),
        _cells_of(triggers),
        _entity_cells(kinds, names),
        list(map("{}/{}".format, done, total)),  # plain by their making (counts, checked)
        _size_cells(map(_FIELDS_SIZE, sound)),
    ]
    if costs is not None:
        columns.append(costs(list(map(_FIELDS_USAGE, sound))))
    if statuses is not None:
        columns.append(list(map(statuses.get, ids, itertools.repeat("-"))))
    return columns


def _with_status(
    row: list[str], meta: CheckpointMeta, statuses: Mapping[str, str] | None, costs: CostCells | None = None
) -> list[str]:
    if costs is not None:
        row.append("-")  # a damaged row's usage is not trusted
    if statuses is not None:
        row.append(statuses.get(meta.id, "-"))
    return row


def _cells_of(values: tuple[str, ...]) -> list[str]:
    """The cells of a column of text, each distinct value's made once."""
    cells = {value: cell_text(value) for value in set(values)}
    return list(map(cells.__getitem__, values))


def _id_cells(ids: tuple[str | None, ...], none: str | None) -> list[str]:
    """A column of ids as :func:`cli_id` shows them (``none``, when given, for an empty one: a parent's ``-``)."""
    named = [i for i in ids if i]
    if _hex_is_native() and set(map(len, named)) <= _NATIVE_LENGTHS and _all_hex("".join(named)):
        if len(named) == len(ids):
            return list(map(_SHOWN, named))
        if none is not None:
            return [i[:ID_WIDTH] if i else none for i in ids]
    cells: dict[str | None, str] = {}
    out: list[str] = []
    for ident in ids:
        cell = cells.get(ident)
        if cell is None:
            cell = cells[ident] = none if none is not None and not ident else cell_text(cli_id(ident or ""))
        out.append(cell)
    return out


def _entity_cells(kinds: tuple[str, ...], names: tuple[str, ...]) -> list[str]:
    pairs = list(zip(kinds, names, strict=True))
    cells = {pair: cell_text(entity_label(*pair)) for pair in set(pairs)}
    return list(map(cells.__getitem__, pairs))


def _size_cells(sizes: Iterable[int]) -> list[str]:
    column = list(sizes)
    cells = {size: format_size(size) for size in set(column)}  # a listing's sizes repeat: each formatted once
    return list(map(cells.__getitem__, column))


def _time_cells(times: tuple[float, ...]) -> list[str]:
    """A column of times as :func:`format_time` writes each, a minute's ``YYYY-MM-DD HH:MM:`` made once: when
    every time is set and each minute's prefix holds for all its seconds, the column is made without a Python
    step per row (its seconds and minutes by ``map``), else time by time."""
    if all(times):  # not damaged: times from 0 to the year 10000, so int() is the second
        seconds = list(map(int, times))
        minutes = list(map(floordiv, seconds, itertools.repeat(60)))
        prefixes = {minute: _minute_prefix(minute) for minute in set(minutes)}
        if None not in prefixes.values():
            second_texts = map(_SECOND_TEXTS.__getitem__, map(mod, seconds, itertools.repeat(60)))
            return list(map(add, map(prefixes.__getitem__, minutes), second_texts))
    return _times_one_by_one(times)


_SECOND_TEXTS = [f"{second:02d}" for second in range(60)]


def _times_one_by_one(times: tuple[float, ...]) -> list[str]:
    minutes: dict[int, str | None] = {}  # a listing's times share minutes
    out: list[str] = []
    add = out.append
    for created in times:
        if created:  # not damaged: a time from 0 to the year 10000, so int() is its second
            second = int(created)
            minute = second // 60
            prefix = minutes.get(minute, "")
            if prefix == "":
                prefix = minutes[minute] = _minute_prefix(minute)
            add(f"{prefix}{second % 60:02d}" if prefix is not None else format_time(created))
        else:
            add("-")
    return out


def cell_text(value: object) -> str:
    """A table cell: on one line, control characters shown, at most :data:`CELL_WIDTH` wide."""
    if _plain(value):
        return value  # type: ignore[return-value]  # _plain holds only for a str
    return clip(visible(str(value), one_line=True), CELL_WIDTH)


def _plain(value: object) -> bool:
    """Is ``value`` a cell as it stands: text that fits, with nothing to show (no control or format character)
    and no space that :func:`~crewpoint.text.clip` would fold (the usual cell: nothing to do)?"""
    return (
        type(value) is str
        and len(value) <= CELL_WIDTH
        and value.isprintable()
        and "  " not in value
        and value[:1] != " "
        and value[-1:] != " "
    )


def _cells(meta: CheckpointMeta) -> list[str]:
    if meta.damaged:
        return [
            cli_id(meta.id),
            format_time(meta.created_at),
            meta.branch or "?",
            "-",
            "DAMAGED",
            meta.damaged,
            "-",
            format_size(meta.size),
        ]
    entity = entity_label(meta.entity_kind, meta.entity_name)
    progress = f"{meta.tasks_done}/{meta.tasks_total}"
    parent = cli_id(meta.parent_id) if meta.parent_id else "-"
    when = format_time(meta.created_at)
    return [cli_id(meta.id), when, meta.branch, parent, meta.trigger, entity, progress, format_size(meta.size)]


def print_table(header: list[str] | None, rows: list[list[str]], widths: list[int] | None = None) -> list[int]:
    """Print ``rows`` (after ``header``, when given) in columns; ``widths`` keeps the columns of earlier rows.
    Returns the widths used."""
    shown = [header, *rows] if header is not None else rows
    if widths is None:
        widths = column_widths(shown)
    echo("\n".join(aligned(shown, widths)))  # one write per chunk: listing 10,000 rows stays fast
    return widths


def print_listing(
    header: list[str] | None,
    metas: list[CheckpointMeta],
    statuses: Mapping[str, str],
    widths: list[int] | None = None,
    costs: CostCells | None = None,
) -> list[int]:
    """:func:`print_table` of ``header`` and ``table_rows(metas, statuses, costs)``, the same text, made column by
    column (each line formatted by one call, no row list made) unless a row is damaged. Returns the widths used."""
    if not metas or any(map(_DAMAGED, metas)):
        return print_table(header, table_rows(metas, statuses, costs), widths)
    columns = _columns(metas, statuses, costs)
    if widths is None:
        widths = [max(map(len, column)) for column in columns]
        if header is not None:
            widths = [max(width, len(name)) for width, name in zip(widths, header, strict=True)]
    if len(widths) != len(columns) or (header is not None and len(header) != len(widths)):
        raise ValueError(f"rows of other than {len(widths)} cells")
    # Each column padded to its width at once, then each line joined: the lines ``aligned`` would make.
    padded: list[Iterator[str]] = [
        map(str.ljust, column, itertools.repeat(width)) for column, width in zip(columns, widths, strict=True)
    ]
    padded[-1] = iter(columns[-1])  # the last column is not padded (a line ends where its text does)
    lines: Iterator[str] = map(str.rstrip, map("  ".join, zip(*padded, strict=True)))
    if header is not None:
        lines = itertools.chain(aligned([header], widths), lines)
    echo("\n".join(lines))  # one write per chunk
    return widths


_DAMAGED = attrgetter("damaged")


def column_widths(rows: list[list[str]]) -> list[int]:
    return [max(map(len, map(str, column))) for column in zip(*rows, strict=True)]


def aligned(rows: list[list[str]], widths: list[int] | None = None, indent: str = "") -> list[str]:
    """``rows`` as lines of columns two spaces apart (``widths``: from the rows themselves when not given)."""
    widths = column_widths(rows) if widths is None and rows else widths or []
    if any(len(row) != len(widths) for row in rows):
        raise ValueError(f"rows of other than {len(widths)} cells")
    line = "  ".join(f"{{:<{w}}}" for w in widths).format  # one format for every row (of text cells)
    return [indent + line(*row).rstrip() for row in rows]


class ListingCosts:
    """What each listed checkpoint's chain cost up to it, from its usage summary (no body read): the COST cell
    (``$0.0123``; ``~$0.0123`` when some tokens were estimated; ``$0.0123+?`` when a model's price is unknown,
    ``?`` when no model's is, or the summary was too long to keep; ``-`` when no usage was recorded) and ``list
    --json``'s figures. Prices are loaded once, when the first summary is priced (a store without usage never loads
    them)."""

    def __init__(self, prices: Prices | None = None) -> None:
        self._prices = prices
        self._cells: dict[str, str] = {"": "-"}
        self._summaries: dict[str, CostSummary | None] = {}

    def prices(self) -> Prices:
        if self._prices is None:
            # lazy: prices are read (pyproject.toml, CREWPOINT_PRICES) only when a listed checkpoint has usage
            from crewpoint.cost import load_prices

            self._prices = load_prices()
        return self._prices

    def summary(self, usage: str) -> CostSummary | None:
        """The chain's usage priced, or None when none is recorded (or readable) in ``usage``."""
        if usage in self._summaries:
            return self._summaries[usage]
        parts = read_usage_summary(usage)
        found = None
        if parts is not None and parts["chain"]:
            # lazy: pricing loads decimal (and genai-prices for a model that is not the offline one)
            from crewpoint.cost import price_rows

            found = price_rows(parts["chain"], self.prices())
        self._summaries[usage] = found
        return found

    def cell(self, usage: str) -> str:
        cell = self._cells.get(usage)
        if cell is None:
            summary = self.summary(usage)
            if summary is None:
                cell = "?" if usage in (TOO_LONG, DAMAGED) else "-"  # DAMAGED: the body says otherwise
            elif not summary.priced:
                cell = "?"
            else:
                # lazy: see summary()
                from crewpoint.cost import format_usd

                known = ("~" if summary.estimated else "") + format_usd(summary.usd)
                cell = known if summary.complete else f"{known}+?"  # the known part, and the mark of the rest
            self._cells[usage] = cell
        return cell

    def __call__(self, usages: Sequence[str]) -> list[str]:
        cells = self._cells
        for usage in set(usages).difference(cells):
            self.cell(usage)
        return list(map(cells.__getitem__, usages))

    def figures(self, usage: str) -> dict[str, Any]:
        """``list --json``'s ``usage`` (tokens by kind), ``cost_usd``, ``cost_estimated`` and ``price_unknown``:
        :meth:`crewpoint.cost.CostSummary.to_json`, or nulls when no usage was recorded."""
        summary = self.summary(usage) if isinstance(usage, str) else None
        if summary is None:
            return {"usage": None, "cost_usd": None, "cost_estimated": False, "price_unknown": []}
        return summary.to_json()
