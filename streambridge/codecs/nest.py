"""``nest`` (alias ``adonis``): the kind-framed chat SSE of @dudousxd/nestjs-agent.

``event: meta`` first, one unnamed ``data:`` frame per ``{kind: …}`` event, then ``event: done``
(``{}``) or ``event: error`` (``{code, message}``), LF only, optional ``id:`` sequence numbers
(newer generation). The encoder keeps the published React transport 0.5.5 happy: every tool
call is announced before its outcome, steps are bracketed, and text that resumes after tool
calls opens a new step. See docs/mapping.md.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ..events import (
    DataPart,
    Elicitation,
    Event,
    Failure,
    MessageMetadata,
    Queue,
    ReasoningDelta,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    Title,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    UiComponent,
    Usage,
)
from .carrier import Payload, as_received
from .decoder import Decoder
from .encoder import Encoder
from .errors import FrameProblem
from .framing import Frame
from .nest_steps import STEP_STATE, StepJudge
from .synthetic import invented_call, invented_start, is_derived, read_call
from .terminals import DEFAULT_MESSAGES, STATUS_CODES, canonical_failure, status_for_code
from .wire import decode_envelope, decode_known, parse_arguments, raw_str, splice_extra, split_extra

_W = {"kw_only": True, "omit_defaults": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}


class NestUsage(Struct, **_W):
    input_tokens: int
    output_tokens: int
    cache_write_tokens: int | UnsetType = UNSET
    cache_read_tokens: int | UnsetType = UNSET
    reasoning_tokens: int | UnsetType = UNSET


class _K(Struct, tag_field="kind", **_W):
    pass


class StepStartW(_K, tag="step-start"):
    pass


class StepFinishW(_K, tag="step-finish"):
    usage: NestUsage | UnsetType = UNSET
    cost_usd: int | float | UnsetType | None = UNSET
    reasoning_ms: int | float | UnsetType = UNSET
    model: str | UnsetType = UNSET


class TextW(_K, tag="text"):
    text: str


class ReasoningW(_K, tag="reasoning"):
    text: str


class ToolInputStartW(_K, tag="tool-input-start"):
    id: str
    name: str
    tool_kind: Literal["read", "action"]
    parent_id: str | UnsetType = UNSET


class ToolInputDeltaW(_K, tag="tool-input-delta"):
    id: str
    delta: str


class ToolInputAvailableW(_K, tag="tool-input-available"):
    id: str
    name: str
    input: Raw
    tool_kind: Literal["read", "action"]
    parent_id: str | UnsetType = UNSET


class ToolOutputW(_K, tag="tool-output"):
    id: str
    output: Raw


class ToolOutputErrorW(_K, tag="tool-output-error"):
    id: str
    error: str


class ToolOutputDeniedW(_K, tag="tool-output-denied"):
    id: str
    reason: str | UnsetType = UNSET


class ElicitationW(_K, tag="elicitation"):
    id: str
    request: Raw


class ApprovalRequestedW(_K, tag="approval-requested"):
    id: str
    approver: str
    expires_at: str | UnsetType = UNSET
    reason: str | UnsetType = UNSET
    confirmation: Raw | UnsetType = UNSET
    target: Raw | UnsetType = UNSET


class ApprovalSettledW(_K, tag="approval-settled"):
    id: str
    status: str
    approver: str | UnsetType = UNSET
    decided_by: str | UnsetType = UNSET
    decided_via: str | UnsetType = UNSET
    remember: bool | UnsetType = UNSET
    reason: str | UnsetType = UNSET


class UiW(_K, tag="ui"):
    id: str
    component: str
    props: Raw
    version: int | UnsetType = UNSET
    tool_call_id: str | UnsetType = UNSET
    fallback_text: str | UnsetType = UNSET
    component_versions: Raw | UnsetType = UNSET
    partial: bool | UnsetType = UNSET


class TitleW(_K, tag="title"):
    title: str


class MessageMetadataW(_K, tag="message-metadata"):
    metadata: Raw


class CancelledW(_K, tag="cancelled"):
    pass


class QueueW(_K, tag="queue"):
    queue: Raw
    started: Raw | UnsetType = UNSET


class MetaW(Struct, **_W):
    run_id: str | UnsetType = UNSET
    thread_id: str | UnsetType = UNSET


class ErrorW(Struct, **_W):
    code: str
    message: str


NestFrame = (
    StepStartW
    | StepFinishW
    | TextW
    | ReasoningW
    | ToolInputStartW
    | ToolInputDeltaW
    | ToolInputAvailableW
    | ToolOutputW
    | ToolOutputErrorW
    | ToolOutputDeniedW
    | ElicitationW
    | ApprovalRequestedW
    | ApprovalSettledW
    | UiW
    | TitleW
    | MessageMetadataW
    | CancelledW
    | QueueW
)
_KINDS: dict[str, type[_K]] = {c.__struct_config__.tag: c for c in NestFrame.__args__}
_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(("kind", *cls.__struct_encode_fields__)) for kind, cls in _KINDS.items()
}
_frame_decoder = msgspec.json.Decoder(NestFrame)
_meta_decoder = msgspec.json.Decoder(MetaW)
_error_decoder = msgspec.json.Decoder(ErrorW)
_encode = msgspec.json.Encoder().encode

_DONE = b"{}"
#: what the published server writes as a tool's error when a person rejected the call
REJECTED = "rejected"
_CARRIER_KIND = b'{"kind":"'
_NAMED_NDJSON = b'{"event":"'


class _NdjsonNamed(Struct):
    event: str
    data: Raw


_named_decoder = msgspec.json.Decoder(_NdjsonNamed)


def _usage_in(u: NestUsage | UnsetType) -> Usage | UnsetType:
    if u is UNSET:
        return UNSET
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cache_write_tokens=u.cache_write_tokens,
        cache_read_tokens=u.cache_read_tokens,
        reasoning_tokens=u.reasoning_tokens,
    )


def _usage_out(u: Usage | UnsetType) -> tuple[NestUsage | UnsetType, bool]:
    """The nest usage and whether it says all of the hub usage."""
    if u is UNSET:
        return UNSET, True
    if u.input_tokens is UNSET or u.output_tokens is UNSET:
        return UNSET, False
    native = u.cached_tokens is UNSET and u.cost_usd is UNSET and u.duration_ms is UNSET and u.model is UNSET
    return (
        NestUsage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_write_tokens=u.cache_write_tokens,
            cache_read_tokens=u.cache_read_tokens,
            reasoning_tokens=u.reasoning_tokens,
        ),
        native,
    )


def _plain(event: Event) -> bool:
    """True when an event has nothing nest cannot say among the fields every event has."""
    return event.message_id is UNSET and not event.synthetic


_BARE_START = StepStart()
_BARE_FINISH = StepFinish()


def _bare(event: Event) -> bool:
    """A step bracket with nothing but its kind (no usage, no id, no unknown field)."""
    return event in (_BARE_START, _BARE_FINISH)


class NestDecoder(Decoder):
    """Reads the bare step brackets a nest encoder writes by itself as synthetic (see
    :mod:`.nest_steps`); such a bracket waits for the event after it. A carried bracket is
    what its carrier says."""

    codec = "nest"
    tag_field = "kind"
    start_words = "event: meta"
    terminal_words = "event: done or event: error"

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._cancelled = False
        self._cancelled_id: str | UnsetType = UNSET
        self._steps: StepJudge[Event] = StepJudge()

    _hot_decoder = _frame_decoder  # a data frame of a known kind with no unknown fields
    _invents_input_start = False  # nest says tool-input-start
    _hot_text = TextW
    _hot_reasoning = ReasoningW

    def _take_wire(self, w: _K) -> Event | None:
        events = self._event(w, UNSET)
        return events[0] if len(events) == 1 else None

    # -- implied step brackets -------------------------------------------------------------

    def _push(self, event: Event, out: list[Event]) -> None:
        self._deliver(event, out, carried=self._from_carrier)

    def _accept(self, event: Event) -> None:
        t = type(event)
        steps = self._steps
        if steps.pending or t is StepStart or t is StepFinish:
            self._deliver(event, self._out, carried=False)
            return
        if t in STEP_STATE:  # a tool call (never a terminal or primary text on this path)
            steps.follow(t)
        self._out.append(event)

    def _deliver(self, event: Event, out: list[Event], *, carried: bool) -> None:
        t = type(event)
        steps = self._steps
        if (t is StepStart or t is StepFinish) and not carried and _bare(event) and steps.holds(t):
            steps.hold(t, event)
            return
        if steps.pending:
            self._settle(t, out)
        steps.follow(t)
        super()._push(event, out)

    def _before_deltas(self, reasoning: bool) -> None:
        t = ReasoningDelta if reasoning else TextDelta
        if self._steps.pending:
            self._settle(t, self._out)
        self._steps.follow(t)

    def _settle(self, following: type | None, out: list[Event]) -> None:
        for _, bracket, implied in self._steps.settle(following):
            bracket.synthetic = implied
            super()._push(bracket, out)

    def _decode(self, frame: Frame) -> list[Event]:
        data = frame.data
        event_name = frame.event
        if self.framing == "ndjson" and data.startswith(_NAMED_NDJSON):
            try:
                named = _named_decoder.decode(data)
                event_name, data = named.event, bytes(named.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                pass
        if event_name == "meta":
            return [self._decode_meta(data)]
        events = self._decode_body(event_name, data, frame)
        if not events and self._cancelled and frame.own_id:
            self._cancelled_id = frame.last_id
        return events

    def _finish(self, out: list[Event]) -> None:
        if self._steps.pending:
            self._settle(None, out)
        if self._cancelled and not self.terminated:
            self._push(Terminal(status="cancelled", synthetic=True), out)

    def _decode_meta(self, data: bytes) -> RunStart:
        try:
            meta = _meta_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameProblem(f"a meta payload {{runId, threadId}} ({exc})") from None
        thread = meta.thread_id
        if thread is UNSET:  # a re-attach (GET …/chat/:runId/stream) names no thread
            return RunStart(run_id=meta.run_id, resumed=True)
        if meta.run_id is not UNSET and thread == "thr-" + meta.run_id:
            # the thread id this encoder derives for a run without one; with a derived run id,
            # the run start was invented for a source that had none
            return RunStart(run_id=meta.run_id, synthetic=is_derived("run-", meta.run_id))
        return RunStart(run_id=meta.run_id, thread_id=thread)

    def _decode_body(self, event_name: str, data: bytes, frame: Frame) -> list[Event]:
        if event_name == "done":
            if not self._cancelled:
                return [Terminal(status="succeeded")]
            self._cancelled = False  # the terminal's id stood on its cancelled frame
            return [Terminal(status="cancelled", event_id=self._cancelled_id)]
        if event_name == "error":
            return [self._error_terminal(data)]
        try:
            wire = _frame_decoder.decode(data)
        except msgspec.ValidationError:
            return self._slow(data, frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"a JSON object with a string kind ({exc})") from None
        return self._event(wire, UNSET)

    def _error_terminal(self, data: bytes) -> Terminal:
        try:
            err = _error_decoder.decode(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            envelope = decode_envelope(data, Frame(data))
            code = raw_str(envelope.get("code")) or "run_failed"
            message = raw_str(envelope.get("message")) or data.decode("utf-8", "replace")
            err = ErrorW(code=code, message=message)
        status = status_for_code(err.code)
        failure = Failure(status=status, message=err.message, code=err.code)
        return Terminal(status=status, failure=canonical_failure(status, failure))

    def _slow(self, data: bytes, frame: Frame) -> list[Event]:
        """Unknown kinds, unknown fields, carriers, or invalid values."""
        envelope = decode_envelope(data, frame)
        kind = raw_str(envelope.get("kind"))
        if kind is None:
            return [self._unknown("", frame)]
        if kind in _KINDS:
            known, extra = split_extra(envelope, _FIELDS[kind])
            wire, verbatim = decode_known(_KINDS[kind], known, kind)
            return self._with_verbatim(self._event(wire, extra or UNSET), verbatim)
        if kind.startswith("data-") and "event" in envelope:
            return [self._carrier(data, frame)]
        return [self._unknown(kind, frame)]

    # ``w`` is Any: each branch below knows its type from ``type(w)`` (mypy cannot narrow by it)
    def _event(self, w: Any, extra: dict[str, Raw] | UnsetType) -> list[Event]:
        t = type(w)
        e: Event
        if t is TextW:  # the most frequent kinds first
            e = TextDelta(text=w.text)
        elif t is ReasoningW:
            e = ReasoningDelta(text=w.text)
        elif t is ToolInputDeltaW:
            e = ToolInputDelta(call_id=w.id, delta=w.delta)
        elif t is StepStartW:
            e = StepStart()
        elif t is StepFinishW:
            e = StepFinish(usage=_usage_in(w.usage), cost_usd=w.cost_usd, reasoning_ms=w.reasoning_ms, model=w.model)
        elif t is ToolInputAvailableW:
            e = read_call(
                ToolCall(
                    call_id=w.id, name=w.name, input=w.input, tool_kind=_kind_in(w.tool_kind), parent_id=w.parent_id
                )
            )
        elif t is ToolOutputW:
            e = ToolOutput(call_id=w.id, output=w.output)
        elif t is ToolInputStartW:
            e = read_call(
                ToolInputStart(call_id=w.id, name=w.name, tool_kind=_kind_in(w.tool_kind), parent_id=w.parent_id)
            )
        elif t is ToolOutputErrorW:
            # the published server's form of a person's rejection is this literal error
            e = ToolDenied(call_id=w.id) if w.error == REJECTED else ToolError(call_id=w.id, error=w.error)
        elif t is ToolOutputDeniedW:
            e = ToolDenied(call_id=w.id, reason=w.reason)
        elif t is ApprovalRequestedW:
            e = ToolApprovalRequest(
                call_id=w.id,
                approver=w.approver,
                expires_at=w.expires_at,
                reason=w.reason,
                confirmation=w.confirmation,
                target=w.target,
            )
        elif t is ApprovalSettledW:
            e = ToolApprovalSettled(
                call_id=w.id,
                status=w.status,
                approver=w.approver,
                decided_by=w.decided_by,
                decided_via=w.decided_via,
                remember=w.remember,
                reason=w.reason,
            )
        elif t is UiW:
            e = UiComponent(
                ui_id=w.id,
                component=w.component,
                props=w.props,
                version=w.version,
                tool_call_id=w.tool_call_id,
                fallback_text=w.fallback_text,
                component_versions=w.component_versions,
                partial=w.partial,
            )
        elif t is ElicitationW:
            e = Elicitation(call_id=w.id, request=w.request)
        elif t is TitleW:
            e = Title(title=w.title)
        elif t is MessageMetadataW:
            e = MessageMetadata(metadata=w.metadata)
        elif t is QueueW:
            e = Queue(queue=w.queue, started=w.started)
        elif t is CancelledW:
            self._cancelled = True
            if extra is UNSET:
                return []
            e = DataPart(name="cancelled", origin="nest", data=Raw(splice_extra(b'{"kind":"cancelled"}', extra)))
            return [e]
        else:  # pragma: no cover - the union is closed
            raise FrameProblem(f"a known kind, not {t.__name__}")
        if extra is not UNSET:
            e.extra = extra
        return [e]


_STEP_START_FRAME = b'{"kind":"step-start"}'
_STEP_FINISH_FRAME = b'{"kind":"step-finish"}'


def _kind_in(kind: str) -> Literal["action"] | UnsetType:
    """``read`` is nest's default tool kind, so it decodes to UNSET (canonical form)."""
    return "action" if kind == "action" else UNSET


class NestEncoder(Encoder):
    codec = "nest"
    _says_input_start = True

    def __init__(self, framing: Literal["sse", "ndjson"] | None = None, *, sequence_ids: bool = False) -> None:
        super().__init__(framing)
        self.sequence_ids = sequence_ids
        self._seq = 0
        self._step_open = False
        self._tool_in_step = False
        self._cancelled_frame = b'{"kind":"cancelled"}'
        self._approvals: set[str] = set()  # calls that went through newer approval frames
        self._steps: StepJudge[Event | None] = StepJudge()  # what a reader will see
        self._text_head = self._head + b'{"kind":"text","text":'
        self._reasoning_head = self._head + b'{"kind":"reasoning","text":'
        self._text_tail = b"}" + self._tail

    # -- framing helpers -----------------------------------------------------------------

    def _emit(self, payload: bytes, name: str, event_id: str = "") -> bytes:
        """A source's ids are written as received (they are its clients' resume cursors). With
        ``sequence_ids``, event frames without one are numbered too: by position, after the
        highest number written so far (the newer nest rule), so a replay of the same input gets
        the same ids. ``meta``, ``done`` and ``error`` never get a positional one."""
        if event_id:
            if event_id.isascii() and event_id.isdigit():
                self._seq = max(self._seq, int(event_id))
        elif self.sequence_ids and not name:
            self._seq += 1
            event_id = str(self._seq)
        return super()._emit(payload, name, event_id)

    def _wire(self, w: _K, event: Event) -> bytes:
        payload = _encode(w)
        if event.extra is not UNSET:
            payload = splice_extra(payload, event.extra)
        return payload

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        return b'{"kind":' + name + b"," + body + b"}"

    def _plain_text_ok(self) -> bool:
        pending = self._steps.pending
        # brackets of this encoder's own that wait are implied by the text: written before it
        self._owed = bool(pending)
        return (
            self._step_open and not self._tool_in_step and not self.sequence_ids and all(e is None for _, e in pending)
        )

    def _pay(self, parts: list[bytes]) -> None:
        self._owed = False
        self._reader(TextDelta, parts)

    # -- preamble, structure -------------------------------------------------------------

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        """``meta`` with both ids, as the published client needs them; a re-attach's names only
        the run (ids are derived only for a source that has none, never added to a re-attach)."""
        start = event if type(event) is RunStart else RunStart(synthetic=True)
        resumed = start.resumed is True
        run_id = start.run_id
        if run_id is UNSET and not resumed:
            run_id = self._derived("run-")
        thread_id = start.thread_id
        if thread_id is UNSET and not resumed:
            thread_id = "thr-" + run_id  # type: ignore[operator]
        native = invented_start(start) or (
            (start.run_id is not UNSET or resumed)
            and (start.resumed is UNSET or (resumed and start.thread_id is UNSET))
            and start.message_id is UNSET
            and not start.synthetic
            and start.model is UNSET
            and start.provider is UNSET
            and start.correlation_id is UNSET
            and start.extra is UNSET
            and (run_id is UNSET or start.thread_id != "thr-" + run_id)  # the derived thread id reads back as UNSET
        )
        self._put(parts, start, [("meta", _encode(MetaW(run_id=run_id, thread_id=thread_id)))], native)

    def _open_step(self, parts: list[bytes]) -> None:
        """A step-start the client needs before content: a plain frame, which a nest decoder
        reads back as implied (synthetic), so it describes nothing and needs no carrier."""
        if not self._step_open:
            self._set_step(open_=True)
            self._bracket(StepStart, None, parts)

    def _close_step(self, parts: list[bytes]) -> None:
        if self._step_open:
            self._set_step(open_=False)
            self._bracket(StepFinish, None, parts)

    def _bracket(self, t: type, e: Event | None, parts: list[bytes]) -> None:
        """A step bracket, this encoder's own (``e`` None) or the source's: held while a reader
        may take it for implied (the next event decides), else written."""
        steps = self._steps
        if (e is None or _bare(e)) and steps.holds(t):
            steps.hold(t, e)
            return
        self._reader(t, parts)
        self._write_bracket(t, e, parts, implied=False)

    def _reader(self, t: type, parts: list[bytes]) -> None:
        """An event of type ``t`` is written next: the held brackets are decided by it."""
        steps = self._steps
        if steps.pending:
            for bracket, e, implied in steps.settle(t):
                self._write_bracket(bracket, e, parts, implied=implied)
        if t in STEP_STATE:
            steps.follow(t)

    def _write_bracket(self, t: type, e: Event | None, parts: list[bytes], *, implied: bool) -> None:
        """A source's bracket that a reader would take for implied gets a carrier: it is real."""
        if e is None:
            parts.append(self._emit(_STEP_START_FRAME if t is StepStart else _STEP_FINISH_FRAME, ""))
        elif t is StepStart:
            self._put(parts, e, [self._wire(StepStartW(), e)], _plain(e) and not implied)
        else:
            usage, usage_native = _usage_out(e.usage)  # type: ignore[attr-defined]
            w = StepFinishW(usage=usage, cost_usd=e.cost_usd, reasoning_ms=e.reasoning_ms, model=e.model)  # type: ignore[attr-defined]
            self._put(parts, e, [self._wire(w, e)], _plain(e) and usage_native and not implied)

    def _set_step(self, *, open_: bool) -> None:
        """A step bracket was written: a step is open or not, with no tool call in it yet."""
        self._step_open = open_
        self._tool_in_step = False

    # -- events --------------------------------------------------------------------------

    # ``e`` is Any: each branch below knows its type from ``type(e)`` (mypy cannot narrow by it)
    def _handle(self, e: Any, parts: list[bytes]) -> None:
        t = type(e)
        if t is StepStart or t is StepFinish:
            self._step(e, parts)
            return
        if t is DataPart and e.origin == "nest" and e.name == "cancelled":
            self._cancelled_frame = bytes(e.data)
            return  # written with the terminal (a reader sees no event for it)
        self._prelude(e, parts)
        if t is TextDelta or t is ReasoningDelta:
            w: _K = TextW(text=e.text) if t is TextDelta else ReasoningW(text=e.text)
            self._put(parts, e, [self._wire(w, e)], _plain(e) and e.part_id is UNSET)
        elif t is RunStart:
            if e is not self._first:
                self._put(parts, e, [], False)
        elif t is ToolInputStart:
            self._tool_in_step = True
            w = ToolInputStartW(id=e.call_id, name=e.name, tool_kind=_kind_out(e.tool_kind), parent_id=e.parent_id)
            self._put(parts, e, [self._wire(w, e)], invented_call(e) or (_plain(e) and e.tool_kind != "read"))
        elif t is ToolInputDelta:
            self._put(parts, e, [self._wire(ToolInputDeltaW(id=e.call_id, delta=e.delta), e)], _plain(e))
        elif t is ToolCall:
            self._tool_call(e, parts)
        elif t is ToolOutput:
            native = _plain(e) and e.is_error is UNSET
            self._put(parts, e, [self._wire(ToolOutputW(id=e.call_id, output=e.output), e)], native)
        elif t is ToolError:
            native = _plain(e) and e.failure is UNSET and e.output is UNSET and e.error != REJECTED
            self._put(parts, e, [self._wire(ToolOutputErrorW(id=e.call_id, error=e.error), e)], native)
        elif t is ToolDenied:
            self._denied(e, parts)
        elif t is ToolApprovalRequest:
            self._approvals.add(e.call_id)
            w = ApprovalRequestedW(
                id=e.call_id,
                approver=e.approver if e.approver is not UNSET else "requester",
                expires_at=e.expires_at,
                reason=e.reason,
                confirmation=e.confirmation,
                target=e.target,
            )
            self._put(parts, e, [self._wire(w, e)], _plain(e) and e.approver is not UNSET)
        elif t is ToolApprovalSettled:
            self._approvals.add(e.call_id)
            w = ApprovalSettledW(
                id=e.call_id,
                status=e.status,
                approver=e.approver,
                decided_by=e.decided_by,
                decided_via=e.decided_via,
                remember=e.remember,
                reason=e.reason,
            )
            self._put(parts, e, [self._wire(w, e)], _plain(e))
        elif t is UiComponent:
            w = UiW(
                id=e.ui_id,
                component=e.component,
                props=e.props,
                version=e.version,
                tool_call_id=e.tool_call_id,
                fallback_text=e.fallback_text,
                component_versions=e.component_versions,
                partial=e.partial,
            )
            self._put(parts, e, [self._wire(w, e)], _plain(e))
        elif t is Elicitation:
            self._put(parts, e, [self._wire(ElicitationW(id=e.call_id, request=e.request), e)], _plain(e))
        elif t is Title:
            self._put(parts, e, [self._wire(TitleW(title=e.title), e)], _plain(e))
        elif t is MessageMetadata:
            self._put(parts, e, [self._wire(MessageMetadataW(metadata=e.metadata), e)], _plain(e))
        elif t is Queue:
            self._put(parts, e, [self._wire(QueueW(queue=e.queue, started=e.started), e)], _plain(e))
        elif t is DataPart and e.origin == "nest":
            self._put(parts, e, [bytes(e.data)], e.message_id is UNSET and as_received(e))
        elif t is Terminal:
            self._terminal(e, parts)
        else:
            self._put(parts, e, [], False)

    def _prelude(self, e: Event, parts: list[bytes]) -> None:
        """What goes before an event's frames: the step it needs, the announcement of its tool
        call; then the held brackets are decided by it."""
        t = type(e)
        if t is TextDelta or t is ReasoningDelta:
            if self._tool_in_step:
                self._close_step(parts)
            self._open_step(parts)
        elif t is ToolInputStart or t is ToolCall:
            self._open_step(parts)
        elif t is ToolApprovalRequest or t is Elicitation:
            self._announce(e.call_id, parts)  # type: ignore[attr-defined]
        self._reader(t, parts)

    def _step(self, e: Event, parts: list[bytes]) -> None:
        """A source's step bracket. A synthetic one is implied structure (a nest decoder reads
        only brackets its encoder would write itself so): the step opens or closes here as the
        content after it would make it, with this encoder's own bracket."""
        t = type(e)
        if e.synthetic:
            if t is StepStart:
                self._open_step(parts)
            else:
                self._close_step(parts)
            return
        if t is StepFinish and not self._step_open:
            self._open_step(parts)  # a step-finish is always bracketed
        self._set_step(open_=t is StepStart)
        self._bracket(t, e, parts)

    def _denied(self, e: ToolDenied, parts: list[bytes]) -> None:
        """A denial in the generation the stream speaks: ``tool-output-denied`` where the call
        went through the newer approval frames, else the published ``tool-output-error`` with
        ``"rejected"`` — what a 0.5.5 client settles (it drops ``tool-output-denied``)."""
        native = _plain(e) and e.failure is UNSET
        if e.call_id in self._approvals:
            self._put(parts, e, [self._wire(ToolOutputDeniedW(id=e.call_id, reason=e.reason), e)], native)
        else:
            w = ToolOutputErrorW(id=e.call_id, error=REJECTED)
            self._put(parts, e, [self._wire(w, e)], native and e.reason is UNSET)

    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        self._tool_in_step = True
        native = (
            _plain(e)
            and e.tool_kind != "read"
            and e.status is UNSET
            and e.started_at is UNSET
            and e.ended_at is UNSET
            and e.result_text is UNSET
            and e.failure is UNSET
            and e.signature is UNSET
        )
        raw_input = e.input
        carried = e
        if raw_input is UNSET:
            raw_input, ok = parse_arguments(e.arguments_json)
            native = native and ok
            if ok and not native:  # carried in the spelling the decoder reads: the input, parsed
                carried = msgspec.structs.replace(e, input=raw_input, arguments_json=UNSET)
        elif e.arguments_json is not UNSET:
            native = False
        w = ToolInputAvailableW(
            id=e.call_id, name=e.name, input=raw_input, tool_kind=_kind_out(e.tool_kind), parent_id=e.parent_id
        )
        self._put(parts, carried, [self._wire(w, e)], native or invented_call(e))

    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        frames: list[Payload] = []
        failure = e.failure
        native = (
            _plain(e)
            and (e.text is UNSET or e.text == self._assembled())
            and e.usage is UNSET
            and e.provider is UNSET
            and e.model is UNSET
            and e.guarded is UNSET
            and e.correlation_id is UNSET
            and e.turn_id is UNSET
            and e.result is UNSET
            and e.error_info is UNSET
            and e.extra is UNSET  # the done and error frames are read for nothing else
            and canonical_failure(e.status, failure) is failure  # the default one decodes to none
        )
        if e.status == "succeeded":  # an open step stays open: the server ends runs so too
            frames.append(("done", _DONE))
            native = native and failure is UNSET
        elif e.status == "cancelled":
            frames.append(self._cancelled_frame)
            frames.append(("done", _DONE))
            native = native and failure is UNSET
        else:
            code = STATUS_CODES[e.status]
            message = DEFAULT_MESSAGES[e.status]
            if failure is not UNSET:
                code = failure.code if failure.code is not UNSET else code
                message = failure.message
                native = (
                    native
                    and failure.status == e.status
                    and failure.code is not UNSET
                    and status_for_code(failure.code) == e.status
                    and failure.recoverable is UNSET
                    and failure.retry_after_ms is UNSET
                    and failure.correlation_id is UNSET
                )
            frames.append(("error", _encode(ErrorW(code=code, message=message))))
        self._put(parts, e, frames, native)


def _kind_out(kind: str | UnsetType) -> Literal["read", "action"]:
    return "action" if kind == "action" else "read"
