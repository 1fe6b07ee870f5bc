"""oma's HTTP surface. open-multi-agent has no wire of its own, so this is streambridge's request:
``{"messages": [{role, content}], …}`` or ``{"prompt": "…"}``, plus optional ``conversationId``,
``context``, ``agent`` and ``attachments``, posted to the mount path and answered ``200``."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType

from ..http import HttpSurface, Threads
from ..requests import (
    WIRE,
    Attachment,
    BadRequest,
    ChatRequest,
    HistoryMessage,
    check_id,
    decode_request,
    encode_request,
    optional,
    or_unset,
)

__all__ = ["SURFACE", "OmaAttachment", "OmaMessage", "OmaRequest", "build_request", "parse_request"]

Role = Literal["user", "assistant", "system"]
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system"}


class OmaTextBlock(Struct):
    type: str
    text: str = ""


class OmaMessage(Struct, **WIRE):
    role: Role
    content: str | list[OmaTextBlock]


class OmaAttachment(Struct, **WIRE):
    name: str
    media_type: str
    id: str | UnsetType = UNSET
    url: str | UnsetType = UNSET
    data: str | UnsetType = UNSET


class OmaRequest(Struct, **WIRE):
    messages: list[OmaMessage] | UnsetType = UNSET
    prompt: str | UnsetType = UNSET
    conversation_id: str | UnsetType = UNSET
    context: dict[str, Any] | UnsetType = UNSET
    agent: str | UnsetType = UNSET
    attachments: list[OmaAttachment] | UnsetType = UNSET


def _text(content: str | list[OmaTextBlock]) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.text for b in content if b.type == "text")


def parse_request(body: bytes) -> ChatRequest:
    w = decode_request(body, OmaRequest, "oma request")
    messages = [HistoryMessage(role=m.role, text=_text(m.content)) for m in (w.messages or [])]
    if w.prompt is not UNSET:
        text = w.prompt
    elif messages and messages[-1].role == "user":
        text = messages.pop().text
    else:
        raise BadRequest("invalid oma request: give a prompt, or messages ending with a user message")
    return ChatRequest(
        text=text,
        thread_id=check_id(optional(w.conversation_id), "conversationId"),
        history=messages,
        attachments=[
            Attachment(
                name=a.name, media_type=a.media_type, id=optional(a.id), url=optional(a.url), data=optional(a.data)
            )
            for a in (w.attachments or [])
        ],
        context=optional(w.context),
        agent=optional(w.agent),
    )


def build_request(req: ChatRequest) -> bytes:
    messages = [OmaMessage(role=_ROLES[m.role], content=m.text) for m in req.history if m.role in _ROLES]
    messages.append(OmaMessage(role="user", content=req.text))
    request = OmaRequest(
        messages=messages,
        conversation_id=or_unset(req.thread_id),
        context=or_unset(req.context),
        agent=or_unset(req.agent),
        attachments=[
            OmaAttachment(
                name=a.name, media_type=a.media_type, id=or_unset(a.id), url=or_unset(a.url), data=or_unset(a.data)
            )
            for a in req.attachments
        ]
        or UNSET,
    )
    return encode_request(request)


SURFACE = HttpSurface(
    chat_path="",
    chat_status=200,
    control_path="tool-call/{decision}",
    control_status=200,
    parse_request=parse_request,
    build_request=build_request,
    threads=Threads("conversationId"),
)
