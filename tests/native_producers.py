"""Native AI SDK and AG-UI streams of one agent run, made by a real third-party producer (pydantic-ai).

Each scenario runs the same streaming ``FunctionModel`` agent once through pydantic-ai's ``VercelAIAdapter``
(``sdk_version=7``) and once through its ``AGUIAdapter``, each dispatched from a request body of its own
protocol, so tests can compare what a client builds from streambridge's translation with a native stream.
Not byte-stable (left as produced): the adapters put fresh uuid4 text/reasoning/message ids in both streams, AG-UI
events carry wall-clock ``timestamp``s and the AI SDK ``message-metadata`` chunk a response timestamp; the tool
call ids are fixed by the model functions.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import ModelMessage, ToolReturnPart
from pydantic_ai.models.function import (
    AgentInfo,
    DeltaThinkingCalls,
    DeltaThinkingPart,
    DeltaToolCall,
    DeltaToolCalls,
    FunctionModel,
)
from pydantic_ai.ui import UIAdapter
from pydantic_ai.ui.ag_ui import AGUIAdapter
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.types import Message

SCENARIOS: tuple[str, ...] = ("text", "reasoning", "tool", "approval")

_PROMPT = "What is the weather in Paris?"

StreamItem = str | DeltaToolCalls | DeltaThinkingCalls
StreamFunction = Callable[[list[ModelMessage], AgentInfo], AsyncIterator[StreamItem]]


async def _text(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[StreamItem]:
    for delta in ("Hello", ", ", "world", "!"):
        yield delta


async def _reasoning(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[StreamItem]:
    for thought in ("The user ", "wants a ", "greeting."):
        yield {0: DeltaThinkingPart(content=thought)}
    for delta in ("Hello", ", world!"):
        yield delta


def _tool_returned(messages: list[ModelMessage]) -> bool:
    return any(isinstance(part, ToolReturnPart) for part in messages[-1].parts)


async def _tool(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[StreamItem]:
    if not _tool_returned(messages):  # step 1: call the tool, its JSON args in pieces
        yield {0: DeltaToolCall(name="get_weather", tool_call_id="call-1")}
        for piece in ('{"city": ', '"Par', 'is"}'):
            yield {0: DeltaToolCall(json_args=piece)}
        return
    for delta in ("It is ", "21 °C and sunny", " in Paris."):  # step 2: answer
        yield delta


async def _approval(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[StreamItem]:
    yield {0: DeltaToolCall(name="delete_file", tool_call_id="call-1")}
    for piece in ('{"path": ', '"notes.txt"}'):
        yield {0: DeltaToolCall(json_args=piece)}


_STREAMS: dict[str, StreamFunction] = {"text": _text, "reasoning": _reasoning, "tool": _tool, "approval": _approval}


def get_weather(city: str) -> str:
    """The current weather in a city."""
    return "21 °C and sunny"


def delete_file(path: str) -> str:
    """Delete a file (needs the user's approval)."""
    return f"deleted {path}"


def _agent(scenario: str) -> Agent[None, str | DeferredToolRequests]:
    agent = Agent(FunctionModel(stream_function=_STREAMS[scenario]), output_type=[str, DeferredToolRequests])
    agent.tool_plain(get_weather)
    agent.tool_plain(requires_approval=True)(delete_file)
    return agent


def _request(body: dict[str, Any]) -> Request:
    """A Starlette POST request carrying ``body`` as JSON, as a browser client would send it."""
    payload = json.dumps(body).encode()

    async def receive() -> Message:
        return {"type": "http.request", "body": payload, "more_body": False}

    headers = [(b"content-type", b"application/json"), (b"accept", b"text/event-stream")]
    return Request({"type": "http", "method": "POST", "path": "/chat", "headers": headers}, receive)


async def _dispatch(adapter: type[UIAdapter[Any, Any, Any, Any, Any]], body: dict[str, Any], **kwargs: Any) -> bytes:
    """The response body ``adapter.dispatch_request`` streams for ``body``, as Starlette writes it."""
    response = await adapter.dispatch_request(_request(body), **kwargs)
    if not isinstance(response, StreamingResponse):  # a 4xx for a request body the adapter rejected
        raise ValueError(f"{adapter.__name__} answered {response.status_code}: {response.body!r}")
    chunks = [c.encode(response.charset) if isinstance(c, str) else bytes(c) async for c in response.body_iterator]
    return b"".join(chunks)


async def _ai_sdk(scenario: str) -> bytes:
    body = {
        "trigger": "submit-message",
        "id": "chat-1",
        "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": _PROMPT}]}],
    }
    return await _dispatch(VercelAIAdapter, body, agent=_agent(scenario), sdk_version=7)


async def _ag_ui(scenario: str) -> bytes:
    body = {
        "threadId": "thr-1",
        "runId": "run-1",
        "messages": [{"id": "u1", "role": "user", "content": _PROMPT}],
        "tools": [],
        "context": [],
        "state": None,
        "forwardedProps": None,
    }
    return await _dispatch(AGUIAdapter, body, agent=_agent(scenario))


def native_streams(scenario: str) -> dict[str, bytes]:
    """{"ai-sdk": <the HTTP response body bytes of pydantic-ai's VercelAIAdapter>, "ag-ui": <the body bytes of its
    AGUIAdapter>} for one scenario: the same FunctionModel run streamed by both."""
    if scenario not in _STREAMS:
        raise ValueError(f"unknown scenario {scenario!r}; one of {SCENARIOS}")
    return {"ai-sdk": asyncio.run(_ai_sdk(scenario)), "ag-ui": asyncio.run(_ag_ui(scenario))}
