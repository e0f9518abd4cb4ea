"""``crewpoint checkpoint serve``: the terminal app in a browser, through textual-serve, behind an access token.

Every browser that connects gets its own app process (``crewpoint checkpoint --location …``), so every screen, key
and dialog works as in a terminal. Every request, the page, its static files, downloads and the websocket that
drives the app, must carry the token: in the URL (``?token=…``), in the cookie the page sets when opened with it
(named for the port, ``crewpoint_token_8000``, so servers on other ports of the host never share it), or as
``Authorization: Bearer …``. No token is 401, a wrong one 403.

Nothing a request carries is logged: the access log is off, and a request that fails (an oversized or malformed
one included) is logged as one line naming the error's kind, never its bytes, headers, traceback or locals.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import os
import re
import secrets
import shlex
import signal
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import urlsplit

import aiohttp_jinja2
from aiohttp import web
from textual_serve.server import Server, to_int

TOKEN_COOKIE = "crewpoint_token"
"""The cookie's name before the port: :func:`cookie_name` gives the one a server uses."""
TOKEN_PATTERN = re.compile(r"[A-Za-z0-9._~-]{8,}")
TOKEN_RULE = "the token must be at least 8 characters of A-Z a-z 0-9 . _ ~ -"

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def new_token() -> str:
    return secrets.token_urlsafe(24)


def cookie_name(port: int) -> str:
    """The name of the token cookie of the server on ``port`` (cookies are shared by every port of a host)."""
    return f"{TOKEN_COOKIE}_{port}"


def check_token(token: str) -> str:
    """``token`` if it can travel in a URL and a cookie as it is; else a ``ValueError`` saying what is allowed."""
    if not TOKEN_PATTERN.fullmatch(token):
        raise ValueError(TOKEN_RULE)
    return token


def app_command(location: str, *, read_only: bool) -> str:
    """The shell command textual-serve runs for each browser: the app on ``location``."""
    args = [sys.executable, "-m", "crewpoint.tui.cli", "checkpoint", "--location", location]
    if read_only:
        args.append("--read-only")
    return shlex.join(args)


def display_host(host: str) -> str:
    """The host to put in the printed URL: the machine's name when listening on every address."""
    if host in ("", "0.0.0.0", "::"):
        host = socket.gethostname()
    return f"[{host}]" if ":" in host else host


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a host name: it may resolve anywhere
        return False


def exposure_warning(host: str, port: int) -> str | None:
    """The warning printed when the app is reachable from other machines, or None on a loopback address."""
    if is_loopback(host):
        return None
    return (
        f"warning: serving on {host}:{port}: anyone who can reach it and has the token can watch and steer runs, "
        "and the traffic is not encrypted (put it behind HTTPS, or use --read-only)"
    )


def presented_token(request: web.Request, cookie: str) -> str | None:
    """The token a request carries: in the query, the cookie named ``cookie``, or an Authorization header."""
    if "token" in request.query:
        return request.query["token"]
    if cookie in request.cookies:
        return request.cookies[cookie]
    scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer" and credentials:
        return credentials.strip()
    return None


def same_origin(request: web.Request) -> bool:
    """A browser's websocket must come from a page of this server (an absent Origin is not a browser)."""
    origin = request.headers.get("Origin")
    return origin is None or urlsplit(origin).netloc == request.host


class NoRequestData(logging.Filter):
    """Rewrites a record so it holds nothing a request carried: no traceback (whose locals and messages can quote
    the request line, headers or body), no arguments from aiohttp or textual-serve, one line at most."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        literal = isinstance(record.msg, str) and not record.args
        text = str(record.msg).splitlines()[0][:120] if literal and str(record.msg).strip() else ""
        if exc is not None or record.name.split(".", 1)[0] in ("aiohttp", "textual-serve", "textual_serve"):
            if exc is not None and record.msg is exc:
                text = ""  # log.exception(error): the message is the error's own text
            kind = f" ({type(exc).__name__})" if exc is not None else ""
            text = f"{record.name}: {text or 'error'}{kind}"
            record.msg, record.args = text, ()
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        return True


class TokenServer(Server):
    """textual-serve's server, with every request checked for the token and the page's own URLs taken from the
    address the browser used (so a page opened through a machine's name connects back through it)."""

    def __init__(self, command: str, *, host: str, port: int, token: str, title: str) -> None:
        super().__init__(command, host=host, port=port, title=title)
        self.token = token
        self.cookie = cookie_name(port)
        self.url = ""
        self._sockets: set[asyncio.Task[Any]] = set()
        self.console.stderr = True  # textual-serve's log lines are diagnostics

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()
        app.middlewares.append(self._guard())
        return app

    def _guard(self) -> Any:
        token = self.token.encode()
        sockets = self._sockets
        server = self

        @web.middleware
        async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
            given = presented_token(request, server.cookie)
            if given is None:
                raise web.HTTPUnauthorized(
                    text="crewpoint: this needs the access token: open the URL `crewpoint checkpoint serve` printed\n"
                )
            if not secrets.compare_digest(given.encode(), token):
                raise web.HTTPForbidden(text="crewpoint: wrong access token\n")
            if request.path == "/ws":
                if not same_origin(request):
                    raise web.HTTPForbidden(text="crewpoint: the websocket must come from this server's page\n")
                task = asyncio.current_task()
                assert task is not None
                sockets.add(task)
                try:
                    return await handler(request)
                finally:
                    sockets.discard(task)
            response = await handler(request)
            response.headers["Referrer-Policy"] = "no-referrer"  # the page's URL holds the token
            if request.path == "/":
                response.headers["Cache-Control"] = "no-store"
                if request.query.get("token") is not None:
                    response.set_cookie(self.cookie, self.token, httponly=True, samesite="Strict", path="/")
            return response

        return guard

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        scheme = "wss" if request.secure else "ws"
        return {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            "app_websocket_url": f"{scheme}://{request.host}/ws",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": self.title},
        }

    async def on_startup(self, app: web.Application) -> None:
        pass  # the URL is printed once the port is bound

    async def end_sessions(self) -> None:
        """End every browser's session, which stops its app process."""
        sessions = list(self._sockets)
        for task in sessions:
            task.cancel()
        if sessions:  # a browser that does not answer the closing handshake is not waited for long
            await asyncio.wait(sessions, timeout=3.0)

    def initialize_logging(self) -> None:
        """Plain one-line log records on stderr, with nothing of a request in them (see the module's docstring);
        textual-serve's own would print tracebacks with their locals: the token, headers and request bytes."""
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("crewpoint serve: %(message)s"))
        handler.addFilter(NoRequestData())
        root = logging.getLogger()
        for old in list(root.handlers):
            root.removeHandler(old)
        root.addHandler(handler)
        root.setLevel(logging.DEBUG if self.debug else logging.INFO)
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)

    async def run(self, ready: Callable[[str], None]) -> None:
        """Serve until SIGINT or SIGTERM; ``ready`` gets the URL (with the token) once the port accepts."""
        self.initialize_logging()
        runner = web.AppRunner(await self._make_app(), handle_signals=False, shutdown_timeout=1.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.host, self.port)
            try:
                await site.start()
            except OSError as exc:
                if isinstance(exc, socket.gaierror):
                    reason = f"no such address ({exc.strerror})"
                else:
                    reason = os.strerror(exc.errno).lower() if exc.errno else str(exc)
                raise OSError(f"cannot listen on {self.host}:{self.port}: {reason}") from exc
            port = runner.addresses[0][1]
            self.cookie = cookie_name(port)
            self.public_url = f"http://{display_host(self.host)}:{port}"
            self.url = f"{self.public_url}/?token={self.token}"
            stop = asyncio.Event()
            loop = asyncio.get_running_loop()
            for signum in (signal.SIGINT, signal.SIGTERM):
                loop.add_signal_handler(signum, stop.set)
            ready(self.url)
            await stop.wait()
            await self.end_sessions()
        finally:
            await runner.cleanup()


def serve_app(
    location: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8000,
    token: str | None = None,
    read_only: bool = False,
    ready: Callable[[str], None] = print,
) -> None:
    """Serve the app on ``location`` until interrupted. Raises ``ValueError`` for a bad token and ``OSError``
    when the address cannot be bound."""
    token = check_token(token) if token is not None else new_token()
    title = f"crewpoint: {location}" + (" (read-only)" if read_only else "")
    server = TokenServer(app_command(location, read_only=read_only), host=host, port=port, token=token, title=title)
    asyncio.run(server.run(ready))
