"""Secrets and terminals: a location that does not parse is shown with its credentials masked, ``serve`` logs
nothing a request carries and warns about a token on the command line, and bidi and other format characters from
a checkpoint are escaped like control characters in the command line's output and in the app."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_app import browser, choose, screen_text, settle, sorted_metas

from crewpoint.checkpoint import ops
from crewpoint.checkpoint.config import CheckpointConfig
from crewpoint.demo import demo_crew
from crewpoint.providers.masking import mask_location
from crewpoint.tui.app import make_app
from crewpoint.tui.cli import main
from crewpoint.tui.visible import visible

CREWPOINT = [sys.executable, "-m", "crewpoint.tui.cli"]
PIECE_A, PIECE_B = "Qz7" + "firsthalf", "Qz7" + "secondhalf"  # a password's two halves, assembled at run time
BIDI = "\u202eevil\u2066iso\u2069\u200e\u200f\u2028"
RAW_FORMAT = re.compile("[\u200b-\u200f\u2028-\u202e\u2060-\u206f\ufeff\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CREWPOINT_", "PG"))}
    return {**env, "NO_COLOR": "1", **extra}


# -- a location that does not parse ------------------------------------------------------------------------------


@pytest.mark.parametrize("mark", ["/", "#", "?"])
def test_a_postgres_password_that_breaks_the_url_never_shows(mark: str, tmp_path: Path) -> None:
    url = f"postgresql://alice:{PIECE_A}{mark}{PIECE_B}@127.0.0.1:1/db"
    runs = {
        "list": subprocess.run([*CREWPOINT, "checkpoint", "list", url], env=_env(), cwd=tmp_path,
                               capture_output=True, text=True, timeout=60),
        "--debug": subprocess.run([*CREWPOINT, "--debug", "checkpoint", "info", f"{url}#abc"], env=_env(),
                                  cwd=tmp_path, capture_output=True, text=True, timeout=60),
        "env": subprocess.run([*CREWPOINT, "checkpoint", "list"], env=_env(CREWPOINT_CHECKPOINT_LOCATION=url),
                              cwd=tmp_path, capture_output=True, text=True, timeout=60),
    }  # fmt: skip
    for how, proc in runs.items():
        said = proc.stdout + proc.stderr
        assert PIECE_A not in said and PIECE_B not in said, (how, said)
        assert proc.returncode == 2, (how, said)
        assert "postgresql://alice:***@" in said and "%2F" in said, (how, said)
    assert runs["list"].stderr.count("\n") == 1 and runs["env"].stderr.count("\n") == 1


def test_a_location_of_an_unknown_kind_is_named_without_its_password(tmp_path: Path) -> None:
    url = f"mysql://alice:{PIECE_A}/{PIECE_B}@127.0.0.1/db"
    for argv, env in (([url], _env()), ([], _env(CREWPOINT_CHECKPOINT_LOCATION=url))):
        proc = subprocess.run([*CREWPOINT, "--debug", "checkpoint", "list", *argv], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert proc.returncode == 2 and "mysql://alice:***@127.0.0.1/db" in proc.stderr, proc.stderr
        assert PIECE_A not in proc.stdout + proc.stderr and PIECE_B not in proc.stdout + proc.stderr


def test_mask_location_masks_credentials_without_parsing() -> None:
    assert mask_location("postgresql://bob:a/b#c?d@host:5432/db") == "postgresql://bob:***@host:5432/db"
    assert mask_location("postgresql://bob@host/db?password=x/y&sslmode=require") == (
        "postgresql://bob@host/db?password=***&sslmode=require"
    )
    assert mask_location("postgresql://b/o:b@host/db") == "postgresql://***@host/db"
    assert mask_location("./.checkpoints") == "./.checkpoints"


# -- serve -----------------------------------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path: Path) -> Path:
    location = tmp_path / ".checkpoints"
    demo_crew(checkpoint=CheckpointConfig(location=str(location))).kickoff(
        inputs={"topic": "tide pools", "audience": "kids"}
    )
    return location


def _serve(store: Path, *args: str, **env: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [*CREWPOINT, "checkpoint", "serve", "--location", str(store), "--port", "0", *args],
        env=_env(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def _stop(process: subprocess.Popen[str]) -> str:
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=30)
    return err


def test_an_oversized_request_logs_nothing_it_carried(store: Path) -> None:
    token = "-".join(["oversized", "token", str(2**41)])
    process, url = _serve(store, CREWPOINT_SERVE_TOKEN=token)
    try:
        port = int(url.split("/?", 1)[0].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=30) as client:
            request = (
                f"GET /?token={token} HTTP/1.1\r\nHost: x\r\nCookie: crewpoint_token_{port}={token}\r\n"
                f"X-Padding: {'p' * 20000}\r\n\r\n"
            )
            client.sendall(request.encode())
            answer = client.recv(64)
        assert answer.startswith(b"HTTP/1.") and b" 400 " in answer
    finally:
        err = _stop(process)
    assert token not in err and "p" * 100 not in err and "Traceback" not in err
    assert "crewpoint serve: aiohttp" in err  # the failure itself is logged, as one line
    assert "warning: --token" not in err  # a token from the environment is not on the command line


def test_a_token_on_the_command_line_warns_and_a_token_file_does_not(store: Path, tmp_path: Path) -> None:
    token = "-".join(["command", "line", str(2**41)])
    process, url = _serve(store, "--token", token)
    err = _stop(process)
    assert url.endswith(f"?token={token}")
    assert "--token on the command line can be read by other users" in err and "CREWPOINT_SERVE_TOKEN" in err
    file = tmp_path / "token"
    file.write_text(token + "\n", encoding="utf-8")
    process, url = _serve(store, "--token-file", str(file))
    err = _stop(process)
    assert url.endswith(f"?token={token}") and "warning: --token" not in err


def test_the_cookie_is_named_for_the_port() -> None:
    from crewpoint.tui.serve import cookie_name

    assert cookie_name(8000) == "crewpoint_token_8000" and cookie_name(8001) != cookie_name(8000)


# -- bidi and other format characters ----------------------------------------------------------------------------


def test_visible_escapes_format_characters_like_controls() -> None:
    assert visible(BIDI) == "\\u202eevil\\u2066iso\\u2069\\u200e\\u200f\\u2028"
    assert visible("naïve 한국어 text\n") == "naïve 한국어 text\n"  # letters of every script stay as they are
    assert visible("tag\U000e0041") == "tag\\U000e0041"


@pytest.fixture
def bidi_store(tmp_path: Path) -> str:
    location = str(tmp_path / "bidi")
    demo_crew(checkpoint=CheckpointConfig(location=location), name=f"crew{BIDI}").kickoff(
        inputs={"topic": f"topic{BIDI}", "audience": f"people{BIDI}"}
    )
    return location


def test_no_format_character_from_a_checkpoint_reaches_list_or_info(bidi_store: str) -> None:
    metas = sorted(ops.list_checkpoints(bidi_store), key=lambda m: m.sequence)
    runner = CliRunner()
    outputs = [
        runner.invoke(main, ["checkpoint", "list", bidi_store]),
        runner.invoke(main, ["checkpoint", "list", bidi_store, "--json"]),
        runner.invoke(main, ["checkpoint", "info", metas[-1].id, "--location", bidi_store]),
        runner.invoke(main, ["checkpoint", "info", metas[-1].id, "--location", bidi_store, "--json"]),
    ]
    for result in outputs:
        assert result.exit_code == 0, result.output
        assert not RAW_FORMAT.search(result.stdout + result.stderr), repr(result.stdout[:300])
    assert "crew\\u202eevil" in outputs[0].stdout
    assert json.loads(outputs[3].stdout)["inputs"]["topic"] == f"topic{BIDI}"  # JSON keeps the data exact


async def test_no_format_character_from_a_checkpoint_reaches_the_screen(bidi_store: str) -> None:
    app = make_app(bidi_store, watch=False)
    async with app.run_test(size=(140, 40)) as pilot:
        await settle(pilot)
        screen = browser(pilot)
        await choose(pilot, sorted_metas(screen, "main")[-1].id)
        shown = ""
        for tab in "1234567":
            await pilot.press(tab)
            await settle(pilot)
            text = screen_text(pilot)
            assert not RAW_FORMAT.search(text), tab
            shown += text
        assert "\\u202eevil" in shown  # the text is there, escaped


def test_a_resumed_runs_result_from_the_checkpoint_is_printed_escaped(bidi_store: str, tmp_path: Path) -> None:
    import copy
    import uuid

    from crewpoint.providers import JsonProvider
    from crewpoint.providers.base import CheckpointMeta, CheckpointRecord

    last = max((m for m in ops.list_checkpoints(bidi_store) if m.entity_kind == "crew"), key=lambda m: m.sequence)
    base = ops.load(last.id, bidi_store)
    body = copy.deepcopy(base.body)
    body["entity"]["tasks"][-1]["output"]["raw"] = f"final{BIDI}\x1b]0;owned\x07"
    new_id = uuid.uuid4().hex
    body["lineage"]["id"] = new_id
    meta = CheckpointMeta(**{**base.meta.to_dict(), "id": new_id, "location": "", "size": 0})
    store = tmp_path / "crafted"
    JsonProvider().write(str(store), CheckpointRecord(meta=meta, body=body))
    result = CliRunner().invoke(main, ["checkpoint", "resume", new_id, "--location", str(store)])
    assert result.exit_code == 0, result.output
    assert "final\\u202eevil" in result.stdout and not RAW_FORMAT.search(result.stdout)
