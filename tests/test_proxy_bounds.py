"""Resources under faults (issue 27, points 11-14): a run's size and duration are bounded, a
run whose client is gone reads its upstream no faster than its log takes it, a hung Redis
does not hold up new streams, a client that never reads is dropped wherever it waits, and an
NDJSON upstream cut mid-line is ``truncated``."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Callable
from typing import Any

import msgspec
import pytest
from aiohttp import web

from streambridge.bridge.config import ConfigError
from streambridge.bridge.state import STATE

from .proxy_support import (
    Upstream,
    decode,
    frames,
    golden,
    proxy_config,
    start_proxy,
    stream_app,
    url_of,
    without_ids,
    write_stream,
)
from .redis_support import RedisServer
from .test_proxy_faults import assert_fault, metric
from .test_proxy_slow_readers import DONE, META, RawClient, until

OMA_TEXT = b'{"type":"text","data":"Hello"}\n'
AGENTKIT_START = b'{"type":"turn_start","turnId":"t1","messageId":"m1"}\n'
AGENTKIT_TEXT = b'{"type":"text_delta","messageId":"m1","text":"Hello"}\n'


@pytest.fixture(autouse=True)
def _logs(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="streambridge")


# -- 14: an NDJSON upstream cut mid-line --------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        ("oma", [OMA_TEXT, b'{"type":"text","da']),
        ("agentkit", [AGENTKIT_START, AGENTKIT_TEXT, b'{"type":"text_delta","messageId":"m1","te']),
    ],
)
async def test_an_ndjson_upstream_that_ends_mid_line_is_truncated(
    aiohttp_server, aiohttp_client, caplog, source: str, parts: list[bytes]
) -> None:
    upstream = Upstream()

    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(request, parts, content_type="application/x-ndjson", upstream=upstream)

    server = await aiohttp_server(stream_app(handler, "/up"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), source, "oma"))
    body = await (await client.post("/", json={"prompt": "hi"})).read()
    assert [e.text for e in decode("oma", body) if type(e).__name__ == "TextDelta"] == ["Hello"]
    await assert_fault(client, caplog, body, "oma", "truncated")


# -- 13: a client that never reads is dropped wherever the proxy waits on it ---------------------


def nest_text(size: int) -> bytes:
    return b"data: " + msgspec.json.encode({"kind": "text", "text": "y" * size}) + b"\n\n"


class TightClient(RawClient):
    """A raw client whose kernel takes only a few KiB before it reads (it never does)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.sock.connect(("127.0.0.1", port))
        self.sock.setblocking(False)


def connection_of(client: Any, reader: RawClient) -> Any:
    """The proxy's transport of ``reader``'s connection (None once the proxy let it go)."""
    mine = reader.sock.getsockname()
    for handler in client.server.runner.server.connections:
        transport = handler.transport
        if transport is not None and transport.get_extra_info("peername") == mine:
            return transport
    return None


def unsent(client: Any, reader: RawClient) -> int:
    """What the proxy holds for ``reader`` above what the kernels took."""
    transport = connection_of(client, reader)
    return transport.get_write_buffer_size() if transport is not None else 0


async def open_streams(client: Any) -> float:
    return await metric(client, "streambridge_open_streams", route="default")


async def answer_until(resp: web.StreamResponse, backed_up: Callable[[], bool], taken: Callable[[int], bool]) -> None:
    """Small text frames one by one, each once the proxy has taken the one before, until the
    proxy holds unsent bytes for the client that does not read (well below its high-water mark,
    so no write of the run waits on it), then the end: only the end of the response is left
    waiting on that client."""
    frames = 0
    while not backed_up():
        await resp.write(nest_text(1024))
        frames += 1
        await until(lambda n=frames: backed_up() or taken(n), "the proxy took the frame")
    await resp.write(DONE)


async def test_a_client_that_never_reads_the_end_of_its_answer_is_dropped(aiohttp_server, aiohttp_client) -> None:
    proxy: list[Any] = []
    reader_of: list[RawClient] = []

    def taken(frames: int) -> bool:  # decoded (the meta and the frames): its write reached the client's transport
        relays = proxy[0].app[STATE].relays
        return not relays or next(iter(relays)).translator.events_in >= 1 + frames

    async def chat(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=201, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(META)
        await answer_until(resp, lambda: unsent(proxy[0], reader_of[0]) > 0, taken)
        return resp

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    config = proxy_config(url_of(server, "/agent"), "nest", "nest", client_stall_timeout=0.3)
    client = await start_proxy(aiohttp_client, config)
    proxy.append(client)
    reader = TightClient(client.port)
    reader_of.append(reader)
    try:
        await reader.send("POST", "/agent/chat", b'{"message":"hi"}')
        await until(lambda: connection_of(client, reader) is not None, "the proxy took the request")
        await until(lambda: connection_of(client, reader) is None, "the proxy dropped the client that reads nothing")
        assert await open_streams(client) == 0.0
        assert await metric(client, "streambridge_faults_total", route="default", code="client_stalled") == 1.0
    finally:
        reader.sock.close()


async def test_a_follower_that_never_reads_the_end_of_the_run_is_dropped(aiohttp_server, aiohttp_client) -> None:
    attached = asyncio.Event()
    proxy: list[Any] = []
    follower_of: list[RawClient] = []
    received = bytearray()

    async def chat(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=201, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(META)
        await attached.wait()
        backed_up = lambda: unsent(proxy[0], follower_of[0]) > 0  # noqa: E731
        await answer_until(resp, backed_up, lambda frames: received.count(b'"kind":"text"') >= frames)
        return resp

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    config = proxy_config(url_of(server, "/agent"), "nest", "nest", client_stall_timeout=0.3)
    client = await start_proxy(aiohttp_client, config)
    proxy.append(client)
    resp = await client.post("/agent/chat", json={"message": "hi"})
    run_id = resp.headers["X-Agent-Run-Id"]
    received += await resp.content.readuntil(b"\n\n")
    follower = TightClient(client.port)  # re-attaches, then reads nothing
    follower_of.append(follower)
    try:
        await follower.send("GET", f"/agent/chat/{run_id}/stream")
        logged = client.app[STATE].runlog.runs[run_id]
        await until(lambda: logged.readers > 0, "the follower attached")
        attached.set()
        async with asyncio.timeout(20):  # the chat's own client reads the whole run
            async for chunk in resp.content.iter_any():
                received.extend(chunk)
        assert received.endswith(DONE)
        await until(lambda: connection_of(client, follower) is None, "the proxy dropped the follower")
        assert await open_streams(client) == 0.0
    finally:
        follower.sock.close()


# -- 11: a run's size and duration are bounded; a run without its client keeps backpressure ----

AK_START = b'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}\n\n'


def agentkit_text(size: int) -> bytes:
    return b"data: " + msgspec.json.encode({"type": "text_delta", "messageId": "m1", "text": "y" * size}) + b"\n\n"


class Endless:
    """An upstream that writes text frames until the proxy lets go of it: what it managed to
    write, whether its writes ever blocked (the proxy stopped reading), whether it was dropped."""

    def __init__(self) -> None:
        self.written = 0
        self.blocked = asyncio.Event()
        self.dropped = asyncio.Event()

    async def handler(self, request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        frame = agentkit_text(4096)
        try:
            await resp.write(AK_START)
            while True:
                if request.transport is not None and request.transport.get_write_buffer_size() > 0:
                    self.blocked.set()  # the kernels took no more: the proxy stopped reading
                await resp.write(frame)
                self.written += len(frame)
        except (asyncio.CancelledError, ConnectionError):
            self.dropped.set()
            raise


async def test_an_endless_upstream_ends_with_the_size_terminal_after_max_run_bytes(
    aiohttp_server, aiohttp_client, caplog
) -> None:
    upstream = Endless()
    server = await aiohttp_server(stream_app(upstream.handler, "/up"))
    limit = 256 * 1024
    config = proxy_config(url_of(server, "/up"), "agentkit", "agentkit", max_run_bytes=limit)
    client = await start_proxy(aiohttp_client, config)
    async with asyncio.timeout(30):
        body = await (await client.post("/", json={"text": "hi", "history": []})).read()
        await upstream.dropped.wait()  # the proxy closed the upstream
    end = await assert_fault(client, caplog, body, "agentkit", "run_too_large")
    assert end.failure.recoverable is False
    texts = body.count(b'"type":"text_delta"')
    assert texts > 0 and texts * 4096 <= limit  # what came before the bound, not a byte past it


async def test_a_run_longer_than_max_run_seconds_ends_with_the_duration_terminal(
    aiohttp_server, aiohttp_client, caplog
) -> None:
    upstream = Upstream()

    async def silent(request: web.Request) -> web.StreamResponse:
        return await write_stream(request, [AK_START, agentkit_text(10)], upstream=upstream, hold_after=2)

    server = await aiohttp_server(stream_app(silent, "/up"))
    config = proxy_config(url_of(server, "/up"), "agentkit", "oma", max_run_seconds=0.3)
    client = await start_proxy(aiohttp_client, config)
    async with asyncio.timeout(30):
        body = await (await client.post("/", json={"prompt": "hi"})).read()
        await upstream.cancelled.wait()  # the proxy closed the upstream
    await assert_fault(client, caplog, body, "oma", "run_too_long")


@pytest.mark.parametrize("setting", ["max_run_bytes", "max_run_seconds"])
def test_a_negative_bound_is_refused_and_zero_is_no_bound(setting: str) -> None:
    with pytest.raises(ConfigError, match=setting):
        proxy_config("http://127.0.0.1:1/up", "agentkit", "agentkit", **{setting: -1})
    (route,) = proxy_config("http://127.0.0.1:1/up", "agentkit", "agentkit", **{setting: 0}).routes
    assert getattr(route, setting) == 0
    (default,) = proxy_config("http://127.0.0.1:1/up", "agentkit", "agentkit").routes
    assert getattr(default, setting) == {"max_run_bytes": 64 * 1024 * 1024, "max_run_seconds": 3600.0}[setting]


async def test_a_run_whose_client_is_gone_reads_its_upstream_no_faster_than_its_log_takes_it(
    aiohttp_server, aiohttp_client
) -> None:
    upstream = Endless()
    server = await aiohttp_server(stream_app(upstream.handler, "/up"))
    keep = 256 * 1024
    config = proxy_config(
        url_of(server, "/up"), "agentkit", "agentkit", replay_limit_bytes=keep, resume_grace=600, max_run_bytes=0
    )
    client = await start_proxy(aiohttp_client, config)
    state = client.app[STATE]
    resp = await client.post("/", json={"text": "hi", "history": []})
    run_id = resp.headers["X-Streambridge-Run-Id"]
    await resp.content.readuntil(b"\n\n")
    relay = state.live[run_id]
    resp.close()  # the client goes; the run goes on into its log, for whoever resumes it
    await until(lambda: relay.client_lost, "the proxy saw the client go")
    logged = state.runlog.runs[run_id]
    await until(lambda: logged.taken is not None, "the run waits for its log to be read")
    async with asyncio.timeout(30):
        await upstream.blocked.wait()  # backpressure reached the upstream: its writes block
    read = relay.received
    # what the proxy read: half the log's bound ahead of its (no) readers, plus what the client took
    # before it went and one read in flight; the endless upstream would give gigabytes
    assert read <= keep + 4 * 64 * 1024, read
    assert logged.size <= keep

    # a reader that comes back takes the run on at its own pace: the run reads on, then ends on a cancel
    kept_from = logged.trimmed_hi // 2  # (the cursor of the oldest frame still kept)
    async with client.get(f"/runs/{run_id}/stream?after={kept_from}") as follower:
        assert follower.status == 200
        await follower.content.readexactly(2 * keep)
        assert relay.received > read
        assert (await client.post(f"/runs/{run_id}/cancel")).status == 200
        rest = await follower.content.read()
    assert rest.endswith(
        b'"failure":{"status":"cancelled","message":"The run was cancelled.","code":"cancelled"}}}\n\n'
    )


# -- 12: a hung Redis does not hold up a new chat -----------------------------------------------


async def test_a_new_chat_streams_to_its_own_client_while_redis_hangs(
    aiohttp_server, aiohttp_client, redis_server: RedisServer
) -> None:
    async def answer(request: web.Request) -> web.StreamResponse:
        return await write_stream(request, frames(golden("plain-text", "agentkit")))

    server = await aiohttp_server(stream_app(answer, "/up"))
    # a long lease: before the fix every Redis command could take the lease and more (minutes here)
    environ = {"STREAMBRIDGE_RUN_LOG_LEASE": "120"}
    config = proxy_config(url_of(server, "/up"), "agentkit", "agentkit", run_log=redis_server.url, environ=environ)
    assert config.run_log_timeout == 1.0
    client = await start_proxy(aiohttp_client, config)
    turn = {"text": "hi", "history": []}
    logged = await (await client.post("/", json=turn)).read()  # Redis answers: the run is logged
    assert decode("agentkit", logged)[-1].status == "succeeded"

    assert redis_server.proc is not None
    os.kill(redis_server.proc.pid, signal.SIGSTOP)  # Redis hangs: connections open, no answers
    try:
        # far beyond the 1 s Redis timeout, far below what a command waited before (lease + 5 s, twice)
        async with asyncio.timeout(30):
            resp = await client.post("/", json=turn)
            assert resp.status == 200
            body = await resp.read()
    finally:
        os.kill(redis_server.proc.pid, signal.SIGCONT)
    assert without_ids(body) == without_ids(logged)  # the whole answer, as with Redis up


async def test_a_run_whose_client_is_gone_ends_when_its_redis_log_hangs(
    aiohttp_server, aiohttp_client, redis_server: RedisServer
) -> None:
    upstream = Endless()
    server = await aiohttp_server(stream_app(upstream.handler, "/up"))
    config = proxy_config(
        url_of(server, "/up"), "agentkit", "agentkit", run_log=redis_server.url, resume_grace=600, max_run_bytes=0
    )
    client = await start_proxy(aiohttp_client, config)
    state = client.app[STATE]
    resp = await client.post("/", json={"text": "hi", "history": []})
    relay = state.live[resp.headers["X-Streambridge-Run-Id"]]
    await resp.content.readuntil(b"\n\n")
    resp.close()  # the client goes: the run goes on into its log, paced by what Redis takes
    await until(lambda: relay.client_lost, "the proxy saw the client go")
    assert redis_server.proc is not None
    os.kill(redis_server.proc.pid, signal.SIGSTOP)  # Redis hangs: the log takes nothing more
    try:
        async with asyncio.timeout(30):
            await upstream.dropped.wait()  # the run ended (no one can resume it), not read on for its grace
    finally:
        os.kill(redis_server.proc.pid, signal.SIGCONT)
    await until(lambda: relay.outcome != "open", "the run ended")
    assert relay.outcome == "run_log_unavailable"
