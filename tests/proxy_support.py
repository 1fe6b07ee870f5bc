"""Shared pieces of the proxy tests: real upstream apps on 127.0.0.1, the proxy, and readers.

No tests here. Upstreams are real aiohttp apps (run by pytest-aiohttp's ``aiohttp_server``, which
uses ``handler_cancellation=True``), so a proxy that drops its upstream connection cancels the
upstream handler, which records it.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgspec
from aiohttp import web

from streambridge import codecs
from streambridge.bridge import build_config, create_app
from streambridge.events import Event, RunStart

from .corpus import CAPTURES, GOLDEN, SCENARIOS, golden  # noqa: F401 - re-exported to the proxy tests

CONTENT_TYPES = {"agentkit": "text/event-stream", "nest": "text/event-stream", "oma": "application/x-ndjson"}
PING = b": ping\n\n"
#: the smallest agentkit request a test sends
TURN = {"text": "hi", "history": []}


@dataclass
class Capture:
    status: int
    headers: dict[str, str]
    body: bytes


def capture(name: str) -> Capture:
    """A recorded nest response: status line, recorded headers, blank line, exact body."""
    raw = (CAPTURES / name).read_bytes()
    head, body = raw.split(b"\n\n", 1)
    lines = head.decode().split("\n")
    status = int(lines[0].split()[1])
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return Capture(status, headers, body)


def frames(body: bytes, sep: bytes = b"\n\n") -> list[bytes]:
    """Whole frames with their separator (what an upstream writes one by one)."""
    return [part + sep for part in body.split(sep) if part]


# -- upstream apps -------------------------------------------------------------------------


@dataclass
class Upstream:
    """Records what the proxy sent and what happened to each upstream handler."""

    requests: list[dict[str, Any]] = field(default_factory=list)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    reached: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    controls: list[tuple[str, dict[str, Any], dict[str, str]]] = field(default_factory=list)

    async def record(self, request: web.Request) -> bytes:
        body = await request.read()
        self.requests.append({"path": request.path, "headers": dict(request.headers), "body": body})
        return body

    @property
    def last_json(self) -> Any:
        return msgspec.json.decode(self.requests[-1]["body"])


async def write_stream(
    request: web.Request,
    parts: Iterable[bytes],
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    content_type: str = "text/event-stream",
    upstream: Upstream | None = None,
    hold_after: int | None = None,
) -> web.StreamResponse:
    """Write ``parts`` one write each; after part ``hold_after`` wait for ``upstream.release``.

    A cancellation (the proxy dropped the connection) is recorded on ``upstream.cancelled``.
    """
    resp = web.StreamResponse(status=status, headers={"Content-Type": content_type, **(headers or {})})
    resp.enable_chunked_encoding()
    try:
        await resp.prepare(request)
        for i, part in enumerate(parts):
            await resp.write(part)
            if hold_after is not None and i + 1 == hold_after and upstream is not None:
                upstream.reached.set()
                await upstream.release.wait()
        return resp
    except (asyncio.CancelledError, ConnectionError):
        if upstream is not None:
            upstream.cancelled.set()
        raise


def stream_app(
    handler: Callable[[web.Request], Awaitable[web.StreamResponse]], *paths: str, method: str = "POST"
) -> web.Application:
    app = web.Application()
    for path in paths or ("/",):
        app.router.add_route(method, path, handler)
    return app


@contextlib.asynccontextmanager
async def bare_upstream(parts: Iterable[bytes]) -> AsyncIterator[str]:
    """The URL of an HTTP/1.1 upstream on 127.0.0.1 that answers with no Content-Type at all
    (aiohttp's server always adds one): ``parts`` one write each, ended by closing the connection."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            (
                int(line.split(b":", 1)[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length:")
            ),
            0,
        )
        await reader.readexactly(length)
        writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n")
        for part in parts:
            writer.write(part)
            await writer.drain()
        writer.close()
        await writer.wait_closed()

    server = await asyncio.start_server(answer, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}/up"
    finally:
        server.close()
        await server.wait_closed()


# -- the proxy -----------------------------------------------------------------------------


def proxy_config(
    upstream: str,
    source: str,
    target: str,
    *,
    path: str = "/",
    headers: Iterable[str] = (),
    environ: dict[str, str] | None = None,
    run_log: str | None = None,
    owner_header: str | None = None,
    **settings: Any,
) -> Any:
    return build_config(
        upstream=upstream,
        source=source,
        target=target,
        path=path,
        upstream_headers=list(headers),
        run_log=run_log,
        owner_header=owner_header,
        settings=settings,
        environ=environ or {},
    )


async def start_proxy(aiohttp_client: Any, config: Any) -> Any:
    """The proxy app behind a test client (its server runs with ``handler_cancellation=True``)."""
    return await aiohttp_client(create_app(config))


def url_of(server: Any, path: str = "/") -> str:
    return str(server.make_url(path))


# -- readers -------------------------------------------------------------------------------


_RESUME_ID = re.compile(rb"(?m)^id: \d+\n")


def without_ids(body: bytes) -> bytes:
    """An SSE body without the ``id:`` lines the proxy's run log numbers frames with (resume
    cursors: tested in test_proxy_resume.py, left out where a test compares translations)."""
    return _RESUME_ID.sub(b"", body)


def decode(protocol: str, body: bytes, framing: str | None = None) -> list[Event]:
    """The events of a whole body (resume ids left out), decoded strictly by the protocol's own decoder."""
    decoder = codecs.get(protocol).decoder(framing, strict=True)
    return decoder.feed(without_ids(body)) + decoder.close()


def without_comments(body: bytes) -> bytes:
    """The body's frames without heartbeat comments and resume ids."""
    return b"".join(f for f in frames(without_ids(body)) if not f.startswith(b":"))


def without_run_starts(events: list[Event]) -> list[Event]:
    return [e for e in events if type(e) is not RunStart]


async def read_until(content: Any, marker: bytes, buffer: bytearray) -> None:
    """Read a streaming body into ``buffer`` until it contains ``marker``."""
    while marker not in buffer:
        chunk = await content.readany()
        if not chunk:
            raise AssertionError(f"stream ended before {marker!r}: {bytes(buffer)[-300:]!r}")
        buffer.extend(chunk)


async def read_all(content: Any, buffer: bytearray) -> bytes:
    async for chunk in content.iter_any():
        buffer.extend(chunk)
    return bytes(buffer)
