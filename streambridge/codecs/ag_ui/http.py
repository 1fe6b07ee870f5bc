"""AG-UI over HTTP: ``POST <agent endpoint>`` (the mount path itself) with one ``RunAgentInput``
``{threadId, runId, messages, tools?, context?, state?, forwardedProps?, resume?}``, answered
``200`` with the event stream (``text/event-stream``).

The last user message's text is the request's text (its binary parts with a URL or data its
attachments), the messages before it the history, ``threadId`` the thread; ``state``,
``forwardedProps``, ``tools`` and ``context`` are the request's host context (under those
names), and ``resume`` its resume entries. Built for an AG-UI upstream, a host context from
another protocol travels as ``forwardedProps``; ``runId`` (required, new per run) is derived
from the request, so the same request gets the same id."""

from __future__ import annotations

import hashlib
from typing import Any

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ..framing import detect_framing, make_parser
from ..http import HttpSurface, Threads
from ..requests import (
    WIRE,
    Attachment,
    BadRequest,
    ChatRequest,
    HistoryMessage,
    ResumeEntry,
    check_id,
    decode_request,
    encode_request,
    or_unset,
    request_dropped,
)
from .readings import interrupt_id, read_outcome

__all__ = ["HEADERS", "SURFACE", "RunAgentInput", "asked_interrupts", "build_request", "parse_request"]

#: what the reference servers answer a run with (no compression, no proxy buffering)
HEADERS = {"content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no"}
#: the members of ``RunAgentInput`` that a ChatRequest keeps in its context, under these names
CONTEXT_KEYS = ("state", "forwardedProps", "tools", "context")


class InputPart(Struct, **WIRE):
    """A part of a user message's content: ``text {text}``, or binary content (0.x ``binary``;
    1.x ``image`` / ``document`` … keep ``mimeType`` + ``url`` / ``data`` too)."""

    type: str
    text: str | UnsetType = UNSET
    mime_type: str | UnsetType = UNSET
    url: str | UnsetType = UNSET
    data: str | UnsetType = UNSET
    filename: str | UnsetType = UNSET


class Message(Struct, **WIRE):
    id: str
    role: str
    content: str | list[InputPart] | UnsetType | None = UNSET


class ResumeW(Struct, **WIRE):
    interrupt_id: str
    status: str
    payload: Any = UNSET
    metadata: dict[str, Any] | UnsetType = UNSET


class RunAgentInput(Struct, **WIRE):
    thread_id: str
    run_id: str
    messages: list[Message] = []
    tools: list[Raw] | UnsetType = UNSET
    context: list[Raw] | UnsetType = UNSET
    state: Any = UNSET
    forwarded_props: Any = UNSET
    resume: list[ResumeW] | UnsetType = UNSET


def _text(content: str | list[InputPart] | UnsetType | None) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.text for p in content if p.type == "text" and isinstance(p.text, str))
    return ""


def _attachments(content: str | list[InputPart] | UnsetType | None) -> list[Attachment]:
    if not isinstance(content, list):
        return []
    return [
        Attachment(
            name=p.filename or "",
            media_type=p.mime_type or "",
            url=p.url if isinstance(p.url, str) else None,
            data=p.data if isinstance(p.data, str) else None,
        )
        for p in content
        if p.type != "text" and (isinstance(p.url, str) or isinstance(p.data, str))
    ]


def _context(w: RunAgentInput) -> dict[str, Any] | None:
    members = {
        "state": w.state,
        "forwardedProps": w.forwarded_props,
        "tools": [msgspec.json.decode(t) for t in w.tools] if w.tools is not UNSET else UNSET,
        "context": [msgspec.json.decode(c) for c in w.context] if w.context is not UNSET else UNSET,
    }
    kept = {k: v for k, v in members.items() if v is not UNSET and v is not None}
    return kept or None


def parse_request(body: bytes) -> ChatRequest:
    w = decode_request(body, RunAgentInput, "AG-UI RunAgentInput")
    last = next((i for i in range(len(w.messages) - 1, -1, -1) if w.messages[i].role == "user"), None)
    if last is None and not w.resume:
        raise BadRequest("invalid AG-UI RunAgentInput: no user message and no resume entries")
    history_end = last if last is not None else len(w.messages)
    history = [HistoryMessage(role=m.role, text=_text(m.content), id=m.id) for m in w.messages[:history_end]]
    for m in w.messages[history_end + 1 :]:
        request_dropped("ag-ui", f"{m.role} message after the last user message", "a chat request ends with its text")
    user = w.messages[last] if last is not None else None
    resume = [
        ResumeEntry(
            interrupt_id=r.interrupt_id,
            status=r.status,
            payload=None if r.payload is UNSET else r.payload,
            metadata=None if r.metadata is UNSET else r.metadata,
        )
        for r in (w.resume if w.resume is not UNSET else [])
    ]
    return ChatRequest(
        text=_text(user.content) if user is not None else "",
        thread_id=check_id(w.thread_id, "threadId"),
        history=history,
        attachments=_attachments(user.content) if user is not None else [],
        context=_context(w),
        resume=resume,
    )


def _digest(*parts: str) -> str:
    return hashlib.sha1("\x00".join(parts).encode()).hexdigest()[:12]


def build_request(req: ChatRequest) -> bytes:
    messages = [Message(id=h.id or f"msg-{i}", role=h.role, content=h.text) for i, h in enumerate(req.history, start=1)]
    if req.text or req.attachments or not req.resume:
        parts: list[InputPart] = [InputPart(type="text", text=req.text)]
        for a in req.attachments:
            if a.url is None and a.data is None:
                request_dropped("ag-ui", "attachment", "AG-UI binary content needs a url or data")
                continue
            parts.append(
                InputPart(
                    type="binary",
                    mime_type=a.media_type,
                    url=or_unset(a.url),
                    data=or_unset(a.data),
                    filename=a.name or UNSET,
                )
            )
        content: str | list[InputPart] = parts if len(parts) > 1 else req.text
        messages.append(Message(id="msg-" + _digest(req.text, str(len(messages))), role="user", content=content))
    thread = req.thread_id or "thr-" + _digest(req.text)
    context = dict(req.context or {})
    own = {k: context.pop(k) for k in CONTEXT_KEYS if k in context}
    forwarded = own.get("forwardedProps", UNSET)
    if context:  # another protocol's host context: forwarded to the agent as is
        forwarded = {**forwarded, **context} if isinstance(forwarded, dict) else context
    resume = [
        ResumeW(
            interrupt_id=r.interrupt_id,
            status=r.status,
            payload=UNSET if r.payload is None else r.payload,
            metadata=or_unset(r.metadata),
        )
        for r in req.resume
    ]
    run = "run-" + _digest(thread, req.text, str(len(req.history)), *(r.interrupt_id for r in req.resume))
    body = RunAgentInput(
        thread_id=thread,
        run_id=run,
        messages=messages,
        tools=[Raw(msgspec.json.encode(t)) for t in own["tools"]] if isinstance(own.get("tools"), list) else UNSET,
        context=[Raw(msgspec.json.encode(c)) for c in own["context"]]
        if isinstance(own.get("context"), list)
        else UNSET,
        state=own.get("state", UNSET),
        forwarded_props=forwarded,
        resume=resume or UNSET,
    )
    return encode_request(body)


class _Finished(Struct, gc=False):
    type: str
    outcome: Raw | UnsetType = UNSET


_finished_decoder = msgspec.json.Decoder(_Finished)
_id_decoder = msgspec.json.Decoder(dict[str, Any])


def asked_interrupts(stream: bytes) -> list[str]:
    """The interrupt ids an AG-UI stream's ``RUN_FINISHED`` outcome asks about (what the next
    run's ``resume`` must cover, all of them), in order; none when the run did not end
    interrupted. SSE or NDJSON, as :func:`~..framing.detect_framing` tells."""
    parser = make_parser(detect_framing(stream) or "sse")
    ids: list[str] = []
    for frame in [*parser.feed(stream), *parser.close()]:
        if b"RUN_FINISHED" not in frame.data:
            continue
        try:
            finished = _finished_decoder.decode(frame.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            continue
        if finished.type != "RUN_FINISHED" or finished.outcome is UNSET:
            continue
        kind, interrupts, _ = read_outcome(finished.outcome)
        ids = []  # (a later run's outcome is the one to answer)
        for raw in interrupts if kind == "interrupt" else []:
            try:
                value = _id_decoder.decode(raw).get("id")
            except (msgspec.DecodeError, msgspec.ValidationError):
                continue
            if isinstance(value, str):
                ids.append(value)
    return ids


SURFACE = HttpSurface(
    chat_path="",
    chat_status=200,
    control_path="tool-call/{decision}",
    control_status=200,
    parse_request=parse_request,
    build_request=build_request,
    asked_interrupts=asked_interrupts,
    interrupt_id=interrupt_id,
    answers_in_next_request=True,
    threads=Threads("threadId"),  # required, the client's (HttpAgent mints one); runId too, per run
)
