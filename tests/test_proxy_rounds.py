"""Whole conversations through the proxy: a nest client against an agentkit backend and an
agentkit client against a nest backend (the real capture), each with chat, approve / reject,
cancel and (nest) re-attach."""

from __future__ import annotations

import asyncio

import msgspec
import pytest
from aiohttp import web

from streambridge.events import UNSET, RunStart, Terminal, TextDelta, ToolCall, ToolDenied, ToolOutput

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


def sse(obj: dict) -> bytes:
    return b"data: " + msgspec.json.encode(obj) + b"\n\n"


# -- nest client <-> agentkit backend ---------------------------------------------------------


class AgentkitBackend(Upstream):
    """An agentkit service: an action tool waits for a decision sent to ``…/tool-call/approve|reject``."""

    def __init__(self) -> None:
        super().__init__()
        self.decision: asyncio.Future[str] | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agentkit", self.turn)
        app.router.add_post("/agentkit/tool-call/{decision}", self.decide)
        return app

    async def decide(self, request: web.Request) -> web.Response:
        body = msgspec.json.decode(await request.read())
        self.controls.append((request.match_info["decision"], body, dict(request.headers)))
        assert self.decision is not None
        self.decision.set_result(request.match_info["decision"])
        return web.json_response({"ok": True})

    async def turn(self, request: web.Request) -> web.StreamResponse:
        turn = msgspec.json.decode(await self.record(request))
        m = {"messageId": "msg_1"}
        head = [
            sse({"type": "turn_start", "turnId": "turn_1", **m, "provider": "custom"}),
            sse({"type": "text_delta", **m, "text": "I can refund that. "}),
        ]
        if turn["text"] == "wait":
            return await write_stream(request, head, upstream=self, hold_after=len(head))
        self.decision = asyncio.get_running_loop().create_future()
        call = {
            "id": "call_rf_1",
            "name": "createRefund",
            "argumentsJson": '{"amount":49.9}',
            "status": "proposed",
            "requiresApproval": True,
        }
        resp = await write_stream(request, [*head, sse({"type": "tool_call", **m, "call": call})])
        decision = await self.decision
        if decision == "approve":
            result = {
                "type": "tool_result",
                **m,
                "callId": "call_rf_1",
                "status": "succeeded",
                "resultText": "refunded",
            }
            text = "Done."
        else:
            result = {"type": "tool_result", **m, "callId": "call_rf_1", "status": "denied", "resultText": "no"}
            text = "Cancelled the refund."
        end = {
            "type": "turn_end",
            "turnId": "turn_1",
            **m,
            "result": {"status": "succeeded", "text": "I can refund that. " + text, "provider": "custom"},
        }
        for part in (sse(result), sse({"type": "text_delta", **m, "text": text}), sse(end)):
            await resp.write(part)
        return resp


@pytest.fixture
async def nest_front(aiohttp_server, aiohttp_client):
    backend = AgentkitBackend()
    server = await aiohttp_server(backend.app())
    client = await start_proxy(
        aiohttp_client, proxy_config(url_of(server, "/agentkit"), "agentkit", "nest", heartbeat=60)
    )
    return backend, client


@pytest.mark.parametrize("decision", ["approve", "reject"])
async def test_nest_client_chats_and_decides_against_an_agentkit_backend(nest_front, decision) -> None:
    backend, client = nest_front
    resp = await client.post("/agent/chat", json={"message": "refund SO-7731", "threadId": "thr-9", "agent": "support"})
    assert resp.status == 201
    run_id = resp.headers["X-Agent-Run-Id"]
    assert resp.headers["X-Agent-Thread-Id"] == "thr-9"

    seen = bytearray()
    await read_until(resp.content, b'"kind":"tool-input-available"', seen)
    assert backend.last_json == {"text": "refund SO-7731", "history": [], "conversationId": "thr-9"}
    assert seen.startswith(b'event: meta\ndata: {"runId":"' + run_id.encode() + b'","threadId":"thr-9"}\n\n')
    assert b'"toolKind":"action"' in seen

    # a second subscriber re-attaches while the run waits for the decision: replay, then live
    follower = await client.get(f"/agent/chat/{run_id}/stream")
    assert follower.status == 200 and follower.headers["X-Agent-Run-Id"] == run_id
    replay = bytearray()
    await read_until(follower.content, b'"kind":"tool-input-available"', replay)

    answer = await client.post(f"/agent/tool-call/{decision}", json={"toolCallId": "call_rf_1"})
    assert answer.status == 201 and await answer.json() == {"ok": True}
    assert backend.controls[0][:2] == (decision, {"toolCallId": "call_rf_1"})

    body = await read_all(resp.content, seen)
    events = decode("nest", without_comments(body))
    call = next(e for e in events if type(e) is ToolCall)
    assert call.call_id == "call_rf_1" and call.tool_kind == "action"
    outcome = ToolOutput if decision == "approve" else ToolDenied
    assert [type(e) for e in events if type(e) in (ToolOutput, ToolDenied)] == [outcome]
    assert type(events[-1]) is Terminal and events[-1].status == "succeeded"
    assert body.endswith(b"event: done\ndata: {}\n\n")

    followed = await read_all(follower.content, replay)
    assert without_comments(followed).split(b"\n\n", 1)[1] == without_comments(body).split(b"\n\n", 1)[1]
    # the run is over: nothing to cancel; a re-attach from its last frame gets only its end
    last_id = body.rsplit(b"\nid: ", 1)[1].split(b"\n", 1)[0].decode()
    late = await client.get(f"/agent/chat/{run_id}/stream", headers={"Last-Event-ID": last_id})
    assert late.status == 200
    assert without_comments(await late.read()) == b'event: meta\ndata: {"runId":"' + run_id.encode() + b'"}\n\n' + (
        b"event: done\ndata: {}\n\n"
    )
    assert (await client.post(f"/agent/chat/{run_id}/cancel")).status == 404


async def test_nest_client_cancels_a_run_on_an_agentkit_backend(nest_front) -> None:
    backend, client = nest_front
    resp = await client.post("/agent/chat", json={"message": "wait"})
    run_id = resp.headers["X-Agent-Run-Id"]
    seen = bytearray()
    await read_until(resp.content, b'"kind":"text"', seen)
    await asyncio.wait_for(backend.reached.wait(), 10)

    answer = await client.post(f"/agent/chat/{run_id}/cancel")
    assert answer.status == 201 and await answer.json() == {"aborted": True}
    body = await read_all(resp.content, seen)
    assert body.endswith(b'data: {"kind":"cancelled"}\n\nevent: done\ndata: {}\n\n')
    end = decode("nest", without_comments(body))[-1]
    assert type(end) is Terminal and end.status == "cancelled" and end.failure is UNSET  # not an error
    await asyncio.wait_for(backend.cancelled.wait(), 10)  # the agentkit request was aborted
    assert (await client.post(f"/agent/chat/{run_id}/cancel")).status == 404


# -- agentkit client <-> nest backend (the real capture) --------------------------------------


class NestBackend(Upstream):
    """The published nest surface, serving capture 02 (held before the action call's outcome)."""

    def __init__(self) -> None:
        super().__init__()
        self.cancels: list[tuple[str, dict[str, str]]] = []
        self.cancel_seen = asyncio.Event()
        self.approved = asyncio.Event()
        self.threads = NestThreads()  # the real server's (tests/nest_threads.py)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent/chat", self.chat)
        app.router.add_post("/agent/chat/{run_id}/cancel", self.cancel)
        app.router.add_post("/agent/tool-call/{decision}", self.decide)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await self.record(request))
        cap = capture("02-chat-action-approved.http")
        recorded = {k: v for k, v in cap.headers.items() if k.startswith("x-agent-")}
        headers, parts = self.threads.answer(body, recorded, frames(cap.body))
        if body["message"] == "wait":
            return await write_stream(request, parts[:4], status=201, headers=headers, upstream=self, hold_after=4)
        if body["message"] == "stop":
            parts = [*parts[:5], b'data: {"kind":"cancelled"}\n\n', b"event: done\ndata: {}\n\n"]
            return await write_stream(request, parts, status=201, headers=headers)
        held = next(i for i, p in enumerate(parts) if b'"tool-input-available","id":"call-a1"' in p) + 1
        resp = await write_stream(request, parts[:held], status=201, headers=headers)
        await self.approved.wait()
        for part in parts[held:]:
            await resp.write(part)
        return resp

    async def cancel(self, request: web.Request) -> web.Response:
        self.cancels.append((request.match_info["run_id"], dict(request.headers)))
        self.cancel_seen.set()
        return web.json_response({"aborted": True}, status=201)

    async def decide(self, request: web.Request) -> web.Response:
        self.controls.append(
            (request.match_info["decision"], msgspec.json.decode(await request.read()), dict(request.headers))
        )
        self.approved.set()
        return web.json_response({"ok": True}, status=201)


@pytest.fixture
async def agentkit_front(aiohttp_server, aiohttp_client):
    backend = NestBackend()
    server = await aiohttp_server(backend.app())
    config = proxy_config(
        url_of(server, "/agent"), "nest", "agentkit", headers=["x-actor-id=env:ACTOR"], environ={"ACTOR": "u1"}
    )
    client = await start_proxy(aiohttp_client, config)
    return backend, client


async def test_agentkit_client_chats_and_approves_against_a_nest_backend(agentkit_front) -> None:
    backend, client = agentkit_front
    turn = {"text": "weather and purge, slow", "history": [], "conversationId": "thr-5"}
    resp = await client.post("/", json=turn)
    assert resp.status == 200 and resp.headers["Content-Type"] == "text/event-stream"

    seen = bytearray()
    await read_until(resp.content, b'"requiresApproval":true', seen)
    assert backend.last_json == {"message": "weather and purge, slow"}  # new: the server makes the thread
    assert backend.requests[0]["headers"]["x-actor-id"] == "u1"
    assert seen.startswith(PING)
    answer = await client.post("/tool-call/approve", json={"toolCallId": "call-a1"})
    assert answer.status == 200 and await answer.json() == {"ok": True}
    decision, body, headers = backend.controls[0]
    assert (decision, body, headers["x-actor-id"]) == ("approve", {"toolCallId": "call-a1"}, "u1")

    events = decode("agentkit", without_comments(await read_all(resp.content, seen)))
    start = events[0]
    assert type(start) is RunStart and start.run_id == "d7d1fe53-6de5-4962-88cd-69ac3080f55e"
    assert start.thread_id == "thr-5"
    calls = [e for e in events if type(e) is ToolCall]
    assert [(c.call_id, c.tool_kind) for c in calls] == [("call-r1", UNSET), ("call-a1", "action")]
    assert [e.call_id for e in events if type(e) is ToolOutput] == ["call-r1", "call-a1"]
    end = events[-1]
    assert type(end) is Terminal and end.status == "succeeded" and end.text == "Checking…Done."


async def test_agentkit_client_disconnect_cancels_the_nest_run(aiohttp_server, aiohttp_client) -> None:
    """On a route without a resume grace period (a client that goes is not coming back)."""
    backend = NestBackend()
    server = await aiohttp_server(backend.app())
    config = proxy_config(
        url_of(server, "/agent"),
        "nest",
        "agentkit",
        headers=["x-actor-id=env:ACTOR"],
        environ={"ACTOR": "u1"},
        resume_grace=0,
    )
    client = await start_proxy(aiohttp_client, config)
    resp = await client.post("/", json={"text": "wait", "history": []})
    seen = bytearray()
    await read_until(resp.content, b'"type":"text_delta"', seen)
    await asyncio.wait_for(backend.reached.wait(), 10)
    resp.close()  # the agentkit client aborts its fetch: transport-level cancel
    await asyncio.wait_for(backend.cancelled.wait(), 10)  # the upstream request is gone at once
    await asyncio.wait_for(backend.cancel_seen.wait(), 10)  # and the nest run was told to stop
    run_id, headers = backend.cancels[0]
    assert run_id == "d7d1fe53-6de5-4962-88cd-69ac3080f55e" and headers["x-actor-id"] == "u1"


async def test_nest_cancelled_then_done_is_an_agentkit_cancelled_turn(agentkit_front) -> None:
    _backend, client = agentkit_front
    body = await (await client.post("/", json={"text": "stop", "history": []})).read()
    events = decode("agentkit", without_comments(body))
    assert [e.text for e in events if type(e) is TextDelta] == ["Checking", "…"]
    end = events[-1]
    assert type(end) is Terminal and end.status == "cancelled"
    assert b'"status":"cancelled"' in body.splitlines()[-2]
