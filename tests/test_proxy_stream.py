"""Live streams through the proxy: every golden scenario for every protocol pair, and the real
nest captures served with their recorded status and headers."""

from __future__ import annotations

import itertools

import msgspec
import pytest
from aiohttp import web

from streambridge import Translator, codecs
from streambridge.events import RunStart, Terminal

from .proxy_support import (
    CONTENT_TYPES,
    PING,
    SCENARIOS,
    Upstream,
    bare_upstream,
    capture,
    decode,
    frames,
    golden,
    proxy_config,
    start_proxy,
    stream_app,
    url_of,
    without_comments,
    without_ids,
    without_run_starts,
    write_stream,
)

PAIRS = [(s, t) for s, t in itertools.permutations(("agentkit", "nest", "oma"), 2)]
REQUESTS = {
    "agentkit": lambda text: {"text": text, "history": [], "conversationId": "conv-1"},
    "nest": lambda text: {"message": text, "threadId": "conv-1"},
    "oma": lambda text: {"messages": [{"role": "user", "content": text}], "conversationId": "conv-1"},
}
CLIENT_PATH = {"agentkit": "/", "nest": "/agent/chat", "oma": "/"}


def golden_upstream(source: str, upstream: Upstream) -> web.Application:
    """Serves the golden named by the request's message text, one frame per write."""
    sep = b"\n" if source == "oma" else b"\n\n"

    async def handler(request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await upstream.record(request))
        text = {
            "agentkit": lambda b: b["text"],
            "nest": lambda b: b["message"],
            "oma": lambda b: b["messages"][-1]["content"],
        }[source](body)
        status = 201 if source == "nest" else 200
        return await write_stream(
            request, frames(golden(text, source), sep), status=status, content_type=CONTENT_TYPES[source]
        )

    return stream_app(handler, "/agent/chat" if source == "nest" else "/up")


def reference(scenario: str, source: str, target: str, conversation: str | None = "conv-1") -> bytes:
    """The core translation of the same golden, in one piece, as the proxy serves it (client):
    an upstream that chooses its thread ids (nest) has its run start name the client's
    conversation, when the client named one."""
    translator = Translator(source, target, strict=True, fidelity="client")
    if codecs.get(source).http.server_threads and conversation is not None:
        translator.name_thread(conversation, lambda thread: None)
    return translator.feed(golden(scenario, source)) + translator.close()


def sent_upstream(source: str, scenario: str) -> dict:
    """The request the upstream gets for a conversation's first message: one that chooses its
    thread ids (nest) is sent none, and makes one."""
    sent = REQUESTS[source](scenario) | ({"history": []} if source == "agentkit" else {})
    if codecs.get(source).http.server_threads:
        del sent["threadId"]
    return sent


@pytest.mark.parametrize("scenario", SCENARIOS)
@pytest.mark.parametrize(("source", "target"), PAIRS)
async def test_golden_through_proxy(aiohttp_server, aiohttp_client, scenario, source, target) -> None:
    upstream = Upstream()
    server = await aiohttp_server(golden_upstream(source, upstream))
    up_url = url_of(server, "/agent" if source == "nest" else "/up")
    client = await start_proxy(aiohttp_client, proxy_config(up_url, source, target))
    resp = await client.post(CLIENT_PATH[target], json=REQUESTS[target](scenario))
    body = await resp.read()

    assert resp.headers["Cache-Control"] == "no-cache"
    assert resp.headers["X-Accel-Buffering"] == "no"
    assert "Content-Encoding" not in resp.headers
    sent = upstream.last_json
    assert sent == sent_upstream(source, scenario)

    if scenario == "truncated":
        end = decode(target, without_comments(body) if target != "oma" else body)[-1]
        assert type(end) is Terminal and end.status == "error"
        assert end.failure.code == "truncated"
        return
    if target == "nest":
        assert resp.status == 201
        run_id, thread_id = resp.headers["X-Agent-Run-Id"], resp.headers["X-Agent-Thread-Id"]
        assert thread_id == "conv-1"
        assert body.startswith(
            b"event: meta\ndata: " + msgspec.json.encode({"runId": run_id, "threadId": thread_id}) + b"\n\n" + PING
        )
        got = without_run_starts(decode("nest", body))
        want = without_run_starts(decode("nest", reference(scenario, source, target)))
        assert got == want
    else:
        assert resp.status == 200
        assert resp.headers["Content-Type"] == CONTENT_TYPES[target]
        if target == "agentkit":
            assert body.startswith(PING)
            body = without_comments(body)
        assert without_ids(body) == without_ids(reference(scenario, source, target))


@pytest.mark.parametrize("name", ["01-chat-read-only.http", "02-chat-action-approved.http", "05-chat-run-failed.http"])
@pytest.mark.parametrize("target", ["agentkit", "oma"])
async def test_real_nest_capture_with_its_headers(aiohttp_server, aiohttp_client, name, target) -> None:
    cap = capture(name)
    upstream = Upstream()
    recorded = {k: v for k, v in cap.headers.items() if k not in ("transfer-encoding", "connection", "content-type")}

    async def chat(request: web.Request) -> web.StreamResponse:
        await upstream.record(request)
        return await write_stream(
            request, frames(cap.body), status=cap.status, headers=recorded, content_type=cap.headers["content-type"]
        )

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", target))
    resp = await client.post("/", json=REQUESTS[target]("weather?"))
    body = await resp.read()
    assert resp.status == 200
    assert upstream.requests[0]["path"] == "/agent/chat"
    assert upstream.last_json == {"message": "weather?"}  # a first message: the server makes the thread
    events = decode(target, without_comments(body) if target == "agentkit" else body)
    translator = Translator("nest", target, strict=True, fidelity="client")
    translator.name_thread("conv-1", lambda thread: None)  # the client knows its own conversation
    want = decode(target, translator.feed(cap.body))
    assert events == want
    end = events[-1]
    assert type(end) is Terminal
    if name.startswith("05"):
        assert end.status == "error" and end.failure.message == "provider exploded"
    else:
        assert end.status == "succeeded"
    if target == "agentkit":
        start = events[0]
        assert type(start) is RunStart and start.run_id == cap.headers["x-agent-run-id"]


def in_framing(source: str, scenario: str, framing: str) -> bytes:
    """A golden in the other framing (oma as SSE, as it usually travels over HTTP; nest as NDJSON)."""
    return Translator(source, source, target_framing=framing).feed(golden(scenario, source))


UNSAID = [("oma", "sse"), ("nest", "ndjson")]


@pytest.mark.parametrize(("source", "framing"), UNSAID)
@pytest.mark.parametrize("content_type", ["text/plain", "application/octet-stream", None])
async def test_framing_is_detected_when_the_upstream_content_type_does_not_say(
    aiohttp_server, aiohttp_client, source, framing, content_type
) -> None:
    body = in_framing(source, "approval", framing)
    parts = frames(body, b"\n\n" if framing == "sse" else b"\n")
    if content_type is None:
        async with bare_upstream(parts) as up_url:
            out = await _through_proxy(aiohttp_client, up_url, source)
    else:

        async def chat(request: web.Request) -> web.StreamResponse:
            return await write_stream(request, parts, content_type=content_type)

        server = await aiohttp_server(stream_app(chat, "/agent/chat", "/up"))
        out = await _through_proxy(aiohttp_client, url_of(server, "/agent" if source == "nest" else "/up"), source)
    translator = Translator(source, "agentkit", source_framing=framing, strict=True, fidelity="client")  # type: ignore[arg-type]
    if codecs.get(source).http.server_threads:
        translator.name_thread("conv-1", lambda thread: None)  # the client knows its own conversation
    assert out == translator.feed(body) + translator.close()


async def test_a_declared_content_type_wins_over_detection(aiohttp_server, aiohttp_client) -> None:
    """NDJSON bytes declared as SSE are read as SSE (no blank line ends an event): a fault, not text."""

    async def chat(request: web.Request) -> web.StreamResponse:
        return await write_stream(request, frames(golden("approval", "oma"), b"\n"), content_type="text/event-stream")

    server = await aiohttp_server(stream_app(chat, "/up"))
    out = await _through_proxy(aiohttp_client, url_of(server, "/up"), "oma")
    end = decode("agentkit", out)[-1]
    assert type(end) is Terminal and end.status == "error"
    assert b"text_delta" not in out


async def _through_proxy(aiohttp_client, up_url: str, source: str) -> bytes:
    """An agentkit client's body (heartbeats left out) for one turn through the proxy."""
    client = await start_proxy(aiohttp_client, proxy_config(up_url, source, "agentkit"))
    resp = await client.post("/", json=REQUESTS["agentkit"]("hi"))
    assert resp.status == 200
    return without_comments(await resp.read())


async def test_one_write_per_upstream_chunk(aiohttp_server, aiohttp_client, monkeypatch) -> None:
    """Frames split anywhere (7-byte pieces) come out whole; each received chunk is fed once and
    its translation written once (plus the opening heartbeat and the closing tail)."""
    from streambridge.bridge import relay as relay_module

    body = golden("unicode-split", "nest")
    expected = reference("unicode-split", "nest", "agentkit", conversation=None)  # (the client names none)
    pieces = [body[i : i + 7] for i in range(0, len(body), 7)]
    feeds: list[bytes] = []
    writes: list[bytes] = []
    real_feed = Translator.feed
    real_init = relay_module.HttpSink.__init__

    def feed(self: Translator, data: bytes) -> bytes:
        out = real_feed(self, data)
        feeds.append(out)
        return out

    def init(self: relay_module.HttpSink, *args: object) -> None:
        real_init(self, *args)
        real_write = self.write

        async def write(data: bytes) -> None:
            writes.append(data)
            await real_write(data)

        self.write = write

    monkeypatch.setattr(Translator, "feed", feed)
    monkeypatch.setattr(relay_module.HttpSink, "__init__", init)

    async def chat(request: web.Request) -> web.StreamResponse:
        return await write_stream(request, pieces, status=201)

    server = await aiohttp_server(stream_app(chat, "/agent/chat"))
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", "agentkit"))
    resp = await client.post("/", json={"text": "hi", "history": []})
    out = without_comments(await resp.read())
    assert out == without_ids(expected)
    produced = [f for f in feeds if f]
    assert writes[0] == PING
    assert [without_ids(w) for w in writes[1 : 1 + len(produced)]] == produced
    assert len(writes) <= len(produced) + 2
