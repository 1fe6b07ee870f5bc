"""nest's decoder: wire bytes in, events out."""

from __future__ import annotations

from typing import Literal, Unpack

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
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
from ..decoder import DecoderOptions, Members, reads, reads_one
from ..envelope import decode_envelope, decode_known, raw_str, splice_extra, split_extra
from ..errors import FrameProblem
from ..framing import Frame, Framing
from ..riding import NEST_SLOT
from ..sinks import EventSink
from ..steps import BracketReader
from ..synthetic import is_derived, read_call
from ..terminals import canonical_failure, status_for_code
from .ui import read_component
from .wire import (
    _K,
    REJECTED,
    ApprovalRequestedW,
    ApprovalSettledW,
    CancelledW,
    ElicitationW,
    ErrorW,
    MessageMetadataW,
    MetaW,
    NdjsonNamed,
    NestFrame,
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

__all__ = ["NestDecoder"]

_KINDS: dict[str, type[_K]] = {c.__struct_config__.tag: c for c in NestFrame.__args__}
_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(("kind", *cls.__struct_encode_fields__)) for kind, cls in _KINDS.items()
}
_frame_decoder = msgspec.json.Decoder(NestFrame)
_meta_decoder = msgspec.json.Decoder(MetaW)
_error_decoder = msgspec.json.Decoder(ErrorW)
_NAMED_NDJSON = b'{"event":"'


_named_decoder = msgspec.json.Decoder(NdjsonNamed)


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


class NestDecoder(BracketReader):
    """Reads the bare step brackets a nest encoder writes by itself as synthetic (see
    :mod:`..steps`); such a bracket waits for the event after it. A carried bracket is
    what its carrier says."""

    codec = "nest"
    tag_field = "kind"
    start_words = "event: meta"
    terminal_words = "event: done or event: error"

    wire_types = NestFrame

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._cancelled = False
        self._cancelled_id: str | UnsetType = UNSET

    _hot_decoder = _frame_decoder  # a data frame of a known kind with no unknown fields
    _invents_input_start = False  # nest says tool-input-start
    _hot_text = TextW
    _hot_reasoning = ReasoningW

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

    def _finish(self, out: EventSink) -> None:
        self._settle_at_end(out)
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
        return self._read_wire(wire, {})

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
        """Unknown kinds, unknown fields, carriers (riding on a frame, or one of their own), or
        invalid values."""
        carried = self._riding(frame, NEST_SLOT) if data is frame.data else None
        if carried is not None:
            return carried
        envelope = decode_envelope(data, frame)
        kind = raw_str(envelope.get("kind"))
        if kind is None:
            return [self._unknown("", frame)]
        if kind in _KINDS:
            known, extra = split_extra(envelope, _FIELDS[kind])
            wire, verbatim = decode_known(_KINDS[kind], known, kind)
            return self._with_verbatim(self._read_wire(wire, extra), verbatim)
        if kind.startswith("data-") and "event" in envelope:
            return [self._carrier(data)]
        artifact = self._artifact_part(kind, {k: v for k, v in envelope.items() if k != "kind"})
        return [artifact or self._unknown(kind, frame)]

    # -- readers, one per kind ---------------------------------------------------------------

    @reads_one(TextW, hot=True)
    def _on_text(self, w: TextW) -> Event:
        return TextDelta(text=w.text)

    @reads_one(ReasoningW, hot=True)
    def _on_reasoning(self, w: ReasoningW) -> Event:
        return ReasoningDelta(text=w.text)

    @reads_one(ToolInputDeltaW, hot=True)
    def _on_input_delta(self, w: ToolInputDeltaW) -> Event:
        return ToolInputDelta(call_id=w.id, delta=w.delta)

    @reads_one(StepStartW, hot=True)
    def _on_step_start(self, w: StepStartW) -> Event:
        return StepStart()

    @reads_one(StepFinishW, hot=True)
    def _on_step_finish(self, w: StepFinishW) -> Event:
        finish = StepFinish(usage=_usage_in(w.usage), cost_usd=w.cost_usd, reasoning_ms=w.reasoning_ms, model=w.model)
        return finish

    @reads_one(ToolInputAvailableW, hot=True)
    def _on_input_available(self, w: ToolInputAvailableW) -> Event:
        kind = _kind_in(w.tool_kind)
        call = ToolCall(call_id=w.id, name=w.name, input=w.input, tool_kind=kind, parent_id=w.parent_id)
        return read_call(call)

    @reads_one(ToolOutputW, hot=True)
    def _on_output(self, w: ToolOutputW) -> Event:
        return ToolOutput(call_id=w.id, output=w.output)

    @reads_one(ToolInputStartW, hot=True)
    def _on_input_start(self, w: ToolInputStartW) -> Event:
        start = ToolInputStart(call_id=w.id, name=w.name, tool_kind=_kind_in(w.tool_kind), parent_id=w.parent_id)
        return read_call(start)

    @reads_one(ToolOutputErrorW, hot=True)
    def _on_output_error(self, w: ToolOutputErrorW) -> Event:
        # the published server's form of a person's rejection is this literal error
        e = ToolDenied(call_id=w.id) if w.error == REJECTED else ToolError(call_id=w.id, error=w.error)
        return e

    @reads_one(ToolOutputDeniedW, hot=True)
    def _on_output_denied(self, w: ToolOutputDeniedW) -> Event:
        return ToolDenied(call_id=w.id, reason=w.reason)

    @reads_one(ApprovalRequestedW, hot=True)
    def _on_approval_requested(self, w: ApprovalRequestedW) -> Event:
        request = ToolApprovalRequest(
            call_id=w.id,
            approver=w.approver,
            expires_at=w.expires_at,
            reason=w.reason,
            confirmation=w.confirmation,
            target=w.target,
        )
        return request

    @reads_one(ApprovalSettledW, hot=True)
    def _on_approval_settled(self, w: ApprovalSettledW) -> Event:
        settled = ToolApprovalSettled(
            call_id=w.id,
            status=w.status,
            approver=w.approver,
            decided_by=w.decided_by,
            decided_via=w.decided_via,
            remember=w.remember,
            reason=w.reason,
        )
        return settled

    @reads_one(UiW, hot=True)
    def _on_ui(self, w: UiW) -> Event:
        artifact = read_component(w.id, w.component, w.props, w.tool_call_id, w.fallback_text)
        if artifact is not None and w.version is UNSET and w.component_versions is UNSET and w.partial is UNSET:
            return artifact
        component = UiComponent(
            ui_id=w.id,
            component=w.component,
            props=w.props,
            version=w.version,
            tool_call_id=w.tool_call_id,
            fallback_text=w.fallback_text,
            component_versions=w.component_versions,
            partial=w.partial,
        )
        return component

    @reads_one(ElicitationW, hot=True)
    def _on_elicitation(self, w: ElicitationW) -> Event:
        return Elicitation(call_id=w.id, request=w.request)

    @reads_one(TitleW, hot=True)
    def _on_title(self, w: TitleW) -> Event:
        return Title(title=w.title)

    @reads_one(MessageMetadataW, hot=True)
    def _on_metadata(self, w: MessageMetadataW) -> Event:
        return MessageMetadata(metadata=w.metadata)

    @reads_one(QueueW, hot=True)
    def _on_queue(self, w: QueueW) -> Event:
        return Queue(queue=w.queue, started=w.started)

    @reads(CancelledW)
    def _on_cancelled(self, w: CancelledW, extra: Members) -> list[Event]:
        """The run was cancelled: its terminal is the ``done`` that follows (no event of its own,
        unless it brings members this codec does not know: then they travel as a data part)."""
        self._cancelled = True
        if not extra:
            return []
        return [DataPart(name="cancelled", origin="nest", data=Raw(splice_extra(b'{"kind":"cancelled"}', extra)))]


def _kind_in(kind: str) -> Literal["action"] | UnsetType:
    """``read`` is nest's default tool kind, so it decodes to UNSET (canonical form)."""
    return "action" if kind == "action" else UNSET
