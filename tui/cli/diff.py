"""``crewpoint checkpoint diff``: what changed between two checkpoints."""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from crewpoint.providers.files import looking_once
from crewpoint.tui.cli.errors import bad_input, emit_json
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint
from crewpoint.tui.cli.tables import cli_id
from crewpoint.tui.visible import visible

if TYPE_CHECKING:
    from crewpoint.checkpoint.ops import DiffEntry
    from crewpoint.providers.base import CheckpointMeta


def _use_color() -> bool:
    return "NO_COLOR" not in os.environ and sys.stdout.isatty()


def _print_diff(a: CheckpointMeta, b: CheckpointMeta, entries: list[DiffEntry]) -> None:
    import difflib

    from rich.console import Console
    from rich.text import Text

    console = Console(highlight=False, no_color=not _use_color(), force_terminal=_use_color() or None)

    def say(*parts: tuple[str, str]) -> None:
        console.print(Text.assemble(*((visible(text), style) for text, style in parts)), soft_wrap=True)

    say(("--- ", "red"), (f"{cli_id(a.id)}  {a.branch}  {a.trigger}  {a.tasks_done}/{a.tasks_total}", "red"))
    say(("+++ ", "green"), (f"{cli_id(b.id)}  {b.branch}  {b.trigger}  {b.tasks_done}/{b.tasks_total}", "green"))
    if not entries:
        say(("no differences", "dim"))
        return
    section = None
    for entry in entries:
        if entry.section != section:
            section = entry.section
            say(("", ""))
            say((section.replace("_", " "), "bold"))
        before, after = _show(entry.before), _show(entry.after)
        multiline = "\n" in before or "\n" in after or len(before) + len(after) > 100
        if entry.section != "outputs" or not multiline:
            say((f"  {entry.key}: ", "bold"), (before, "red"), (" → ", ""), (after, "green"))
            continue
        say((f"  {entry.key}", "bold"))
        old = "" if entry.before is None else str(entry.before)
        new = "" if entry.after is None else str(entry.after)
        if "\n" not in old and "\n" not in new:
            removed, added = _word_diff(old, new)
            console.print(Text("    - ", style="red") + removed, soft_wrap=True)
            console.print(Text("    + ", style="green") + added, soft_wrap=True)
            continue
        for line in difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=2):
            if line.startswith(("---", "+++")):
                continue
            say(("    " + line, _LINE_STYLES.get(line[:1], "")))


def _word_diff(old: str, new: str) -> tuple[Any, Any]:
    """Two ``rich.text.Text`` lines with the words that changed underlined (plain text without colour)."""
    import difflib

    from rich.text import Text

    a, b = old.split(" "), new.split(" ")
    before, after = Text(style="red"), Text(style="green")
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        changed = op != "equal"
        if i2 > i1:
            before.append(visible(" ".join(a[i1:i2]) + " "), style="bold underline" if changed else "")
        if j2 > j1:
            after.append(visible(" ".join(b[j1:j2]) + " "), style="bold underline" if changed else "")
    before.rstrip()
    after.rstrip()
    return before, after


_LINE_STYLES = {"@": "cyan", "-": "red", "+": "green"}


def _show(value: Any) -> str:
    if value is None:
        return "(none)"
    if isinstance(value, str):
        return value if value else '""'
    return json.dumps(value, ensure_ascii=False, default=str)


@checkpoint.command()
@click.argument("first", metavar="ID1")
@click.argument("second", metavar="ID2")
@location_option
@click.option("--json", "as_json", is_flag=True, help="Print the differences as a JSON array.")
@click.pass_context
def diff(ctx: click.Context, first: str, second: str, location: str | None, as_json: bool) -> None:
    """Compare two checkpoints: inputs, task statuses and outputs, flow state and method outputs."""
    from crewpoint.checkpoint import ops

    with bad_input(ctx), looking_once():  # reads only: each store is looked at once
        where = location_of(ctx, location)
        a = ops.load(first, where)
        b = ops.load(second, where)
        entries = ops.diff(a, b)
    if as_json:
        emit_json(
            {
                "from": a.meta.id,
                "to": b.meta.id,
                "changes": [
                    {"section": e.section, "key": e.key, "before": e.before, "after": e.after} for e in entries
                ],
            }
        )
        return
    _print_diff(a.meta, b.meta, entries)
