"""A real headless Chromium, driven over the DevTools protocol: the browser tests and the README's browser picture.

textual-serve draws the app with xterm.js on a canvas, so the page's DOM holds no text. A script added before the
page loads catches the xterm ``Terminal`` as textual-serve's client stores it (``this.terminal = …``) and reads its
screen buffer: the very cells the canvas shows. Waiting for a text is a promise in the page that resolves when a
write from the app makes the screen contain it.
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
from support import systems

CATCH_TERMINAL = """
(() => {
  let term = null;
  let waiters = [];
  const screen = () => {
    if (term === null) return "";
    const buffer = term.buffer.active;
    const lines = [];
    for (let y = 0; y < term.rows; y++) {
      const line = buffer.getLine(buffer.viewportY + y);
      lines.push(line ? line.translateToString(true) : "");
    }
    return lines.join("\\n");
  };
  const check = () => {
    const text = screen();
    const waiting = waiters;
    waiters = [];
    for (const waiter of waiting) {
      if (text.includes(waiter.text)) waiter.resolve(text); else waiters.push(waiter);
    }
  };
  Object.defineProperty(Object.prototype, "terminal", {
    configurable: true,
    set(value) {
      Object.defineProperty(this, "terminal", {value, writable: true, configurable: true, enumerable: true});
      if (term === null && value && value.buffer && typeof value.onRender === "function") {
        term = value;
        value.onRender(check);
        if (typeof value.onWriteParsed === "function") value.onWriteParsed(check);
      }
    },
  });
  window.crewpointScreen = screen;
  window.crewpointWaitFor = (text) => new Promise((resolve) => { waiters.push({text, resolve}); check(); });
})();
"""


def chromium_path() -> str:
    """The browser's executable; :class:`~support.systems.MissingPart` (a skip in the tests) when there is none."""
    return systems.chromium()


class Chromium:
    """One headless Chromium with one page; ``async with Chromium() as page`` stops it whatever happens."""

    def __init__(self, width: int = 1280, height: int = 800) -> None:
        self.width, self.height = width, height
        self.process: subprocess.Popen[bytes] | None = None
        self._profile = tempfile.TemporaryDirectory(prefix="crewpoint-chromium-")
        self._http: aiohttp.ClientSession | None = None
        self._socket: aiohttp.ClientWebSocketResponse | None = None
        self._reader: asyncio.Task[None] | None = None
        self._ids = itertools.count(1)
        self._pending: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._session = ""

    async def __aenter__(self) -> Chromium:
        try:
            await self._start()
        except BaseException:
            await self.close()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _start(self, timeout: float = 20.0) -> None:
        profile = Path(self._profile.name)
        args = [
            chromium_path(),
            "--headless=new",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-dev-shm-usage",
            f"--window-size={self.width},{self.height}",
            "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium's sandbox refuses to run as root (CI containers)
        self.process = subprocess.Popen(
            args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        port_file = profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while len(lines := _read_lines(port_file)) < 2:  # Chromium writes it once it listens
            if self.process.poll() is not None:
                raise RuntimeError(f"chromium exited with {self.process.returncode} before it listened")
            if time.monotonic() > deadline:
                raise TimeoutError("chromium did not start listening in time")
            await asyncio.sleep(0.05)
        self._http = aiohttp.ClientSession()
        self._socket = await self._http.ws_connect(f"ws://127.0.0.1:{lines[0]}{lines[1]}", max_msg_size=0)
        self._reader = asyncio.create_task(self._read())
        target = await self.send("Target.createTarget", url="about:blank")
        attached = await self.send("Target.attachToTarget", targetId=target["targetId"], flatten=True)
        self._session = attached["sessionId"]
        await self.send("Page.enable")
        await self.send("Page.addScriptToEvaluateOnNewDocument", source=CATCH_TERMINAL)
        await self.send(
            "Emulation.setDeviceMetricsOverride",
            width=self.width,
            height=self.height,
            deviceScaleFactor=1,
            mobile=False,
        )

    async def _read(self) -> None:
        assert self._socket is not None
        async for message in self._socket:
            if message.type != aiohttp.WSMsgType.TEXT:
                continue
            data = json.loads(message.data)
            waiter = self._pending.pop(data.get("id", -1), None)
            if waiter is not None and not waiter.done():
                if "error" in data:
                    waiter.set_exception(RuntimeError(f"devtools: {data['error']}"))
                else:
                    waiter.set_result(data.get("result", {}))
        for waiter in self._pending.values():
            if not waiter.done():
                waiter.set_exception(ConnectionError("chromium closed the devtools connection"))

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        assert self._socket is not None
        ident = next(self._ids)
        message: dict[str, Any] = {"id": ident, "method": method, "params": params}
        if self._session and not method.startswith("Target."):
            message["sessionId"] = self._session
        waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ident] = waiter
        await self._socket.send_str(json.dumps(message))
        return await waiter

    async def evaluate(self, expression: str) -> Any:
        result = await self.send("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"in the page: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def open(self, url: str) -> None:
        await self.send("Page.navigate", url=url)

    async def screen_text(self) -> str:
        """The text of the app's screen as the page's terminal holds it ("" before the app has drawn)."""
        return str(await self.evaluate("window.crewpointScreen ? window.crewpointScreen() : ''"))

    async def wait_for_text(self, text: str, timeout: float = 20.0) -> str:
        """The screen's text once it contains ``text``; a ``TimeoutError`` showing the screen otherwise."""
        try:
            return str(await asyncio.wait_for(self.evaluate(f"window.crewpointWaitFor({json.dumps(text)})"), timeout))
        except TimeoutError:
            shown = await self.screen_text()
            problem = f"{text!r} did not appear in the browser within {timeout} s; it shows:\n{shown}"
            raise TimeoutError(problem) from None

    async def press(self, key: str, text: str | None = None, *, ctrl: bool = False) -> None:
        """A key press as a user makes it: ``key`` such as "e" or "Escape"; ``ctrl`` holds Ctrl down with a
        letter (the terminal sends its control character)."""
        typed = text if text is not None else (key if len(key) == 1 and not ctrl else "")
        await self.evaluate("document.querySelector('.xterm-helper-textarea').focus()")  # as a click would
        for kind in ("keyDown", "keyUp"):
            params: dict[str, Any] = {"type": kind, "key": key}
            if ctrl:  # the key code and modifier a keyboard gives, which the terminal reads Ctrl+letter from
                params.update(modifiers=2, code=f"Key{key.upper()}", windowsVirtualKeyCode=ord(key.upper()))
            if kind == "keyDown" and typed:
                params["text"] = typed
            await self.send("Input.dispatchKeyEvent", **params)

    async def screenshot(self) -> bytes:
        shot = await self.send("Page.captureScreenshot", format="png")
        return base64.b64decode(shot["data"])

    async def close(self) -> None:
        if self._reader is not None:
            self._reader.cancel()
        if self._socket is not None:
            await self._socket.close()
        if self._http is not None:
            await self._http.close()
        if self.process is not None and self.process.poll() is None:
            stop_group(self.process)
        self._profile.cleanup()


def stop_group(process: subprocess.Popen[Any], timeout: float = 10.0) -> None:
    """End ``process`` and every process it started (it leads its own session): TERM, then KILL."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(process.pid, signum)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=timeout)
            break
        except subprocess.TimeoutExpired:
            continue
    if process.poll() is None:
        process.wait(timeout=timeout)
    try:  # children that outlive their parent in the group
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _read_lines(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except OSError:
        return []
