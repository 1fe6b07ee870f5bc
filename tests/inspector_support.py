"""Shared pieces of the inspector tests: a nest backend that may hold, echo a secret or break
off, a proxy with the inspector on in front of it (nest → ai-sdk, a `useChat` client), and what
the inspector's API says. No tests here."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field, replace
from typing import Any

import msgspec
from aiohttp import web

from .nest_threads import NestThreads
from .proxy_support import Upstream, capture, frames, proxy_config, start_proxy, url_of, write_stream

#: the route's upstream credential (configured from the environment) and the client's own
UPSTREAM_SECRET = "sb-upstream-credential-5f1c9e"
CLIENT_SECRET = "sb-client-api-key-77d0aa"
CHAT = {
    "id": "chat-1",
    "messages": [{"id": "m1", "role": "user", "parts": [{"type": "text", "text": "hello"}]}],
    "trigger": "submit-message",
}
#: the most seconds a test waits for something it is owed
PATIENCE = 20.0
#: the real nest capture the backend answers with
ANSWER = capture("01-chat-read-only.http")
ANSWER_FRAMES = frames(ANSWER.body)


def echo_frame(text: str) -> bytes:
    """A nest text frame (what a careless backend does: echo a credential it was sent)."""
    return b'data: {"kind":"text","text":"' + text.encode() + b'"}\n\n'


@dataclass
class NestBackend(Upstream):
    """Answers with the capture's frames (a secret echoed after the first text frame), held
    after ``hold_after`` frames until released; with ``break_after`` it drops the connection
    after that many frames instead of ending the stream."""

    hold_after: int | None = None
    break_after: int | None = None
    answers: list[list[bytes]] = field(default_factory=list)
    threads: NestThreads = field(default_factory=NestThreads)  # the real server's (tests/nest_threads.py)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent/chat", self.chat)
        return app

    def parts(self, request: web.Request, answer: list[bytes]) -> list[bytes]:
        secret = request.headers.get("Authorization", "").partition(" ")[2]
        parts = [*answer[:3], echo_frame(f"(the backend was sent {secret})"), *answer[3:]]
        return parts[: self.break_after] if self.break_after is not None else parts

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await self.record(request))
        recorded = {k: v for k, v in ANSWER.headers.items() if k.startswith("x-agent-")}
        headers, answer = self.threads.answer(body, recorded, ANSWER_FRAMES)
        parts = self.parts(request, answer)
        self.answers.append(parts)
        if self.break_after is None:
            return await write_stream(
                request, parts, status=201, headers=headers, upstream=self, hold_after=self.hold_after
            )
        resp = web.StreamResponse(status=201, headers={"Content-Type": "text/event-stream", **headers})
        resp.enable_chunked_encoding()
        await resp.prepare(request)
        for part in parts:
            await resp.write(part)
        self.reached.set()
        await self.release.wait()
        assert request.transport is not None
        request.transport.abort()  # no terminating chunk: the body is cut
        return resp


async def inspected_proxy(
    aiohttp_server: Any, aiohttp_client: Any, backend: NestBackend, inspect_token: str | None = None, **settings: Any
) -> Any:
    """The proxy (nest → ai-sdk, inspector on) in front of ``backend``, its upstream credential
    from the environment and the client's API key forwarded."""
    server = await aiohttp_server(backend.app())
    config = proxy_config(
        url_of(server, "/agent"),
        "nest",
        "ai-sdk",
        headers=["Authorization=env:UPSTREAM_TOKEN"],
        environ={"UPSTREAM_TOKEN": f"Bearer {UPSTREAM_SECRET}"},
        forward_auth=True,
        forward_headers=("x-api-key",),
        **settings,
    )
    config = replace(config, inspect=True, inspect_token=inspect_token)
    return await start_proxy(aiohttp_client, config)


async def chat(client: Any) -> bytes:
    """One chat through the proxy, as a `useChat` client sends it (its API key in a header)."""
    resp = await client.post("/api/chat", json=CHAT, headers={"X-Api-Key": CLIENT_SECRET})
    assert resp.status == 200
    return await resp.read()


async def until(condition: Any, notices: asyncio.Queue[bytes | None]) -> None:
    """Wait, on the inspector's own change notices, until ``condition()`` holds (failing after
    :data:`PATIENCE` seconds instead of hanging)."""
    async with asyncio.timeout(PATIENCE):
        while not condition():
            await notices.get()
