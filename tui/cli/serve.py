"""``crewpoint checkpoint serve``: the app in a browser (the server lives in ``crewpoint.tui.serve``)."""

from __future__ import annotations

import os

import click
from click.core import ParameterSource

from crewpoint.tui.cli.errors import EXIT_FAILED, bad_input, fail_from, one_line
from crewpoint.tui.cli.locations import location_of, location_option
from crewpoint.tui.cli.root import checkpoint


@checkpoint.command()
@location_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on; others are warned about.")
@click.option("--port", type=click.IntRange(0, 65535), default=8000, show_default=True, help="Port (0: any free one).")
@click.option(
    "--token",
    envvar="CREWPOINT_SERVE_TOKEN",
    default=None,
    help="Access token every request must carry (default: a new random one). Other users of this machine can read "
    "a command line: prefer env CREWPOINT_SERVE_TOKEN or --token-file.",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False),
    default=None,
    help="Read the access token from this file (its first line).",
)
@click.option("--read-only", is_flag=True, help="Browsers can watch but not resume, fork, edit, cancel or prune.")
@click.pass_context
def serve(
    ctx: click.Context,
    location: str | None,
    host: str,
    port: int,
    token: str | None,
    token_file: str | None,
    read_only: bool,
) -> None:
    """Serve the app to web browsers until Ctrl-C; prints the URL to open, with the access token in it.

    \b
    Each browser gets its own app on the store: every screen, key and dialog, live refresh and run status.
    Listens on 127.0.0.1 unless --host says otherwise (with a warning). Exit 2 on a bad token or a busy port.
    """
    from crewpoint.checkpoint import ops

    with bad_input(ctx):
        store = ops.find_store(location_of(ctx, location))
        store = store if "://" in store else os.path.abspath(store)  # the app processes may start elsewhere
        read_only = read_only or bool((ctx.parent.params if ctx.parent else {}).get("read_only"))
        try:
            # lazy: textual-serve is optional; a missing one is a one-line error
            from crewpoint.tui.serve import check_token, exposure_warning, serve_app
        except ImportError as exc:
            fail_from(ctx, f"serving the app needs textual-serve: {one_line(exc)}", EXIT_FAILED)
        if token_file is not None:
            if token is not None:
                raise ValueError("give the token once: --token (or CREWPOINT_SERVE_TOKEN) or --token-file")
            with open(token_file, encoding="utf-8") as handle:
                token = handle.readline().strip()
        if token is not None:
            check_token(token)
        if ctx.get_parameter_source("token") is ParameterSource.COMMANDLINE:
            click.echo(
                "crewpoint: warning: --token on the command line can be read by other users of this machine "
                "(ps, /proc); set CREWPOINT_SERVE_TOKEN or use --token-file",
                err=True,
            )
        warning = exposure_warning(host, port)
        if warning is not None:
            click.echo(f"crewpoint: {warning}", err=True)

        def ready(url: str) -> None:
            click.echo(url)
            click.echo(f"serving {store}{' read-only' if read_only else ''}; Ctrl-C stops", err=True)

        serve_app(store, host=host, port=port, token=token, read_only=read_only, ready=ready)
