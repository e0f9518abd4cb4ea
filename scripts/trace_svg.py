"""The README's picture of a trace: the demo crew (offline model) exports its spans over OTLP/HTTP to a local
receiver (tests/support/otlp.py decodes the protobuf), and their tree is drawn with rich, each span's time a bar.

    python scripts/trace_svg.py [OUT]   (default: screenshots/trace.svg)
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))  # the shared test helpers

from rich.console import Console
from rich.table import Table
from rich.text import Text
from support.otlp import OtlpReceiver, Span

from crewpoint import CheckpointConfig, telemetry
from crewpoint.demo import DEMO_INPUTS, demo_crew

BAR = 40
COLOURS = {"invoke_workflow": "bold magenta", "invoke_agent": "cyan", "chat": "green", "execute_tool": "yellow"}


def exported_spans(store: Path) -> list[Span]:
    """A real run's spans, as the collector received them."""
    for name in (*telemetry.ENDPOINT_ENVS, telemetry.CAPTURE_ENV, "OTEL_SDK_DISABLED"):
        os.environ.pop(name, None)
    with OtlpReceiver() as receiver:
        config = CheckpointConfig(location=str(store), otel={"endpoint": receiver.endpoint})
        demo_crew(delay=0.02, checkpoint=config).kickoff(inputs=DEMO_INPUTS)
        telemetry.flush()
        spans = receiver.wait_for(lambda got: any(s.name.startswith("invoke_workflow") for s in got))
        telemetry.shutdown()
    return spans


def draw(spans: list[Span]) -> Table:
    """The span tree: names indented under their parents, each span's time as a bar on the run's time line."""
    start = min(s.start_ns for s in spans)
    whole = max(max(s.end_ns for s in spans) - start, 1)
    ids = {s.span_id for s in spans}
    children: dict[str, list[Span]] = {}
    for s in sorted(spans, key=lambda s: s.start_ns):
        children.setdefault(s.parent_id if s.parent_id in ids else "", []).append(s)
    table = Table(box=None, show_header=True, header_style="bold", pad_edge=False)
    table.add_column("span")
    table.add_column("ms", justify="right")
    table.add_column("time line", no_wrap=True)

    def walk(parent: str, depth: int) -> None:
        for s in children.get(parent, []):
            colour = COLOURS.get(s.name.split(" ", 1)[0], "white")
            name = Text("  " * depth) + Text(s.name, style="red" if s.status == 2 else colour)
            begin = round((s.start_ns - start) / whole * BAR)
            width = max(round((s.end_ns - s.start_ns) / whole * BAR), 1)
            bar = Text(" " * begin) + Text("█" * min(width, BAR - begin), style=colour)
            checkpoint = s.attributes.get("crewpoint.checkpoint.id")
            if checkpoint and not s.name.startswith("invoke_workflow"):
                bar.append(f" checkpoint {str(checkpoint)[:8]}", style="dim")
            table.add_row(name, f"{(s.end_ns - s.start_ns) / 1e6:.1f}", bar)
            walk(s.span_id, depth + 1)

    walk("", 0)
    return table


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="crewpoint-trace-") as folder:
        spans = exported_spans(Path(folder) / "store")
    console = Console(record=True, width=110, force_terminal=True, color_system="truecolor", file=open(os.devnull, "w"))
    root = next(s for s in spans if s.name.startswith("invoke_workflow"))
    console.print(Text(f"trace {root.trace_id}  ·  {len(spans)} spans  ·  service {root.service}", style="bold"))
    console.print(draw(spans))
    out.parent.mkdir(parents=True, exist_ok=True)
    console.save_svg(str(out), title="crewpoint: a run's trace, as a collector received it")
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else "screenshots/trace.svg"))
