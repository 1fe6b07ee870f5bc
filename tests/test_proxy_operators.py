"""Operators are told the truth (issue 10, point 6): a full upstream connection limit has its own
fault code and metric, shutdown cancels the runs it cuts short upstream, and idle upstream
connections live as long as ``upstream_keepalive`` says."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import replace

import aiohttp

from streambridge.bridge import build_config, create_app
from streambridge.bridge.config import ConfigError
from streambridge.bridge.state import STATE
from streambridge.events import Terminal

from .proxy_support import (
    TURN,
    Upstream,
    decode,
    golden,
    proxy_config,
    read_all,
    read_until,
    start_proxy,
    url_of,
    without_comments,
)
from .test_proxy_faults import metric
from .test_proxy_ops import golden_upstream
from .test_proxy_rounds import NestBackend

# -- the upstream connection limit ---------------------------------------------------------


async def test_a_full_connection_limit_is_its_own_fault_and_metric(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, hold_after=2))
    config = proxy_config(url_of(server, "/up"), "agentkit", "agentkit", connect_timeout=0.2)
    client = await start_proxy(aiohttp_client, replace(config, max_upstream_connections=1))
    first = await client.post("/", json=TURN)  # holds the only upstream connection
    seen = bytearray()
    await read_until(first.content, b'"text_delta"', seen)
    assert await metric(client, "streambridge_upstream_connections") == 1.0

    second = await client.post("/", json=TURN)  # queues for the connect timeout, then fails
    end = decode("agentkit", without_comments(await second.read()))[-1]
    assert type(end) is Terminal and end.status == "error"
    assert end.failure.code == "connection_limit" and end.failure.recoverable is True
    assert len(upstream.requests) == 1  # the upstream was never contacted for it
    assert await metric(client, "streambridge_connection_limit_refusals_total", route="default") == 1.0
    assert await metric(client, "streambridge_faults_total", route="default", code="connection_limit") == 1.0

    upstream.release.set()
    end = decode("agentkit", without_comments(await read_all(first.content, seen)))[-1]
    assert type(end) is Terminal and end.status == "succeeded"
    third = decode("agentkit", without_comments(await (await client.post("/", json=TURN)).read()))[-1]
    assert type(third) is Terminal and third.status == "succeeded"  # the slot was given back
    assert await metric(client, "streambridge_upstream_connections") == 0.0


async def test_a_stream_queued_for_the_limit_goes_on_when_a_slot_frees_in_time(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, hold_after=2))
    config = proxy_config(url_of(server, "/up"), "agentkit", "agentkit", connect_timeout=30)
    client = await start_proxy(aiohttp_client, replace(config, max_upstream_connections=1))
    first = await client.post("/", json=TURN)
    await read_until(first.content, b'"text_delta"', bytearray())
    second = asyncio.ensure_future(client.post("/", json=TURN))
    await asyncio.wait_for(upstream.reached.wait(), 10)
    upstream.release.set()  # the first stream ends: the queued one takes its slot
    await first.read()
    end = decode("agentkit", without_comments(await (await second).read()))[-1]
    assert type(end) is Terminal and end.status == "succeeded"
    assert len(upstream.requests) == 2


# -- shutdown ------------------------------------------------------------------------------


async def test_shutdown_cancels_a_nest_run_it_cuts_short(aiohttp_server) -> None:
    backend = NestBackend()
    up = await aiohttp_server(backend.app())
    config = replace(proxy_config(url_of(up, "/agent"), "nest", "agentkit"), drain_timeout=0.05)
    proxy = await aiohttp_server(create_app(config))
    async with aiohttp.ClientSession() as session:
        resp = await session.post(url_of(proxy, "/"), json={"text": "wait", "history": []})
        seen = bytearray()
        await read_until(resp.content, b'"text_delta"', seen)
        closing = asyncio.create_task(proxy.close())
        body = await read_all(resp.content, seen)
        await closing
    end = decode("agentkit", without_comments(body))[-1]
    assert type(end) is Terminal and end.failure.code == "shutting_down"
    await asyncio.wait_for(backend.cancelled.wait(), 10)  # the upstream request was closed
    assert backend.cancel_seen.is_set()  # and the nest run told to stop, before the proxy was gone
    assert [run_id for run_id, _ in backend.cancels] == ["d7d1fe53-6de5-4962-88cd-69ac3080f55e"]


async def test_shutdown_closes_the_connection_of_an_agentkit_run_it_cuts_short(aiohttp_server) -> None:
    upstream = Upstream()
    up = await aiohttp_server(golden_upstream(upstream, hold_after=2))
    config = replace(proxy_config(url_of(up, "/up"), "agentkit", "nest"), drain_timeout=0.05)
    proxy = await aiohttp_server(create_app(config))
    async with aiohttp.ClientSession() as session:
        resp = await session.post(url_of(proxy, "/agent/chat"), json={"message": "hi"})
        seen = bytearray()
        await read_until(resp.content, b'"kind":"text"', seen)
        closing = asyncio.create_task(proxy.close())
        body = await read_all(resp.content, seen)
        await closing
    end = decode("nest", without_comments(body))[-1]
    assert type(end) is Terminal and end.failure.code == "shutting_down"
    await asyncio.wait_for(upstream.cancelled.wait(), 10)  # its connection was closed


# -- idle upstream connections -------------------------------------------------------------


@contextlib.asynccontextmanager
async def counting_upstream() -> AsyncIterator[tuple[str, list[int], asyncio.Event]]:
    """An HTTP/1.1 keep-alive agentkit upstream that answers every request on a connection with
    the plain-text golden; it counts the requests of each connection and notes a closed one."""
    per_connection: list[int] = []
    closed = asyncio.Event()
    answer = golden("plain-text", "agentkit")
    head = (
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: "
        + str(len(answer)).encode()
        + b"\r\n\r\n"
    )

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        per_connection.append(0)
        index = len(per_connection) - 1
        try:
            while True:
                request = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(line.split(b":", 1)[1])
                        for line in request.split(b"\r\n")
                        if line.lower().startswith(b"content-length:")
                    ),
                    0,
                )
                await reader.readexactly(length)
                per_connection[index] += 1
                writer.write(head + answer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            closed.set()  # the proxy closed the connection
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    try:
        yield f"http://{host}:{port}/up", per_connection, closed
    finally:
        server.close()


async def _complete_stream(client) -> None:
    end = decode("agentkit", without_comments(await (await client.post("/", json=TURN)).read()))[-1]
    assert type(end) is Terminal and end.status == "succeeded"


async def test_idle_upstream_connections_are_kept_for_the_next_stream_by_default(aiohttp_client) -> None:
    async with counting_upstream() as (url, per_connection, closed):
        client = await start_proxy(aiohttp_client, proxy_config(url, "agentkit", "agentkit"))
        assert client.app[STATE].config.upstream_keepalive == 15.0
        await _complete_stream(client)
        await _complete_stream(client)
        assert per_connection == [2] and not closed.is_set()  # one connection, reused


async def test_with_no_keepalive_an_upstream_connection_closes_when_its_stream_ends(aiohttp_client) -> None:
    async with counting_upstream() as (url, per_connection, closed):
        config = replace(proxy_config(url, "agentkit", "agentkit"), upstream_keepalive=0)
        client = await start_proxy(aiohttp_client, config)
        await _complete_stream(client)
        await asyncio.wait_for(closed.wait(), 10)
        await _complete_stream(client)
        assert per_connection == [1, 1]


def test_upstream_keepalive_comes_from_the_environment_and_is_checked() -> None:
    base = {"upstream": "http://127.0.0.1:9/up", "source": "agentkit", "target": "nest"}
    assert build_config(**base, environ={"STREAMBRIDGE_UPSTREAM_KEEPALIVE": "0"}).upstream_keepalive == 0.0
    for bad in ("-1", "soon"):
        try:
            build_config(**base, environ={"STREAMBRIDGE_UPSTREAM_KEEPALIVE": bad})
        except ConfigError as exc:
            assert "upstream_keepalive" in str(exc)
        else:
            raise AssertionError(f"{bad!r} was accepted")
