"""``crewpoint checkpoint serve``: a real server on 127.0.0.1, its token on every request, and the app in a real
headless Chromium following a store another process writes into. Read-only mode in the app itself."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path

import aiohttp
import httpx
import pytest
from chromium import Chromium, stop_group
from click.testing import CliRunner
from support.processes import gated_demo
from support.stores import make_store
from support.waiting import wait_for
from textual.widgets import Input, TextArea

from crewpoint.checkpoint import ops
from crewpoint.tui.cli import main
from crewpoint.tui.store_index import run_label

TOKEN = "-".join(["right", "token", str(2**40)])  # test values, assembled here only
WRONG = "-".join(["wrong", "token", str(2**40)])


@pytest.fixture
def store(tmp_path: Path) -> Path:
    return Path(make_store(str(tmp_path / ".checkpoints")))


Served = Callable[..., AbstractAsyncContextManager[str]]


@pytest.fixture
def served(store: Path) -> Served:
    """``async with served(*args) as url``: the server in a process of its own, on a free port of 127.0.0.1; it
    and every app it started are stopped on the way out."""

    @asynccontextmanager
    async def serve(*args: str) -> AsyncIterator[str]:
        command = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "serve", "--location", str(store)]
        process = subprocess.Popen(
            [*command, "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        try:
            assert process.stdout is not None
            line = await asyncio.wait_for(asyncio.to_thread(process.stdout.readline), 20)
            url = line.decode().strip()
            assert url.startswith("http://127.0.0.1:"), (url, process.stderr.read() if process.stderr else b"")
            servers.append(process)
            yield url
        finally:
            stop_group(process)
            for pipe in (process.stdout, process.stderr):
                if pipe is not None:
                    pipe.close()

    return serve


servers: list[subprocess.Popen[bytes]] = []
"""The server processes started, latest last."""


def base_of(url: str) -> str:
    return url.split("/?", 1)[0]


def cookie_of(url: str) -> str:
    """The name of the token cookie of the server at ``url``: ``crewpoint_token_<port>``."""
    return f"crewpoint_token_{base_of(url).rsplit(':', 1)[1]}"


# -- the token ---------------------------------------------------------------------------------------------------


async def test_every_page_file_and_websocket_needs_the_token(served: Served) -> None:
    async with served("--token", TOKEN) as url:
        base = base_of(url)
        assert url == f"{base}/?token={TOKEN}"
        async with httpx.AsyncClient() as http:
            for path in ("/", "/static/js/textual.js", "/static/css/xterm.css", "/download/anything"):
                assert (await http.get(base + path)).status_code == 401, path
                assert (await http.get(f"{base}{path}?token={WRONG}")).status_code == 403, path
                wrong = {"Authorization": f"Bearer {WRONG}"}
                assert (await http.get(base + path, headers=wrong)).status_code == 403, path
            page = await http.get(url)
            assert page.status_code == 200
            assert f'data-session-websocket-url="ws://{base[len("http://") :]}/ws"' in page.text
            assert page.headers["referrer-policy"] == "no-referrer"
            assert "HttpOnly" in page.headers["set-cookie"] and "SameSite=Strict" in page.headers["set-cookie"]
            cookie = cookie_of(url)  # named for the port: servers on other ports of the host never see it
            assert page.headers["set-cookie"].startswith(f"{cookie}=")
        # the cookie the page set opens its static files; a browser sends nothing else
        async with httpx.AsyncClient(cookies={"crewpoint_token": TOKEN}) as browser:  # another port's name
            assert (await browser.get(f"{base}/static/js/textual.js")).status_code == 401
        async with httpx.AsyncClient(cookies={cookie: TOKEN}) as browser:
            script = await browser.get(f"{base}/static/js/textual.js")
            assert script.status_code == 200 and "WebSocket" in script.text
        async with httpx.AsyncClient(cookies={cookie: WRONG}) as browser:
            assert (await browser.get(f"{base}/static/js/textual.js")).status_code == 403

        ws = f"{base.replace('http://', 'ws://')}/ws?width=100&height=30"
        async with aiohttp.ClientSession() as http:
            for headers, status in (
                ({}, 401),
                ({"Cookie": f"{cookie}={WRONG}"}, 403),
                ({"Cookie": f"{cookie}={TOKEN}", "Origin": "http://evil.example"}, 403),
            ):
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(ws, headers=headers)
                assert refused.value.status == status
            async with http.ws_connect(ws, headers={"Cookie": f"{cookie}={TOKEN}", "Origin": base}) as socket:
                drawn = b""
                while b"research-crew" not in drawn:  # the app runs and draws the store's crew
                    message = await asyncio.wait_for(socket.receive(), 30)
                    assert message.type == aiohttp.WSMsgType.BINARY, message
                    drawn += message.data


async def test_a_generated_token_is_new_each_start(served: Served) -> None:
    async with served() as first, served() as second:
        tokens = [re.sub(r".*\?token=", "", url) for url in (first, second)]
        assert tokens[0] != tokens[1] and all(len(t) >= 24 for t in tokens)
        async with httpx.AsyncClient() as http:
            assert (await http.get(first)).status_code == 200
            assert (await http.get(f"{base_of(first)}/?token={tokens[1]}")).status_code == 403


async def test_ctrl_c_stops_the_server_and_every_app_it_started(served: Served) -> None:
    async with served("--token", TOKEN) as url:
        server = servers[-1]
        ws = f"{base_of(url).replace('http://', 'ws://')}/ws"
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(ws, headers={"Cookie": f"{cookie_of(url)}={TOKEN}"}) as socket,
        ):
            drawn = b""
            while b"research-crew" not in drawn:
                message = await asyncio.wait_for(socket.receive(), 30)
                drawn += message.data if message.type == aiohttp.WSMsgType.BINARY else b""
            group = os.getpgid(server.pid)
            server.send_signal(signal.SIGINT)
            async for _ in socket:  # the server ends the session
                pass
        assert await asyncio.to_thread(server.wait, 20) == 0
        assert server.stderr is not None and b"Traceback" not in server.stderr.read()
        await asyncio.to_thread(wait_for, lambda: not group_alive(group), "the app process to end with its session")


def group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_bad_token_busy_port_and_missing_store_are_one_line(store: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["checkpoint", "serve", "--location", str(store), "--token", "short"])
    assert result.exit_code == 2
    assert result.stderr.strip() == "crewpoint: the token must be at least 8 characters of A-Z a-z 0-9 . _ ~ -"
    result = runner.invoke(main, ["checkpoint", "serve", "--location", "nowhere"])
    assert result.exit_code == 2 and result.stderr.startswith("crewpoint: nowhere") and "Traceback" not in result.stderr


async def test_a_busy_port_is_one_line(served: Served, store: Path) -> None:
    async with served() as url:
        port = base_of(url).rsplit(":", 1)[1]
        busy = subprocess.run(
            [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "serve", "-l", str(store), "--port", port],
            capture_output=True,
            text=True,
            timeout=30,
        )
    assert busy.returncode == 2
    assert busy.stderr.strip().splitlines() == [f"crewpoint: cannot listen on 127.0.0.1:{port}: address already in use"]


def test_listening_beyond_this_machine_warns(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from crewpoint.tui.serve import display_host, exposure_warning

    assert exposure_warning("127.0.0.1", 8000) is None and exposure_warning("::1", 8000) is None
    assert exposure_warning("localhost", 8000) is None
    assert display_host("0.0.0.0") != "0.0.0.0"  # the printed URL names a host a browser can reach

    calls: list[dict[str, object]] = []

    def fake_serve(location: str, **options: object) -> None:  # listens nowhere
        calls.append({"location": location, **options})

    monkeypatch.setattr("crewpoint.tui.serve.serve_app", fake_serve)
    args = ["checkpoint", "--read-only", "serve", "-l", str(store), "--host", "0.0.0.0", "--port", "8080"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert result.stderr.startswith("crewpoint: warning: serving on 0.0.0.0:8080: anyone who can reach it")
    assert len(result.stderr.splitlines()) == 1
    assert calls[0]["host"] == "0.0.0.0" and calls[0]["port"] == 8080 and calls[0]["read_only"] is True
    assert calls[0]["location"] == str(store.resolve())

    calls.clear()
    result = CliRunner().invoke(main, ["checkpoint", "serve", "-l", str(store)])
    assert result.exit_code == 0 and result.stderr == ""
    assert calls[0]["host"] == "127.0.0.1" and calls[0]["port"] == 8000 and calls[0]["read_only"] is False


# -- a real browser ----------------------------------------------------------------------------------------------


async def test_the_browser_shows_a_checkpoint_another_process_writes(served: Served, store: Path) -> None:
    before = {m.lineage for m in ops.list_checkpoints(str(store)) if m.entity_kind == "crew"}
    async with served("--token", TOKEN) as url, Chromium(width=1400, height=900) as page:
        await page.open(url)
        await page.wait_for_text("research-crew")
        shown = await page.wait_for_text("1 run · 1 branch · 4 ckpt")  # the crew's line in the tree
        assert re.search(r"4/4 +\S+ +\S+ +task_completed", shown)

        # the demo run in a process of its own, which waits after its first task for the test's word on its stdin
        writer = await asyncio.create_subprocess_exec(
            *gated_demo(store),
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            await page.wait_for_text("● live")  # the run's status, while it runs
            assert writer.returncode is None and writer.stdin is not None
            writer.stdin.write(b"go\n")
            await writer.stdin.drain()
            _, err = await asyncio.wait_for(writer.communicate(), 60)
            assert writer.returncode == 0, err.decode()
        finally:
            if writer.returncode is None:
                writer.kill()
                await writer.wait()
        (new_run,) = {m.lineage for m in ops.list_checkpoints(str(store)) if m.entity_kind == "crew"} - before
        # the new run's node, named by its id, with its status once it ended
        shown = await page.wait_for_text(f"✓ done 4/4 run {run_label(new_run)} 4 ckpt")
        assert "2 runs · 1 branch · 8 ckpt" in shown

        await page.press("?")  # keys reach the app: its help opens
        await page.wait_for_text("Command palette")


async def test_read_only_in_the_browser_offers_no_resume_or_fork(served: Served) -> None:
    async with served("--read-only") as url, Chromium() as page:
        await page.open(url)
        await page.wait_for_text("crewpoint (read-only)")
        await page.wait_for_text("1 run · 1 branch · 4 ckpt")
        await page.press("f")
        await page.press("e")
        shown = await page.wait_for_text("Filter")  # a headless page starts blurred: keys show once focused
        assert "Resume" not in shown and "Fork" not in shown and "Cancel run" not in shown
        await page.press("?")
        shown = await page.wait_for_text("Command palette")  # the keys were read; f and e opened nothing
        assert "Fork" not in shown and "Resume" not in shown


# -- read-only in the app ----------------------------------------------------------------------------------------


async def test_read_only_app_hides_and_refuses_every_change(store: Path) -> None:
    from crewpoint.screens.browser import BrowserScreen
    from crewpoint.tui.app import make_app
    from crewpoint.tui.widgets.palette import CheckpointCommands

    app = make_app(str(store), watch=False, read_only=True)
    async with app.run_test(size=(140, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, BrowserScreen)
        while not screen.metas or not screen.detail.ready:
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert app.title == "crewpoint (read-only)"
        shown = {binding.action for _, binding, enabled, _ in screen.active_bindings.values() if enabled}
        assert not shown & {"resume", "fork", "cancel_run"} and "graph" in shown
        titles = [title for title, *_ in CheckpointCommands(screen)._commands()]
        assert titles and not [t for t in titles if t.startswith(("Fork", "Resume", "Cancel"))]
        for key in ("e", "f", "x"):
            await pilot.press(key)
            await pilot.pause()
            assert app.screen is screen  # no confirmation opened, no run started
        assert not screen.run_panel.running
        await pilot.press("2")  # Tasks: finished outputs shown, not editable
        await pilot.press("3")  # Inputs: shown, not editable
        await app.workers.wait_for_complete()
        await pilot.pause()
        areas = list(screen.query(TextArea))
        fields = [field for field in screen.query(Input) if field.id and field.id.startswith("input-")]
        assert len(areas) == 4 and all(area.read_only for area in areas)
        assert len(fields) == 2 and all(field.disabled for field in fields)
        assert any(n.message.startswith("Read-only") for n in app._notifications)

    writable = make_app(str(store), watch=False)
    async with writable.run_test(size=(140, 40)) as pilot:
        screen = writable.screen
        assert isinstance(screen, BrowserScreen)
        shown = {binding.action for _, binding, enabled, _ in screen.active_bindings.values() if enabled}
        assert {"resume", "fork", "cancel_run"} <= shown


def test_the_read_only_flag_opens_the_app_read_only(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[bool] = []

    class Fake:
        def run(self) -> None:
            pass

    def fake_make_app(location: str, *, read_only: bool = False) -> Fake:
        opened.append(read_only)
        return Fake()

    monkeypatch.setattr("crewpoint.tui.app.make_app", fake_make_app)
    assert CliRunner().invoke(main, ["checkpoint", "--location", str(store), "--read-only"]).exit_code == 0
    assert CliRunner().invoke(main, ["checkpoint", "--location", str(store)]).exit_code == 0
    assert opened == [True, False]


def test_the_server_loads_no_textual_and_the_cli_no_server() -> None:
    """Each browser's app runs in a process of its own; the server itself, like the headless commands, stays light."""
    code = (
        "import sys; from crewpoint.tui import cli; a = 'textual_serve' in sys.modules;"
        " import crewpoint.tui.serve; print(a, 'textual' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]
