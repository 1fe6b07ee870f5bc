"""A client's chat request as its upstream's: translated between the two surfaces (or forwarded
unchanged), with a thread id for clients whose protocol has runs, the answers to what the
thread's last run asked put where the upstream expects them, and, for an upstream that chooses
its thread ids, the upstream's own thread of the client's conversation (runlog/threads.py)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec

from ... import codecs
from ...codecs.http import HttpSurface
from ...codecs.requests import BadRequest, ChatRequest, check_depth, decision_entry
from ..config import Route
from ..runlog.threads import ThreadKey, ThreadMap
from ..state import BridgeState

__all__ = ["Prepared", "Threads", "answer_by_call", "check_answers", "prepare_request"]


@dataclass
class Prepared:
    body: bytes
    content_type: str
    #: the conversation as the client names it
    thread_id: str | None
    #: where the upstream's own thread of the conversation is remembered (an upstream that
    #: chooses its thread ids, a conversation the client named), and the one sent (None: a
    #: first message, the upstream makes one)
    conversation: ThreadKey | None = None
    upstream_thread: str | None = None
    #: the upstream's thread being remembered (awaited before the client's response ends)
    remembering: list[asyncio.Task[None]] = field(default_factory=list)


@dataclass(frozen=True)
class Threads:
    """Where a route's conversations are mapped to an upstream's own threads, for one client."""

    map: ThreadMap
    owner: str  # the client's identity (runlog.identity)


def _new_thread() -> str:
    return "thr-" + uuid.uuid4().hex[:12]


async def prepare_request(
    route: Route,
    body: bytes,
    content_type: str,
    asked: Callable[[str], dict[str, str]] | None = None,
    threads: Threads | None = None,
) -> Prepared:
    """The upstream request body for a client request (translated unless passthrough or same
    protocol). A client whose protocol has runs is told a thread id: minted when it gave none.
    ``asked(thread)`` gives the upstream interrupt ids of what the thread's last run asked, by
    tool call: answers the client gave by call are sent by them. An upstream that chooses its
    thread ids is sent its own thread of the conversation (``threads``), or none the first time.
    Raises :class:`~..runlog.threads.ThreadMapUnavailable` when that cannot be known."""
    check_depth(body)  # forwarded unchanged or not, nothing deeper goes on
    client, upstream = codecs.get(route.target).http, codecs.get(route.source).http
    mint_thread = client.runs is not None
    if route.request_mode == "passthrough" or route.source == route.target:
        thread = client.peek_thread_id(body)
        if thread is None and mint_thread:
            thread = _new_thread()
        prepared = Prepared(body, content_type or "application/json", thread)
        await _upstream_thread(route, upstream, prepared, threads, unknown_is_upstreams=True)
        return prepared
    req = client.parse_request(body)
    if req.thread_id is None and mint_thread:
        req.thread_id = _new_thread()
    if req.resume and asked is not None and req.thread_id:
        answer_by_call(req, asked(req.thread_id))
    prepared = Prepared(b"", "application/json", req.thread_id)
    if await _upstream_thread(route, upstream, prepared, threads, unknown_is_upstreams=False):
        req.thread_id = prepared.upstream_thread
    prepared.body = upstream.build_request(req)
    return prepared


async def _upstream_thread(
    route: Route, upstream: HttpSurface, prepared: Prepared, threads: Threads | None, *, unknown_is_upstreams: bool
) -> bool:
    """Find the upstream's own thread of the conversation, for an upstream that chooses them
    (True: ``prepared.upstream_thread`` is what to send). A conversation the map does not know
    is new, unless the request is forwarded in the upstream's own protocol, whose client may
    name a thread the upstream made (then it goes as it came)."""
    if threads is None or not upstream.server_threads or upstream.threads is None or not prepared.thread_id:
        return False
    key = ThreadKey(route.name, threads.owner, prepared.thread_id)
    prepared.conversation = key
    known = await threads.map.get(key)
    if known is None and unknown_is_upstreams:
        return False
    prepared.upstream_thread = known
    if unknown_is_upstreams:
        prepared.body = _with_member(prepared.body, upstream.threads.field, known)
    return True


def _with_member(body: bytes, name: str, value: str | None) -> bytes:
    """A JSON object's member set (or left out, for None), its other members as they were."""
    try:
        decoded = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise BadRequest("The body is not JSON.") from None
    if not isinstance(decoded, dict):
        raise BadRequest("The body is not a JSON object.")
    if value is None:
        decoded.pop(name, None)
    else:
        decoded[name] = value
    return msgspec.json.encode(decoded)


def answer_by_call(req: ChatRequest, interrupts: dict[str, str]) -> None:
    """Answers a client gave by tool call (approval responses in its next request) sent as
    answers to the upstream's interrupts: by their ids, and every interrupt the client left
    unanswered (one its protocol cannot answer, such as an elicitation) cancelled, as a resume
    list covers them all."""
    for entry in req.resume:
        if entry.tool_call_id in interrupts:
            entry.interrupt_id = interrupts[entry.tool_call_id]
    answered = {entry.interrupt_id for entry in req.resume}
    for call_id, interrupt in interrupts.items():
        if interrupt not in answered:
            req.resume.append(decision_entry(interrupt, False, "not answered by the client", tool_call_id=call_id))


def check_answers(state: BridgeState, route: Route, body: bytes, thread_id: str | None) -> None:
    """A request that resumes a thread whose last run ended asking (its client's protocol ends
    runs to ask) must answer every interrupt: an incomplete resume list is refused before
    anything goes upstream."""
    surface = codecs.get(route.target).http
    if surface.asked_interrupts is None or not thread_id:
        return
    if not state.interrupts.get((route.name, thread_id)):
        return
    resume = surface.parse_request(body).resume
    if not resume:
        return  # a new message, not an answer
    missing = state.unanswered(route.name, thread_id, {entry.interrupt_id for entry in resume})
    if missing:
        raise BadRequest(
            "resume: every interrupt of the thread's last run must be answered; missing " + ", ".join(missing)[:200]
        )
