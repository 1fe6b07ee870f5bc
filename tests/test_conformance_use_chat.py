"""A real `useChat` round through the proxy: @ai-sdk/react's `Chat` with ai 7's
`DefaultChatTransport` (tests/conformance/use-chat-round.mjs, in Node) against streambridge's
proxy serving ai-sdk in front of a nest backend (the recorded capture 01: reasoning, text, a
read tool with its output, then more text in a second step).

- The full round ends `ready` with no error: the user's message, then one assistant message whose
  parts are the source's reasoning, text and tool call (in its final state, with its input and
  output) in the source's order; the proxy's heartbeat (an SSE comment) did not disturb it.
- `resumeStream()` on the finished chat asks `GET <api>/<chatId>/stream`, is told 204, and
  leaves the chat as it was.
- Stop mid-stream, on a route without a resume grace period: the client aborts, the proxy drops
  the upstream connection and asks the nest backend to cancel the run by its id. (Where a run
  outlives its client, a dropped connection is not a stop: ``DELETE <api>/<chatId>/stream`` is,
  see test_proxy_resume.py.)
- A page reloaded mid-answer (tests/conformance/use-chat-resume.mjs): the first connection is cut
  while the backend is still answering; a fresh `Chat` with the chat's id calls `resumeStream()`
  and, from the run log, gets the whole answer, exactly as the uninterrupted round shows it.
- A tool approval (tests/conformance/use-chat-approval.mjs) in front of an AG-UI agent whose run
  ends with an interrupt: the Chat shows the tool part asking, `addToolApprovalResponse` makes it
  send itself again, and the agent's next run carries the answer as the interrupt's `resume`
  entry (approved → resolved, denied → cancelled with the reason), then the chat shows its text.

Node.js and npm are required: without them the test is skipped with the reason printed, and
under ``CI=true`` it fails instead (see tests/tools.py).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import msgspec
import pytest
from aiohttp import web

from streambridge.bridge.state import STATE

from .nest_threads import NestThreads
from .proxy_support import Upstream, capture, frames, proxy_config, start_proxy, stream_app, url_of, write_stream
from .test_proxy_asks import APPROVAL, AskingAgent
from .tools import CONFORMANCE, conformance_node

ROUND = CONFORMANCE / "use-chat-round.mjs"
CAPTURE = "01-chat-read-only.http"


class NestBackend(Upstream):
    """Capture 01 in full for the first chat; the second is held after four frames (until the
    proxy lets go of it). Cancels by run id are recorded."""

    def __init__(self) -> None:
        super().__init__()
        self.cancels: list[str] = []
        self.cancel_seen = asyncio.Event()
        self.threads = NestThreads()  # the real server's (tests/nest_threads.py)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/agent/chat", self.chat)
        app.router.add_post("/agent/chat/{run_id}/cancel", self.cancel)
        return app

    async def chat(self, request: web.Request) -> web.StreamResponse:
        body = msgspec.json.decode(await self.record(request))
        cap = capture(CAPTURE)
        recorded = {k: v for k, v in cap.headers.items() if k.startswith("x-agent-")}
        headers, parts = self.threads.answer(body, recorded, frames(cap.body))
        if len(self.requests) == 1:
            return await write_stream(request, parts, status=201, headers=headers)
        return await write_stream(request, parts, status=201, headers=headers, upstream=self, hold_after=4)

    async def cancel(self, request: web.Request) -> web.Response:
        self.cancels.append(request.match_info["run_id"])
        self.cancel_seen.set()
        return web.json_response({"aborted": True}, status=201)


async def run_node(node: str, api: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        node,
        str(ROUND),
        api,
        "--text",
        "What is the weather in Paris?",
        "--stop-after-events",
        "4",
        cwd=CONFORMANCE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    return json.loads(out)


@pytest.fixture
def node() -> str:
    return conformance_node("@ai-sdk/react's Chat with ai's DefaultChatTransport")


async def test_a_use_chat_round_through_the_proxy_in_front_of_nest(node: str, aiohttp_server, aiohttp_client) -> None:
    backend = NestBackend()
    upstream = await aiohttp_server(backend.app())
    config = proxy_config(url_of(upstream, "/agent"), "nest", "ai-sdk", resume_grace=0)
    proxy = await start_proxy(aiohttp_client, config)
    result = await run_node(node, url_of(proxy, "/api/chat"))
    full, stopped = result["full"], result["stopped"]

    assert (full["status"], full["error"]) == ("ready", None)
    assert full["finish"] == {"isAbort": False, "isDisconnect": False, "isError": False}
    assert full["response"]["status"] == 200
    assert full["response"]["headers"]["x-vercel-ai-ui-message-stream"] == "v1"
    assert full["commentsSeen"] >= 1  # the heartbeat before the first upstream byte
    chat_id = full["request"]["body"]["id"]
    assert backend.requests[0]["path"] == "/agent/chat"
    sent = msgspec.json.decode(backend.requests[0]["body"])
    assert sent == {"message": "What is the weather in Paris?"}  # a first message: the server makes the thread
    assert chat_id and backend.threads.created[0] == "thr-1" and backend.threads.refused == []

    user, assistant = full["messages"]
    assert user["role"] == "user" and user["parts"] == [{"type": "text", "text": "What is the weather in Paris?"}]
    assert assistant["role"] == "assistant"
    shown = [p for p in assistant["parts"] if not p["type"].startswith("data-")]
    assert [p["type"] for p in shown] == [
        "step-start",
        "reasoning",
        "text",
        "tool-getWeather",
        "step-start",
        "text",
    ]
    reasoning, first_text, tool, second_text = shown[1], shown[2], shown[3], shown[5]
    assert reasoning["text"] == "Need weather + purge." and reasoning["state"] == "done"
    assert (first_text["text"], second_text["text"]) == ("Checking…", "Done.")
    assert tool["toolCallId"] == "call-r1" and tool["state"] == "output-available"
    assert tool["input"] == {"city": "Paris"}
    assert tool["output"] == {"tempC": 21, "city": "Paris"}

    assert full["resume"] == {
        "url": url_of(proxy, f"/api/chat/{chat_id}/stream"),
        "status": 204,
        "chatStatus": "ready",
        "error": None,
        "messagesUnchanged": True,
    }

    assert stopped["stopCalled"] and stopped["error"] is None
    assert stopped["finish"] is not None and stopped["finish"]["isAbort"]
    assert stopped["status"] == "ready"
    await asyncio.wait_for(backend.cancelled.wait(), timeout=10)  # the upstream connection dropped
    await asyncio.wait_for(backend.cancel_seen.wait(), timeout=10)  # and the nest run cancelled by id
    run_id = capture(CAPTURE).headers["x-agent-run-id"]
    assert backend.cancels == [run_id]


# -- a page reloaded mid-answer: resumeStream() through the run log ------------------------------

RESUME_ROUND = CONFORMANCE / "use-chat-resume.mjs"
USER = {"id": "u-1", "role": "user", "parts": [{"type": "text", "text": "What is the weather in Paris?"}]}


async def test_a_reloaded_use_chat_resumes_the_live_answer_through_the_run_log(
    node: str, aiohttp_server, aiohttp_client
) -> None:
    backend = Upstream()
    cap = capture(CAPTURE)
    headers = {k: v for k, v in cap.headers.items() if k.startswith("x-agent-")}

    async def chat(request: web.Request) -> web.StreamResponse:
        await backend.record(request)
        return await write_stream(
            request, frames(cap.body), status=201, headers=headers, upstream=backend, hold_after=4
        )

    upstream = await aiohttp_server(stream_app(chat, "/agent/chat"))
    proxy = await start_proxy(aiohttp_client, proxy_config(url_of(upstream, "/agent"), "nest", "ai-sdk"))
    first = await proxy.post("/api/chat", json={"id": "chat-9", "messages": [USER], "trigger": "submit-message"})
    run_id = first.headers["X-Streambridge-Run-Id"]
    await asyncio.wait_for(backend.reached.wait(), 10)
    first.close()  # the page goes away mid-answer; the backend is still answering

    process = await asyncio.create_subprocess_exec(
        node,
        str(RESUME_ROUND),
        url_of(proxy, "/api/chat"),
        "chat-9",
        json.dumps(USER),
        cwd=CONFORMANCE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    runlog = proxy.app[STATE].runlog
    async with asyncio.timeout(60):  # the reloaded page is reading the run: let the backend finish
        while not await runlog.has_readers(run_id):
            await asyncio.sleep(0.01)
    backend.release.set()
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    result = json.loads(out)

    assert result["resume"] == {"url": url_of(proxy, "/api/chat/chat-9/stream"), "status": 200}
    assert (result["status"], result["error"]) == ("ready", None)
    assert result["finish"] == {"isAbort": False, "isDisconnect": False, "isError": False}
    user, assistant = result["messages"]
    assert user == USER and assistant["role"] == "assistant"
    shown = [p for p in assistant["parts"] if not p["type"].startswith("data-")]
    assert [p["type"] for p in shown] == ["step-start", "reasoning", "text", "tool-getWeather", "step-start", "text"]
    assert (shown[2]["text"], shown[5]["text"]) == ("Checking…", "Done.")
    assert shown[3]["state"] == "output-available" and shown[3]["output"] == {"tempC": 21, "city": "Paris"}
    assert not backend.cancelled.is_set()


# -- a tool approval, answered by the real Chat, reaching an AG-UI agent as a resume entry ------

APPROVAL_ROUND = CONFORMANCE / "use-chat-approval.mjs"


async def run_approval(node: str, api: str, *args: str) -> dict[str, Any]:
    process = await asyncio.create_subprocess_exec(
        node,
        str(APPROVAL_ROUND),
        api,
        "--text",
        "Refund order 7",
        *args,
        cwd=CONFORMANCE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), timeout=120)
    assert process.returncode == 0, err.decode()
    return json.loads(out)


#: the answer pydantic-ai's AG-UI adapter asks of a tool call needing approval (its interrupt's responseSchema)
YES_OR_NO = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "editedArgs": {"type": "object"}, "reason": {"type": "string"}},
    "required": ["approved"],
}


@pytest.mark.parametrize(
    ("args", "entry"),
    [
        ((), {"interruptId": "int-1", "status": "resolved", "payload": {"approved": True}}),
        (
            ("--deny", "too much"),
            {"interruptId": "int-1", "status": "cancelled", "payload": {"approved": False, "reason": "too much"}},
        ),
    ],
    ids=["approved", "denied"],
)
@pytest.mark.parametrize(
    "asks",
    [
        {"reason": "tool_approval"},
        {"reason": "tool_call"},  # any interrupt about a call with no schema
        {"reason": "tool_call", "responseSchema": YES_OR_NO},  # pydantic-ai's: a yes or no asked by its schema
    ],
    ids=["tool_approval", "tool_call", "tool_call-yes-or-no-schema"],
)
async def test_a_use_chat_approval_reaches_an_ag_ui_agent_as_its_resume_entry(
    node: str, aiohttp_server, aiohttp_client, args: tuple[str, ...], entry: dict, asks: dict
) -> None:
    agent = AskingAgent([{**APPROVAL, **asks}])
    upstream = await aiohttp_server(agent.app())
    proxy = await start_proxy(aiohttp_client, proxy_config(url_of(upstream, "/agent"), "ag-ui", "ai-sdk"))
    result = await run_approval(node, url_of(proxy, "/api/chat"), *args)

    assert (result["status"], result["error"]) == ("ready", None)
    [asked] = result["asked"]  # the interrupt reached the Chat as a tool part asking for approval
    assert asked["toolCallId"] == "call-1" and asked["state"] == "approval-requested"
    assert len(result["requests"]) == 2  # the Chat sent itself again once answered
    answered = result["requests"][1]["body"]["messages"][-1]["parts"]
    assert any(p.get("state") == "approval-responded" for p in answered)

    first, resumed = (msgspec.json.decode(r["body"]) for r in agent.requests)
    assert resumed["threadId"] == first["threadId"] == result["requests"][0]["body"]["id"]
    assert resumed["resume"] == [entry]
    assert agent.invalid == []  # ag-ui-protocol's RunAgentInput takes both requests
    texts = [
        p["text"] for m in result["messages"] if m["role"] == "assistant" for p in m["parts"] if p["type"] == "text"
    ]
    assert texts[-1] == "Refunded."
