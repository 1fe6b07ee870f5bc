"""The proxy serving `useChat` clients (ai-sdk) in front of a nest backend: the exact
``uiMessageStreamHeaders``, heartbeats as SSE comments, and the resume route
``GET <api>/<chatId>/stream`` (the live stream from its start, ``204`` when none is active)."""

from __future__ import annotations

import msgspec
import pytest
from aiohttp import web

from streambridge.codecs.ai_sdk.http import HEADERS

from .nest_threads import NestThreads
from .proxy_support import (
    PING,
    Upstream,
    capture,
    decode,
    frames,
    proxy_config,
    read_all,
    read_until,
    start_proxy,
    url_of,
    without_comments,
    write_stream,
)

CHAT = {
    "id": "chat-7",
    "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
    "trigger": "submit-message",
}


class HeldNest(Upstream):
    """A nest backend answering with capture 01, held after its first four frames until released
    (its threads the real server's: tests/nest_threads.py)."""

    def __init__(self) -> None:
        super().__init__()
        self.threads = NestThreads()

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent/chat", self.chat)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await self.record(request))
        cap = capture("01-chat-read-only.http")
        recorded = {k: v for k, v in cap.headers.items() if k.startswith("x-agent-")}
        headers, parts = self.threads.answer(body, recorded, frames(cap.body))
        return await write_stream(request, parts, status=201, headers=headers, upstream=self, hold_after=4)


@pytest.fixture
async def use_chat_front(aiohttp_server, aiohttp_client):
    backend = HeldNest()
    server = await aiohttp_server(backend.app())
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "nest", "ai-sdk"))
    return backend, client


async def test_the_chat_answers_with_the_exact_ui_message_stream_headers(use_chat_front) -> None:
    backend, client = use_chat_front
    backend.release.set()
    resp = await client.post("/api/chat", json=CHAT)
    body = await resp.read()
    assert resp.status == 200
    for name, value in HEADERS.items():
        assert resp.headers[name] == value, name
    assert "threadId" not in backend.last_json  # a first message: the server makes the thread
    assert body.startswith(PING)  # a heartbeat, as an SSE comment, before the first upstream byte
    assert body.endswith(b"data: [DONE]\n\n")
    assert decode("ai-sdk", without_comments(body))[-1].status == "succeeded"


async def test_a_resume_replays_the_live_chat_from_its_start_then_follows_it(use_chat_front) -> None:
    backend, client = use_chat_front
    first = await client.post("/api/chat", json=CHAT)
    seen = bytearray()
    await read_until(first.content, b'"type":"reasoning-delta"', seen)
    await backend.reached.wait()

    resumed = await client.get("/api/chat/chat-7/stream")
    assert resumed.status == 200
    for name, value in HEADERS.items():
        assert resumed.headers[name] == value, name
    again = bytearray()
    await read_until(resumed.content, b'"type":"reasoning-delta"', again)
    backend.release.set()
    original = without_comments(await read_all(first.content, seen))
    replayed = without_comments(await read_all(resumed.content, again))
    assert replayed == original  # the whole stream, from its `start` to its `[DONE]`
    assert b'"delta":"Done."' in replayed and replayed.endswith(b"data: [DONE]\n\n")

    after = await client.get("/api/chat/chat-7/stream")
    assert after.status == 204  # finished: nothing active to resume


@pytest.mark.parametrize("chat_id", ["chat-7", "never-started"])
async def test_a_resume_with_nothing_active_is_204(use_chat_front, chat_id: str) -> None:
    _, client = use_chat_front
    resp = await client.get(f"/api/chat/{chat_id}/stream")
    assert resp.status == 204
    assert await resp.read() == b""


async def test_a_resume_of_another_chat_id_finds_nothing(use_chat_front) -> None:
    backend, client = use_chat_front
    first = await client.post("/api/chat", json=CHAT)
    await read_until(first.content, b'"type":"start"', bytearray())
    await backend.reached.wait()
    other = await client.get("/api/chat/chat-8/stream")
    assert other.status == 204
    backend.release.set()
    await first.read()


async def test_a_resume_id_that_cannot_be_an_id_is_a_400(use_chat_front) -> None:
    _, client = use_chat_front
    resp = await client.get("/api/chat/" + "x" * 300 + "/stream")
    assert resp.status == 400
    assert msgspec.json.decode(await resp.read())["message"].startswith("chatId:")
