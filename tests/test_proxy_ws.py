"""WebSocket on both sides: a real ``websockets`` client against the proxy's WS endpoint (the
request as the first message, one event per text message, a normal close), and ``ws://``
upstreams."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from aiohttp import WSMsgType, web
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosedError

from streambridge import Translator
from streambridge.events import Terminal, TextDelta

from .proxy_support import (
    CONTENT_TYPES,
    Upstream,
    decode,
    frames,
    golden,
    proxy_config,
    start_proxy,
    stream_app,
    url_of,
    without_comments,
    without_run_starts,
    write_stream,
)


def ws_url(client, path: str) -> str:
    return str(client.make_url(path)).replace("http://", "ws://", 1)


def golden_app(upstream: Upstream, scenario: str, hold_after: int | None = None) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(
            request, frames(golden(scenario, "agentkit")), upstream=upstream, hold_after=hold_after
        )

    return stream_app(handler, "/up")


async def test_websocket_client_gets_one_event_per_message_then_a_normal_close(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_app(upstream, "approval"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest"))
    messages = []
    async with connect(ws_url(client, "/ws"), proxy=None) as ws:
        await ws.send(msgspec.json.encode({"message": "refund", "threadId": "thr-ws"}).decode())
        async for message in ws:
            messages.append(message)
        assert ws.close_code == 1000
    assert upstream.last_json == {"text": "refund", "history": [], "conversationId": "thr-ws"}
    parsed = [msgspec.json.decode(m) for m in messages]  # each message is exactly one JSON object
    assert parsed[0]["event"] == "meta" and parsed[0]["data"]["threadId"] == "thr-ws"
    assert parsed[-1] == {"event": "done", "data": {}}
    events = decode("nest", "\n".join(messages).encode() + b"\n", "ndjson")
    reference = Translator("agentkit", "nest", strict=True, target_framing="ndjson", fidelity="client")
    want = decode("nest", reference.feed(golden("approval", "agentkit")) + reference.close(), "ndjson")
    assert without_run_starts(events) == without_run_starts(want)


async def test_websocket_cancel_message(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_app(upstream, "plain-text", hold_after=2))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    messages = []
    async with connect(ws_url(client, "/ws"), proxy=None) as ws:
        await ws.send('{"text":"hi","history":[]}')
        async for message in ws:
            messages.append(message)
            if '"text_delta"' in message:
                await ws.send('{"type":"cancel"}')
        assert ws.close_code == 1000
    end = msgspec.json.decode(messages[-1])
    assert end["type"] == "turn_end" and end["result"]["status"] == "cancelled"
    await asyncio.wait_for(upstream.cancelled.wait(), 10)


async def test_websocket_client_that_goes_away_cancels_the_upstream(aiohttp_server, aiohttp_client) -> None:
    """On a route without a resume grace period."""
    upstream = Upstream()
    server = await aiohttp_server(golden_app(upstream, "plain-text", hold_after=2))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "oma", resume_grace=0))
    async with connect(ws_url(client, "/ws"), proxy=None) as ws:
        await ws.send('{"prompt":"hi"}')
        while msgspec.json.decode(await ws.recv())["type"] != "text":
            pass
        await asyncio.wait_for(upstream.reached.wait(), 10)
    await asyncio.wait_for(upstream.cancelled.wait(), 10)


async def test_websocket_bad_request_closes_with_a_reason(aiohttp_server, aiohttp_client) -> None:
    client = await start_proxy(aiohttp_client, proxy_config("http://127.0.0.1:9/up", "agentkit", "nest"))
    async with connect(ws_url(client, "/ws"), proxy=None) as ws:
        await ws.send('{"nope": 1}')
        with pytest.raises(ConnectionClosedError) as closed:
            await ws.recv()  # no event: a close with the reason
    assert closed.value.rcvd.code == 1007 and "invalid nest chat request" in closed.value.rcvd.reason


def ws_upstream_app(upstream: Upstream, messages: list[str], *, then: str = "close") -> web.Application:
    async def handler(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        first = await ws.receive()
        assert first.type == WSMsgType.TEXT
        upstream.requests.append({"path": request.path, "headers": dict(request.headers), "body": first.data.encode()})
        for m in messages:
            await ws.send_str(m)
        if then == "drop":
            request.transport.abort()
        else:
            await ws.close()
        return ws

    app = web.Application()
    app.router.add_get("/ws-up", handler)
    return app


async def test_ws_upstream(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    lines = [ln for ln in golden("sources-citations", "agentkit").decode().split("\n") if ln.startswith("data: ")]
    messages = [ln[len("data: ") :] for ln in lines]
    messages[1] = msgspec.json.format(messages[1], indent=2)  # a message may span lines
    server = await aiohttp_server(ws_upstream_app(upstream, messages))
    up = url_of(server, "/ws-up").replace("http://", "ws://", 1)
    client = await start_proxy(
        aiohttp_client, proxy_config(up, "agentkit", "nest", headers=["X-Key=env:K"], environ={"K": "k-1"})
    )
    resp = await client.post("/agent/chat", json={"message": "cite"})
    body = await resp.read()
    assert upstream.last_json == {"text": "cite", "history": [], "conversationId": resp.headers["X-Agent-Thread-Id"]}
    assert upstream.requests[0]["headers"]["X-Key"] == "k-1"
    events = without_run_starts(decode("nest", without_comments(body)))
    reference = Translator("agentkit", "nest", strict=True, fidelity="client")
    want = without_run_starts(
        decode("nest", reference.feed(golden("sources-citations", "agentkit")) + reference.close())
    )
    assert events == want


async def test_ws_upstream_that_drops_mid_stream(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    messages = [
        '{"type":"turn_start","turnId":"t1","messageId":"m1"}',
        '{"type":"text_delta","messageId":"m1","text":"Hel"}',
    ]
    server = await aiohttp_server(ws_upstream_app(upstream, messages, then="drop"))
    up = url_of(server, "/ws-up").replace("http://", "ws://", 1)
    client = await start_proxy(aiohttp_client, proxy_config(up, "agentkit", "oma"))
    body = await (await client.post("/", json={"prompt": "hi"}, headers={"Accept": CONTENT_TYPES["oma"]})).read()
    events = decode("oma", body)
    assert [e.text for e in events if type(e) is TextDelta] == ["Hel"]
    assert type(events[-1]) is Terminal and events[-1].failure.code == "upstream_disconnected"


async def test_ws_upstream_refusing_the_handshake(aiohttp_server, aiohttp_client) -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=401)

    server = await aiohttp_server(stream_app(refuse, "/ws-up", method="GET"))
    up = url_of(server, "/ws-up").replace("http://", "ws://", 1)
    client = await start_proxy(aiohttp_client, proxy_config(up, "agentkit", "agentkit"))
    body = await (await client.post("/", json={"text": "hi", "history": []})).read()
    end = decode("agentkit", without_comments(body))[-1]
    assert end.failure.code == "upstream_unauthorized"
