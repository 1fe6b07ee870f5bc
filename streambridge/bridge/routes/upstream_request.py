"""A client's chat request as its upstream's: translated between the two surfaces (or forwarded
unchanged), with a thread id for clients whose protocol has runs, and the answers to what the
thread's last run asked put where the upstream expects them."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass

from ... import codecs
from ...codecs.requests import BadRequest, ChatRequest, check_depth, decision_entry
from ..config import Route
from ..state import BridgeState

__all__ = ["Prepared", "answer_by_call", "check_answers", "prepare_request"]


@dataclass
class Prepared:
    body: bytes
    content_type: str
    thread_id: str | None


def _new_thread() -> str:
    return "thr-" + uuid.uuid4().hex[:12]


def prepare_request(
    route: Route, body: bytes, content_type: str, asked: Callable[[str], dict[str, str]] | None = None
) -> Prepared:
    """The upstream request body for a client request (translated unless passthrough or same
    protocol). A client whose protocol has runs is told a thread id: minted when it gave none.
    ``asked(thread)`` gives the upstream interrupt ids of what the thread's last run asked, by
    tool call: answers the client gave by call are sent by them."""
    check_depth(body)  # forwarded unchanged or not, nothing deeper goes on
    client, upstream = codecs.get(route.target).http, codecs.get(route.source).http
    mint_thread = client.runs is not None
    if route.request_mode == "passthrough" or route.source == route.target:
        thread = client.peek_thread_id(body)
        if thread is None and mint_thread:
            thread = _new_thread()
        return Prepared(body, content_type or "application/json", thread)
    req = client.parse_request(body)
    if req.thread_id is None and mint_thread:
        req.thread_id = _new_thread()
    if req.resume and asked is not None and req.thread_id:
        answer_by_call(req, asked(req.thread_id))
    return Prepared(upstream.build_request(req), "application/json", req.thread_id)


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
