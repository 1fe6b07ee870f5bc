"""nest's encoder: events in, wire bytes out."""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    ArtifactPresented,
    DataPart,
    Elicitation,
    Event,
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
from ..artifacts import placeholder
from ..carrier import Payload, as_received
from ..encoder import Encoder, handles
from ..envelope import input_of, splice_extra
from ..framing import Framing
from ..riding import NEST_SLOT
from ..steps import BracketWriter, StepJudge
from ..synthetic import invented_call, invented_start
from ..terminals import DEFAULT_MESSAGES, STATUS_CODES, canonical_failure, says_only_outcome, status_for_code
from .ui import component_props
from .wire import (
    _K,
    REJECTED,
    ApprovalRequestedW,
    ApprovalSettledW,
    ElicitationW,
    ErrorW,
    MessageMetadataW,
    MetaW,
    NestUsage,
    QueueW,
    ReasoningW,
    StepFinishW,
    StepStartW,
    TextW,
    TitleW,
    ToolInputAvailableW,
    ToolInputDeltaW,
    ToolInputStartW,
    ToolOutputDeniedW,
    ToolOutputErrorW,
    ToolOutputW,
    UiW,
)

__all__ = ["NestEncoder"]

_encode = msgspec.json.Encoder().encode

_DONE = b"{}"


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


_STEP_START_FRAME = b'{"kind":"step-start"}'
_STEP_FINISH_FRAME = b'{"kind":"step-finish"}'


_TOOL_CALL_WRITES = (
    "call_id",
    "name",
    "input",
    "arguments_json",
    "tool_kind",
    "parent_id",
    "status",
    "started_at",
    "ended_at",
    "result_text",
    "failure",
    "signature",
)
_TERMINAL_WRITES = (
    "status",
    "text",
    "usage",
    "failure",
    "provider",
    "model",
    "guarded",
    "correlation_id",
    "turn_id",
    "result",
    "error_info",
)


class NestEncoder(BracketWriter, Encoder):
    codec = "nest"
    # _plain decides about the fields every event has; _wire splices unknown members back
    writes_everywhere = frozenset({"message_id", "synthetic", "extra"})
    artifact_parts = True  # a refusal; an artifact presented is a ``ui`` frame
    _says_input_start = True
    ride_slot = NEST_SLOT  # a member the published client passes over (codecs/riding.py)

    def __init__(self, framing: Framing | None = None, *, sequence_ids: bool = False) -> None:
        super().__init__(framing)
        self.sequence_ids = sequence_ids
        self._seq = 0
        self._step_open = False
        self._tool_in_step = False
        self._cancelled_frame = b'{"kind":"cancelled"}'
        self._approvals: set[str] = set()  # calls that went through newer approval frames
        self._held_call: ToolCall | None = None  # (client fidelity) a call that may wait for approval
        self._steps: StepJudge[Event | None] = StepJudge()  # what a reader will see
        self._text_head = self._head + b'{"kind":"text","text":'
        self._reasoning_head = self._head + b'{"kind":"reasoning","text":'
        self._text_tail = b"}" + self._tail

    def write_event(self, event: Event, parts: list[bytes]) -> None:
        """At ``client`` fidelity a call whose source named no tool kind waits for the next event:
        one asking approval for it makes it an ``action`` call, as a nest server marks the calls
        it holds for approval (the published client knows no other sign of one). Message
        metadata, which says nothing of the call, goes first."""
        held = self._held_call
        if held is not None and type(event) is not MessageMetadata:
            self._held_call = None
            if type(event) is ToolApprovalRequest and event.call_id == held.call_id:
                held = msgspec.structs.replace(held, tool_kind="action")
            super().write_event(held, parts)
        if (
            type(event) is ToolCall
            and self.fidelity == "client"
            and event.tool_kind is UNSET
            and not event.synthetic
            and not self._terminated
        ):
            self._held_call = event
            self._text_ready = False  # (no delta may pass it on the fast path)
            return
        super().write_event(event, parts)

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
        run_id, thread_id = start.run_id, start.thread_id
        if not resumed:  # (a re-attach names no thread)
            if run_id is UNSET:
                run_id = self._derived("run-")
            if thread_id is UNSET:
                thread_id = "thr-" + run_id
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

    def _write_bracket(self, t: type, e: Event | None, parts: list[bytes], *, implied: bool) -> None:
        """A source's bracket that a reader would take for implied gets a carrier: it is real."""
        if e is None:
            parts.append(self._emit(_STEP_START_FRAME if t is StepStart else _STEP_FINISH_FRAME, ""))
        elif type(e) is StepFinish:
            usage, usage_native = _usage_out(e.usage)
            w = StepFinishW(usage=usage, cost_usd=e.cost_usd, reasoning_ms=e.reasoning_ms, model=e.model)
            self._put(parts, e, [self._wire(w, e)], _plain(e) and usage_native and not implied)
        else:
            self._put(parts, e, [self._wire(StepStartW(), e)], _plain(e) and not implied)

    def _set_step(self, *, open_: bool) -> None:
        """A step bracket was written: a step is open or not, with no tool call in it yet."""
        self._step_open = open_
        self._tool_in_step = False

    # -- events --------------------------------------------------------------------------

    def _handle(self, e: Event, parts: list[bytes]) -> None:
        t = type(e)
        if t is not StepStart and t is not StepFinish:  # (a bracket decides its step itself)
            if type(e) is DataPart and e.origin == "nest" and e.name == "cancelled":
                self._cancelled_frame = bytes(e.data)
                return  # written with the terminal (a reader sees no event for it)
            self._prelude(e, parts)
        super()._handle(e, parts)

    @handles(TextDelta, ReasoningDelta, writes=("text", "part_id"))
    def _delta(self, e: TextDelta | ReasoningDelta, parts: list[bytes]) -> None:
        w: _K = TextW(text=e.text) if type(e) is TextDelta else ReasoningW(text=e.text)
        self._put(parts, e, [self._wire(w, e)], _plain(e) and e.part_id is UNSET)

    @handles(RunStart, writes=("run_id", "resumed", "thread_id", "model", "provider", "correlation_id"))
    def _run_start(self, e: RunStart, parts: list[bytes]) -> None:
        if e is not self._first:  # the first one is the meta frame (_begin)
            self._put(parts, e, [], False)

    @handles(ToolInputStart, writes=("call_id", "name", "tool_kind", "parent_id"))
    def _input_start(self, e: ToolInputStart, parts: list[bytes]) -> None:
        self._tool_in_step = True
        w = ToolInputStartW(id=e.call_id, name=e.name, tool_kind=_kind_out(e.tool_kind), parent_id=e.parent_id)
        self._put(parts, e, [self._wire(w, e)], invented_call(e) or (_plain(e) and e.tool_kind != "read"))

    @handles(ToolInputDelta, writes=("call_id", "delta"))
    def _input_delta(self, e: ToolInputDelta, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(ToolInputDeltaW(id=e.call_id, delta=e.delta), e)], _plain(e))

    @handles(ToolOutput, writes=("call_id", "output", "is_error"))
    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        native = _plain(e) and e.is_error is UNSET
        self._put(parts, e, [self._wire(ToolOutputW(id=e.call_id, output=e.output), e)], native)

    @handles(ToolError, writes=("call_id", "error", "failure", "output"))
    def _tool_error(self, e: ToolError, parts: list[bytes]) -> None:
        native = _plain(e) and e.failure is UNSET and e.output is UNSET and e.error != REJECTED
        self._put(parts, e, [self._wire(ToolOutputErrorW(id=e.call_id, error=e.error), e)], native)

    @handles(ToolApprovalRequest, writes=("call_id", "approver", "expires_at", "reason", "confirmation", "target"))
    def _approval_request(self, e: ToolApprovalRequest, parts: list[bytes]) -> None:
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

    @handles(
        ToolApprovalSettled,
        writes=("call_id", "status", "approver", "decided_by", "decided_via", "remember", "reason"),
    )
    def _approval_settled(self, e: ToolApprovalSettled, parts: list[bytes]) -> None:
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

    @handles(
        UiComponent,
        writes=(
            "ui_id",
            "component",
            "props",
            "version",
            "tool_call_id",
            "fallback_text",
            "component_versions",
            "partial",
        ),
    )
    def _ui(self, e: UiComponent, parts: list[bytes]) -> None:
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

    @handles(ArtifactPresented, writes=("ref", "as_", "snapshot", "tool_call_id", "synthetic"))
    def _artifact_ui(self, e: ArtifactPresented, parts: list[bytes]) -> None:
        """An artifact is a ``ui`` frame: id the ref, component its ``as``, props ``{ref, as,
        snapshot}``, the placeholder as fallback text (clients that draw nothing else show it)."""
        if self._skips_derived(e):
            return  # derived from a tool output, which says it to every reader
        w = UiW(
            id=e.ref,
            component=e.as_,
            props=Raw(component_props(e)),
            tool_call_id=e.tool_call_id,
            fallback_text=placeholder(e.snapshot, e.as_),
        )
        self._put(parts, e, [self._wire(w, e)], _plain(e))

    @handles(Elicitation, writes=("call_id", "request"))
    def _elicitation(self, e: Elicitation, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(ElicitationW(id=e.call_id, request=e.request), e)], _plain(e))

    @handles(Title, writes=("title",))
    def _title(self, e: Title, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(TitleW(title=e.title), e)], _plain(e))

    @handles(MessageMetadata, writes=("metadata",))
    def _message_metadata(self, e: MessageMetadata, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(MessageMetadataW(metadata=e.metadata), e)], _plain(e))

    @handles(Queue, writes=("queue", "started"))
    def _queue(self, e: Queue, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(QueueW(queue=e.queue, started=e.started), e)], _plain(e))

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        if e.origin == "nest":  # one of nest's own frames, kept whole: written back as it came
            self._put(parts, e, [bytes(e.data)], e.message_id is UNSET and as_received(e))
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
        elif type(e) is ToolApprovalRequest or type(e) is Elicitation:
            self._announce(e.call_id, parts)
        self._reader(t, parts)

    @handles(StepStart, StepFinish, writes=("usage", "cost_usd", "reasoning_ms", "model"))
    def _step(self, e: Event, parts: list[bytes]) -> None:
        """A source's step bracket. A synthetic one is implied structure (a nest decoder reads
        only brackets its encoder would write itself so): this encoder closes and opens the step
        with its own brackets where the content after it needs them (an AI SDK reader implies
        them before a part's start, which nest has no frame for)."""
        t = type(e)
        if e.synthetic:
            return
        if t is StepFinish and not self._step_open:
            self._open_step(parts)  # a step-finish is always bracketed
        self._set_step(open_=t is StepStart)
        self._bracket(t, e, parts)

    @handles(ToolDenied, writes=("call_id", "reason", "failure"))
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

    @handles(ToolCall, writes=_TOOL_CALL_WRITES)
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
        raw_input, native, carried = input_of(e, native)
        w = ToolInputAvailableW(
            id=e.call_id, name=e.name, input=raw_input, tool_kind=_kind_out(e.tool_kind), parent_id=e.parent_id
        )
        self._put(parts, carried, [self._wire(w, e)], native or invented_call(e))

    @handles(Terminal, writes=_TERMINAL_WRITES)
    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        frames: list[Payload] = []
        failure = e.failure
        native = (
            _plain(e)
            and says_only_outcome(e, self._assembled())
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
