"""agentkit's HTTP surface: an ``AgentTurn`` ``{text, history, grounding?, attachments?,
conversationId?}`` posted to the mount path, answered ``200`` with the stream. agentkit has no
write method of its own for tool decisions: ``tool-call/<decision>`` is streambridge's route."""

from __future__ import annotations

from typing import Any, Literal

from msgspec import UNSET, Struct, UnsetType

from ..http import HttpSurface, Threads
from ..requests import (
    WIRE,
    Attachment,
    ChatRequest,
    HistoryMessage,
    check_id,
    decode_request,
    encode_request,
    optional,
    or_unset,
)

__all__ = ["SURFACE", "AgentAttachment", "AgentMessage", "AgentTurn", "build_request", "parse_request"]

Role = Literal["user", "assistant", "system", "tool"]
_ROLES: dict[str, Role] = {"user": "user", "assistant": "assistant", "system": "system", "tool": "tool"}


class AgentAttachment(Struct, **WIRE):
    id: str
    name: str
    media_type: str
    size_bytes: int | UnsetType = UNSET
    url: str | UnsetType = UNSET
    base64: str | UnsetType = UNSET


class AgentMessage(Struct, **WIRE):
    id: str
    role: Role
    author_id: str
    text: str
    created_at: int | float


class AgentTurn(Struct, **WIRE):
    text: str
    history: list[AgentMessage] | UnsetType = UNSET  # required upstream: always written, [] when empty
    grounding: dict[str, Any] | UnsetType = UNSET
    attachments: list[AgentAttachment] | UnsetType = UNSET
    conversation_id: str | UnsetType = UNSET


def parse_request(body: bytes) -> ChatRequest:
    w = decode_request(body, AgentTurn, "AgentTurn")
    return ChatRequest(
        text=w.text,
        thread_id=check_id(optional(w.conversation_id), "conversationId"),
        history=[HistoryMessage(role=m.role, text=m.text, id=m.id) for m in w.history or []],
        attachments=[
            Attachment(
                name=a.name,
                media_type=a.media_type,
                id=a.id,
                url=optional(a.url),
                data=optional(a.base64),
                size=optional(a.size_bytes),
            )
            for a in (w.attachments or [])
        ],
        context=optional(w.grounding),
    )


def _role(role: str) -> Role:
    return _ROLES.get(role, "user")


def build_request(req: ChatRequest) -> bytes:
    history = [
        AgentMessage(id=m.id or f"hist-{i}", role=_role(m.role), author_id=m.role, text=m.text, created_at=0)
        for i, m in enumerate(req.history)
    ]
    attachments = [
        AgentAttachment(
            id=a.id or f"att-{i}",
            name=a.name,
            media_type=a.media_type,
            size_bytes=or_unset(a.size),
            url=or_unset(a.url),
            base64=or_unset(a.data),
        )
        for i, a in enumerate(req.attachments)
    ]
    turn = AgentTurn(
        text=req.text,
        history=history,
        grounding=or_unset(req.context),
        attachments=attachments or UNSET,
        conversation_id=or_unset(req.thread_id),
    )
    return encode_request(turn)


SURFACE = HttpSurface(
    chat_path="",
    chat_status=200,
    control_path="tool-call/{decision}",
    control_status=200,
    parse_request=parse_request,
    build_request=build_request,
    threads=Threads("conversationId"),
)
