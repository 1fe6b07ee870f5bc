"""The proxy serving AG-UI clients: a run that ended asking (interrupts in ``RUN_FINISHED.outcome``)
must be resumed with an answer to every interrupt; an incomplete ``resume`` list is refused with
a 400 naming what it left out, before anything goes upstream (AG-UI 1.0 §5)."""

from __future__ import annotations

import msgspec
import pytest
from aiohttp import web

from .proxy_support import Upstream, proxy_config, start_proxy, url_of, write_stream

OUTCOME = {
    "type": "interrupt",
    "interrupts": [
        {"id": "int-1", "reason": "tool_approval", "toolCallId": "call-1"},
        {"id": "int-2", "reason": "input_required", "message": "Which account?"},
    ],
}


def sse(obj: dict) -> bytes:
    return b"data: " + msgspec.json.encode(obj) + b"\n\n"


def run(thread: str, run_id: str, outcome: dict | None) -> list[bytes]:
    finished = {"type": "RUN_FINISHED", "threadId": thread, "runId": run_id}
    if outcome is not None:
        finished["outcome"] = outcome
    return [
        sse({"type": "RUN_STARTED", "threadId": thread, "runId": run_id}),
        sse({"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"}),
        sse({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Need two answers."}),
        sse({"type": "TEXT_MESSAGE_END", "messageId": "m1"}),
        sse(finished),
    ]


class AgUiAgent(Upstream):
    """An AG-UI agent: its first run ends asking two interrupts, a resumed run ends done."""

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent", self.run)
        return app

    async def run(self, request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await self.record(request))
        outcome = None if body.get("resume") else OUTCOME
        return await write_stream(request, run(body["threadId"], body["runId"], outcome))


def request(thread: str, resume: list[dict] | None = None) -> dict:
    body: dict = {
        "threadId": thread,
        "runId": "r-" + str(len(resume or [])),
        "messages": [{"id": "u1", "role": "user", "content": "Refund order 7"}],
    }
    if resume is not None:
        body["resume"] = resume
    return body


@pytest.fixture
async def ag_ui_front(aiohttp_server, aiohttp_client):
    agent = AgUiAgent()
    server = await aiohttp_server(agent.app())
    client = await start_proxy(aiohttp_client, proxy_config(url_of(server, "/agent"), "ag-ui", "ag-ui"))
    return agent, client


async def test_an_incomplete_resume_is_refused_before_anything_goes_upstream(ag_ui_front) -> None:
    agent, client = ag_ui_front
    first = await client.post("/", json=request("t1"))
    assert first.status == 200 and b'"type":"interrupt"' in await first.read()

    partial = await client.post("/", json=request("t1", [{"interruptId": "int-1", "status": "resolved"}]))
    assert partial.status == 400
    message = (await partial.json())["message"]
    assert "every interrupt" in message and "int-2" in message and "int-1" not in message
    assert len(agent.requests) == 1  # nothing went upstream

    answers = [
        {"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}},
        {"interruptId": "int-2", "status": "cancelled"},
    ]
    resumed = await client.post("/", json=request("t1", answers))
    assert resumed.status == 200 and b'"type":"RUN_FINISHED"' in await resumed.read()
    assert agent.last_json["resume"] == answers  # forwarded unchanged to the AG-UI agent

    again = await client.post("/", json=request("t1", [{"interruptId": "int-1", "status": "resolved"}]))
    assert again.status == 200  # the resumed run asked nothing: nothing left to answer
    await again.read()


async def test_a_new_message_or_another_thread_is_not_a_resume(ag_ui_front) -> None:
    agent, client = ag_ui_front
    await (await client.post("/", json=request("t2"))).read()
    other = await client.post("/", json=request("t3", [{"interruptId": "int-1", "status": "resolved"}]))
    assert other.status == 200  # t3 never asked anything
    await other.read()
    fresh = await client.post("/", json=request("t2"))
    assert fresh.status == 200  # no resume list: a new message on the thread
    await fresh.read()
    assert len(agent.requests) == 3
