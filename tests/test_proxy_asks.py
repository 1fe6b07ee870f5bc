"""Approvals across an upstream whose runs end to ask (AG-UI interrupts).

An AG-UI run that needs an approval ends with ``RUN_FINISHED {outcome: interrupt}``; the answer
comes as ``resume`` entries in the next run on the same thread. Clients of every other protocol
answer differently, and the proxy carries the answers across:

- clients that answer while their stream waits (nest, agentkit, oma, agentfootprint: the
  control route ``tool-call/approve|reject``) keep one open stream: the proxy withholds the
  run's end, waits for every answer (or ``approval_timeout``), sends the resume run upstream and
  goes on in the same stream;
- AI SDK clients answer in their next request (``addToolApprovalResponse``): their approval
  responses become the resume entries of the interrupts they answer.

The tests loop over the registry: every client protocol of the first kind gets the same proof.
"""

from __future__ import annotations

import msgspec
import pydantic
import pytest
from ag_ui.core import RunAgentInput
from aiohttp import web
from websockets.asyncio.client import connect

from streambridge import codecs
from streambridge.bridge.state import STATE
from streambridge.codecs.requests import ChatRequest
from streambridge.events import Terminal

from .proxy_support import (
    Upstream,
    decode,
    proxy_config,
    read_all,
    read_until,
    start_proxy,
    url_of,
    without_ids,
    write_stream,
)

APPROVAL = {"id": "int-1", "reason": "tool_approval", "toolCallId": "call-1", "message": "Refund 40 EUR?"}
QUESTION = {"id": "int-2", "reason": "input_required", "message": "Which account?"}


def sse(obj: dict) -> bytes:
    return b"data: " + msgspec.json.encode(obj) + b"\n\n"


class AskingAgent(Upstream):
    """An AG-UI agent: a run without ``resume`` says a sentence and ends asking ``interrupts``;
    a resumed run says what it did and ends done."""

    def __init__(self, interrupts: list[dict]) -> None:
        super().__init__()
        self.interrupts = interrupts
        self.invalid: list[str] = []  # requests the real SDK's RunAgentInput refused

    def check(self, raw: bytes) -> None:
        try:
            RunAgentInput.model_validate_json(raw)
        except pydantic.ValidationError as exc:
            self.invalid.append(str(exc))

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent", self.run)
        return app

    async def run(self, request: web.Request) -> web.StreamResponse:
        raw = await self.record(request)
        self.check(raw)
        body = msgspec.json.decode(raw)
        thread, run = body["threadId"], body["runId"]
        resumed = bool(body.get("resume"))
        finished: dict = {"type": "RUN_FINISHED", "threadId": thread, "runId": run}
        if not resumed:
            finished["outcome"] = {"type": "interrupt", "interrupts": self.interrupts}
        message = "m2" if resumed else "m1"
        text = "Refunded." if resumed else "Checking the order."
        return await write_stream(
            request,
            [
                sse({"type": "RUN_STARTED", "threadId": thread, "runId": run}),
                sse({"type": "TEXT_MESSAGE_START", "messageId": message, "role": "assistant"}),
                sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": text}),
                sse({"type": "TEXT_MESSAGE_END", "messageId": message}),
                sse(finished),
            ],
        )


#: client protocols that answer on the control route while their stream waits
IN_STREAM = [name for name in codecs.names() if not codecs.get(name).http.answers_in_next_request]


def client_request(protocol: str, thread: str) -> tuple[str, bytes]:
    surface = codecs.get(protocol).http
    return "/" + surface.chat_path, surface.build_request(ChatRequest(text="Refund order 7", thread_id=thread))


def control(protocol: str, decision: str) -> str:
    return "/" + codecs.get(protocol).http.control_path.replace("{decision}", decision)


async def front(aiohttp_server, aiohttp_client, target: str, interrupts: list[dict], **settings):
    agent = AskingAgent(interrupts)
    server = await aiohttp_server(agent.app())
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "ag-ui", target, **settings))
    return agent, client


def said_an_end(protocol: str, partial: bytes) -> bool:
    """Whether the part of a stream read so far holds its terminal."""
    return any(type(e) is Terminal for e in codecs.get(protocol).decoder().feed(partial))


def terminals(protocol: str, body: bytes) -> list[Terminal]:
    return [e for e in decode(protocol, body) if type(e) is Terminal]


@pytest.mark.parametrize("target", IN_STREAM)
async def test_answers_on_the_control_route_resume_the_run_in_the_same_stream(
    aiohttp_server, aiohttp_client, target: str
) -> None:
    agent, client = await front(aiohttp_server, aiohttp_client, target, [APPROVAL, QUESTION])
    path, body = client_request(target, "t1")
    resp = await client.post(path, data=body, headers={"Content-Type": "application/json"})
    assert resp.status == codecs.get(target).http.chat_status
    seen = bytearray()
    await read_until(resp.content, b"int-2", seen)  # both questions reached the client
    assert b"call-1" in seen and not said_an_end(target, bytes(seen))
    assert len(agent.requests) == 1  # the first run is over upstream; the client's stream waits

    approve = await client.post(control(target, "approve"), json={"toolCallId": "call-1"})
    assert approve.status == codecs.get(target).http.control_status
    assert await approve.json() == {"ok": True}
    reject = await client.post(control(target, "reject"), json={"toolCallId": "int-2", "reason": "not now"})
    assert reject.status == codecs.get(target).http.control_status

    whole = await read_all(resp.content, seen)
    first, resumed = (msgspec.json.decode(r["body"]) for r in agent.requests)
    assert resumed["threadId"] == first["threadId"] == "t1" and resumed["runId"] != first["runId"]
    assert resumed["messages"] == first["messages"]
    assert resumed["resume"] == [
        {"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "int-2", "status": "cancelled", "payload": {"approved": False, "reason": "not now"}},
    ]
    events = decode(target, whole)
    ends = [e for e in events if type(e) is Terminal]
    assert len(ends) == 1 and ends[0].status == "succeeded"  # one stream, one end
    assert sum(type(e).__name__ == "RunStart" for e in events) <= 1  # the resume run's start is not repeated
    assert b"Checking the order." in whole and b"Refunded." in whole
    assert whole.index(b"Checking the order.") < whole.index(b"Refunded.")
    assert not client.app[STATE].pending  # nothing left waiting
    assert agent.invalid == []  # ag-ui-protocol's RunAgentInput takes both requests


async def test_a_websocket_client_answers_on_the_control_route_too(aiohttp_server, aiohttp_client) -> None:
    agent, client = await front(aiohttp_server, aiohttp_client, "nest", [APPROVAL])
    messages: list[str] = []
    answered = False
    url = str(client.make_url("/ws")).replace("http://", "ws://", 1)
    async with connect(url, proxy=None) as ws:
        await ws.send(msgspec.json.encode({"message": "Refund order 7", "threadId": "t5"}).decode())
        async for message in ws:
            messages.append(message)
            if "approval-requested" in message and not answered:  # nest's own approval frame
                answer = await client.post(control("nest", "approve"), json={"toolCallId": "call-1"})
                assert answer.status == 201
                answered = True
        assert ws.close_code == 1000
    whole = "".join(messages)
    assert "Checking the order." in whole and "Refunded." in whole
    assert [m for m in messages if '"event":"done"' in m] and not [m for m in messages if '"event":"error"' in m]
    assert agent.last_json["resume"] == [{"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}}]


@pytest.mark.parametrize("target", IN_STREAM[:1])
async def test_unanswered_questions_are_cancelled_at_the_approval_timeout(
    aiohttp_server, aiohttp_client, target: str
) -> None:
    agent, client = await front(aiohttp_server, aiohttp_client, target, [APPROVAL, QUESTION], approval_timeout=0)
    path, body = client_request(target, "t2")
    resp = await client.post(path, data=body, headers={"Content-Type": "application/json"})
    whole = await read_all(resp.content, bytearray())
    assert [t.status for t in terminals(target, whole)] == ["succeeded"]
    assert b"Refunded." in whole
    assert agent.last_json["resume"] == [
        {"interruptId": i, "status": "cancelled", "payload": {"approved": False, "reason": "no answer in time"}}
        for i in ("int-1", "int-2")
    ]
    assert agent.invalid == []


async def test_a_cancel_while_the_run_waits_ends_the_stream_and_sends_nothing_upstream(
    aiohttp_server, aiohttp_client
) -> None:
    agent, client = await front(aiohttp_server, aiohttp_client, "nest", [APPROVAL])
    path, body = client_request("nest", "t3")
    resp = await client.post(path, data=body, headers={"Content-Type": "application/json"})
    seen = bytearray()
    await read_until(resp.content, b"call-1", seen)
    run_id = resp.headers["X-Agent-Run-Id"]
    cancel = await client.post(f"/agent/chat/{run_id}/cancel")
    assert cancel.status == 201
    whole = await read_all(resp.content, seen)
    assert [t.status for t in terminals("nest", whole)] == ["cancelled"]
    assert len(agent.requests) == 1
    late = await client.post(control("nest", "approve"), json={"toolCallId": "call-1"})
    assert late.status == 404  # nothing asks any more
    assert not client.app[STATE].pending


async def test_a_decision_nobody_asked_for_is_404(aiohttp_server, aiohttp_client) -> None:
    agent, client = await front(aiohttp_server, aiohttp_client, "nest", [APPROVAL])
    resp = await client.post(control("nest", "approve"), json={"toolCallId": "call-9"})
    assert resp.status == 404 and "toolCallId" in (await resp.json())["message"]
    assert agent.requests == []  # an AG-UI upstream has no control route to forward it to


async def test_a_client_that_leaves_while_the_run_waits_leaves_nothing_waiting(aiohttp_server, aiohttp_client) -> None:
    """Once no one has read the held run for the resume grace period (here 0.2 s), it ends."""
    agent, client = await front(aiohttp_server, aiohttp_client, "agentkit", [APPROVAL], resume_grace=0.2)
    path, body = client_request("agentkit", "t4")
    resp = await client.post(path, data=body, headers={"Content-Type": "application/json"})
    await read_until(resp.content, b"call-1", bytearray())
    state = client.app[STATE]
    assert [call for _, call in state.pending] == ["call-1"]
    resp.close()
    await state.idle.wait()  # the relay saw its client go, and no one come back, and ended
    assert not state.pending and len(agent.requests) == 1


# -- AI SDK clients: the answer is in the next request ------------------------------------------


def ui_request(chat: str, approval: dict | None = None) -> dict:
    messages: list[dict] = [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Refund order 7"}]}]
    if approval is not None:
        part = {"type": "tool-refund", "toolCallId": "call-1", "state": "approval-responded", "input": {}}
        messages.append({"id": "a1", "role": "assistant", "parts": [{**part, "approval": approval}]})
    return {"id": chat, "messages": messages, "trigger": "submit-message"}


@pytest.mark.parametrize("reason", ["tool_approval", "tool_call"])  # any interrupt about a call, no schema
@pytest.mark.parametrize("target", [n for n in codecs.names() if n.startswith("ai-sdk") and n != "ai-sdk@5"])
async def test_an_ai_sdk_approval_response_answers_the_interrupt_it_was_asked_by(
    aiohttp_server, aiohttp_client, target: str, reason: str
) -> None:
    approval = {**APPROVAL, "reason": reason}
    agent, client = await front(aiohttp_server, aiohttp_client, target, [approval, QUESTION])
    first = await client.post("/api/chat", json=ui_request("chat-1"))
    sent = without_ids(await first.read())
    chunks = [msgspec.json.decode(line[6:]) for line in sent.split(b"\n\n") if line[6:7] == b"{"]
    asked = next(c for c in chunks if c["type"] == "tool-approval-request")
    assert asked["toolCallId"] == "call-1" and chunks[-1]["type"] == "finish"  # the stream ends: ai's way

    answer = {"id": asked["approvalId"], "approved": True, "reason": "fine"}
    second = await client.post("/api/chat", json=ui_request("chat-1", answer))
    body = await second.read()
    assert b"Refunded." in body
    assert agent.last_json["threadId"] == "chat-1"
    assert agent.last_json["resume"] == [
        {"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}},
        # the question an AI SDK client cannot answer is cancelled: a resume list covers them all
        {
            "interruptId": "int-2",
            "status": "cancelled",
            "payload": {"approved": False, "reason": "not answered by the client"},
        },
    ]
    assert agent.invalid == []


async def test_an_ai_sdk_rejection_is_a_cancelled_entry_with_its_reason(aiohttp_server, aiohttp_client) -> None:
    agent, client = await front(aiohttp_server, aiohttp_client, "ai-sdk", [APPROVAL])
    await (await client.post("/api/chat", json=ui_request("chat-2"))).read()
    answer = {"id": "approval-call-1", "approved": False, "reason": "too much"}
    await (await client.post("/api/chat", json=ui_request("chat-2", answer))).read()
    assert agent.last_json["resume"] == [
        {"interruptId": "int-1", "status": "cancelled", "payload": {"approved": False, "reason": "too much"}}
    ]


async def test_only_the_identity_that_started_a_run_answers_its_questions(aiohttp_server, aiohttp_client) -> None:
    """Another identity that knows the tool call id gets the answer of a question no one asked
    (and the run is not answered); the run's own identity answers it."""
    agent, client = await front(aiohttp_server, aiohttp_client, "nest", [APPROVAL], owner_header="X-User")
    path, body = client_request("nest", "t4")
    alice = {"Content-Type": "application/json", "X-User": "alice"}
    resp = await client.post(path, data=body, headers=alice)
    seen = bytearray()
    await read_until(resp.content, b"call-1", seen)
    stranger = await client.post(control("nest", "approve"), json={"toolCallId": "call-1"}, headers={"X-User": "bob"})
    assert stranger.status == 404 and len(agent.requests) == 1
    own = await client.post(control("nest", "approve"), json={"toolCallId": "call-1"}, headers={"X-User": "alice"})
    assert own.status == codecs.get("nest").http.control_status
    await read_all(resp.content, seen)
    resumed = msgspec.json.decode(agent.requests[1]["body"])
    assert resumed["resume"] == [{"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}}]
