"""Every upstream fault ends the client's stream with the target protocol's terminal: a safe
message and a code, logged and counted. One test per fault."""

from __future__ import annotations

import asyncio
import logging
import socket

import msgspec
import pytest
from aiohttp import web

from streambridge import codecs
from streambridge.bridge.faults import FAULTS
from streambridge.bridge.state import STATE
from streambridge.events import Terminal, TextDelta

from .proxy_support import (
    PING,
    TURN,
    Upstream,
    decode,
    frames,
    golden,
    proxy_config,
    start_proxy,
    stream_app,
    url_of,
    without_comments,
    write_stream,
)
from .test_proxy_stream import CLIENT_PATH, REQUESTS

START = b'data: {"type":"turn_start","turnId":"t1","messageId":"m1"}\n\n'
TEXT = b'data: {"type":"text_delta","messageId":"m1","text":"Hello"}\n\n'
SECRET_BODY = "upstream-internal-detail-7731"


async def metric(client, name: str, **labels: str) -> float:
    text = await (await client.get("/metrics")).text()
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if not labels and line.startswith(name + " "):
            return float(line.rsplit(" ", 1)[1])
        if line.startswith(name + "{") and ",".join(sorted(line[len(name) + 1 : line.index("}")].split(","))) == want:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def assert_fault(client, caplog, body: bytes, target: str, code: str, *, status: str = "error") -> Terminal:
    """The stream ends with exactly one terminal for ``code``, which was logged and counted."""
    events = decode(target, without_comments(body) if target != "oma" else body)
    terminals = [e for e in events if type(e) is Terminal]
    assert len(terminals) == 1 and events[-1] is terminals[0]
    end = terminals[0]
    assert end.status == status
    assert end.failure.code == code
    assert end.failure.message == FAULTS[code].message
    assert SECRET_BODY.encode() not in body
    assert "Traceback" not in body.decode("utf-8", "replace")
    assert await metric(client, "streambridge_faults_total", route="default", code=code) == 1.0
    logged = [r for r in caplog.records if r.getMessage() == "stream_fault"]
    assert [r.fields["code"] for r in logged] == [code]
    return end


def agentkit_upstream(upstream: Upstream, parts: list[bytes], **kwargs) -> web.Application:
    async def handler(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(request, parts, upstream=upstream, **kwargs)

    return stream_app(handler, "/up")


def refusing_upstream(status: int, headers: dict[str, str] | None = None) -> web.Application:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(status=status, text=f"error: {SECRET_BODY}", headers=headers)

    return stream_app(handler, "/up")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(autouse=True)
def _logs(caplog):
    caplog.set_level(logging.INFO, logger="streambridge")


@pytest.mark.parametrize("fidelity", ["client", "exact"])
async def test_connection_refused(aiohttp_client, caplog, fidelity: str) -> None:
    config = proxy_config(f"http://127.0.0.1:{free_port()}/up", "agentkit", "nest", fidelity=fidelity)
    client = await start_proxy(aiohttp_client, config)
    resp = await client.post("/agent/chat", json={"message": "hi"})
    assert resp.status == 201
    body = await resp.read()
    assert body.startswith(b"event: meta\n")
    native_error = (
        b'event: error\ndata: {"code":"upstream_unavailable","message":"'
        + FAULTS["upstream_unavailable"].message.encode()
        + b'"}\n\n'
    )
    assert body.endswith(native_error)
    end = await assert_fault(client, caplog, body, "nest", "upstream_unavailable")
    if fidelity == "client":  # what a Nest server sends: its error frame, nothing else after the meta
        assert body.split(b"\n\n", 1)[1].replace(b": ping\n\n", b"") == native_error
    else:  # nest's error has no word for it: its carrier keeps it
        assert end.failure.recoverable is True


@pytest.mark.parametrize(("status", "code"), [(401, "upstream_unauthorized"), (403, "upstream_forbidden")])
async def test_unauthorized_and_forbidden(aiohttp_server, aiohttp_client, caplog, status, code) -> None:
    server = await aiohttp_server(refusing_upstream(status))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    end = await assert_fault(client, caplog, body, "agentkit", code)
    assert end.failure.recoverable is False


async def test_not_found(aiohttp_server, aiohttp_client, caplog) -> None:
    server = await aiohttp_server(refusing_upstream(404))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "oma"))
    body = await (await client.post("/", json={"prompt": "hi"})).read()
    await assert_fault(client, caplog, body, "oma", "upstream_not_found")
    assert b'"type":"error"' in body.splitlines()[-1]


async def test_rate_limited_is_recoverable_with_retry_after(aiohttp_server, aiohttp_client, caplog) -> None:
    server = await aiohttp_server(refusing_upstream(429, {"Retry-After": "7"}))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    end = await assert_fault(client, caplog, body, "agentkit", "rate_limited")
    assert end.failure.recoverable is True
    assert end.failure.retry_after_ms == 7000
    assert b'"retryAfterMs":7000' in body


async def test_internal_server_error(aiohttp_server, aiohttp_client, caplog) -> None:
    server = await aiohttp_server(refusing_upstream(500))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest"))
    body = await (await client.post("/agent/chat", json={"message": "hi"})).read()
    await assert_fault(client, caplog, body, "nest", "upstream_error")


async def test_bad_gateway(aiohttp_server, aiohttp_client, caplog) -> None:
    server = await aiohttp_server(refusing_upstream(502))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    await assert_fault(client, caplog, body, "agentkit", "bad_gateway")


async def test_service_unavailable_is_not_provisioned(aiohttp_server, aiohttp_client, caplog) -> None:
    server = await aiohttp_server(refusing_upstream(503))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    await assert_fault(client, caplog, body, "agentkit", "not_provisioned", status="notProvisioned")
    assert b'"status":"notProvisioned"' in body


async def test_upstream_error_text_only_when_the_route_exposes_it(aiohttp_server, aiohttp_client) -> None:
    server = await aiohttp_server(refusing_upstream(500))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit", expose_upstream_errors=True)
    )
    body = await (await client.post("/", json=TURN)).read()
    end = decode("agentkit", without_comments(body))[-1]
    assert end.failure.message == f"{FAULTS['upstream_error'].message} (error: {SECRET_BODY})"


async def test_timeout_before_first_byte(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()

    async def silent(request: web.Request) -> web.StreamResponse:
        try:
            await upstream.release.wait()  # never answers
        except asyncio.CancelledError:
            upstream.cancelled.set()
            raise
        return web.Response()

    server = await aiohttp_server(stream_app(silent, "/up"))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit", first_byte_timeout=0.2)
    )
    body = await (await client.post("/", json=TURN)).read()
    assert body.startswith(PING)  # the client heard from the proxy before the upstream said anything
    await assert_fault(client, caplog, body, "agentkit", "upstream_timeout")
    await asyncio.wait_for(upstream.cancelled.wait(), 10)


async def test_idle_mid_stream(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()
    server = await aiohttp_server(agentkit_upstream(upstream, [START, TEXT, TEXT], hold_after=2))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "oma", idle_timeout=0.2))
    body = await (await client.post("/", json={"prompt": "hi"})).read()
    events = decode("oma", body)
    assert [e.text for e in events if type(e) is TextDelta] == ["Hello"]
    await assert_fault(client, caplog, body, "oma", "upstream_idle")
    await asyncio.wait_for(upstream.cancelled.wait(), 10)


async def test_upstream_closes_mid_frame(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()
    server = await aiohttp_server(agentkit_upstream(upstream, [START, TEXT, b'data: {"type":"text_del']))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest"))
    body = await (await client.post("/agent/chat", json={"message": "hi"})).read()
    assert b'"text":"Hello"' in body
    await assert_fault(client, caplog, body, "nest", "truncated")
    assert await metric(client, "streambridge_translation_errors_total", route="default", code="truncated") == 1.0


async def test_upstream_connection_drops_mid_body(aiohttp_server, aiohttp_client, caplog) -> None:
    async def dropping(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        await resp.write(START + TEXT + b'data: {"type":"text_delta","mess')
        request.transport.abort()  # no terminating chunk: the body is cut
        return resp

    server = await aiohttp_server(stream_app(dropping, "/up"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    await assert_fault(client, caplog, body, "agentkit", "upstream_disconnected")


async def test_malformed_json(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()
    server = await aiohttp_server(
        agentkit_upstream(upstream, [START, b"data: {not json " + SECRET_BODY.encode() + b"\n\n"])
    )
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "nest"))
    body = await (await client.post("/agent/chat", json={"message": "hi"})).read()
    await assert_fault(client, caplog, body, "nest", "upstream_malformed")
    assert (
        await metric(client, "streambridge_translation_errors_total", route="default", code="upstream_malformed") == 1.0
    )


async def test_invalid_utf8(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()
    bad = b'data: {"type":"text_delta","messageId":"m1","text":"caf\xe9"}\n\n'
    server = await aiohttp_server(agentkit_upstream(upstream, [START, TEXT, bad]))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    body = await (await client.post("/", json=TURN)).read()
    await assert_fault(client, caplog, body, "agentkit", "upstream_invalid_utf8")


async def test_frame_larger_than_the_limit(aiohttp_server, aiohttp_client, caplog) -> None:
    upstream = Upstream()
    huge = b'data: {"type":"text_delta","messageId":"m1","text":"' + b"x" * 8192 + b'"}\n\n'
    server = await aiohttp_server(agentkit_upstream(upstream, [START, TEXT, huge[:3000], huge[3000:]]))
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit", max_frame_bytes=4096)
    )
    body = await (await client.post("/", json=TURN)).read()
    assert b"x" * 100 not in body
    await assert_fault(client, caplog, body, "agentkit", "frame_too_large")


async def test_slow_reading_client_backpressure_reaches_the_upstream(aiohttp_server, aiohttp_client) -> None:
    """A client that reads nothing: the proxy's buffers stay bounded and the upstream blocks."""
    frame = msgspec.json.encode({"kind": "text", "text": "y" * 16384})
    count = 3072  # 48 MiB: far more than all socket buffers on the path can hold
    blocked, done = asyncio.Event(), asyncio.Event()

    async def chat(request: web.Request) -> web.StreamResponse:
        resp = web.StreamResponse(status=201, headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        await resp.write(b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n')
        for _ in range(count):
            if request.transport.get_write_buffer_size() > 0:
                blocked.set()  # the proxy stopped taking bytes: its socket buffer is full
            await resp.write(b"data: " + frame + b"\n\n")
        await resp.write(b"event: done\ndata: {}\n\n")
        done.set()
        return resp

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    # nest to nest: the answer is never repeated whole in a terminal (agentkit's turn_end would be 48 MiB)
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", "nest"))
    resp = await client.post("/agent/chat", json={"message": "hi"})  # headers only: the body is not read yet
    waiters = [asyncio.ensure_future(blocked.wait()), asyncio.ensure_future(done.wait())]
    await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    for w in waiters:
        w.cancel()
    assert blocked.is_set() and not done.is_set()
    (relay,) = client.app[STATE].relays
    pending = relay.sink.request.transport.get_write_buffer_size()
    assert pending <= 512 * 1024, pending  # the transport high-water mark plus one translated chunk

    decoder = codecs.get("nest").decoder(strict=True)
    events = []
    async for chunk in resp.content.iter_any():
        events += decoder.feed(chunk)
    events += decoder.close()
    assert done.is_set()
    assert sum(1 for e in events if type(e) is TextDelta) == count
    assert type(events[-1]) is Terminal and events[-1].status == "succeeded"


async def test_client_that_stops_reading_is_dropped_and_the_upstream_cancelled(
    aiohttp_server, aiohttp_client, caplog
) -> None:
    upstream = Upstream()
    frame = b"data: " + msgspec.json.encode({"kind": "text", "text": "z" * 16384}) + b"\n\n"

    async def chat(request: web.Request) -> web.StreamResponse:
        meta = b'event: meta\ndata: {"runId":"r1","threadId":"t1"}\n\n'
        return await write_stream(request, [meta] + [frame] * 20000, status=201, upstream=upstream)

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    client = await start_proxy(
        aiohttp_client,
        proxy_config(url_of(server, "/agent"), "nest", "agentkit", client_stall_timeout=0.2, resume_grace=0),
    )
    resp = await client.post("/", json=TURN)
    await asyncio.wait_for(upstream.cancelled.wait(), 20)
    assert await metric(client, "streambridge_faults_total", route="default", code="client_stalled") == 1.0
    assert [r.fields["code"] for r in caplog.records if r.getMessage() == "stream_fault"] == ["client_stalled"]
    resp.close()


async def test_the_stream_ends_at_the_terminal_even_if_the_upstream_stays_open(
    aiohttp_server, aiohttp_client, caplog
) -> None:
    upstream = Upstream()
    parts = frames(golden("plain-text", "agentkit"))
    junk = b"data: {junk after the end}\n\n"
    server = await aiohttp_server(agentkit_upstream(upstream, [*parts, junk], hold_after=len(parts)))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "oma"))
    out = await (await client.post("/", json={"prompt": "hi"})).read()
    assert decode("oma", out)[-1].status == "succeeded"
    assert not [r for r in caplog.records if r.getMessage() == "stream_fault"]
    await asyncio.wait_for(upstream.cancelled.wait(), 10)  # the proxy let go of the upstream at once


async def test_a_proxy_bug_still_ends_the_stream_with_a_terminal(
    aiohttp_server, aiohttp_client, caplog, monkeypatch
) -> None:
    from streambridge import Translator

    def broken(self, data: bytes) -> bytes:
        raise RuntimeError(SECRET_BODY)

    upstream = Upstream()
    server = await aiohttp_server(agentkit_upstream(upstream, [START, TEXT]))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", "agentkit"))
    monkeypatch.setattr(Translator, "feed", broken)
    body = await (await client.post("/", json=TURN)).read()
    await assert_fault(client, caplog, body, "agentkit", "proxy_error")
    (record,) = [r for r in caplog.records if r.getMessage() == "proxy_error"]
    assert record.fields["error"] == "RuntimeError"
    # the traceback is logged, server side, in text and JSON logs alike (the client got none)
    from streambridge.bridge.logging import JsonFormatter, TextFormatter

    assert "Traceback" in TextFormatter().format(record) and "in broken" in TextFormatter().format(record)
    assert "in broken" in msgspec.json.decode(JsonFormatter().format(record))["traceback"]


END = b'data: {"type":"turn_end","turnId":"t1","messageId":"m1","result":{"status":"succeeded","text":"HelloHello","provider":"custom"}}\n\n'


@pytest.mark.parametrize("target", ["agentkit", "nest", "oma"])
async def test_good_frames_and_a_bad_one_in_one_read_lose_nothing(
    aiohttp_server, aiohttp_client, caplog, target
) -> None:
    upstream = Upstream()
    one_read = START + TEXT + TEXT + b"data: {not json\n\n"
    server = await aiohttp_server(agentkit_upstream(upstream, [one_read]))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", target))
    body = await (await client.post(CLIENT_PATH[target], json=REQUESTS[target]("hi"))).read()
    events = decode(target, without_comments(body) if target != "oma" else body)
    assert "".join(e.text for e in events if type(e) is TextDelta) == "HelloHello"
    await assert_fault(client, caplog, body, target, "upstream_malformed")


@pytest.mark.parametrize("trailing", [b"data: [DONE]\n\n", b"data: {not json\n\n"])
@pytest.mark.parametrize("target", ["agentkit", "nest", "oma"])
async def test_bytes_after_the_terminal_in_the_same_read_end_nothing(
    aiohttp_server, aiohttp_client, caplog, target, trailing
) -> None:
    caplog.set_level(logging.DEBUG, logger="streambridge")
    upstream = Upstream()
    server = await aiohttp_server(agentkit_upstream(upstream, [START + TEXT + TEXT + END + trailing]))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/up"), "agentkit", target))
    body = await (await client.post(CLIENT_PATH[target], json=REQUESTS[target]("hi"))).read()
    events = decode(target, without_comments(body) if target != "oma" else body)
    terminals = [e for e in events if type(e) is Terminal]
    assert len(terminals) == 1 and events[-1] is terminals[0] and terminals[0].status == "succeeded"
    assert "".join(e.text for e in events if type(e) is TextDelta) == "HelloHello"
    assert await metric(client, "streambridge_streams_total", route="default", outcome="completed") == 1.0
    assert await metric(client, "streambridge_trailing_frames_total", route="default") == 1.0
    trailing_logs = [r for r in caplog.records if r.getMessage() == "upstream_trailing_bytes"]
    assert len(trailing_logs) == 1
    assert trailing_logs[0].levelno == (logging.DEBUG if b"[DONE]" in trailing else logging.INFO)
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # no fault, no warning
