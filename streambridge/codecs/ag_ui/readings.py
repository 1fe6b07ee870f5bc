"""What an AG-UI frame means in the model, as pure functions the decoder reads with and the
encoder checks its output against: an encoder writes an event natively only when the decoder
reads the frames back as that very event (else the event's carrier says it).

Covers the run start, the failures of ``RUN_ERROR``, step names, and the interrupts of
``RUN_FINISHED.outcome`` (approval requests and elicitations that were left waiting)."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...events import Elicitation, Failure, RunStart, RunStatus, ToolApprovalRequest, ToolCall
from ..envelope import json_object, parse_arguments
from ..synthetic import is_derived, read_call
from ..terminals import STATUS_CODES, canonical_failure, status_for_code
from .wire import KEPT

__all__ = [
    "APPROVAL_REASON",
    "CANCELLED",
    "ELICITATION_REASON",
    "error_code",
    "interrupt_id",
    "interrupt_of",
    "outcome_of",
    "read_arguments",
    "read_interrupt",
    "read_outcome",
    "read_run_error",
    "read_start",
]

#: ``Interrupt.reason`` of the interrupts streambridge writes (an open string in AG-UI)
APPROVAL_REASON = "tool_approval"
ELICITATION_REASON = "input_required"
CANCELLED = b'{"type":"cancelled"}'


def read_start(thread_id: str, run_id: str) -> RunStart:
    """``RUN_STARTED``: the thread id an encoder derives from the run id (``thr-<run id>``, for a
    source without a thread) reads back as none; with a derived run id too, the whole start was
    invented for a source without one (as nest's ``meta``)."""
    if thread_id == "thr-" + run_id:
        return RunStart(run_id=run_id, synthetic=is_derived("run-", run_id))
    return RunStart(run_id=run_id, thread_id=thread_id)


def read_run_error(message: str, code: str | UnsetType) -> tuple[RunStatus, Failure | UnsetType]:
    """``RUN_ERROR {message, code?}``: the status its code names (the shared code table), and
    its failure (none when it is that status's default one)."""
    status = status_for_code(code) if code is not UNSET else "error"
    return status, canonical_failure(status, Failure(status=status, message=message, code=code))


def error_code(status: str, code: str | UnsetType) -> str | UnsetType:
    """The code a ``RUN_ERROR`` says: the failure's own, else the one its status implies (none
    for a plain error, which needs none)."""
    if code is not UNSET or status == "error":
        return code
    return STATUS_CODES[status]


def read_arguments(call_id: str, name: str, text: str) -> ToolCall:
    """``TOOL_CALL_END`` of a call whose arguments joined to ``text``: the input when the text
    is JSON as it stands (kept byte for byte, as nest and oma read theirs), else the text."""
    raw, ok = parse_arguments(text)
    if ok:
        return read_call(ToolCall(call_id=call_id, name=name, input=raw))
    return read_call(ToolCall(call_id=call_id, name=name, arguments_json=text))


# -- interrupts ---------------------------------------------------------------------------


class InterruptW(Struct, kw_only=True, omit_defaults=True, rename="camel", gc=False):
    """An AG-UI ``Interrupt``, in the members streambridge writes (others are read whole)."""

    id: str
    reason: str
    message: str | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    expires_at: str | UnsetType = UNSET
    response_schema: Raw | UnsetType = UNSET
    metadata: Raw | UnsetType = UNSET


class _Outcome(Struct, kw_only=True, gc=False):
    type: str
    interrupts: list[Raw] = []


_interrupt_decoder = msgspec.json.Decoder(InterruptW)
_outcome_decoder = msgspec.json.Decoder(_Outcome)


def interrupt_id(event: ToolApprovalRequest | Elicitation) -> str:
    """The id of the interrupt an approval request or elicitation becomes."""
    return _interrupt(event)[0]


def interrupt_of(event: ToolApprovalRequest | Elicitation) -> bytes:
    """The ``Interrupt`` an approval request or elicitation left waiting at the end of a run
    becomes: the one it was read from when it came from one (kept whole), else made from it."""
    return _interrupt(event)[1]


def _interrupt(event: ToolApprovalRequest | Elicitation) -> tuple[str, bytes]:
    kept = event.extra.get(KEPT + "interrupt") if event.extra is not UNSET else None
    if isinstance(event, Elicitation):
        request = json_object(bytes(event.request)) or {}
        if kept is None and isinstance(request.get("id"), str) and isinstance(request.get("reason"), str):
            return request["id"], bytes(event.request)  # an AG-UI interrupt, read whole
        if kept is not None:
            return _kept_id(kept, "elicitation-" + event.call_id), bytes(kept)
        w = InterruptW(id="elicitation-" + event.call_id, reason=ELICITATION_REASON, tool_call_id=event.call_id)
        message = request.get("message", request.get("preamble"))
        if isinstance(message, str):
            w.message = message
        w.metadata = Raw(b'{"request":' + bytes(event.request) + b"}")
        return w.id, msgspec.json.encode(w)
    if kept is not None:
        return _kept_id(kept, "approval-" + event.call_id), bytes(kept)
    w = InterruptW(
        id="approval-" + event.call_id,
        reason=APPROVAL_REASON,
        message=event.reason,
        tool_call_id=event.call_id,
        expires_at=event.expires_at,
    )
    return w.id, msgspec.json.encode(w)


def _kept_id(raw: Raw, default: str) -> str:
    obj = json_object(bytes(raw))
    value = obj.get("id") if obj else None
    return value if isinstance(value, str) else default


def read_interrupt(raw: Raw) -> ToolApprovalRequest | Elicitation:
    """An interrupt of a ``RUN_FINISHED`` outcome that no earlier event said: an approval
    request when it is about a tool call and asks for no answer of a shape of its own (reason
    ``tool_approval``, or any other reason with a ``toolCallId`` and no ``responseSchema``, as
    agents that say ``tool_call`` write it), with the interrupt kept whole when it says more
    than the request; else an elicitation whose request is the interrupt itself."""
    try:
        w = _interrupt_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        w = None
    if w is not None and w.tool_call_id is not UNSET and _asks_approval(w):
        event = ToolApprovalRequest(call_id=w.tool_call_id, reason=w.message, expires_at=w.expires_at)
        if interrupt_of(event) != bytes(raw):
            event.extra = {KEPT + "interrupt": raw}
        return event
    obj = json_object(bytes(raw)) or {}
    call = obj.get("toolCallId", obj.get("id"))
    elicitation = Elicitation(call_id=call if isinstance(call, str) else "", request=raw)
    if interrupt_of(elicitation) != bytes(raw):
        elicitation.extra = {KEPT + "interrupt": raw}
    return elicitation


def _asks_approval(w: InterruptW) -> bool:
    """Whether an interrupt about a tool call asks to approve it (a yes or no, not a form): it
    says so, it asks for no answer of a shape, or the shape it asks is a yes or no (what the
    answer of an approval is: ``{"approved": true}``, as pydantic-ai's ``tool_call`` interrupts ask)."""
    if w.reason == APPROVAL_REASON or w.response_schema is UNSET:
        return True
    return _yes_or_no(w.response_schema)


def _yes_or_no(schema: Raw) -> bool:
    """A JSON schema of an object whose one required member is a boolean ``approved``."""
    obj = json_object(bytes(schema)) or {}
    properties = obj.get("properties")
    approved = properties.get("approved") if isinstance(properties, dict) else None
    return obj.get("required") == ["approved"] and isinstance(approved, dict) and approved.get("type") == "boolean"


def outcome_of(interrupts: list[bytes]) -> bytes:
    """``{"type":"interrupt","interrupts":[…]}``."""
    return b'{"type":"interrupt","interrupts":[' + b",".join(interrupts) + b"]}"


def read_outcome(raw: Raw) -> tuple[str, list[Raw], bool]:
    """An outcome's type, its interrupts, and whether :func:`outcome_of` (or the bare cancelled
    outcome) writes it back byte for byte; an unreadable one is an unknown type ``""``."""
    try:
        w = _outcome_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return "", [], False
    if w.type == "interrupt":
        return w.type, w.interrupts, bool(w.interrupts) and outcome_of([bytes(i) for i in w.interrupts]) == bytes(raw)
    if w.type == "cancelled":
        return w.type, [], bytes(raw) == CANCELLED
    return w.type, [], False
