"""Columns for checkpoint listings: times, sizes, short ids, rows and aligned tables."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

import click

from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.providers.base import CheckpointMeta


def format_time(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def format_size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"


def short_id(checkpoint_id: str) -> str:
    """An id as list views show it: crewpoint's first 12 characters; CrewAI's ids (``<time>_<uuid8>``) whole,
    since their unique part is at the end."""
    return checkpoint_id if "_" in checkpoint_id else checkpoint_id[:12]


def written_by(meta: CheckpointMeta) -> str:
    if meta.version.startswith("crewai "):
        return f"{meta.version} (a CrewAI store, read-only)"
    if meta.version.startswith("copy of crewai "):
        return f"crewpoint, a {meta.version} checkpoint"
    return f"crewpoint {meta.version or '?'}, schema {meta.schema_version}"


def table_row(meta: CheckpointMeta) -> list[str]:
    return [visible(cell, one_line=True) for cell in _cells(meta)]


def _cells(meta: CheckpointMeta) -> list[str]:
    if meta.damaged:
        return [
            short_id(meta.id),
            format_time(meta.created_at),
            meta.branch or "?",
            "-",
            "DAMAGED",
            meta.damaged,
            "-",
            format_size(meta.size),
        ]
    entity = f"{meta.entity_kind} {meta.entity_name}".strip()
    progress = f"{meta.tasks_done}/{meta.tasks_total}"
    parent = short_id(meta.parent_id) if meta.parent_id else "-"
    when = format_time(meta.created_at)
    return [short_id(meta.id), when, meta.branch, parent, meta.trigger, entity, progress, format_size(meta.size)]


def print_table(header: list[str] | None, rows: list[list[str]], widths: list[int] | None = None) -> list[int]:
    """Print ``rows`` (after ``header``, when given) in columns; ``widths`` keeps the columns of earlier rows.
    Returns the widths used."""
    shown = [header, *rows] if header is not None else rows
    if widths is None:
        widths = [max(len(str(r[i])) for r in shown) for i in range(len(shown[0]))]
    lines = ["  ".join(str(cell).ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in shown]
    click.echo("\n".join(lines))  # one write per chunk: listing 10,000 rows stays fast
    return widths


def clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
