"""agentfootprint over HTTP, the hosting surface (``src/hosting/httpHost.ts``, doc §5):
``POST <mount>/invoke {input, sessionId?, decision?}`` answered ``200`` with the stream (SSE with
``Accept: text/event-stream``). The doc gives that request shape for the hosting dialect; the
``toSSE`` envelope stream has no request of its own (the host application decides it), so this
streambridge serves the envelope stream on the hosting route and request shape too. There is no tool
decision route: a decision travels on the next ``POST /invoke`` as ``decision``, so the control
path below is this bridge's own."""

from __future__ import annotations

from urllib.parse import urlsplit

from msgspec import UNSET, Raw, Struct, UnsetType

from ..http import HttpSurface, Threads, join_url
from ..requests import WIRE, ChatRequest, check_id, decode_request, encode_request, optional, or_unset

__all__ = ["SURFACE", "Invoke", "build_request", "parse_request"]


class Invoke(Struct, **WIRE):
    input: str
    session_id: str | UnsetType = UNSET
    decision: Raw | UnsetType = UNSET


def parse_request(body: bytes) -> ChatRequest:
    w = decode_request(body, Invoke, "agentfootprint invoke request")
    return ChatRequest(text=w.input, thread_id=check_id(optional(w.session_id), "sessionId"))


def build_request(req: ChatRequest) -> bytes:
    return encode_request(Invoke(input=req.text, session_id=or_unset(req.thread_id)))


def upstream_chat_url(upstream: str) -> str:
    """A host configured by its base URL gets ``…/invoke``; a URL that names the route is kept."""
    return upstream if urlsplit(upstream).path.rstrip("/").endswith("/invoke") else join_url(upstream, "invoke")


SURFACE = HttpSurface(
    chat_path="invoke",
    chat_status=200,
    control_path="tool-call/{decision}",
    control_status=200,
    parse_request=parse_request,
    build_request=build_request,
    upstream_chat_url=upstream_chat_url,
    threads=Threads("sessionId"),  # the caller's: a missing one is no session (httpHost's readRequest)
)
