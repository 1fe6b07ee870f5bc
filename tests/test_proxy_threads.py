"""A conversation with an upstream that chooses its thread ids (nest: the published server takes
only thread ids it created), through the proxy: the first message goes without one, the thread
the server made is remembered per identity and client conversation (beside the run log, in
memory or Redis, so another instance continues it), and every later message is sent on it.
The nest fake behaves as the real server (tests/nest_threads.py); that is shown against the
real published server in test_nest_server_threads.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from aiohttp import web

from streambridge import codecs
from streambridge.bridge.state import STATE

from .nest_threads import UNKNOWN_THREAD, NestThreads
from .proxy_support import (
    Upstream,
    capture,
    decode,
    frames,
    proxy_config,
    start_proxy,
    url_of,
    without_comments,
    write_stream,
)
from .redis_support import RedisServer

DOCS = Path(__file__).resolve().parent.parent / "docs" / "proxy.md"


class NestServer(Upstream):
    """A nest server answering every chat with capture 01 on the request's thread: a new one for
    a request without ``threadId``, the run failing for a thread it did not create."""

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
        return await write_stream(request, parts, status=201, headers=headers)

    @property
    def sent_threads(self) -> list[str | None]:
        return [msgspec.json.decode(r["body"]).get("threadId") for r in self.requests]


def use_chat(chat_id: str, text: str) -> dict[str, Any]:
    return {
        "id": chat_id,
        "messages": [{"id": "m-" + text, "role": "user", "parts": [{"type": "text", "text": text}]}],
        "trigger": "submit-message",
    }


def run_input(thread_id: str, text: str) -> dict[str, Any]:
    return {
        "threadId": thread_id,
        "runId": "run-" + text,
        "messages": [{"id": "m-" + text, "role": "user", "content": text}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


#: each client protocol: its chat path and a message of a conversation it names
CLIENTS = {
    "ai-sdk": ("/api/chat", use_chat),
    "ag-ui": ("/", run_input),
}


def thread_said(target: str, body: bytes) -> object:
    """The conversation the client's run start names."""
    start = decode(target, without_comments(body))[0]
    return start.thread_id


@pytest.fixture(params=["memory", "redis"])
def run_log(request: pytest.FixtureRequest) -> str:
    if request.param == "memory":
        return "memory"
    server: RedisServer = request.getfixturevalue("redis_server")
    return server.url


async def proxies(aiohttp_server, aiohttp_client, server: NestServer, target: str, run_log: str) -> list[Any]:
    """The proxy in front of the nest server: one instance on the memory log, two sharing Redis."""
    upstream = await aiohttp_server(server.app())
    config = proxy_config(url_of(upstream, "/agent"), "nest", target, run_log=run_log)
    count = 1 if run_log == "memory" else 2
    return [await start_proxy(aiohttp_client, config) for _ in range(count)]


@pytest.mark.parametrize("target", sorted(CLIENTS))
async def test_the_second_message_of_a_conversation_goes_on_the_servers_thread(
    aiohttp_server, aiohttp_client, target: str, run_log: str
) -> None:
    server = NestServer()
    instances = await proxies(aiohttp_server, aiohttp_client, server, target, run_log)
    path, message = CLIENTS[target]
    bodies = []
    for i, text in enumerate(["weather?", "and tomorrow?", "thanks"]):
        client = instances[i % len(instances)]  # with Redis, each message on another instance
        resp = await client.post(path, json=message("chat-7", text))
        assert resp.status == 200
        bodies.append(await resp.read())

    assert server.sent_threads == [None, "thr-1", "thr-1"]  # a first message: the server makes the thread
    assert server.threads.refused == [] and server.threads.created == ["thr-1"]
    for body in bodies:
        assert UNKNOWN_THREAD.encode() not in body
        assert decode(target, without_comments(body))[-1].status == "succeeded"
        # the client knows its conversation by its own id (AG-UI's RUN_STARTED, ai-sdk's start metadata)
        assert b'"threadId":"chat-7"' in body and b"thr-1" not in body


@pytest.mark.parametrize("target", sorted(CLIENTS))
async def test_another_identity_with_the_same_conversation_id_gets_its_own_thread(
    aiohttp_server, aiohttp_client, target: str
) -> None:
    server = NestServer()
    [client] = await proxies(aiohttp_server, aiohttp_client, server, target, "memory")
    path, message = CLIENTS[target]
    for who in ["Bearer alice", "Bearer bob", "Bearer alice", "Bearer bob"]:
        resp = await client.post(path, json=message("chat-7", "hi"), headers={"Authorization": who})
        await resp.read()
    assert server.sent_threads == [None, None, "thr-1", "thr-2"]


async def test_a_nest_client_continues_the_conversation_the_proxy_named(aiohttp_server, aiohttp_client) -> None:
    """nest → nest: the proxy names the conversation of a first message (its run start comes
    before the server answers); the client's next message with that id goes on the server's."""
    server = NestServer()
    [client] = await proxies(aiohttp_server, aiohttp_client, server, "nest", "memory")
    first = await client.post("/agent/chat", json={"message": "weather?", "agent": "support"})
    named = first.headers["X-Agent-Thread-Id"]
    await first.read()
    second = await client.post("/agent/chat", json={"agent": "support", "threadId": named, "message": "more"})
    body = await second.read()
    assert named.startswith("thr-") and named != "thr-1"
    assert server.sent_threads == [None, "thr-1"]
    assert msgspec.json.decode(server.requests[1]["body"]) == {
        "agent": "support",
        "threadId": "thr-1",
        "message": "more",
    }
    assert b"event: done" in body and UNKNOWN_THREAD.encode() not in body


async def test_a_nest_client_may_name_a_thread_the_server_made(aiohttp_server, aiohttp_client) -> None:
    """Same protocol: a thread id the proxy does not know is the server's own (say, from its
    thread list), and goes as it came; the server decides."""
    server = NestServer()
    server.threads.created.append("thr-1")  # made before, without the proxy
    [client] = await proxies(aiohttp_server, aiohttp_client, server, "nest", "memory")
    for thread in ["thr-1", "thr-404"]:
        await (await client.post("/agent/chat", json={"message": "hi", "threadId": thread})).read()
    assert server.sent_threads == ["thr-1", "thr-404"]
    assert server.threads.refused == ["thr-404"]  # as the real server: its run fails


async def test_a_client_that_names_no_conversation_continues_by_the_servers_id(aiohttp_server, aiohttp_client) -> None:
    """agentkit without conversationId: the turn start says the server's thread (its
    sessionId); sent back as conversationId, it continues that thread."""
    server = NestServer()
    [client] = await proxies(aiohttp_server, aiohttp_client, server, "agentkit", "memory")
    first = await (await client.post("/", json={"text": "weather?", "history": []})).read()
    session = thread_said("agentkit", first)
    assert session == "thr-1"
    await (await client.post("/", json={"text": "more", "history": [], "conversationId": session})).read()
    assert server.sent_threads == [None, "thr-1"]


async def test_a_lost_conversation_store_is_a_503_not_a_new_thread(
    aiohttp_server, aiohttp_client, redis_server: RedisServer
) -> None:
    server = NestServer()
    client, _ = await proxies(aiohttp_server, aiohttp_client, server, "ai-sdk", redis_server.url)
    redis_server.stop()
    resp = await client.post("/api/chat", json=use_chat("chat-7", "hi"))
    assert resp.status == 503
    assert (await resp.json())["code"] == "thread_map_unavailable"
    assert server.requests == []  # nothing went upstream


async def test_the_map_keeps_no_conversation_id_in_its_key_names(
    aiohttp_server, aiohttp_client, redis_server: RedisServer
) -> None:
    import redis.asyncio as aioredis

    server = NestServer()
    client, _ = await proxies(aiohttp_server, aiohttp_client, server, "ai-sdk", redis_server.url)
    await (await client.post("/api/chat", json=use_chat("secret-chat-name", "hi"))).read()
    conn = aioredis.Redis.from_url(redis_server.url)
    try:
        keys = [k.decode() for k in await conn.keys("sb:thread:*")]
        assert len(keys) == 1 and "secret-chat-name" not in keys[0]
        assert 0 < await conn.pttl(keys[0]) <= client.app[STATE].config.thread_ttl * 1000
    finally:
        await conn.aclose()


# -- what each protocol says -----------------------------------------------------------------------


def test_every_protocol_says_who_chooses_its_conversation_ids() -> None:
    for name in codecs.names():
        surface = codecs.get(name).http
        assert surface.threads is not None, name
        if surface.server_threads:
            assert surface.runs is not None and surface.runs.thread_id_header, name


_ROW = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| (client|server) \|")


def test_the_proxy_doc_table_says_what_each_surface_declares() -> None:
    rows = {m[1]: (m[2], m[3]) for line in DOCS.read_text().splitlines() if (m := _ROW.match(line))}
    declared = {}
    for name in codecs.names():
        threads = codecs.get(name).http.threads
        assert threads is not None
        declared[codecs.get(name).name] = (threads.field, threads.chosen_by)
    assert rows == declared
