"""Slow readers: what the proxy holds for a client that stops reading, and a re-attached reader
that stops reading never slows the run (issue 10, points 2 and 3).

The clients here are raw sockets with a small receive buffer, so that what is in flight is the
proxy's own holding, not the client's: a stream the client does not read may cost the proxy only
its bounded buffers, and the upstream is paused (its own writes block).
"""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Callable

import msgspec
from aiohttp import web

from streambridge import codecs
from streambridge.bridge.state import STATE
from streambridge.events import Terminal, TextDelta

from .proxy_support import proxy_config, start_proxy, stream_app, url_of
from .test_proxy_faults import metric

META = b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n'
DONE = b"event: done\ndata: {}\n\n"
#: what a stream the client does not read may cost the proxy with the default 64 KiB buffers:
#: the client transport (64 KiB + a chunk), the kernel's unsent bytes (TCP_NOTSENT_LOWAT, 64 KiB),
#: aiohttp's read buffer (64 KiB + one socket read of up to 256 KiB), one chunk read and its
#: translation. Without the bounds the kernel alone took megabytes.
BOUND = 1024 * 1024


def text_frame(size: int) -> bytes:
    return b"data: " + msgspec.json.encode({"kind": "text", "text": "y" * size}) + b"\n\n"


async def until(condition: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    """Wait for a state of the proxy to be reached (looked at every few milliseconds)."""
    async with asyncio.timeout(timeout):
        while not condition():
            await asyncio.sleep(0.005)
    assert condition(), what


class RawClient:
    """An HTTP/1.1 client on a plain socket: until it reads, it holds only its kernel's initial
    receive buffer (a client that never read is not given more)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.socket()
        self.sock.connect(("127.0.0.1", port))
        self.sock.setblocking(False)

    async def send(self, method: str, path: str, body: bytes = b"") -> None:
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: {len(body)}\r\n\r\n"
        await asyncio.get_running_loop().sock_sendall(self.sock, head.encode() + body)

    async def read_all(self) -> bytes:
        """Everything until the proxy closes the connection (or resets it), now at full speed."""
        loop = asyncio.get_running_loop()
        data = bytearray()
        try:
            async with asyncio.timeout(30):
                while chunk := await loop.sock_recv(self.sock, 65536):
                    data += chunk
        except ConnectionResetError:
            pass
        finally:
            self.sock.close()
        return bytes(data)


def body_of(raw: bytes) -> bytes:
    """The body of a chunked HTTP/1.1 response (as far as it came)."""
    at = raw.index(b"\r\n\r\n") + 4
    body = bytearray()
    while at < len(raw):
        eol = raw.index(b"\r\n", at)
        size = int(raw[at:eol], 16)
        if size == 0:
            break
        body += raw[eol + 2 : eol + 2 + size]
        at = eol + 2 + size + 2
    return bytes(body)


async def test_a_client_that_reads_nothing_costs_the_proxy_only_its_bounded_buffers(
    aiohttp_server, aiohttp_client
) -> None:
    count, frame = 3072, text_frame(16384)  # 48 MiB: far more than every buffer on the way, kernels' too
    upstream_blocked = asyncio.Event()

    async def chat(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=201, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(META)
        for _ in range(count):
            if request.transport.get_write_buffer_size() > 0:
                upstream_blocked.set()  # the kernel took no more: the proxy stopped reading
            await resp.write(frame)
        await resp.write(DONE)
        return resp

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", "nest"))
    reader = RawClient(client.port)
    await reader.send("POST", "/agent/chat", b'{"message":"hi"}')
    state = client.app[STATE]
    await until(lambda: bool(state.relays), "the stream opened")
    (relay,) = state.relays
    # the relay waits on a client write, so it reads no more from the upstream: what it has read
    # by now is what the proxy holds (the client took a few KiB)
    await until(lambda: relay._watchdog is not None and relay._watchdog.writing_since is not None, "a write waits")
    async with asyncio.timeout(20):
        await upstream_blocked.wait()  # backpressure reached the upstream
    content = relay.upstream.response.content
    assert content.total_bytes <= BOUND, f"the proxy took {content.total_bytes} bytes from the upstream"
    lowat = relay.sink.request.transport.get_extra_info("socket").getsockopt(
        socket.IPPROTO_TCP, socket.TCP_NOTSENT_LOWAT
    )
    assert lowat == 64 * 1024

    events = codecs.get("nest").decoder(strict=True).feed(body_of(await reader.read_all()))
    assert sum(1 for e in events if type(e) is TextDelta) == count  # nothing lost on the way
    assert type(events[-1]) is Terminal and events[-1].status == "succeeded"


async def test_a_follower_that_stops_reading_is_dropped_and_never_slows_the_run(
    aiohttp_server, aiohttp_client, caplog
) -> None:
    caplog.set_level(logging.INFO, logger="streambridge")
    count, frame = 512, text_frame(4096)  # 2 MiB, against a 128 KiB follower buffer
    attached = asyncio.Event()

    async def chat(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=201, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(META)
        await attached.wait()
        for _ in range(count):
            await resp.write(frame)
        await resp.write(DONE)
        return resp

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    config = proxy_config(url_of(server, "/agent"), "nest", "nest", replay_limit_bytes=128 * 1024)
    client = await start_proxy(aiohttp_client, config)
    resp = await client.post("/agent/chat", json={"message": "hi"})
    run_id = resp.headers["X-Agent-Run-Id"]
    first = await resp.content.readuntil(b"\n\n")  # the meta: the run is open
    assert first.startswith(b"event: meta")

    follower = RawClient(client.port)  # re-attaches, then reads nothing
    await follower.send("GET", f"/agent/chat/{run_id}/stream")
    logged = client.app[STATE].runlog.runs[run_id]
    await until(lambda: logged.readers > 0, "the follower attached")
    attached.set()

    async with asyncio.timeout(30):  # the first client reads the whole run at its own pace
        body = first + await resp.content.read()
    events = codecs.get("nest").decoder(strict=True).feed(body)
    assert sum(1 for e in events if type(e) is TextDelta) == count
    assert type(events[-1]) is Terminal and events[-1].status == "succeeded"

    # the follower pulls from the run log at its own pace (it holds no buffer of the run's):
    # when it reads again, what it would need next was trimmed (the log keeps 128 KiB of the
    # run), so it is cut off, its connection ending without a terminal
    followed = body_of(await follower.read_all())
    assert not followed.endswith(DONE)
    assert await metric(client, "streambridge_followers_dropped_total", route="default") == 1.0
    assert [r for r in caplog.records if r.getMessage() == "follower_dropped"]
