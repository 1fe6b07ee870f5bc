"""Operations and security: heartbeats, disconnect → upstream cancelled, graceful shutdown,
health and metrics, credentials that never reach a client or a log, header rules, limits, CORS."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace

import aiohttp
import msgspec
import pytest
from aiohttp import web

from streambridge import Translator
from streambridge.bridge import build_config, create_app
from streambridge.bridge.logging import JsonFormatter, TextFormatter
from streambridge.bridge.relay import PING, Watchdog
from streambridge.bridge.state import STATE
from streambridge.events import Terminal

from .proxy_support import (
    TURN,
    Upstream,
    decode,
    frames,
    golden,
    proxy_config,
    read_all,
    read_until,
    start_proxy,
    stream_app,
    url_of,
    without_comments,
    write_stream,
)

SECRET = "sk-live-5b1e0c9a77d2-DO-NOT-LEAK"


def golden_upstream(
    upstream: Upstream, scenario: str = "plain-text", hold_after: int | None = None, **kw
) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(
            request, frames(golden(scenario, "agentkit")), upstream=upstream, hold_after=hold_after, **kw
        )

    return stream_app(handler, "/up")


def reference(scenario: str, target: str) -> bytes:
    t = Translator("agentkit", target, strict=True, fidelity="client")  # as the proxy serves it
    return t.feed(golden(scenario, "agentkit")) + t.close()


# -- heartbeats ----------------------------------------------------------------------------


async def test_heartbeats_when_idle_only_between_frames(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, hold_after=2))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest", heartbeat=0.05))
    resp = await client.post("/agent/chat", json={"message": "hi"})
    seen = bytearray()
    await read_until(resp.content, b'"kind":"text"', seen)
    mark = seen.index(b'"kind":"text"')
    while PING not in seen[mark:]:  # wait for a heartbeat after the text frame: the upstream is idle
        chunk = await resp.content.readany()
        assert chunk, "the stream ended without a heartbeat"
        seen.extend(chunk)
    upstream.release.set()  # the upstream goes on only once a heartbeat was seen mid-stream
    body = await read_all(resp.content, seen)

    blocks = body.split(b"\n\n")
    assert blocks[-1] == b""
    assert blocks[0].startswith(b"event: meta") and blocks[1] == b": ping"  # one before the first upstream byte
    first_text = next(i for i, b in enumerate(blocks) if b'"kind":"text"' in b)
    assert b": ping" in blocks[first_text + 1 :]  # and more while the upstream was idle
    for block in blocks[:-1]:  # every block is a whole frame or a whole comment
        assert block == b": ping" or block.startswith((b"data: ", b"event: ", b"id: ")), block
    events = decode("nest", without_comments(body))
    want = decode("nest", reference("plain-text", "nest"))
    assert [e for e in events if type(e).__name__ != "RunStart"] == [e for e in want if type(e).__name__ != "RunStart"]
    metrics = await (await client.get("/metrics")).text()
    assert 'streambridge_heartbeats_total{route="default"}' in metrics


class FakeSink:
    heartbeat = PING
    sep = b"\n\n"

    def __init__(self) -> None:
        self.pending = 0
        self.written: list[bytes] = []

    async def write(self, data: bytes) -> None:
        self.written.append(data)

    def quiet(self) -> bool:
        return self.pending == 0

    def abort(self) -> None:
        pass


async def test_no_heartbeat_while_backed_up_or_mid_write() -> None:
    sink = FakeSink()
    pings = []
    dog = Watchdog(sink, 0.05, 60, lambda: pings.append(1), lambda: None)  # type: ignore[arg-type]
    sink.pending = 70_000  # the client's transport has bytes it did not take yet
    assert await dog.beat() is False
    sink.pending = 0
    dog.begin()  # a write is in progress
    assert await dog.beat() is False
    dog.end()
    assert await dog.beat() is True
    assert sink.written == [PING] and pings == [1]


# -- cancellation and shutdown -------------------------------------------------------------


async def test_client_disconnect_cancels_the_upstream_at_once(aiohttp_server, aiohttp_client) -> None:
    """On a route without a resume grace period (see test_proxy_resume.py for one with)."""
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, hold_after=2))
    config = proxy_config(url_of(server, "/up"), "agentkit", "agentkit", resume_grace=0)
    client = await start_proxy(aiohttp_client, config)
    resp = await client.post("/", json=TURN)
    await read_until(resp.content, b'"text_delta"', bytearray())
    await asyncio.wait_for(upstream.reached.wait(), 10)
    resp.close()
    await asyncio.wait_for(upstream.cancelled.wait(), 10)
    state = client.app[STATE]
    await asyncio.wait_for(state.idle.wait(), 10)
    metrics = await (await client.get("/metrics")).text()
    assert 'streambridge_streams_total{outcome="client_disconnected",route="default"} 1.0' in metrics
    assert 'streambridge_open_streams{route="default"} 0.0' in metrics


async def _shutdown_case(aiohttp_server, drain_timeout: float, release_during_drain: bool) -> tuple[bytes, Upstream]:
    upstream = Upstream()
    up = await aiohttp_server(golden_upstream(upstream, hold_after=2))
    config = replace(proxy_config(url_of(up, "/up"), "agentkit", "agentkit"), drain_timeout=drain_timeout)
    app = create_app(config)
    draining = asyncio.Event()

    async def mark(_app: web.Application) -> None:
        draining.set()

    app.on_shutdown.insert(0, mark)
    proxy = await aiohttp_server(app)
    async with aiohttp.ClientSession() as session:
        resp = await session.post(url_of(proxy, "/"), json=TURN)
        seen = bytearray()
        await read_until(resp.content, b'"text_delta"', seen)
        closing = asyncio.create_task(proxy.close())
        await draining.wait()
        if release_during_drain:
            upstream.release.set()
        body = await read_all(resp.content, seen)
        await closing
    return body, upstream


async def test_shutdown_lets_open_streams_finish(aiohttp_server) -> None:
    body, _ = await _shutdown_case(aiohttp_server, drain_timeout=30, release_during_drain=True)
    end = decode("agentkit", without_comments(body))[-1]
    assert type(end) is Terminal and end.status == "succeeded"


async def test_shutdown_ends_streams_left_after_the_drain_timeout_with_a_terminal(aiohttp_server) -> None:
    body, upstream = await _shutdown_case(aiohttp_server, drain_timeout=0.1, release_during_drain=False)
    end = decode("agentkit", without_comments(body))[-1]
    assert type(end) is Terminal and end.status == "error" and end.failure.code == "shutting_down"
    assert end.failure.recoverable is True
    await asyncio.wait_for(upstream.cancelled.wait(), 10)


# -- health and metrics --------------------------------------------------------------------


async def test_healthz_and_metrics(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "oma"))
    health = await client.get("/healthz")
    assert health.status == 200 and await health.json() == {"status": "ok", "openStreams": 0}
    body = await (await client.post("/", json={"prompt": "hi"})).read()
    text = await (await client.get("/metrics")).text()
    out_frames = body.count(b"\n")
    assert f'streambridge_frames_out_total{{route="default"}} {float(out_frames)}' in text
    assert 'streambridge_frames_in_total{route="default"}' in text
    assert 'streambridge_upstream_ttfb_seconds_count{route="default"} 1.0' in text
    assert 'streambridge_streams_total{outcome="completed",route="default"} 1.0' in text
    for family in (
        "open_streams gauge",
        "translation_errors_total counter",
        "faults_total counter",
        "upstream_ttfb_seconds histogram",
    ):
        assert f"# TYPE streambridge_{family}" in text


# -- security ------------------------------------------------------------------------------


async def test_credentials_never_reach_the_client_or_the_logs(aiohttp_server, aiohttp_client, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    seen_auth: list[str] = []

    async def handler(request: web.Request) -> web.StreamResponse:
        seen_auth.append(request.headers.get("Authorization", ""))
        if (await request.json())["text"] == "fail":
            return web.Response(
                status=401,
                text=f"bad token {request.headers['Authorization']}",
                headers={"WWW-Authenticate": f"Bearer {SECRET}"},
            )
        return await write_stream(
            request, frames(golden("plain-text", "agentkit")), headers={"X-Echo-Auth": request.headers["Authorization"]}
        )

    server = await aiohttp_server(stream_app(handler, "/up"))
    config = proxy_config(
        url_of(server, "/up"),
        "agentkit",
        "nest",
        headers=["Authorization=env:UP_TOKEN"],
        environ={"UP_TOKEN": f"Bearer {SECRET}"},
    )
    assert SECRET not in repr(config) and SECRET not in str(config.routes[0])
    client = await start_proxy(aiohttp_client, config)
    for text in ("ok", "fail"):
        resp = await client.post("/agent/chat", json={"message": text}, headers={"Authorization": "Bearer client"})
        body = await resp.read()
        assert SECRET not in body.decode()
        assert all(SECRET not in f"{k}: {v}" for k, v in resp.headers.items())
    assert seen_auth == [f"Bearer {SECRET}"] * 2  # the route's credential, not the client's
    assert SECRET not in await (await client.get("/metrics")).text()
    for record in caplog.records:
        for formatter in (JsonFormatter(), TextFormatter()):
            assert SECRET not in formatter.format(record)
    assert any(r.getMessage() == "stream_fault" for r in caplog.records)


@pytest.mark.parametrize("forward_auth", [False, True])
async def test_client_headers_forwarded_upstream(aiohttp_server, aiohttp_client, forward_auth) -> None:
    """An allow-list: negotiation, language, user agent, tracing and request ids by default, plus
    what the route names; credential-like headers only when the route forwards credentials."""
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream))
    config = proxy_config(
        url_of(server, "/up"),
        "agentkit",
        "agentkit",
        headers=["X-Api-Key=env:K"],
        environ={"K": "route-key"},
        forward_auth=forward_auth,
        forward_headers=("X-Keep", "X-Session-Token"),
    )
    client = await start_proxy(aiohttp_client, config)
    await (
        await client.post(
            "/?upstream=http://evil.example/",
            json=TURN,
            headers={
                "Connection": "keep-alive, X-Hop",
                "X-Hop": "1",
                "Keep-Alive": "timeout=5",
                "TE": "trailers",
                "Proxy-Authorization": "Basic eHg6eHg=",
                "X-Keep": "yes",
                "Authorization": "Bearer client",
                "Cookie": "sid=1",
                "X-Api-Key": "client-key",
                "X-Forwarded-Host": "evil.example",
                "Via": "1.1 evil",
                "X-Original-URL": "/admin",
                "X-Rewrite-URL": "/admin",
                "Set-Cookie": "a=1",
                "X-Other": "not named",
                "X-Session-Token": "tok",
                "X-Auth-Token": "tok2",
                "Accept-Language": "fr",
                "User-Agent": "ua/1",
                "traceparent": "00-abc-def-01",
                "X-Request-Id": "rq-1",
            },
        )
    ).read()
    got = upstream.requests[0]
    assert got["path"] == "/up"
    headers = {k.lower(): v for k, v in got["headers"].items()}
    assert headers["x-keep"] == "yes"  # named by the route
    assert headers["x-api-key"] == "route-key"  # the route's own credential, never the client's
    for name, value in (
        ("accept-language", "fr"),
        ("user-agent", "ua/1"),
        ("traceparent", "00-abc-def-01"),
        ("x-request-id", "rq-1"),
    ):
        assert headers[name] == value
    for dropped in (
        "x-hop",
        "keep-alive",
        "te",
        "proxy-authorization",
        "x-forwarded-host",
        "via",
        "x-original-url",
        "x-rewrite-url",
        "set-cookie",
        "x-other",
        "x-auth-token",
    ):
        assert dropped not in headers, dropped
    assert ("authorization" in headers) is forward_auth
    assert ("cookie" in headers) is forward_auth
    assert ("x-session-token" in headers) is forward_auth  # credential-like: named, and credentials on


async def test_upstream_redirects_are_not_followed(aiohttp_server, aiohttp_client) -> None:
    elsewhere = Upstream()
    other = await aiohttp_server(golden_upstream(elsewhere))

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(url_of(other, "/up"))

    server = await aiohttp_server(stream_app(redirect, "/up"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    assert decode("agentkit", without_comments(body))[-1].failure.code == "upstream_redirected"
    assert elsewhere.requests == []


async def test_request_limits_and_bad_requests(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest", max_request_bytes=1024)
    )
    big = await client.post("/agent/chat", json={"message": "x" * 2000})
    assert big.status == 413 and (await big.json())["code"] == "request_too_large"
    bad = await client.post("/agent/chat", data=b"{not json", headers={"Content-Type": "application/json"})
    assert bad.status == 400 and (await bad.json())["code"] == "bad_request"
    regen = await client.post("/agent/chat", json={"message": "again", "regenerate": True})
    assert regen.status == 400 and "regenerate requires an existing threadId" in (await regen.json())["message"]
    assert upstream.requests == []


async def test_passthrough_forwards_the_body_unchanged(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "oma", request_mode="passthrough")
    )
    raw = b'{"custom": [1, 2], "text": "as is"}'
    body = await (await client.post("/", data=raw, headers={"Content-Type": "application/vnd.custom+json"})).read()
    assert upstream.requests[0]["body"] == raw
    assert upstream.requests[0]["headers"]["Content-Type"] == "application/vnd.custom+json"
    assert body == reference("plain-text", "oma")


async def test_cors(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest", cors_origins="https://app.example")
    )
    pre = await client.options(
        "/agent/chat",
        headers={
            "Origin": "https://app.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, x-actor-id",
        },
    )
    assert pre.status == 204
    assert pre.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert pre.headers["Access-Control-Allow-Headers"] == "content-type, x-actor-id"
    ok = await client.post("/agent/chat", json={"message": "hi"}, headers={"Origin": "https://app.example"})
    await ok.read()
    assert ok.headers["Access-Control-Allow-Origin"] == "https://app.example"
    assert "X-Agent-Run-Id" in ok.headers["Access-Control-Expose-Headers"]
    other = await client.post("/agent/chat", json={"message": "hi"}, headers={"Origin": "https://evil.example"})
    await other.read()
    assert "Access-Control-Allow-Origin" not in other.headers
    assert (await client.options("/agent/chat", headers={"Origin": "https://evil.example"})).status == 403


async def test_a_resume_is_refused_once_the_frames_it_needs_were_trimmed(aiohttp_server, aiohttp_client) -> None:
    """The memory run log keeps ``replay_limit_bytes`` of a run (its newest writes): a resume
    that needs older frames is a 404, one from a cursor still kept is served."""
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream, hold_after=3))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest", replay_limit_bytes=64)
    )
    resp = await client.post("/agent/chat", json={"message": "hi"})
    seen = bytearray()
    await read_until(resp.content, b'"kind":"text"', seen)  # one write logged: the rest is another
    await asyncio.wait_for(upstream.reached.wait(), 10)
    upstream.release.set()
    body = await read_all(resp.content, seen)
    assert body.endswith(b"event: done\ndata: {}\n\n")
    run_id = resp.headers["X-Agent-Run-Id"]
    assert (await client.get(f"/agent/chat/{run_id}/stream")).status == 404  # from the start: trimmed
    last_id = body.rsplit(b"\nid: ", 1)[1].split(b"\n", 1)[0].decode()
    late = await client.get(f"/agent/chat/{run_id}/stream?after={last_id}")
    assert late.status == 200
    assert (await late.read()).endswith(b"event: done\ndata: {}\n\n")
    assert msgspec.json.decode(await (await client.get("/healthz")).read())["openStreams"] == 0


async def test_several_routes_from_routes_toml(aiohttp_server, aiohttp_client, tmp_path) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(upstream))
    path = tmp_path / "routes.toml"
    path.write_text(
        f'[[routes]]\nname = "web"\npath = "/web/"\nupstream = "{url_of(server, "/up")}"\nfrom = "agentkit"\nto = "nest"\n'
        f'[[routes]]\nname = "ops"\npath = "/ops/"\nupstream = "{url_of(server, "/up")}"\nfrom = "agentkit"\nto = "oma"\n',
        encoding="utf-8",
    )
    client = await start_proxy(aiohttp_client, build_config(config_file=path, environ={}))
    web_resp = await client.post("/web/agent/chat", json={"message": "hi"})
    assert web_resp.status == 201 and (await web_resp.read()).endswith(b"event: done\ndata: {}\n\n")
    ops_body = await (await client.post("/ops/", json={"prompt": "hi"})).read()
    assert ops_body == reference("plain-text", "oma")
    metrics = await (await client.get("/metrics")).text()
    for name in ("web", "ops"):
        assert f'streambridge_streams_total{{outcome="completed",route="{name}"}} 1.0' in metrics
