"""``streambridge record`` against real aiohttp servers on 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestServer
from typer.testing import Result

from .cli_support import BAR, CAPTURES, ESCAPE, invoke, on_terminal, user_error, without_reader
from .corpus import ROOT, capture_body

CAPTURE = CAPTURES / "01-chat-read-only.http"


async def run_cli(*args: object) -> Result:
    """The CLI runs its own event loop: give it a thread so this test's server keeps serving."""
    return await asyncio.to_thread(invoke, *args)


class Backend:
    """A fake backend: streams a body frame by frame, then optionally holds the connection open."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.release = asyncio.Event()

    async def stream(
        self, request: web.Request, body: bytes, status: int = 201, hold: bool = False
    ) -> web.StreamResponse:
        self.requests.append((request.method, dict(request.headers), await request.read()))
        response = web.StreamResponse(
            status=status,
            headers={
                "Content-Type": "text/event-stream",
                "Cache-Control": "no-cache",
                "Connection": "keep-alive",
                "X-Agent-Run-Id": "5eb069f9-6c8f-490f-8222-1736f871a646",
                "X-Agent-Thread-Id": "thr-1",
                "Set-Cookie": "session=secret",
            },
        )
        await response.prepare(request)
        for frame in body.split(b"\n\n")[:-1]:
            await response.write(frame + b"\n\n")
        if hold:
            await self.release.wait()
        return response


@pytest.fixture
async def backend(aiohttp_server) -> AsyncIterator[tuple[Backend, TestServer]]:
    state = Backend()
    body = capture_body(CAPTURE)

    async def chat(request: web.Request) -> web.StreamResponse:
        return await state.stream(request, body)

    async def held(request: web.Request) -> web.StreamResponse:
        return await state.stream(request, body, hold=True)

    async def stalls(request: web.Request) -> web.StreamResponse:
        return await state.stream(request, body[: body.index(b'data: {"kind":"step-start"}', 200)], hold=True)

    async def fails(request: web.Request) -> web.Response:
        state.requests.append((request.method, dict(request.headers), await request.read()))
        return web.Response(
            status=500, text='{"statusCode":500,"message":"Internal server error"}', content_type="application/json"
        )

    async def plain(request: web.Request) -> web.Response:
        return web.Response(text="just text")

    app = web.Application()
    app.router.add_post("/agent/chat", chat)
    app.router.add_post("/held", held)
    app.router.add_post("/stalls", stalls)
    app.router.add_get("/fails", fails)
    app.router.add_get("/plain", plain)
    server = await aiohttp_server(app)
    yield state, server
    state.release.set()


async def test_a_recording_is_byte_for_byte_a_capture(backend, tmp_path: Path) -> None:
    state, server = backend
    out = tmp_path / "run.http"
    result = await run_cli(
        "record", server.make_url("/agent/chat"), "-d", '{"message":"weather?"}', "-H", "x-actor-id: u1", "-o", out
    )
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes() == CAPTURE.read_bytes()
    method, headers, body = state.requests[0]
    assert (method, body, headers["x-actor-id"], headers["Content-Type"]) == (
        "POST",
        b'{"message":"weather?"}',
        "u1",
        "application/json",
    )
    assert headers["Accept-Encoding"] == "identity"
    assert "nest terminal: succeeded" in result.stderr


async def test_recording_stops_at_the_terminal_even_if_the_connection_stays_open(backend, tmp_path: Path) -> None:
    _, server = backend
    out = tmp_path / "held.http"
    result = await run_cli("record", server.make_url("/held"), "--data", "{}", "--timeout", "120", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes().endswith(b"event: done\ndata: {}\n\n")


async def test_an_idle_stream_stops_at_the_timeout_and_keeps_what_came(backend, tmp_path: Path) -> None:
    _, server = backend
    out = tmp_path / "stalled.http"
    result = await run_cli(
        "record", server.make_url("/stalls"), "-X", "post", "--protocol", "nest", "--timeout", "0.3", "-o", out
    )
    assert result.exit_code == 1
    assert "idle timeout" in result.stderr
    assert "streambridge: warning: the stream has no terminal event: the recording is truncated" in result.stderr
    assert out.read_bytes().startswith(b"HTTP 201\n") and b"tool-input-available" in out.read_bytes()
    assert invoke("validate", out, "--json").exit_code == 1  # SB010: no terminal


async def test_max_time_bounds_a_recording(backend, tmp_path: Path) -> None:
    _, server = backend
    result = await run_cli(
        "record", server.make_url("/stalls"), "-X", "POST", "--max-time", "0.3", "-o", tmp_path / "m.http"
    )
    assert result.exit_code == 1
    assert "--max-time" in result.stderr


async def test_a_failed_answer_is_recorded_and_exits_1(backend, tmp_path: Path) -> None:
    _, server = backend
    out = tmp_path / "fail.http"
    result = await run_cli("record", server.make_url("/fails"), "-o", out, "--all-headers")
    assert result.exit_code == 1
    assert "streambridge: warning: the server answered HTTP 500" in result.stderr
    text = out.read_text()
    assert text.startswith("HTTP 500\n") and "content-type: application/json" in text
    assert text.endswith('{"statusCode":500,"message":"Internal server error"}')


async def test_all_headers_never_records_cookies(backend, tmp_path: Path) -> None:
    _, server = backend
    out = tmp_path / "new" / "all.http"
    result = await run_cli(
        "record", server.make_url("/agent/chat"), "-d", "{}", "--all-headers", "-o", out, "--parents"
    )
    assert result.exit_code == 0, result.stderr
    head = out.read_bytes().split(b"\n\n", 1)[0].decode()
    assert "x-accel-buffering" not in head and "x-agent-run-id: 5eb069f9" in head and "date: " in head
    assert "set-cookie" not in head and "secret" not in head


async def test_a_body_that_is_no_stream_is_recorded_until_it_ends(backend, tmp_path: Path) -> None:
    _, server = backend
    out = tmp_path / "plain.http"
    result = await run_cli("record", server.make_url("/plain"), "-o", out)
    assert result.exit_code == 0, result.stderr
    assert out.read_bytes().endswith(b"\n\njust text")
    assert "protocol not recognised" in result.stderr


async def test_data_from_a_file_and_a_recording_feeds_the_other_commands(backend, tmp_path: Path) -> None:
    state, server = backend
    body = tmp_path / "body.json"
    body.write_text('{"message": "weather?"}')
    out = tmp_path / "r.http"
    result = await run_cli("record", server.make_url("/agent/chat"), "--data", f"@{body}", "-o", out, "-p", "adonis")
    assert result.exit_code == 0, result.stderr
    assert state.requests[0][2] == b'{"message": "weather?"}'
    assert invoke("validate", out).exit_code == 0
    assert invoke("convert", out, "--to", "oma").exit_code == 0
    assert invoke("replay", out).stdout_bytes == capture_body(CAPTURE)
    assert invoke("diff", out, CAPTURE).exit_code == 0


async def test_record_to_stdout(backend) -> None:
    _, server = backend
    for args in (("-o", "-"), ()):  # stdout is the default
        result = await run_cli("record", server.make_url("/agent/chat"), "-d", "{}", *args)
        assert result.exit_code == 0, result.stderr
        assert result.stdout_bytes == CAPTURE.read_bytes()
        assert "streambridge: recorded HTTP 201" in result.stderr and "→ stdout" in result.stderr


async def test_without_o_the_recording_streams_to_stdout_as_it_arrives(backend, tmp_path: Path) -> None:
    """The body is on stdout while the server still holds the stream open; the talk is on stderr."""
    state, server = backend
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "streambridge",
        "record",
        str(server.make_url("/stalls")),
        "-X",
        "POST",
        "--timeout",
        "120",
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        received = await proc.stdout.readuntil(b"tool-input-available")
        assert received.startswith(b"HTTP 201\ncontent-type: text/event-stream\n")
        assert proc.returncode is None  # still recording: the stream is open
        state.release.set()
        received += await proc.stdout.read()
        stderr = (await proc.stderr.read()).decode()
        assert await proc.wait() == 1, stderr  # the stream ended without its terminal
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert received == CAPTURE.read_bytes()[: len(received)]
    assert "→ stdout" in stderr and "truncated" in stderr and b"streambridge" not in received


async def test_recording_shows_progress_on_a_terminal_unless_the_body_goes_there(backend, tmp_path: Path) -> None:
    _, server = backend
    url = server.make_url("/agent/chat")
    out = tmp_path / "run.http"
    to_file = await asyncio.to_thread(on_terminal, "record", url, "-d", "{}", "-o", out, cwd=tmp_path)
    assert to_file.returncode == 0, to_file.text
    assert BAR in to_file.text and "recording run.http" in to_file.text
    assert out.read_bytes() == CAPTURE.read_bytes()
    to_screen = await asyncio.to_thread(on_terminal, "record", url, "-d", "{}", "-o", "-", cwd=tmp_path)
    assert to_screen.returncode == 0, to_screen.text
    assert BAR not in to_screen.text and ESCAPE not in to_screen.text
    assert CAPTURE.read_text() in to_screen.text


async def test_recording_to_a_reader_that_left_ends_quietly_with_0(backend, tmp_path: Path) -> None:
    _, server = backend
    done = await asyncio.to_thread(
        without_reader, "record", server.make_url("/agent/chat"), "-d", "{}", "-o", "-", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_record_mistakes_are_user_errors(tmp_path: Path) -> None:
    out = tmp_path / "x.http"
    user_error(invoke("record", "http://127.0.0.1:1/x", "-d", "{nope", "-o", out), "--data", "not valid JSON")
    user_error(
        invoke("record", "http://127.0.0.1:1/x", "-d", f"@{tmp_path / 'missing.json'}", "-o", out), "missing.json"
    )
    user_error(invoke("record", "http://127.0.0.1:1/x", "-H", "no-colon", "-o", out), "--header", "'Name: value'")
    user_error(invoke("record", "http://127.0.0.1:1/x", "-p", "zzz", "-o", out), "--protocol")
    user_error(invoke("record", f"http://127.0.0.1:{_closed_port()}/agent/chat", "-o", out), "127.0.0.1")
    user_error(invoke("record", "not a url", "-o", out), "not a url")
    missing = tmp_path / "typo" / "x.http"
    user_error(
        invoke("record", "http://127.0.0.1:1/x", "-o", missing),
        f"directory {missing.parent} does not exist",
        "--parents",
    )
    assert not out.exists()
