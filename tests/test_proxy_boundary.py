"""The browser boundary (issue 27, points 4-10): a page of another site, or one that rebinds its
own name to 127.0.0.1, gets nothing from the proxy; control calls never follow a redirect; the
inspector shows no credential however it is spelled or cut; identities do not see each other's
runs; proxy headers never go upstream; an oversized header leaves no credential in a log."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import replace
from typing import Any

import pytest
from aiohttp import WSMsgType, web
from multidict import CIMultiDict

from streambridge.bridge import ConfigError, build_config
from streambridge.bridge.state import STATE
from streambridge.bridge.surfaces import upstream_headers
from streambridge.cli import replay_server as replay
from streambridge.inspector.analysis import REDACTED

from .inspector_support import ANSWER, ANSWER_FRAMES, UPSTREAM_SECRET, NestBackend, echo_frame, inspected_proxy
from .proxy_support import (
    GOLDEN,
    TURN,
    Upstream,
    capture,
    decode,
    frames,
    golden,
    proxy_config,
    read_until,
    start_proxy,
    stream_app,
    url_of,
    without_comments,
    write_stream,
)

EVIL = "https://evil.example"
APP = "https://app.example"
CHAT = {
    "id": "chat-7",
    "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
    "trigger": "submit-message",
}


def agentkit_upstream(upstream: Upstream, hold_after: int | None = None) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        parts = frames(golden("plain-text", "agentkit"))
        return await write_stream(request, parts, upstream=upstream, hold_after=hold_after)

    return stream_app(handler, "/up")


async def agentkit_proxy(aiohttp_server: Any, aiohttp_client: Any, upstream: Upstream, **settings: Any) -> Any:
    """An agentkit client in front of an agentkit upstream (the same protocol: no translation in the way)."""
    server = await aiohttp_server(agentkit_upstream(upstream, settings.pop("hold_after", None)))
    return await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit", **settings))


def origin_of(client: Any) -> str:
    return str(client.make_url("/")).rstrip("/")


# -- 4. the WebSocket checks Origin as CORS does ----------------------------------------------


@pytest.mark.parametrize("cors", [(), (APP,)])
async def test_a_websocket_from_a_foreign_origin_is_closed_with_1008_before_any_upstream_call(
    aiohttp_server, aiohttp_client, cors: tuple[str, ...]
) -> None:
    upstream = Upstream()
    client = await agentkit_proxy(aiohttp_server, aiohttp_client, upstream, cors_origins=cors, forward_auth=True)
    async with client.ws_connect("/ws", headers={"Origin": EVIL, "Cookie": "session=victim"}) as ws:
        await ws.send_json(TURN)  # (a refused socket reads nothing)
        msg = await ws.receive()
    assert msg.type == WSMsgType.CLOSE and (msg.data, msg.extra) == (1008, "origin_not_allowed")
    assert upstream.requests == []


@pytest.mark.parametrize("origin", [APP, "same"])
async def test_a_websocket_from_an_allowed_or_the_servers_own_origin_runs(
    aiohttp_server, aiohttp_client, origin
) -> None:
    upstream = Upstream()
    client = await agentkit_proxy(aiohttp_server, aiohttp_client, upstream, cors_origins=(APP,))
    origin = origin_of(client) if origin == "same" else origin
    async with client.ws_connect("/ws", headers={"Origin": origin}) as ws:
        await ws.send_json(TURN)
        messages = [msg async for msg in ws]
    assert ws.close_code == 1000 and len(messages) > 1
    assert len(upstream.requests) == 1


# -- 5. only the server's own host names are answered -----------------------------------------


async def test_a_rebound_host_name_gets_421_on_every_route_the_inspector_included(
    aiohttp_server, aiohttp_client
) -> None:
    upstream = Upstream()
    server = await aiohttp_server(agentkit_upstream(upstream))
    config = replace(proxy_config(url_of(server, "/up"), "agentkit", "agentkit"), inspect=True)
    client = await start_proxy(aiohttp_client, config)
    assert (await client.post("/", json=TURN)).status == 200  # a stream for the inspector to list
    evil = {"Host": "evil.example:8787"}
    listed = await client.get("/_inspect/api/streams", headers=evil)
    assert listed.status == 421
    body = await listed.json()
    assert body["code"] == "host_not_allowed" and "--allowed-host" in body["message"]
    assert "streams" not in body
    for method, path in [("POST", "/"), ("GET", "/healthz"), ("GET", "/metrics"), ("GET", "/ws")]:
        resp = await client.request(method, path, json=TURN, headers=evil)
        assert resp.status == 421, path
    assert len(upstream.requests) == 1
    for host in ["127.0.0.1", "localhost:8787", "[::1]:8787", "LOCALHOST", "10.1.2.3:80"]:
        assert (await client.get("/_inspect/api/streams", headers={"Host": host})).status == 200, host


async def test_allowed_hosts_name_the_others(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    server = await aiohttp_server(agentkit_upstream(upstream))
    config = replace(
        proxy_config(url_of(server, "/up"), "agentkit", "agentkit"),
        allowed_hosts=("agents.example.com", ".internal.example"),
    )
    client = await start_proxy(aiohttp_client, config)
    for host, status in [
        ("agents.example.com", 200),
        ("agents.example.com:443", 200),
        ("a.internal.example", 200),
        ("internal.example", 200),
        ("example.com", 421),
        ("agents.example.com.evil.example", 421),
        ("xinternal.example", 421),
    ]:
        assert (await client.get("/healthz", headers={"Host": host})).status == status, host


def test_allowed_hosts_come_from_the_flag_the_server_table_or_the_environment(tmp_path) -> None:
    route = {"upstream": "http://127.0.0.1:9/up", "source": "agentkit", "target": "agentkit", "environ": {}}
    assert build_config(**route, allowed_hosts=["a.example"]).allowed_hosts == ("a.example",)
    env = {"STREAMBRIDGE_ALLOWED_HOSTS": "a.example .b.example", "STREAMBRIDGE_REQUIRE_IDENTITY": "1"}
    config = build_config(**{**route, "environ": env})
    assert config.allowed_hosts == ("a.example", ".b.example") and config.require_identity
    toml = tmp_path / "routes.toml"
    toml.write_text('[server]\nallowed_hosts = ["c.example"]\nrequire_identity = true\n')
    config = build_config(**route, config_file=toml)
    assert config.allowed_hosts == ("c.example",) and config.require_identity
    assert build_config(**route).allowed_hosts == () and not build_config(**route).require_identity
    with pytest.raises(ConfigError, match="expected a host name"):
        build_config(**route, allowed_hosts=["http://a.example/"])


async def test_replay_serve_keeps_the_same_boundary(aiohttp_client) -> None:
    recording = replay.load_recording(GOLDEN / "plain-text/nest.sse", None)
    app = replay.make_replay_app([replay.render(recording, None, None)], cors=APP, allowed_hosts=["replay"])
    client = await aiohttp_client(app)
    assert (await client.post("/agent/chat", json={"message": "hi"}, headers={"Host": "evil.example"})).status == 421
    assert (await client.post("/agent/chat", json={"message": "hi"}, headers={"Origin": EVIL})).status == 403
    text = await client.post("/agent/chat", data=b'{"message": "hi"}', headers={"Content-Type": "text/plain"})
    assert text.status == 415
    for headers in [{"Host": "replay:8788"}, {"Origin": APP}, {"Origin": origin_of(client)}]:
        resp = await client.post("/agent/chat", json={"message": "hi"}, headers=headers)
        assert resp.status == 201, headers
        await resp.read()


# -- 6. cross-site request forgery ------------------------------------------------------------


async def test_a_cross_site_text_plain_post_is_415_and_a_foreign_origin_403(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    client = await agentkit_proxy(aiohttp_server, aiohttp_client, upstream, cors_origins=(APP,))
    body = b'{"text": "hi", "history": []}'
    for content_type in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"]:
        resp = await client.post("/", data=body, headers={"Content-Type": content_type})
        assert resp.status == 415, content_type
        assert (await resp.json())["code"] == "unsupported_media_type"
    approve = await client.post(
        "/tool-call/approve", data=b'{"toolCallId":"c1"}', headers={"Content-Type": "text/plain"}
    )
    assert approve.status == 415
    for path in ["/", "/tool-call/approve", "/runs/r-1/cancel"]:
        resp = await client.post(path, json={"toolCallId": "c1", **TURN}, headers={"Origin": EVIL})
        assert resp.status == 403, path
        assert (await resp.json())["code"] == "origin_not_allowed"
        assert "Access-Control-Allow-Origin" not in resp.headers
    assert (await client.get("/runs/r-1/stream", headers={"Origin": EVIL})).status == 403
    assert upstream.requests == []
    for origin in [APP, origin_of(client)]:  # the allowed origin, and the server's own page
        resp = await client.post("/", json=TURN, headers={"Origin": origin})
        assert resp.status == 200
        assert decode("agentkit", without_comments(await resp.read()))[-1].status == "succeeded"
    typed = await client.post("/", data=body, headers={"Content-Type": "application/json; charset=utf-8"})
    assert typed.status == 200 and (await typed.read()).endswith(b"\n\n")
    assert len(upstream.requests) == 3


async def test_a_body_less_cancel_needs_no_content_type(aiohttp_server, aiohttp_client) -> None:
    upstream = Upstream()
    client = await agentkit_proxy(aiohttp_server, aiohttp_client, upstream, hold_after=1)
    resp = await client.post("/", json=TURN)
    run_id = resp.headers["X-Streambridge-Run-Id"]
    await asyncio.wait_for(upstream.reached.wait(), 10)
    cancel = await client.post(f"/runs/{run_id}/cancel", data=b"", headers={"Content-Type": "text/plain"})
    assert cancel.status == 200
    assert decode("agentkit", without_comments(await resp.read()))[-1].status == "cancelled"


# -- 7. no upstream call follows a redirect ---------------------------------------------------


class RedirectingNest(Upstream):
    """A nest backend whose control routes answer ``307`` to another server."""

    def __init__(self, elsewhere: str) -> None:
        super().__init__()
        self.elsewhere = elsewhere
        self.redirected: list[str] = []
        self.cancel_seen = asyncio.Event()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent/chat", self.chat)
        app.router.add_post("/agent/chat/{run_id}/cancel", self.redirect)
        app.router.add_post("/agent/tool-call/{decision}", self.redirect)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        await self.record(request)
        cap = capture("02-chat-action-approved.http")
        headers = {k: v for k, v in cap.headers.items() if k.startswith("x-agent-")}
        return await write_stream(
            request, frames(cap.body)[:4], status=201, headers=headers, upstream=self, hold_after=4
        )

    async def redirect(self, request: web.Request) -> web.Response:
        self.redirected.append(request.path)
        self.cancel_seen.set()
        raise web.HTTPTemporaryRedirect(self.elsewhere)


async def elsewhere_server(aiohttp_server: Any) -> tuple[Upstream, str]:
    """A server that records every request it gets, on any path (it must get none)."""
    elsewhere = Upstream()

    async def record(request: web.Request) -> web.Response:
        await elsewhere.record(request)
        return web.json_response({"ok": True})

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    server = await aiohttp_server(app)
    return elsewhere, url_of(server, "/stolen")


async def test_control_calls_do_not_follow_a_redirect(aiohttp_server, aiohttp_client) -> None:
    elsewhere, stolen = await elsewhere_server(aiohttp_server)
    backend = RedirectingNest(stolen)
    server = await aiohttp_server(backend.app())
    config = proxy_config(
        url_of(server, "/agent"), "nest", "agentkit", headers=["X-Api-Key=env:KEY"], environ={"KEY": "k-secret-1"}
    )
    client = await start_proxy(aiohttp_client, config)
    approve = await client.post("/tool-call/approve", json={"toolCallId": "call-a1"})
    assert elsewhere.requests == []
    assert approve.status == 502
    assert (await approve.json())["code"] == "upstream_redirected"

    resp = await client.post("/", json=TURN)  # a run, then its cancel: posted to the nest upstream too
    run_id = resp.headers["X-Streambridge-Run-Id"]
    await asyncio.wait_for(backend.reached.wait(), 10)
    assert (await client.post(f"/runs/{run_id}/cancel")).status == 200
    await resp.read()
    await asyncio.wait_for(backend.cancel_seen.wait(), 10)
    await asyncio.gather(*client.server.app[STATE].background)  # the cancel post has its answer
    assert backend.redirected == ["/agent/tool-call/approve", "/agent/chat/d7d1fe53-6de5-4962-88cd-69ac3080f55e/cancel"]
    assert elsewhere.requests == []


async def test_a_websocket_upstream_redirect_is_a_terminal_and_is_not_followed(aiohttp_server, aiohttp_client) -> None:
    elsewhere, stolen = await elsewhere_server(aiohttp_server)

    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(stolen.replace("http://", "ws://", 1))

    server = await aiohttp_server(stream_app(redirect, "/ws-up", method="GET"))
    up = url_of(server, "/ws-up").replace("http://", "ws://", 1)
    config = proxy_config(up, "agentkit", "agentkit", headers=["X-Api-Key=env:KEY"], environ={"KEY": "k-secret-1"})
    client = await start_proxy(aiohttp_client, config)
    body = await (await client.post("/", json=TURN)).read()
    assert elsewhere.requests == []
    assert decode("agentkit", without_comments(body))[-1].failure.code == "upstream_redirected"


# -- 8. the inspector's redaction: decoded text, and across frames ----------------------------


class SplittingNest(NestBackend):
    """Echoes its credential cut in two text frames, then once more \\u-escaped (as JSON may spell it)."""

    def parts(self, request: web.Request, answer: list[bytes]) -> list[bytes]:
        secret = request.headers["Authorization"].partition(" ")[2]
        half = len(secret) // 2
        escaped = "".join(f"\\u{ord(c):04x}" for c in secret)
        echoed = [echo_frame(f"key {secret[:half]}"), echo_frame(f"{secret[half:]} end"), echo_frame(escaped)]
        return [*answer[:3], *echoed, *answer[3:]]


async def test_the_inspector_redacts_a_credential_split_over_frames_or_json_escaped(
    aiohttp_server, aiohttp_client
) -> None:
    backend = SplittingNest()
    client = await inspected_proxy(aiohttp_server, aiohttp_client, backend)
    resp = await client.post("/api/chat", json=CHAT)
    body = await resp.read()
    half = len(UPSTREAM_SECRET) // 2
    assert f"key {UPSTREAM_SECRET[:half]}".encode() in body  # the client got what the backend echoed
    (summary,) = (await (await client.get("/_inspect/api/streams")).json())["streams"]
    escaped = "".join(f"\\u{ord(c):04x}" for c in UPSTREAM_SECRET).encode()
    base = f"/_inspect/api/streams/{summary['id']}"
    for url in [base, base + "/upstream", base + "/client"]:
        data = await (await client.get(url)).read()
        for shown in [UPSTREAM_SECRET[:half], UPSTREAM_SECRET[half:], escaped[:40], escaped[-40:]]:
            assert (shown if isinstance(shown, bytes) else shown.encode()) not in data, (url, shown)
        assert REDACTED.encode() in data, url
    view = await (await client.get(base)).json()
    texts = [f["raw"] for f in view["upstream"]["frames"]]
    assert any(t.startswith('data: {"kind":"text","text":"key «redacted»') for t in texts)
    assert view["assembled"]["text"].count("«redacted»") >= 2 and "end" in view["assembled"]["text"]
    assert ANSWER.body[-20:].decode() in "".join(texts)  # the frames around the echo are intact


# -- 9. identities -----------------------------------------------------------------------------


class HeldNest(Upstream):
    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent/chat", self.chat)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        await self.record(request)
        headers = {k: v for k, v in ANSWER.headers.items() if k.startswith("x-agent-")}
        return await write_stream(request, ANSWER_FRAMES, status=201, headers=headers, upstream=self, hold_after=4)


async def use_chat_proxy(aiohttp_server: Any, aiohttp_client: Any, backend: Upstream, **settings: Any) -> Any:
    server = await aiohttp_server(backend.app())
    config = proxy_config(url_of(server, "/agent"), "nest", "ai-sdk", owner_header="X-User-Id")
    return await start_proxy(aiohttp_client, replace(config, **settings))


async def test_duplicate_owner_headers_are_a_400(aiohttp_server, aiohttp_client) -> None:
    backend = HeldNest()
    client = await use_chat_proxy(aiohttp_server, aiohttp_client, backend)
    both = CIMultiDict([("X-User-Id", "alice"), ("X-User-Id", "bob")])
    refused = await client.post("/api/chat", json=CHAT, headers=both)
    assert refused.status == 400 and "X-User-Id" in (await refused.json())["message"]
    assert backend.requests == []
    first = await client.post("/api/chat", json=CHAT, headers={"X-User-Id": "alice"})
    run_id = first.headers["X-Streambridge-Run-Id"]
    await read_until(first.content, b'"type":"start"', bytearray())
    await asyncio.wait_for(backend.reached.wait(), 10)
    for path in [f"/runs/{run_id}/stream", "/api/chat/chat-7/stream"]:
        assert (await client.get(path, headers=both)).status == 400, path  # not "the first one wins"
    assert (await client.post(f"/runs/{run_id}/cancel", headers=both)).status == 400
    backend.release.set()
    await first.read()


async def test_require_identity_refuses_anonymous_requests_with_401(aiohttp_server, aiohttp_client) -> None:
    backend = HeldNest()
    backend.release.set()
    client = await use_chat_proxy(aiohttp_server, aiohttp_client, backend, require_identity=True)
    anonymous = await client.post("/api/chat", json=CHAT)
    assert anonymous.status == 401
    assert (await anonymous.json())["code"] == "identity_required"
    assert (await client.get("/api/chat/chat-7/stream", headers={"X-User-Id": " "})).status == 401
    async with client.ws_connect("/ws") as ws:
        msg = await ws.receive()
    assert (msg.data, msg.extra) == (1008, "identity_required")
    assert backend.requests == []
    assert (await client.post("/api/chat", json=CHAT, headers={"X-User-Id": "alice"})).status == 200


async def test_another_identitys_live_chat_answers_as_no_chat(aiohttp_server, aiohttp_client) -> None:
    backend = HeldNest()
    client = await use_chat_proxy(aiohttp_server, aiohttp_client, backend)
    hers = await client.post("/api/chat", json=CHAT, headers={"X-User-Id": "alice"})
    await read_until(hers.content, b'"type":"start"', bytearray())
    await asyncio.wait_for(backend.reached.wait(), 10)
    for who in [{"X-User-Id": "bob"}, {}]:  # her live chat, to anyone else, is no chat: as an id never used
        for chat_id in ["chat-7", "never-started"]:
            resp = await client.get(f"/api/chat/{chat_id}/stream", headers=who)
            assert (resp.status, await resp.read()) == (204, b""), (who, chat_id)
    backend.release.set()
    await hers.read()


async def test_a_chat_id_reused_by_another_identity_does_not_hide_her_live_run(aiohttp_server, aiohttp_client) -> None:
    backend = HeldNest()
    client = await use_chat_proxy(aiohttp_server, aiohttp_client, backend)
    alice, bob = {"X-User-Id": "alice"}, {"X-User-Id": "bob"}
    hers = await client.post("/api/chat", json=CHAT, headers=alice)
    await read_until(hers.content, b'"type":"start"', bytearray())
    await asyncio.wait_for(backend.reached.wait(), 10)
    his = await client.post("/api/chat", json=CHAT, headers=bob)  # bob (knowing or guessing it) reuses her chat id
    await read_until(his.content, b'"type":"start"', bytearray())
    resumed = await client.get("/api/chat/chat-7/stream", headers=alice)
    assert resumed.status == 200  # her run, still hers
    assert resumed.headers["X-Streambridge-Run-Id"] == hers.headers["X-Streambridge-Run-Id"]
    mine = await client.get("/api/chat/chat-7/stream", headers=bob)
    assert mine.headers["X-Streambridge-Run-Id"] == his.headers["X-Streambridge-Run-Id"]
    backend.release.set()
    for resp in (hers, his, resumed, mine):
        assert (await resp.read()).endswith(b"data: [DONE]\n\n")


# -- 10. forwarded headers and oversized ones --------------------------------------------------


NEVER_FORWARDED = ["Via", "X-Original-URL", "x-rewrite-url", "X-Forwarded-For", "X-Forwarded-Prefix", "Set-Cookie"]


@pytest.mark.parametrize("name", [*NEVER_FORWARDED, "Forwarded", "Proxy-Authorization", "Connection", "Host", "Origin"])
def test_forward_header_refuses_what_never_goes_upstream(name: str) -> None:
    with pytest.raises(ConfigError, match="never goes upstream"):
        proxy_config("http://127.0.0.1:9/up", "agentkit", "agentkit", forward_headers=(name,))
    sent = upstream_headers(
        {name: "x", "X-Actor-Id": "u1"}, {}, accept="*/*", forward_auth=True, forward=(name, "x-actor-id")
    )
    assert name not in sent and sent["X-Actor-Id"] == "u1"  # (the allow-list itself drops it too)


async def test_a_header_over_8_kib_leaves_no_credential_in_any_log(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()
    client = await agentkit_proxy(aiohttp_server, aiohttp_client, upstream, forward_auth=True)
    secret = "sk-" + "0123456789abcdef" * 576  # 9 KiB
    server_log = logging.getLogger("aiohttp.server")
    server_log.addHandler(caplog.handler)  # (seen whether or not the logger propagates)
    try:
        with caplog.at_level(logging.DEBUG):
            resp = await client.post("/", json=TURN, headers={"Authorization": f"Bearer {secret}"})
    finally:
        server_log.removeHandler(caplog.handler)
    assert resp.status in (400, 431)
    assert upstream.requests == []
    records = [r for r in caplog.records if r.name == "aiohttp.server"]
    assert records, "aiohttp logged nothing: the test did not see its log"
    for record in caplog.records:
        assert record.exc_info is None and record.levelno < logging.ERROR, record.getMessage()
        assert secret[:12] not in record.getMessage() and "0123456789abcdef" not in record.getMessage()
    assert "0123456789abcdef" not in caplog.text
