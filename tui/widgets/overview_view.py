"""The Overview tab: a checkpoint's metadata, its entity, and a flow's methods and state."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.reactive import reactive
from textual.widgets import Static

from crewpoint.checkpoint.ops import CheckpointInfo
from crewpoint.entities import kind_of
from crewpoint.estimate import ChainCost
from crewpoint.providers.base import CheckpointMeta
from crewpoint.providers.formats import written_by
from crewpoint.text import format_size
from crewpoint.tui.visible import visible
from crewpoint.tui.widgets.cost_view import chain_parts
from crewpoint.tui.widgets.detail_state import Detail
from crewpoint.tui.widgets.task_card import clip_note, clipped, info_command


def plain(value: Any) -> str:
    """A value as display text: strings as they are, everything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


def shown(value: Any, *, one_line: bool = False) -> str:
    """A value as it is shown: :func:`plain`, with control characters as escapes (never sent to the terminal)."""
    return visible(plain(value), one_line=one_line)


def progress_line(meta: CheckpointMeta) -> str:
    """The Overview's progress row, in the units the entity registry names: a crew's ``2/4 tasks``, an agent's
    ``1/1 kickoff``; a flow's steps run so far (its routers decide how many of the methods it defines will run)."""
    if not meta.tasks_total:
        return "-"
    kind = kind_of(meta.entity_kind)
    if kind.open_ended:
        return f"{kind.count(meta.tasks_done)} run ({meta.tasks_total} defined; its routers choose which run)"
    return f"{meta.tasks_done}/{meta.tasks_total} {kind.noun(meta.tasks_total)}"


def facts_table(rows: list[tuple[str, str]], see_all: Callable[[], str] | None = None) -> Table:
    """Key/value rows; every cell is a ``Text`` so nothing in a value is read as markup. A huge value is clipped,
    saying so and naming the command that prints it whole (``see_all`` makes it, only when needed)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(overflow="fold")
    for key, value in rows:
        cut = clipped(value)
        cell = Text(visible(value if cut is None else cut))
        if cut is not None:
            cell.append(f"\n{clip_note(len(value), see_all() if see_all is not None else '')}", style="yellow")
        table.add_row(Text(visible(key, one_line=True)), cell)
    return table


class OverviewView(VerticalScroll):
    """Metadata first, then what the entity holds. Redraws when ``detail`` changes."""

    DEFAULT_CSS = """
    OverviewView { padding: 0 1; }
    OverviewView > #overview-problem { color: $error; text-style: bold; margin-bottom: 1; }
    OverviewView > #overview-problem.-empty { display: none; }
    """

    detail: reactive[Detail | None] = reactive(None, init=False, always_update=True)

    chain: ChainCost | None = None
    """The cost figures drawn (None: none shown)."""

    def compose(self) -> ComposeResult:
        yield Static("", id="overview-problem", classes="-empty", markup=False)
        yield Static("", id="overview-body", markup=False)

    def watch_detail(self, detail: Detail | None) -> None:
        if detail is not None:
            body = detail.record.body if detail.ready and detail.record is not None else None
            self.show(detail.meta, detail.info, detail.problem, body)

    def show(
        self,
        meta: CheckpointMeta,
        info: CheckpointInfo | None,
        problem: str | None = None,
        body: Mapping[str, Any] | None = None,
    ) -> None:
        problem_widget = self.query_one("#overview-problem", Static)
        problem_widget.update(Text(visible(f"✗ {problem}")) if problem else Text(""))
        problem_widget.set_class(not problem, "-empty")
        rows = [
            ("id", meta.id),
            ("parent", meta.parent_id or "(none: the first checkpoint)"),
            ("branch", meta.branch),
            ("lineage", meta.lineage or "?"),
            ("sequence", str(meta.sequence)),
            ("time", time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(meta.created_at))),
            ("trigger", meta.trigger or "?"),
            ("size", format_size(meta.size)),
            ("entity", f"{meta.entity_kind} {meta.entity_name}".strip() or "?"),
            ("progress", progress_line(meta)),
            ("schema", f"{meta.schema_version} ({_writer(meta.version)})"),
            ("location", meta.location or "?"),
        ]
        parts: list[RenderableType] = [facts_table(rows)]
        self.chain = None
        if body is not None:  # spent, this run, saved and a per-task table, priced now
            self.chain, cost = chain_parts(body)
            parts.extend(cost)
        if info is not None:
            parts.extend(self._entity_parts(info))
        self.query_one("#overview-body", Static).update(Group(*parts))

    def _entity_parts(self, info: CheckpointInfo) -> list[RenderableType]:
        def see_all() -> str:
            return info_command(info.meta)

        parts: list[RenderableType] = []
        if info.inputs:
            parts += [
                Text("\nInputs", style="bold underline"),
                facts_table([(k, plain(v)) for k, v in info.inputs.items()], see_all),
            ]
        kind = kind_of(info.kind)
        if info.tasks:
            done, total = sum(1 for t in info.tasks if t.done), len(info.tasks)
            parts.append(
                Text(
                    visible(f"\n{info.kind} {info.name}: {done} of {total} {kind.noun(total)} done"),
                    style="bold",
                )
            )
        if kind.has_state:
            parts.append(Text("\nFlow methods run", style="bold underline"))
            if info.method_outputs:
                parts.append(
                    facts_table(
                        [(f"{i + 1}. {name}", plain(out)) for i, (name, out) in enumerate(info.method_outputs)], see_all
                    )
                )
            else:
                parts.append(Text("(none yet)", style="dim"))
            parts.append(Text("\nFlow state", style="bold underline"))
            state = info.flow_state
            if isinstance(state, dict):
                parts.append(facts_table([(str(k), plain(v)) for k, v in state.items()], see_all))
            else:
                parts.append(Text(shown(state)))
        parts.append(Text(f"\n{len(info.events)} events recorded", style="dim"))
        return parts


def _writer(version: str) -> str:
    """Who wrote a checkpoint: crewpoint (its version), or another tool (CrewAI) for a checkpoint read from its
    store or copied from one."""
    return version if written_by(version) is not None else f"crewpoint {version or '?'}"
