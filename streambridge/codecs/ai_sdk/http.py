"""The AI SDK chat over HTTP (``DefaultChatTransport``): ``POST <api>`` with
``{id, messages: UIMessage[], trigger, messageId, ...body}``, answered ``200`` with the stream
and the exact ``uiMessageStreamHeaders``; ``GET <api>/<chatId>/stream`` resumes a live one
(``204`` when none is). The last user message's text parts are the request's
text (its file parts its attachments), the messages before it the history, ``id`` the thread."""

from __future__ import annotations

import hashlib
from typing import Any

from msgspec import UNSET, Struct, UnsetType

from ..http import HttpSurface, Threads
from ..requests import (
    WIRE,
    Attachment,
    BadRequest,
    ChatRequest,
    HistoryMessage,
    ResumeEntry,
    check_id,
    decision_entry,
    decode_request,
    encode_request,
    or_unset,
    request_dropped,
)

__all__ = ["HEADERS", "SURFACE", "build_request", "parse_request"]

#: ``uiMessageStreamHeaders``, exactly (ai 5 to 7)
HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache",
    "connection": "keep-alive",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}


class ApprovalW(Struct, **WIRE):
    """A tool part's ``approval``: the request's id, then the user's answer."""

    id: str
    approved: bool | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class UiPart(Struct, **WIRE):
    type: str
    text: str | UnsetType = UNSET
    media_type: str | UnsetType = UNSET
    url: str | UnsetType = UNSET
    filename: str | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    state: str | UnsetType = UNSET
    approval: ApprovalW | UnsetType = UNSET


class UiMessage(Struct, **WIRE):
    role: str
    parts: list[UiPart]
    id: str | UnsetType = UNSET
    metadata: Any = UNSET


class ChatBody(Struct, **WIRE):
    id: str | UnsetType = UNSET
    messages: list[UiMessage] = []
    trigger: str | UnsetType = UNSET
    message_id: str | UnsetType | None = UNSET


def _text(message: UiMessage) -> str:
    return "".join(p.text for p in message.parts if p.type == "text" and isinstance(p.text, str))


def parse_request(body: bytes) -> ChatRequest:
    w = decode_request(body, ChatBody, "ai-sdk chat request")
    last = next((i for i in range(len(w.messages) - 1, -1, -1) if w.messages[i].role == "user"), None)
    if last is None:
        raise BadRequest("invalid ai-sdk chat request: no user message")
    user = w.messages[last]
    attachments = [
        Attachment(name=p.filename or "", media_type=p.media_type or "", url=p.url or None)
        for p in user.parts
        if p.type == "file" and isinstance(p.url, str)
    ]
    history = [
        HistoryMessage(role=m.role, text=_text(m), id=m.id if isinstance(m.id, str) else None)
        for m in w.messages[:last]
    ]
    return ChatRequest(
        text=_text(user),
        thread_id=check_id(w.id if isinstance(w.id, str) else None, "id"),
        history=history,
        attachments=attachments,
        resume=_approval_answers(w.messages[last + 1 :]),
    )


def _approval_answers(replies: list[UiMessage]) -> list[ResumeEntry]:
    """The approvals the user answered since the last user message (``addToolApprovalResponse``
    leaves the tool part ``approval-responded`` and sends the chat again): resume entries for
    an upstream whose runs end to ask, by approval id and tool call."""
    entries = []
    for message in replies:
        for part in message.parts:
            approval = part.approval
            if part.state != "approval-responded" or approval is UNSET or approval.approved is UNSET:
                continue
            call = check_id(part.tool_call_id, "toolCallId") if isinstance(part.tool_call_id, str) else None
            reason = approval.reason if isinstance(approval.reason, str) else None
            entries.append(
                decision_entry(check_id(approval.id, "approval.id") or "", approval.approved, reason, tool_call_id=call)
            )
    return entries


def build_request(req: ChatRequest) -> bytes:
    messages = [
        UiMessage(role=h.role, parts=[UiPart(type="text", text=h.text)], id=or_unset(h.id)) for h in req.history
    ]
    parts = [UiPart(type="text", text=req.text)]
    for a in req.attachments:
        if a.url is None:
            request_dropped("ai-sdk", "attachment", "UI messages reference files by url")
            continue
        parts.append(UiPart(type="file", media_type=a.media_type, url=a.url, filename=a.name or UNSET))
    messages.append(UiMessage(role="user", parts=parts))
    chat = req.thread_id or "chat-" + hashlib.sha1(req.text.encode()).hexdigest()[:12]
    return encode_request(ChatBody(id=chat, messages=messages, trigger="submit-message"))


SURFACE = HttpSurface(
    chat_path="api/chat",
    chat_status=200,
    control_path="api/chat/tool-call/{decision}",
    control_status=200,
    parse_request=parse_request,
    build_request=build_request,
    resume_path="api/chat/{chat_id}/stream",
    answers_in_next_request=True,
    threads=Threads("id"),  # the chat id useChat makes (generateId) or is given
)
