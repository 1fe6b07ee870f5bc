"""nest's HTTP surface: ``POST <base>/chat {message, threadId?, agent?, attachments?, pageContext?}``
answered ``201`` with the run's stream; runs re-attach and cancel by id; tool calls are approved
at ``<base>/tool-call/<decision>``. The server rebuilds history from its own store, so history is
not sent."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from msgspec import UNSET, Struct, UnsetType

from ..http import HttpSurface, Runs, Threads, join_url
from ..requests import (
    WIRE,
    Attachment,
    BadRequest,
    ChatRequest,
    check_id,
    decode_request,
    encode_request,
    optional,
    or_unset,
    request_dropped,
)
from .frames import run_ids

__all__ = ["SURFACE", "NestAttachment", "NestChat", "build_request", "parse_request", "upstream_base"]


class NestAttachment(Struct, **WIRE):
    media_id: str = ""
    url: str = ""
    content_type: str = ""
    name: str = ""


class NestChat(Struct, **WIRE):
    message: str
    thread_id: str | UnsetType = UNSET
    agent: str | UnsetType = UNSET
    attachments: list[NestAttachment] | UnsetType = UNSET
    page_context: dict[str, Any] | UnsetType = UNSET
    regenerate: bool | UnsetType = UNSET
    transient: bool | UnsetType = UNSET


def parse_request(body: bytes) -> ChatRequest:
    w = decode_request(body, NestChat, "nest chat request")
    if w.regenerate is True and w.thread_id is UNSET:
        raise BadRequest("regenerate requires an existing threadId")
    attachments = [
        Attachment(name=a.name, media_type=a.content_type, id=a.media_id or None, url=a.url or None)
        for a in (w.attachments or [])
    ]
    return ChatRequest(
        text=w.message,
        thread_id=check_id(optional(w.thread_id), "threadId"),
        attachments=attachments,
        context=optional(w.page_context),
        agent=optional(w.agent),
    )


def build_request(req: ChatRequest) -> bytes:
    attachments = []
    for i, a in enumerate(req.attachments):
        if a.url is None:
            request_dropped("nest", "attachment", "nest references media by url")
            continue
        attachments.append(
            NestAttachment(media_id=a.id or f"att-{i}", url=a.url, content_type=a.media_type, name=a.name)
        )
    chat = NestChat(
        message=req.text,
        thread_id=or_unset(req.thread_id),
        agent=or_unset(req.agent),
        attachments=attachments or UNSET,
        page_context=or_unset(req.context),
    )
    return encode_request(chat)


def upstream_base(upstream: str) -> str:
    """A nest upstream is configured by its base (``…/agent``); a URL ending in ``/chat`` also works."""
    parts = urlsplit(upstream)
    path = parts.path.rstrip("/")
    if path.endswith("/chat"):
        path = path[: -len("/chat")]
    return urlunsplit(parts._replace(path=path + "/", fragment=""))


SURFACE = HttpSurface(
    chat_path="agent/chat",
    chat_status=201,
    control_path="agent/tool-call/{decision}",
    control_status=201,
    parse_request=parse_request,
    build_request=build_request,
    upstream_chat_url=lambda upstream: join_url(upstream_base(upstream), "chat"),
    upstream_control_base=upstream_base,
    unnumbered_named_frames=True,
    # the published server creates a thread for a message without threadId and fails the run
    # of one it did not create (Cannot read properties of undefined (reading 'messages'))
    threads=Threads("threadId", chosen_by="server"),
    runs=Runs(
        stream_path="agent/chat/{run_id}/stream",
        cancel_path="agent/chat/{run_id}/cancel",
        cancel_status=201,
        cancel_answer={"aborted": True},
        run_id_header="X-Agent-Run-Id",
        thread_id_header="X-Agent-Thread-Id",
        upstream_cancel_url=lambda upstream, run_id: join_url(upstream_base(upstream), f"chat/{run_id}/cancel"),
        read_ids=run_ids,
    ),
)
