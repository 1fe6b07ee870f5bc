"""The command line's arguments: ports, help, completion, nonsense rejected, replay's access log."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import signal
import socket
import stat
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import typer
from aiohttp import web
from typer.testing import CliRunner, Result

from streambridge import codecs
from streambridge.bridge.config import ConfigError, build_config
from streambridge.cli import app, completion, replay_server
from streambridge.cli.common import protocol_names

from .cli_support import GOLDEN, TIMEOUT, Proc, env, invoke

NEST_RUN = GOLDEN / "approval/nest.sse"
SERVE = ("serve", "--upstream", "http://127.0.0.1:9/agent", "--from", "nest", "--to", "agentkit")
ERROR = re.compile(r"^(streambridge: )?error: ")  # the project's prefix (its "streambridge: " is being unified)
PLACEHOLDER = re.compile(r"<[a-z][a-z\[\]]*>|\b(TEXT|INTEGER|FLOAT|BOOLEAN)\b")


def error_line(stderr: str) -> str:
    """The one error line on stderr (and no traceback)."""
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if ERROR.match(line)]
    assert len(lines) == 1, stderr
    return lines[0]


def usage_error(result: Result, *fragments: str) -> None:
    """A usage error: exit 2, no traceback, the message naming what is wrong."""
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    text = " ".join(result.stderr.replace("│", " ").split())
    assert "Traceback" not in text and result.stdout == ""
    for fragment in fragments:
        assert fragment in text, text


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        yield taken.getsockname()[1]


# -- 1. ports --------------------------------------------------------------------------------


@pytest.mark.parametrize("port", ["99999", "-1"])
@pytest.mark.parametrize("command", [SERVE, ("replay", str(NEST_RUN), "--serve")])
def test_a_port_out_of_range_is_a_usage_error(command: tuple[str, ...], port: str) -> None:
    result = invoke(*command, "--port", port)
    usage_error(result, "--port")
    assert "listening" not in result.stderr and "serving on" not in result.stderr


def test_a_port_out_of_range_in_routes_toml_is_a_config_error(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text(
        '[server]\nport = 99999\n[[routes]]\npath = "/"\nupstream = "http://u/"\nfrom = "nest"\nto = "oma"\n'
    )
    with pytest.raises(ConfigError, match="port 99999 is out of range"):
        build_config(config_file=routes, environ={})


def test_serve_on_a_port_in_use_is_one_line_and_never_logs_listening(taken_port: int) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "streambridge", *SERVE, "--port", str(taken_port)],
        env=env(),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    line = error_line(done.stderr)
    assert line.endswith(f"error: cannot listen on 127.0.0.1:{taken_port}: Address already in use"), line
    assert "listening" not in done.stderr


def test_replay_serve_on_a_port_in_use_never_says_it_serves(taken_port: int) -> None:
    result = invoke("replay", NEST_RUN, "--serve", "--port", taken_port)
    assert result.exit_code == 2
    assert f"cannot listen on 127.0.0.1:{taken_port}: Address already in use" in error_line(result.stderr)
    assert "serving on" not in result.stderr


def test_serve_logs_listening_once_bound_and_stops_on_sigterm() -> None:
    proc = Proc(*SERVE, "--port", "0")
    try:
        port = int(proc.wait_for(r"listening host=127\.0\.0\.1 port=(\d+)")[1])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=TIMEOUT) as resp:
            assert resp.status == 200  # "listening" came after the bind: the port answers
        proc.popen.send_signal(signal.SIGTERM)
        assert proc.finish() == 0, proc.lines
    finally:
        proc.stop()
    assert not any("Traceback" in line for line in proc.lines)


def test_healthz_says_503_while_open_streams_drain() -> None:
    """SIGTERM with a stream open: the listener stays open during the drain, /healthz says so."""
    upstream = Proc("replay", NEST_RUN, "--serve", "--port", "0", "--to", "nest", "--delay-ms", "2000")
    proxy = None
    try:
        up_port = int(upstream.wait_for(r"serving on http://127\.0\.0\.1:(\d+)")[1])
        proxy = Proc(
            "serve",
            "--upstream",
            f"http://127.0.0.1:{up_port}/agent",
            "--from",
            "nest",
            "--to",
            "agentkit",
            "--port",
            "0",
        )
        port = int(proxy.wait_for(r"listening host=127\.0\.0\.1 port=(\d+)")[1])
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/",
            data=b'{"text":"hi","history":[]}',
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT) as stream:
            assert stream.read(1)  # the stream is open (the upstream paces its frames)
            proxy.popen.send_signal(signal.SIGTERM)
            proxy.wait_for(r"draining")
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=TIMEOUT)
            assert refused.value.code == 503
            assert json.loads(refused.value.read()) == {"status": "draining", "openStreams": 1}
    finally:
        for proc in (proxy, upstream):
            if proc is not None:
                proc.stop()


# -- 2. help ---------------------------------------------------------------------------------


def _commands() -> list[tuple[str, ...]]:
    names = sorted(typer.main.get_command(app).list_commands(None))  # type: ignore[arg-type]
    assert {"convert", "validate", "replay", "record", "diff", "protocols", "demo", "serve"} <= set(names)
    return [(), *((name,) for name in names)]


@pytest.mark.parametrize("command", _commands(), ids=lambda c: " ".join(c) or "streambridge")
def test_every_help_ends_with_examples_and_shows_no_type_placeholders(command: tuple[str, ...]) -> None:
    result = invoke(*command, "--help")
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert not PLACEHOLDER.search(out), PLACEHOLDER.search(out)
    examples = out[out.index("Examples:") :].splitlines()[1:]
    assert any(line.strip().startswith(" ".join(("streambridge", *command))) for line in examples), out
    negatives = set(re.findall(r"--no-[a-z-]+", out))  # a narrow table may cut one short
    assert all("--no-forward-auth".startswith(n) for n in negatives), negatives  # overrides routes.toml and env


def test_help_names_what_goes_in_each_option() -> None:
    replay_help = invoke("replay", "--help").stdout
    for metavar in ("FILE|DIR", "PROTOCOL", "[sse|ndjson]", "MS", "HOST", "PORT", "PATH", "ORIGIN"):
        assert metavar in replay_help, metavar
    assert "RULE" in invoke("validate", "--help").stdout
    assert "URL" in invoke("record", "--help").stdout and "URL" in invoke("serve", "--help").stdout
    assert "SHELL" in invoke("--help").stdout


def test_protocol_choices_in_help_come_from_the_codec_registry() -> None:
    out = " ".join(invoke("convert", "--help").stdout.replace("│", " ").split())
    for name in codecs.names():
        assert name in out
        for alias in codecs.get(name).aliases:
            assert f"{name} (alias {alias})" in out


# -- 3. completion ---------------------------------------------------------------------------


SCRIPT_MARKERS = {
    "bash": ("complete -o default -F _streambridge_completion streambridge", "_STREAMBRIDGE_COMPLETE=complete_bash"),
    "zsh": ("#compdef streambridge", "_STREAMBRIDGE_COMPLETE=complete_zsh"),
    "fish": ("complete --command streambridge", "_STREAMBRIDGE_COMPLETE=complete_fish"),
}


def _show(*args: str, **environ: str) -> Result:
    return CliRunner().invoke(app, list(args), prog_name="streambridge", env=environ)


@pytest.mark.parametrize("shell", SCRIPT_MARKERS)
def test_show_completion_prints_the_named_shells_script(shell: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completion, "current_shell", lambda: "bash" if shell != "bash" else "zsh")  # the name wins
    result = _show("--show-completion", shell)
    assert result.exit_code == 0, result.stderr
    for marker in SCRIPT_MARKERS[shell]:
        assert marker in result.stdout
    others = [m for other, markers in SCRIPT_MARKERS.items() if other != shell for m in markers]
    assert not any(marker in result.stdout for marker in others)


def test_show_completion_without_a_shell_uses_the_current_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(completion, "current_shell", lambda: "fish")
    assert "complete --command streambridge" in _show("--show-completion").stdout
    usage_error(_show("--show-completion", "tcsh"), "'tcsh' is not a supported shell")


def test_install_completion_installs_the_named_shells_script(tmp_path: Path) -> None:
    result = _show("--install-completion", "fish", HOME=str(tmp_path))
    assert result.exit_code == 0, result.stderr
    installed = tmp_path / ".config/fish/completions/streambridge.fish"
    assert "complete --command streambridge" in installed.read_text()


def _request(shell: str, line: str) -> str:
    """A completion request as the shell's script makes it, for the command line ``line``."""
    environ = {"_STREAMBRIDGE_COMPLETE": f"complete_{shell}"}
    if shell == "bash":
        words = line.split(" ")
        environ |= {"COMP_WORDS": line, "COMP_CWORD": str(len(words) - 1)}
    else:
        environ |= {"_TYPER_COMPLETE_ARGS": line, "_TYPER_COMPLETE_FISH_ACTION": "get-args"}
    result = _show(**environ)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def _values(shell: str, out: str) -> list[str]:
    if shell == "zsh":  # value:description pairs, a colon in a value escaped (agentfootprint:host)
        values = re.findall(r'"((?:[^"\\]|\\.)+)":', out) or re.findall(r'"([^"]+)"', out)
        return [re.sub(r"\\+:", ":", v) for v in values]
    return [line.split("\t")[0] for line in out.splitlines() if line]


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_completion_requests_answer_commands_and_protocols(shell: str) -> None:
    assert _values(shell, _request(shell, "streambridge con")) == ["convert"]
    assert _values(shell, _request(shell, "streambridge replay run.sse --to ")) == protocol_names()
    assert _values(shell, _request(shell, "streambridge convert x --framing n")) == ["ndjson"]
    assert _values(shell, _request(shell, "streambridge --show-completion z")) == ["zsh"]


def test_bash_completes_through_the_printed_script(tmp_path: Path) -> None:
    """The bash script, sourced by a real bash, asks the real program."""
    program = tmp_path / "streambridge"
    program.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m streambridge "$@"\n')
    program.chmod(program.stat().st_mode | stat.S_IXUSR)
    script = (
        "source <(streambridge --show-completion bash); "
        'COMP_WORDS=(streambridge validate run.sse --protocol ""); COMP_CWORD=4; '
        '_streambridge_completion streambridge; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", script],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        env={**env(), "PATH": f"{tmp_path}{os.pathsep}{os.environ['PATH']}"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == protocol_names()


# -- 4. nonsense is rejected -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("replay", NEST_RUN, "--delay-ms", "-1"), "--delay-ms"),
        (("demo", "--delay-ms", "-5"), "--delay-ms"),
        (("diff", NEST_RUN, NEST_RUN, "--max", "-1"), "--max"),
        ((*SERVE, "--heartbeat", "-1"), "--heartbeat"),
        (("replay", NEST_RUN, "--serve", "--exit-after", "0"), "--exit-after"),
        (("record", "http://127.0.0.1:9/", "-o", "-", "--timeout", "-1"), "--timeout"),
    ],
)
def test_negative_numbers_are_usage_errors(args: tuple[object, ...], option: str) -> None:
    usage_error(invoke(*args), option)


def test_validate_rejects_an_unknown_rule_and_accepts_known_ones_in_any_case() -> None:
    usage_error(
        invoke("validate", NEST_RUN, "--ignore", "SB006", "--ignore", "SB999"),
        "--ignore",
        "unknown rule 'SB999'",
        "SB001",
    )
    path = GOLDEN / "unknown-kinds/nest.sse"
    assert "SB006" in invoke("validate", path).stdout
    assert "SB006" not in invoke("validate", path, "--ignore", "sb006").stdout


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--port", "9000"), "--port"),
        (("--cors", "*"), "--cors"),
        (("--exit-after", "1"), "--exit-after"),
        (("--host", "0.0.0.0", "--base", "/x"), "--host, --base"),
    ],
)
def test_replay_serve_options_without_serve_are_errors(args: tuple[str, ...], named: str) -> None:
    result = invoke("replay", NEST_RUN, *args)
    assert result.exit_code == 2 and result.stdout == ""
    line = error_line(result.stderr)
    assert f"{named}: only with --serve" in line, line


async def test_record_with_the_wrong_protocol_says_which_it_is(aiohttp_server, tmp_path: Path) -> None:
    body = (GOLDEN / "plain-text/agentkit.sse").read_bytes()

    async def agentkit(request: web.Request) -> web.Response:
        return web.Response(body=body, content_type="text/event-stream")

    server_app = web.Application()
    server_app.router.add_post("/", agentkit)
    server = await aiohttp_server(server_app)
    out = tmp_path / "run.http"
    result = await asyncio.to_thread(invoke, "record", server.make_url("/"), "-d", "{}", "-p", "nest", "-o", out)
    assert result.exit_code == 2, result.stderr
    assert "the response is not a nest stream: it looks like agentkit" in error_line(result.stderr)
    assert "truncated" not in result.stderr
    assert out.read_bytes().endswith(body)  # recorded anyway
    sniffed = await asyncio.to_thread(invoke, "record", server.make_url("/"), "-d", "{}", "-o", tmp_path / "ok.http")
    assert sniffed.exit_code == 0, sniffed.stderr


# -- 5. replay's access log ------------------------------------------------------------------


async def test_replay_logs_every_request(aiohttp_client, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streambridge.replay")
    playback = replay_server.render(replay_server.load_recording(NEST_RUN, None), None, None)
    client = await aiohttp_client(replay_server.make_replay_app([playback], cors="*"))
    await (await client.post("/agent/chat?transcript=nest.sse", json={})).read()
    assert (await client.get("/agent/chat/nope/stream")).status == 404
    assert (await client.options("/agent/chat")).status == 204
    logged = [r.fields for r in caplog.records if r.getMessage() == "request"]  # type: ignore[attr-defined]
    assert [(f["method"], f["path"], f["status"]) for f in logged] == [
        ("POST", "/agent/chat?transcript=nest.sse", 201),
        ("GET", "/agent/chat/nope/stream", 404),
        ("OPTIONS", "/agent/chat", 204),
    ]
    assert all(isinstance(f["duration_ms"], float) and f["duration_ms"] >= 0 for f in logged)


def test_replay_serve_writes_its_access_log_to_stderr() -> None:
    proc = Proc("replay", NEST_RUN, "--serve", "--port", "0", "--exit-after", "1")
    try:
        url = proc.wait_for(r"serving on (http://\S+)")[1]
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(f"{url}/agent/chat/nope/stream", timeout=TIMEOUT)
        missing.value.close()
        assert missing.value.code == 404
        proc.wait_for(r"request method=GET path=/agent/chat/nope/stream status=404 duration_ms=\d")
        request = urllib.request.Request(
            f"{url}/agent/chat",
            data=json.dumps({"message": "hi"}).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=TIMEOUT) as resp:
            assert resp.read() == NEST_RUN.read_bytes()
        proc.wait_for(r"info +streambridge\.replay: request method=POST path=/agent/chat status=201 duration_ms=\d")
        assert proc.finish() == 0, proc.lines
    finally:
        proc.stop()
