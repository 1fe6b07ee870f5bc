"""``runlines`` over HTTP: ``POST <mount> {"prompt": "…"}`` answered ``200``; runs named in
``X-Lines-Run`` / ``X-Lines-Thread``, re-attached at ``lines/<runId>/stream`` and cancelled at
``lines/<runId>/cancel`` (an upstream's at ``<url>/stop/<runId>``); a browser client also reads
``X-Lines-Trace``; decisions are ``POST decide/approve|reject {"call": …, "note"?: …}`` (sent to an
upstream as ``{"call", "approved", "note"?}``)."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from streambridge.codecs.framing import Framing
from streambridge.codecs.http import Decision, DecisionBody, HttpSurface, Runs, join_url
from streambridge.codecs.requests import ChatRequest, check_id, decode_request, encode_request
from streambridge.events import RunStart

from .codec import RunLinesDecoder

__all__ = ["SURFACE"]


class Prompt(Struct):
    prompt: str


class Verdict(Struct, omit_defaults=True):
    call: str
    approved: bool | UnsetType = UNSET  # what an upstream is told; a client's route says it
    note: str | UnsetType = UNSET


def parse_request(body: bytes) -> ChatRequest:
    return ChatRequest(text=decode_request(body, Prompt, "runlines request").prompt)


def build_request(req: ChatRequest) -> bytes:
    return encode_request(Prompt(prompt=req.text))


def parse_decision(body: bytes, approved: bool) -> Decision:
    verdict = decode_request(body, Verdict, "runlines decision")
    note = verdict.note if isinstance(verdict.note, str) else None
    return Decision(check_id(verdict.call, "call") or "", approved, note)


def build_decision(decision: Decision) -> bytes:
    return encode_request(Verdict(decision.call_id, decision.approved, decision.reason or UNSET))


def read_ids(head: bytes, framing: Framing) -> tuple[str | None, str | None]:
    for event in RunLinesDecoder(framing).feed(head):
        if type(event) is RunStart:
            return event.run_id or None, event.thread_id or None
    return None, None


SURFACE = HttpSurface(
    chat_path="",
    chat_status=200,
    control_path="decide/{decision}",
    control_status=202,
    parse_request=parse_request,
    build_request=build_request,
    runs=Runs(
        stream_path="lines/{run_id}/stream",
        cancel_path="lines/{run_id}/cancel",
        cancel_status=202,
        cancel_answer={"stopped": True},
        run_id_header="X-Lines-Run",
        thread_id_header="X-Lines-Thread",
        upstream_cancel_url=lambda upstream, run_id: join_url(upstream, f"stop/{run_id}"),
        read_ids=read_ids,
    ),
    decisions=DecisionBody(parse_decision, build_decision, "call"),
    readable_headers=("X-Lines-Trace",),
)
