"""The branch graph, drawn like ``git log --graph``: one line per checkpoint, oldest first, forks as ``|\\``."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from rich.text import Text
from textual import on
from textual.message import Message
from textual.reactive import reactive
from textual.widgets import OptionList
from textual.widgets.option_list import Option

from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.refs import short_id
from crewpoint.tui.render import attach_gaps, format_time, problem_of
from crewpoint.tui.store_index import progress_text
from crewpoint.tui.visible import visible


@dataclass(frozen=True, slots=True)
class Graph:
    """The store's checkpoints and the chosen one, as the branch graph draws them."""

    metas: tuple[CheckpointMeta, ...]
    chosen: str | None = None


@dataclass(frozen=True, slots=True)
class GraphRow:
    graph: str
    meta: CheckpointMeta | None = None
    label: str = ""
    """A branch label shown after the id: on the newest checkpoint of each branch."""


def graph_rows(metas: list[CheckpointMeta]) -> list[GraphRow]:
    """Lay the checkpoints out in lanes, oldest first; each fork opens a lane to the right of its source."""
    order = sorted(metas, key=lambda m: (m.created_at, m.sequence, m.id))
    known = {m.id for m in order}
    children: dict[str, list[CheckpointMeta]] = defaultdict(list)
    for meta in order:
        if meta.parent_id in known:
            children[meta.parent_id].append(meta)
    heads: set[str] = set()
    for meta in order:
        same_branch = [c for c in children.get(meta.id, []) if c.branch == meta.branch]
        if not same_branch:
            heads.add(meta.id)
    lanes: list[str | None] = []
    rows: list[GraphRow] = []
    for meta in order:
        if meta.id in lanes:
            col = lanes.index(meta.id)
        else:
            if rows and rows[-1].graph:  # a new run: a break, so it never reads as the child of the row above
                rows.append(GraphRow(""))
            col = lanes.index(None) if None in lanes else len(lanes)
            if col == len(lanes):
                lanes.append(meta.id)
            else:
                lanes[col] = meta.id
        cells = ["*" if i == col else ("|" if lane is not None else " ") for i, lane in enumerate(lanes)]
        rows.append(GraphRow(" ".join(cells), meta, meta.branch if meta.id in heads else ""))
        kids = children.get(meta.id, [])
        kids = sorted(kids, key=lambda c: (c.branch != meta.branch, c.created_at, c.sequence))
        if not kids:
            lanes[col] = None
            while lanes and lanes[-1] is None:
                lanes.pop()
            if col < len(lanes):  # lanes to the right move left into the freed column
                rows.append(GraphRow(_merge_line(lanes, col)))
                del lanes[col]
            continue
        if kids[0].branch != meta.branch:  # a head forked: every child gets a fork mark, the lane ends here
            for kid in reversed(kids):
                rows.append(GraphRow(_fork_line(lanes, col)))
                lanes.insert(col + 1, kid.id)
            lanes[col] = None
            continue
        lanes[col] = kids[0].id
        for kid in reversed(kids[1:]):  # the earliest fork ends up nearest its source
            rows.append(GraphRow(_fork_line(lanes, col)))
            lanes.insert(col + 1, kid.id)
    return rows


def _merge_line(lanes: list[str | None], col: int) -> str:
    """The row that closes the lane at ``col``: every lane right of it moves one column left with ``/``."""
    line = [" "] * (2 * len(lanes))
    for i, lane in enumerate(lanes):
        if lane is None:
            continue
        if i < col:
            line[2 * i] = "|"
        elif i > col:
            line[2 * i - 1] = "/"
    return "".join(line).rstrip()


def _fork_line(lanes: list[str | None], col: int) -> str:
    """The row that opens a lane right of ``col``: ``|\\`` and every lane further right shifts with ``\\``."""
    width = 2 * (len(lanes) + 1)
    line = [" "] * width
    for i, lane in enumerate(lanes):
        if i <= col:
            if lane is not None:
                line[2 * i] = "|"
        elif lane is not None:
            line[2 * i + 1] = "\\"
    line[2 * col + 1] = "\\"
    return "".join(line).rstrip()


class BranchGraph(OptionList):
    """Every checkpoint of ``graph`` as one line of a lane graph, never wrapped (a wrapped line would break the
    lanes); redrawn when ``graph`` changes. Choosing a line posts :class:`BranchGraph.Chosen`."""

    DEFAULT_CSS = """
    BranchGraph { border: none; padding: 0 1; text-wrap: nowrap; text-overflow: ellipsis; }
    BranchGraph > .option-list--option-disabled { color: $accent; }
    """

    @dataclass
    class Chosen(Message):
        checkpoint_id: str

    graph: reactive[Graph | None] = reactive(None, init=False, always_update=True)

    def watch_graph(self, graph: Graph | None) -> None:
        if graph is not None:
            self.show(list(graph.metas), graph.chosen)

    def show(self, metas: list[CheckpointMeta], highlight: str | None = None) -> None:
        keep = highlight
        if keep is None and self.highlighted is not None:
            current = self.get_option_at_index(self.highlighted)
            keep = current.id
        self.clear_options()
        options: list[Option] = []
        for row in graph_rows(metas):
            if row.meta is None:
                options.append(Option(Text(row.graph, style="bold"), disabled=True))
            else:
                options.append(Option(self._line(row), id=row.meta.id))
        self.add_options(options)
        if keep is not None:
            try:
                self.highlighted = self.get_option_index(keep)
            except Exception:
                pass

    def _line(self, row: GraphRow) -> Text:
        meta = row.meta
        assert meta is not None
        text = Text(row.graph, style="bold")
        text.append("  ")
        text.append(short_id(meta.id), style="yellow")
        if row.label:
            text.append(" (")
            text.append(visible(row.label, one_line=True), style="bold green")
            text.append(")")
        problem = problem_of(meta)
        if problem is not None:
            text.append(visible(f"  ✗ {problem}", one_line=True), style="red")
            return attach_gaps(text)
        if meta.tasks_total:  # what matters most first: a narrow panel cuts the end of a line, never wraps it
            text.append(f"  {progress_text(meta)}")
        text.append(f"  {format_time(meta.created_at)}  ", style="dim")
        text.append(visible(meta.trigger, one_line=True))
        text.append(visible(f"  {meta.entity_name}", one_line=True), style="dim")
        return attach_gaps(text)

    @on(OptionList.OptionSelected)
    def _selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id is not None:
            self.post_message(self.Chosen(event.option.id))
