"""The HTTP surface of each protocol: what a client sends, what an upstream expects.

Requests are mapped through one neutral :class:`ChatRequest` (message text, thread id, history,
attachments, host context), the same hub-and-spoke shape the stream codecs use:

* ``nest``: ``POST <base>/chat {message, threadId?, agent?, attachments?, pageContext?, …}``.
  The server rebuilds history from its own store, so history is not sent.
* ``agentkit``: an ``AgentTurn`` ``{text, history, grounding?, attachments?, conversationId?}``.
* ``oma``: streambridge's request (OMA has no wire): ``{"messages": [{role, content}], …}`` or
  ``{"prompt": "…"}``, plus optional ``conversationId``, ``context``, ``agent``, ``attachments``.

Header rules for requests sent upstream live here too (hop-by-hop and credential stripping).
"""

from __future__ import annotations

import itertools
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

import msgspec
from msgspec import UNSET, Struct, UnsetType
from multidict import CIMultiDict
from yarl import URL

from .logging import log_event

__all__ = [
    "Attachment",
    "BadRequest",
    "ChatRequest",
    "HistoryMessage",
    "build_request",
    "parse_request",
    "upstream_headers",
]


class BadRequest(ValueError):
    """A client request the proxy cannot forward; the message is safe to send back."""


#: how deep a request body's JSON may nest (a real chat request is a few levels deep)
MAX_JSON_DEPTH = 64
#: how long an id taken from a request may be
MAX_ID_LENGTH = 256
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKETS = re.compile(rb"[^\[\]{}]+")


def check_depth(body: bytes, what: str = "request") -> None:
    """A :class:`BadRequest` for JSON nested deeper than :data:`MAX_JSON_DEPTH` (a parser would
    recurse on it); brackets inside strings do not count."""
    brackets = _BRACKETS.sub(b"", _JSON_STRING.sub(b"", body))
    if len(brackets) <= 2 * MAX_JSON_DEPTH:
        return
    steps = brackets.translate(_DEPTH_STEPS)  # an opening bracket is 2, a closing one 0
    if max(itertools.accumulate(b - 1 for b in steps)) > MAX_JSON_DEPTH:
        raise BadRequest(f"invalid {what}: JSON nested deeper than {MAX_JSON_DEPTH} levels")


_DEPTH_STEPS = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")


def check_id(value: str | None, field_name: str) -> str | None:
    """An id taken from a request goes into headers, URLs and logs: printable and bounded, or a
    :class:`BadRequest` naming the field."""
    if value is None:
        return None
    if not value or len(value) > MAX_ID_LENGTH or not value.isprintable():
        raise BadRequest(f"{field_name}: expected a printable id of 1 to {MAX_ID_LENGTH} characters")
    return value


@dataclass
class Attachment:
    name: str
    media_type: str
    id: str | None = None
    url: str | None = None
    data: str | None = None  # base64, inline
    size: int | None = None


@dataclass
class HistoryMessage:
    role: str
    text: str
    id: str | None = None


@dataclass
class ChatRequest:
    text: str
    thread_id: str | None = None
    history: list[HistoryMessage] = field(default_factory=list)
    attachments: list[Attachment] = field(default_factory=list)
    context: dict[str, Any] | None = None
    agent: str | None = None


# -- wire shapes ---------------------------------------------------------------------------

_S = {"kw_only": True, "omit_defaults": True, "rename": "camel"}


class NestAttachment(Struct, **_S):
    media_id: str = ""
    url: str = ""
    content_type: str = ""
    name: str = ""


class NestChat(Struct, **_S):
    message: str
    thread_id: str | UnsetType = UNSET
    agent: str | UnsetType = UNSET
    attachments: list[NestAttachment] | UnsetType = UNSET
    page_context: dict[str, Any] | UnsetType = UNSET
    regenerate: bool | UnsetType = UNSET
    transient: bool | UnsetType = UNSET


class AgentAttachment(Struct, **_S):
    id: str
    name: str
    media_type: str
    size_bytes: int | UnsetType = UNSET
    url: str | UnsetType = UNSET
    base64: str | UnsetType = UNSET


class AgentMessage(Struct, **_S):
    id: str
    role: Literal["user", "assistant", "system", "tool"]
    author_id: str
    text: str
    created_at: int | float


class AgentTurn(Struct, **_S):
    text: str
    history: list[AgentMessage] | UnsetType = UNSET  # required upstream: always written, [] when empty
    grounding: dict[str, Any] | UnsetType = UNSET
    attachments: list[AgentAttachment] | UnsetType = UNSET
    conversation_id: str | UnsetType = UNSET


class OmaTextBlock(Struct):
    type: str
    text: str = ""


class OmaMessage(Struct, **_S):
    role: Literal["user", "assistant", "system"]
    content: str | list[OmaTextBlock]


class OmaAttachment(Struct, **_S):
    name: str
    media_type: str
    id: str | UnsetType = UNSET
    url: str | UnsetType = UNSET
    data: str | UnsetType = UNSET


class OmaRequest(Struct, **_S):
    messages: list[OmaMessage] | UnsetType = UNSET
    prompt: str | UnsetType = UNSET
    conversation_id: str | UnsetType = UNSET
    context: dict[str, Any] | UnsetType = UNSET
    agent: str | UnsetType = UNSET
    attachments: list[OmaAttachment] | UnsetType = UNSET


_encode = msgspec.json.Encoder().encode


def _opt(value: Any) -> Any:
    return None if value is UNSET else value


def _decode(body: bytes, cls: type[Struct], what: str) -> Any:
    check_depth(body, what)
    try:
        return msgspec.json.decode(body, type=cls)
    except msgspec.ValidationError as exc:
        raise BadRequest(f"invalid {what}: {exc}") from None
    except msgspec.DecodeError:
        raise BadRequest(f"invalid {what}: the body is not JSON") from None


# -- parse (client → neutral) --------------------------------------------------------------


def parse_nest(body: bytes) -> ChatRequest:
    w: NestChat = _decode(body, NestChat, "nest chat request")
    if w.regenerate is True and w.thread_id is UNSET:
        raise BadRequest("regenerate requires an existing threadId")
    attachments = [
        Attachment(name=a.name, media_type=a.content_type, id=a.media_id or None, url=a.url or None)
        for a in (w.attachments or [])
    ]
    return ChatRequest(
        text=w.message,
        thread_id=check_id(_opt(w.thread_id), "threadId"),
        attachments=attachments,
        context=_opt(w.page_context),
        agent=_opt(w.agent),
    )


def parse_agentkit(body: bytes) -> ChatRequest:
    w: AgentTurn = _decode(body, AgentTurn, "AgentTurn")
    return ChatRequest(
        text=w.text,
        thread_id=check_id(_opt(w.conversation_id), "conversationId"),
        history=[HistoryMessage(role=m.role, text=m.text, id=m.id) for m in w.history or []],
        attachments=[
            Attachment(
                name=a.name, media_type=a.media_type, id=a.id, url=_opt(a.url), data=_opt(a.base64), size=_opt(a.size_bytes)
            )
            for a in (w.attachments or [])
        ],
        context=_opt(w.grounding),
    )


def _oma_text(content: str | list[OmaTextBlock]) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if b.type == "text")


def parse_oma(body: bytes) -> ChatRequest:
    w: OmaRequest = _decode(body, OmaRequest, "oma request")
    messages = [HistoryMessage(role=m.role, text=_oma_text(m.content)) for m in (w.messages or [])]
    if w.prompt is not UNSET:
        text = w.prompt
    elif messages and messages[-1].role == "user":
        text = messages.pop().text
    else:
        raise BadRequest("invalid oma request: give a prompt, or messages ending with a user message")
    return ChatRequest(
        text=text,
        thread_id=check_id(_opt(w.conversation_id), "conversationId"),
        history=messages,
        attachments=[
            Attachment(name=a.name, media_type=a.media_type, id=_opt(a.id), url=_opt(a.url), data=_opt(a.data))
            for a in (w.attachments or [])
        ],
        context=_opt(w.context),
        agent=_opt(w.agent),
    )


# -- build (neutral → upstream) ------------------------------------------------------------


def build_nest(req: ChatRequest) -> bytes:
    attachments = []
    for i, a in enumerate(req.attachments):
        if a.url is None:
            log_event(logging.WARNING, "attachment_dropped", protocol="nest", reason="nest references media by url")
            continue
        attachments.append(NestAttachment(media_id=a.id or f"att-{i}", url=a.url, content_type=a.media_type, name=a.name))
    w = NestChat(
        message=req.text,
        thread_id=req.thread_id if req.thread_id is not None else UNSET,
        agent=req.agent if req.agent is not None else UNSET,
        attachments=attachments or UNSET,
        page_context=req.context if req.context is not None else UNSET,
    )
    return _encode(w)


def build_agentkit(req: ChatRequest) -> bytes:
    history = [
        AgentMessage(
            id=m.id or f"hist-{i}",
            role=m.role if m.role in ("user", "assistant", "system", "tool") else "user",  # type: ignore[arg-type]
            author_id=m.role,
            text=m.text,
            created_at=0,
        )
        for i, m in enumerate(req.history)
    ]
    attachments = [
        AgentAttachment(
            id=a.id or f"att-{i}",
            name=a.name,
            media_type=a.media_type,
            size_bytes=a.size if a.size is not None else UNSET,
            url=a.url if a.url is not None else UNSET,
            base64=a.data if a.data is not None else UNSET,
        )
        for i, a in enumerate(req.attachments)
    ]
    w = AgentTurn(
        text=req.text,
        history=history,
        grounding=req.context if req.context is not None else UNSET,
        attachments=attachments or UNSET,
        conversation_id=req.thread_id if req.thread_id is not None else UNSET,
    )
    return _encode(w)


def build_oma(req: ChatRequest) -> bytes:
    messages = [OmaMessage(role=m.role, content=m.text) for m in req.history if m.role in ("user", "assistant", "system")]  # type: ignore[arg-type]
    messages.append(OmaMessage(role="user", content=req.text))
    w = OmaRequest(
        messages=messages,
        conversation_id=req.thread_id if req.thread_id is not None else UNSET,
        context=req.context if req.context is not None else UNSET,
        agent=req.agent if req.agent is not None else UNSET,
        attachments=[
            OmaAttachment(
                name=a.name,
                media_type=a.media_type,
                id=a.id if a.id is not None else UNSET,
                url=a.url if a.url is not None else UNSET,
                data=a.data if a.data is not None else UNSET,
            )
            for a in req.attachments
        ]
        or UNSET,
    )
    return _encode(w)


_PARSERS = {"nest": parse_nest, "agentkit": parse_agentkit, "oma": parse_oma}
_BUILDERS = {"nest": build_nest, "agentkit": build_agentkit, "oma": build_oma}


def parse_request(protocol: str, body: bytes) -> ChatRequest:
    return _PARSERS[protocol](body)


def build_request(protocol: str, req: ChatRequest) -> bytes:
    return _BUILDERS[protocol](req)


def peek_thread_id(protocol: str, body: bytes) -> str | None:
    """The thread id of a request forwarded unchanged (passthrough), when it has one."""
    try:
        return parse_request(protocol, body).thread_id
    except BadRequest:
        return None


# -- upstream URLs -------------------------------------------------------------------------


def nest_base(upstream: str) -> str:
    """A nest upstream is configured by its base (``…/agent``); a URL ending in ``/chat`` also works."""
    url = URL(upstream)
    path = url.path.rstrip("/")
    if path.endswith("/chat"):
        path = path[: -len("/chat")]
    return str(url.with_path(path + "/", encoded=False).with_query(url.query))


def join(base: str, suffix: str) -> str:
    url = URL(base)
    path = url.path.rstrip("/") + "/" + suffix.lstrip("/")
    return str(url.with_path(path, encoded=False).with_query(url.query))


def chat_url(source: str, upstream: str) -> str:
    return join(nest_base(upstream), "chat") if source == "nest" else upstream


def control_url(source: str, upstream: str, configured: str | None, decision: str) -> str | None:
    """Where an approve / reject goes: nest's own route, else ``<control_url or upstream>/tool-call/…``."""
    if source == "nest" and not configured:
        return join(nest_base(upstream), f"tool-call/{decision}")
    base = configured or upstream
    if URL(base).scheme not in ("http", "https"):
        return None
    return join(base, f"tool-call/{decision}")


def cancel_url(source: str, upstream: str, upstream_run_id: str | None) -> str | None:
    """nest cancels by run id; the other protocols cancel by closing the connection (None)."""
    if source != "nest" or not upstream_run_id or URL(upstream).scheme not in ("http", "https"):
        return None
    base = URL(nest_base(upstream))
    raw = base.raw_path.rstrip("/") + "/chat/" + quote(upstream_run_id, safe="") + "/cancel"
    return str(base.with_path(raw, encoded=True).with_query(base.query))


# -- headers -------------------------------------------------------------------------------

HOP_BY_HOP = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "proxy-connection"}
)
#: set by the proxy itself, or meaningless upstream.
_MANAGED = frozenset(
    {"host", "content-length", "content-type", "accept", "accept-encoding", "content-encoding", "expect",
     "origin", "sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol",
     "last-event-id", "forwarded", "x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-real-ip"}
)
_CREDENTIALS = frozenset({"authorization", "cookie"})
#: client headers forwarded by default: content negotiation, language, user agent, tracing, request id
FORWARDED = frozenset({
    "accept-language", "accept-charset", "user-agent", "traceparent", "tracestate", "baggage",
    "x-request-id", "request-id", "x-correlation-id",
})
_SECRET_WORDS = ("auth", "key", "token", "secret", "password", "session", "cookie", "credential")


def credential_like(name: str) -> bool:
    """A header that may carry a credential (``X-Api-Key``, ``X-Auth-Token``…): it goes upstream
    only when the route forwards credentials."""
    low = name.lower()
    return low in _CREDENTIALS or any(word in low for word in _SECRET_WORDS)


def upstream_headers(
    client: Mapping[str, str] | Iterable[tuple[str, str]],
    route_headers: Mapping[str, str],
    *,
    accept: str,
    forward_auth: bool,
    content_type: str = "application/json",
    forward: Iterable[str] = (),
) -> CIMultiDict[str]:
    """Headers for the upstream request: an allow-list of the client's, then the route's own.

    The client's headers go on only when they are on :data:`FORWARDED` or named by the route
    (``forward``); a credential-like one (``Authorization``, ``Cookie``, ``X-Api-Key``…) only
    when the route forwards credentials, and (beyond ``Authorization`` and ``Cookie``) names it.
    Hop-by-hop headers (and any named in the client's ``Connection``) never go; the route's
    configured headers (credentials) replace any client header of the same name.
    """
    allowed = FORWARDED | {name.lower() for name in forward}
    items = list(client.items()) if isinstance(client, Mapping) else list(client)
    named = {
        token.strip().lower()
        for name, value in items
        if name.lower() == "connection"
        for token in value.split(",")
    }
    out: CIMultiDict[str] = CIMultiDict()
    for name, value in items:
        low = name.lower()
        if low in HOP_BY_HOP or low in _MANAGED or low in named:
            continue
        if credential_like(low):
            if not forward_auth or (low not in _CREDENTIALS and low not in allowed):
                continue
        elif low not in allowed:
            continue
        out.add(name, value)
    for name in route_headers:
        out.popall(name, None)
    out.update(route_headers)
    out["Content-Type"] = content_type
    out["Accept"] = accept
    out["Accept-Encoding"] = "identity"
    return out
