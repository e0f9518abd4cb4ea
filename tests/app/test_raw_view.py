"""The Raw tab shows a checkpoint's body as JSON and, for a huge one, formats only what it shows: memory stays bounded
by what is drawn, and a note says what was cut."""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import pytest
from rich.console import Console
from rich.syntax import Syntax
from rich.text import Text
from support.stores import make_store
from textual.app import App, ComposeResult

from crewpoint.checkpoint import ops
from crewpoint.tui.widgets.raw_view import RAW_LIMIT, RawView, raw_text

HUGE = 30_000_000
"""Characters of the output under test: 75 times what the tab shows."""


def test_a_body_is_shown_as_the_json_it_is() -> None:
    store = make_store()
    for meta in ops.list_checkpoints(store):
        body = ops.load(meta.location or meta.id).body
        text, cut = raw_text(body)
        assert not cut
        assert text == json.dumps(body, indent=2, ensure_ascii=False, default=str)
    odd: dict[str, Any] = {"empty": {}, "none": [], "n": [1, 2.5, True, None], 3: "three", "text": 'a "quoted"\nline'}
    assert raw_text(odd)[0] == json.dumps(odd, indent=2, ensure_ascii=False, default=str)


def test_a_huge_output_costs_no_more_memory_than_what_is_shown() -> None:
    body = {"entity": {"tasks": [{"output": {"raw": "é" * HUGE}}, {"output": {"raw": "after"}}]}, "inputs": {}}
    tracemalloc.start()
    try:
        text, cut = raw_text(body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert cut and len(text) == RAW_LIMIT
    assert text.startswith('{\n  "entity": {\n    "tasks": [\n      {\n        "output": {\n          "raw": "éé')
    assert peak < 20 * RAW_LIMIT  # formatting all 30 million characters would take far more than this


class RawApp(App[None]):
    def compose(self) -> ComposeResult:
        yield RawView()


async def test_the_tab_says_what_it_cut() -> None:
    body = {"output": "x" * (2 * RAW_LIMIT)}
    async with RawApp().run_test() as pilot:
        view = pilot.app.query_one(RawView)
        view.show(body, stored=2 * RAW_LIMIT + 20)
        await pilot.pause()
        shown = view.shown.plain
        assert shown.startswith('{\n  "output": "xxx')
        last = shown.splitlines()[-1]
        said = f"the first {RAW_LIMIT:,} characters of 781.3 KiB are shown; open the file to see the rest"
        assert last == f"… (cut: {said})"
        assert len(shown) < RAW_LIMIT + len(last) + 2


async def test_the_body_is_laid_out_once_per_width_however_often_the_tab_is_drawn(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    body = {"tasks": [{"output": f"line {n} [not markup]"} for n in range(200)], "long": "word " * 40}
    highlighted: list[str] = []
    wrapped: list[int] = []
    highlight, wrap = Syntax.highlight, Text.wrap

    def counted_highlight(syntax: Syntax, code: str, *args: Any) -> Text:
        highlighted.append(code)
        return highlight(syntax, code, *args)

    def counted_wrap(text: Text, console: Console, width: int, **kwargs: Any) -> Any:
        wrapped.append(width)
        return wrap(text, console, width, **kwargs)

    monkeypatch.setattr(Syntax, "highlight", counted_highlight)
    monkeypatch.setattr(Text, "wrap", counted_wrap)
    async with RawApp().run_test(size=(80, 24)) as pilot:
        view = pilot.app.query_one(RawView)
        view.show(body)
        await pilot.pause()
        for _ in range(5):  # scrolling and redrawing reuse the lines: JSON line 6 ends on top
            view.scroll_down(animate=False)
            view.refresh(layout=True)
            await pilot.pause()
        assert len(highlighted) == 1 and len(wrapped) == 1 and view.scroll_offset.y == 5
        assert view.show_vertical_scrollbar and not view.show_horizontal_scrollbar  # the long line is wrapped
        assert view.shown.plain == json.dumps(body, indent=2)
        assert '"output": "line 1 [not markup]"' in "".join(s.text for s in view.render_line(1))
        await pilot.resize_terminal(50, 24)
        await pilot.pause()
        assert len(highlighted) == 1 and len(wrapped) == 2  # a new width wraps the long line once more
