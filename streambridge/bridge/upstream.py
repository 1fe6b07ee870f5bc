"""Upstream connections: an HTTP(S) stream read with aiohttp, or a ``ws://``/``wss://`` peer.

Both yield raw upstream bytes chunk by chunk and raise :class:`~.faults.UpstreamFault` for every
failure. aiohttp's defaults break streaming (``total=300`` s timeout, 100 connections, a 512 KiB
line cap), so the session is built here with ``total=None``, an idle ``sock_read`` and an explicit
connection limit, and bodies are read with ``iter_any()`` (no line splitting).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

import aiohttp
import websockets
from websockets.asyncio.client import connect as ws_connect
from yarl import URL

from .buffers import bound_upstream, read_buffer
from .config import Route
from .faults import UpstreamFault, fault_for_status, retry_after_ms

if TYPE_CHECKING:
    from prometheus_client import Counter, Gauge

__all__ = ["ConnectionLimit", "HttpUpstream", "Upstream", "WsUpstream", "make_session", "open_upstream"]

_ERROR_BODY_LIMIT = 2048


def make_session(keepalive: float) -> aiohttp.ClientSession:
    """One pooled session per app; timeouts are set per route on each request.

    The connector has no limit of its own: :class:`ConnectionLimit` bounds the streams (so a full
    pool is told apart from a slow upstream), and control requests (cancel, approve) must never
    queue behind streams. A connection whose response was read to its end goes back to the pool
    for ``keepalive`` seconds (aiohttp closes idle ones at that interval, so it may take up to
    twice as long); with 0 every connection closes when its stream ends."""
    connector = aiohttp.TCPConnector(
        limit=0,
        limit_per_host=0,
        enable_cleanup_closed=False,
        force_close=keepalive == 0,
        keepalive_timeout=keepalive if keepalive > 0 else None,
    )
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=300)
    return aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False, auto_decompress=True)


class ConnectionLimit:
    """The proxy's own limit of open upstream streams (``max_upstream_connections``).

    A stream queues for a free slot for at most its route's connect timeout, then fails as
    ``connection_limit``: not ``upstream_timeout``, because the upstream was never contacted."""

    def __init__(self, limit: int, in_use: Gauge, refused: Counter) -> None:
        self.limit = limit
        self._free = asyncio.Semaphore(limit)
        self._in_use = in_use
        self._refused = refused

    async def take(self, route: Route) -> None:
        try:
            async with asyncio.timeout(route.connect_timeout):
                await self._free.acquire()
        except TimeoutError:
            self._refused.labels(route.name).inc()
            raise UpstreamFault("connection_limit", detail=f"all {self.limit} upstream connections in use") from None
        self._in_use.inc()

    def give_back(self) -> None:
        self._free.release()
        self._in_use.dec()


def route_timeout(route: Route) -> aiohttp.ClientTimeout:
    return aiohttp.ClientTimeout(total=None, sock_connect=route.connect_timeout, sock_read=route.idle_timeout)


def _safe_text(raw: bytes, limit: int = 200) -> str:
    """Upstream error text a route chose to expose: printable, one line, short."""
    text = raw.decode("utf-8", "replace")
    text = "".join(c if c.isprintable() else " " for c in text)
    return " ".join(text.split())[:limit]


class Upstream:
    """An upstream stream: ``await open()`` gives the first chunk, then ``await read()`` the next
    ones (``b""`` at the end), and ``await close()`` ends it (always called, even after a failed
    open). ``read`` is the transport's own read where possible (no wrapper per chunk);
    :meth:`fault` names a read error. ``run_id`` / ``content_type`` once it answered (``run_id``
    from the response header its protocol names runs in, if it has runs). A stream holds a slot
    of the :class:`ConnectionLimit` from before it connects until it is closed.
    """

    read: Callable[[], Awaitable[bytes]]

    def __init__(self, route: Route, limit: ConnectionLimit | None) -> None:
        self.route = route
        self.limit = limit
        self.run_id: str | None = None
        self.content_type: str = ""
        self.ttfb: float | None = None
        self.aborted = False
        self.headers: Mapping[str, str] = {}
        self._holding = False

    async def open(self) -> bytes:
        if self.limit is not None:
            await self.limit.take(self.route)
            self._holding = True
        return await self._connect()

    async def close(self) -> None:
        try:
            await self._close()
        finally:
            if self._holding and self.limit is not None:
                self._holding = False
                self.limit.give_back()

    async def _connect(self) -> bytes:
        raise NotImplementedError

    async def _close(self) -> None:
        raise NotImplementedError

    def fault(self, exc: Exception) -> UpstreamFault | None:
        """A read error as an upstream fault; None when it is not the upstream's."""
        raise NotImplementedError

    def abort(self) -> None:
        """The client went away or cancelled: drop the connection instead of closing politely."""
        self.aborted = True


class HttpUpstream(Upstream):
    def __init__(
        self,
        session: aiohttp.ClientSession,
        route: Route,
        url: str,
        body: bytes,
        headers: Mapping[str, str],
        limit: ConnectionLimit | None = None,
        run_id_header: str | None = None,
    ) -> None:
        super().__init__(route, limit)
        self.session = session
        self.url = url
        self.body = body
        self.headers = headers
        self.run_id_header = run_id_header
        self.response: aiohttp.ClientResponse | None = None

    async def _connect(self) -> bytes:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(self.route.first_byte_timeout):
                resp = self.response = await self.session.post(
                    self.url,
                    data=self.body,
                    headers=self.headers,
                    timeout=route_timeout(self.route),
                    allow_redirects=False,
                    read_bufsize=read_buffer(self.route.stream_buffer_bytes),
                )
                if not 200 <= resp.status < 300:
                    await self._refuse(resp)
                bound_upstream(resp.connection.transport if resp.connection else None, self.route.stream_buffer_bytes)
                if self.run_id_header is not None:
                    self.run_id = resp.headers.get(self.run_id_header)
                self.content_type = resp.headers.get("Content-Type", "")
                # what iter_any() does (no line splitting, no line cap), at most one buffer a read
                self.read = functools.partial(resp.content.read, self.route.stream_buffer_bytes)
                first = await self.read()
        except TimeoutError:  # aiohttp's ServerTimeoutError is a TimeoutError too
            raise UpstreamFault("upstream_timeout", detail="no first byte in time") from None
        except aiohttp.ClientPayloadError as exc:
            raise UpstreamFault("upstream_disconnected", detail=type(exc).__name__) from None
        except aiohttp.ClientError as exc:
            raise UpstreamFault("upstream_unavailable", detail=type(exc).__name__) from None
        self.ttfb = loop.time() - started
        return first

    def fault(self, exc: Exception) -> UpstreamFault | None:
        if isinstance(exc, TimeoutError):
            return UpstreamFault("upstream_idle", detail="read timeout")
        if isinstance(exc, aiohttp.ClientError):  # payload errors and dropped connections
            return UpstreamFault("upstream_disconnected", detail=type(exc).__name__)
        return None

    async def _close(self) -> None:
        if self.response is not None:
            self.response.close()  # not fully read: drop the connection, the upstream sees the cancel

    async def _refuse(self, resp: aiohttp.ClientResponse) -> None:
        code = fault_for_status(resp.status)
        exposed = ""
        if self.route.expose_upstream_errors:
            try:
                exposed = _safe_text(await resp.content.read(_ERROR_BODY_LIMIT))
            except aiohttp.ClientError:
                exposed = ""
        raise UpstreamFault(
            code,
            http_status=resp.status,
            retry_after=retry_after_ms(resp.headers.get("Retry-After")),
            detail=f"HTTP {resp.status}",
            exposed=exposed,
        )


class WsUpstream(Upstream):
    """A ``ws://`` peer: the request is the first text message; every message is one event."""

    def __init__(
        self, route: Route, url: str, body: bytes, headers: Mapping[str, str], limit: ConnectionLimit | None = None
    ) -> None:
        super().__init__(route, limit)
        self.url = url
        self.body = body
        self.headers = {
            k: v for k, v in headers.items() if k.lower() not in ("content-type", "accept", "accept-encoding")
        }
        self.content_type = "application/x-ndjson"
        self.ws: websockets.ClientConnection | None = None
        self.read = self._recv

    async def _connect(self) -> bytes:
        loop = asyncio.get_running_loop()
        started = loop.time()
        try:
            async with asyncio.timeout(self.route.first_byte_timeout):
                self.ws = await _ConnectNoRedirect(
                    self.url,
                    additional_headers=self.headers,
                    open_timeout=None,
                    proxy=None,
                    compression=None,
                    max_size=self.route.max_frame_bytes,
                    ping_interval=None,
                )
                bound_upstream(self.ws.transport, self.route.stream_buffer_bytes)
                await self.ws.send(self.body.decode("utf-8"))
                message = await self.ws.recv()
        except TimeoutError:
            raise UpstreamFault("upstream_timeout", detail="no first message in time") from None
        except websockets.InvalidStatus as exc:
            status = exc.response.status_code
            raise UpstreamFault(
                fault_for_status(status),
                http_status=status,
                retry_after=retry_after_ms(exc.response.headers.get("Retry-After")),
                detail=f"HTTP {status}",
            ) from None
        except websockets.ConnectionClosed as exc:
            raise _closed_fault(exc) from None
        except (OSError, websockets.InvalidHandshake, websockets.InvalidURI) as exc:
            raise UpstreamFault("upstream_unavailable", detail=type(exc).__name__) from None
        self.ttfb = loop.time() - started
        return _line(message)

    async def _recv(self) -> bytes:
        assert self.ws is not None
        try:
            async with asyncio.timeout(self.route.idle_timeout):
                return _line(await self.ws.recv())
        except websockets.ConnectionClosedOK:
            return b""

    def fault(self, exc: Exception) -> UpstreamFault | None:
        if isinstance(exc, TimeoutError):
            return UpstreamFault("upstream_idle", detail="read timeout")
        if isinstance(exc, websockets.ConnectionClosed):
            return _closed_fault(exc)
        return None

    async def _close(self) -> None:
        """A polite close after a finished stream; an immediate abort when cancelled or broken."""
        ws = self.ws
        if ws is None:
            return
        if not self.aborted:
            try:
                async with asyncio.timeout(1.0):
                    await ws.close()
                return
            except TimeoutError:
                pass
        if ws.transport is not None:
            ws.transport.abort()


class _ConnectNoRedirect(ws_connect):
    """websockets' ``connect``, which would follow a redirect (with the route's headers, but for
    ``Authorization`` and ``Cookie``): a redirect is an answer like any other refusal."""

    def process_redirect(self, exc: Exception) -> Exception | str:
        return exc


def _closed_fault(exc: websockets.ConnectionClosed) -> UpstreamFault:
    code = exc.rcvd.code if exc.rcvd is not None else None
    if code == 1009 or (exc.sent is not None and exc.sent.code == 1009):
        return UpstreamFault("frame_too_large", detail="message too big")
    return UpstreamFault("upstream_disconnected", detail=f"websocket closed ({code})")


def _line(message: str | bytes) -> bytes:
    """One WebSocket message as one NDJSON line (raw line breaks inside JSON are only whitespace)."""
    data = message.encode("utf-8", "surrogateescape") if isinstance(message, str) else message
    if b"\n" in data or b"\r" in data:
        data = data.replace(b"\r", b" ").replace(b"\n", b" ")
    return data + b"\n"


def open_upstream(
    session: aiohttp.ClientSession,
    route: Route,
    url: str,
    body: bytes,
    headers: Mapping[str, str],
    limit: ConnectionLimit | None = None,
    run_id_header: str | None = None,
) -> Upstream:
    """The upstream stream at ``url``: over WebSocket for ``ws(s)://``, else HTTP (whose response
    names its run in ``run_id_header``, when the upstream's protocol has runs)."""
    if URL(url).scheme in ("ws", "wss"):
        return WsUpstream(route, url, body, headers, limit)
    return HttpUpstream(session, route, url, body, headers, limit, run_id_header)
