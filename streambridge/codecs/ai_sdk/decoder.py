"""The ai-sdk decoder: UI message stream chunks in, events out.

``data: [DONE]`` is the end marker, never a frame to decode; a stream that ends after its
terminal without it is complete. ``error`` waits for the frame after it: with the ``finish``
that follows it (this codec's form of a failure) it is the terminal; followed by anything else
it was a passing error (kept whole, as a data part of this codec); at the end of the input it
is the terminal. What the encoder invents reads back as invented: parts with the ids it numbers
(``sb-text-<n>``, ``sb-reasoning-<n>``) are the primary text (their starts and ends are no
events), bare step brackets where it puts them are synthetic (the judge of :mod:`..steps`), a call named
``unknown`` with an empty input is an invented announcement."""

from __future__ import annotations

import operator
from typing import Literal, Unpack

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Event,
    Failure,
    MessageMetadata,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    Source,
    Sources,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)
from ..carrier import late_decoder
from ..decoder import DecoderOptions, Members, reads, with_extra
from ..envelope import decode_envelope, decode_known, envelope_decoder, json_encode, raw_str, split_extra
from ..errors import FrameProblem
from ..framing import Frame, Framing
from ..riding import AI_SDK_SLOT
from ..sinks import EventSink
from ..steps import BracketReader
from ..synthetic import read_call
from ..terminals import DEFAULT_MESSAGES, TRUNCATED_CODE, TRUNCATED_MESSAGE, canonical_failure
from .encoder import LATE, LATE_HEAD, approval_id, data_part, judged_type, whole_frame
from .wire import (
    CHUNKS,
    FIELDS,
    PREFIX,
    AbortW,
    AiSdkChunk,
    Chunk,
    DataPartW,
    ErrorW,
    FinishStepW,
    FinishW,
    MessageMetadataW,
    ReasoningDeltaW,
    ReasoningEndW,
    ReasoningStartW,
    SourceUrlW,
    StartStepW,
    StartW,
    TextDeltaW,
    TextEndW,
    TextStartW,
    ToolApprovalRequestW,
    ToolApprovalResponseW,
    ToolInputAvailableW,
    ToolInputDeltaW,
    ToolInputErrorW,
    ToolInputStartW,
    ToolOutputAvailableW,
    ToolOutputDeniedW,
    ToolOutputErrorW,
)

__all__ = ["AiSdkDecoder"]

_chunk_decoder = msgspec.json.Decoder(AiSdkChunk)
_part_decoder = msgspec.json.Decoder(DataPartW)
_DONE = b"[DONE]"
_ERROR_FINISH = b'"error"'


class AiSdkDecoder(BracketReader):
    codec = "ai-sdk"
    tag_field = "type"
    start_words = "start"
    terminal_words = "finish, abort or error"
    _invents_input_start = False  # the protocol says tool-input-start
    part_starts = True  # text-start is where a step's text begins (steps.StepJudge)
    late_types = LATE

    wire_types = AiSdkChunk

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._counts = {"text": 0, "reasoning": 0}
        self._invented: dict[str, str | None] = {"text": None, "reasoning": None}
        self._approvals: dict[str, str] = {}  # approval id → call id
        #: an ``error`` chunk waiting for the frame after it: (text, unknown members, frame)
        self._error: tuple[str, dict[str, Raw], Frame] | None = None
        #: what came between an error and its finish (ai's own streams close the step there)
        self._after_error: list[Event] = []

    # -- the hot path: runs of one part's deltas, the other frequent chunks by their readers ------

    _hot_decoder = _chunk_decoder
    _hot_text = TextDeltaW
    _hot_reasoning = ReasoningDeltaW
    _hot_delta = operator.attrgetter("delta")
    _hot_part = operator.attrgetter("id")
    _hot_in_order = True

    def _hot_paused(self) -> bool:
        return self._error is not None or bool(self._after_error)  # (the frame after an error decides)

    def _delta_part(self, reasoning: bool, part: str) -> str | UnsetType:
        return self._part("reasoning" if reasoning else "text", part)

    # -- implied step brackets (read as nest's: :class:`..steps.BracketReader`) ----------------

    def _judged(self, event: Event) -> type:
        return judged_type(event)

    def _finish(self, out: EventSink) -> None:
        pending, self._error = self._error, None
        held, self._after_error = self._after_error, []
        for event in held:
            self._push(event, out)
        if pending is not None and not self.terminated:
            self._push(self._error_terminal(pending, {}), out)
        self._settle_at_end(out)

    def _trailing(self, frame: Frame) -> None:
        """After the terminal only ``[DONE]`` is expected (and the ``finish`` that closes an
        error, read with it)."""
        if frame.data.strip() == _DONE:
            return
        super()._trailing(frame)

    # -- frames ----------------------------------------------------------------------------

    def _decode(self, frame: Frame) -> list[Event]:
        data = frame.data
        carried = self._carried(frame) if self._error is None and not self._after_error else None
        if carried is not None:  # (not while an error's end is pending)
            return carried
        pending, self._error = self._error, None
        held, self._after_error = self._after_error, []
        if data.strip() == _DONE:
            return held if pending is None else [*held, self._error_terminal(pending, {})]
        try:
            wire: Chunk | None = _chunk_decoder.decode(data)
            extra: dict[str, Raw] = {}
        except msgspec.ValidationError:
            wire, extra, events = self._slow(frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON chunk object with a string type ({exc})") from None
        else:
            events = []
        if pending is not None and type(wire) is FinishStepW and not extra:
            self._error = pending  # an error, then its step closed, then its finish: still the end
            self._after_error = [*held, *self._read_wire(wire, extra)]
            return []
        if pending is not None and type(wire) is FinishW:
            reason = extra.get("finishReason")
            if reason is not None and bytes(reason) == _ERROR_FINISH:
                del extra["finishReason"]  # what this codec writes after an error
            return [*held, self._error_terminal(pending, extra)]
        if wire is not None:
            events = self._read_in_order(wire, extra, data)
        if pending is not None:  # an error followed by something else than finish: a passing one
            passing = self._unknown("error", pending[2])
            if pending[2].own_id and pending[2].last_id:
                passing.event_id = pending[2].last_id  # the SSE id stood on the error frame
            return [passing, *held, *events]
        return events

    def _carried(self, frame: Frame) -> list[Event] | None:
        """The events a carrier riding on this frame says, none for a frame saying late entries
        only; None for a frame that says its own."""
        if self._late_held and frame.data.startswith(LATE_HEAD) and self._late_frame(frame.data):
            return []
        return self._riding(frame, AI_SDK_SLOT)

    def _late_frame(self, data: bytes) -> bool:
        """A frame of its own saying the late entries of the bare frames held (its encoder
        writes one when the frame after them has no slot); False for another ``data-late`` part."""
        try:
            members = envelope_decoder.decode(data)
            late = late_decoder.decode(members["data"])
            if set(members) != {"type", "data", "transient"} or bytes(members["transient"]) != b"true":
                return False
            self._take_late(late.late)
        except (FrameProblem, KeyError, msgspec.DecodeError, msgspec.ValidationError):
            return False  # (another data part of that name, or entries that do not match)
        return True

    def _slow(self, frame: Frame) -> tuple[Chunk | None, dict[str, Raw], list[Event]]:
        """Unknown members, ``data-*`` parts, chunk types kept whole, invalid values."""
        envelope = decode_envelope(frame.data, frame)
        kind = raw_str(envelope.get("type"))
        if kind is None:
            raise FrameProblem("a chunk with a string type")
        cls = CHUNKS.get(kind)
        if cls is not None:
            known, extra = split_extra(envelope, FIELDS[kind])
            wire, _ = decode_known(cls, known, kind)  # (no member holds nested fields)
            return wire, extra, []
        if kind.startswith("data-"):
            return None, {}, [self._data_part(kind, envelope, frame)]
        return None, {}, [self._unknown(kind, frame)]

    def _data_part(self, kind: str, members: dict[str, Raw], frame: Frame) -> Event:
        data = members.get("data")
        if data is not None and set(members) <= {"type", "id", "data", "transient"}:
            if bytes(data).startswith(b"{") and b'"event"' in bytes(data):
                try:
                    return self._carrier(bytes(data))
                except FrameProblem:
                    pass
            artifact = self._artifact_part(kind, {k: v for k, v in members.items() if k != "type"})
            if artifact is not None:
                return artifact
            try:
                part = _part_decoder.decode(frame.data)
            except (msgspec.DecodeError, msgspec.ValidationError):
                part = None
            name = kind[len("data-") :]
            exact = part is not None and data_part(name, part.id, part.data, part.transient) == frame.data
            if exact and part is not None and not whole_frame(name, part.data):
                return DataPart(name=name, origin=self.codec, data=part.data, id=part.id, transient=part.transient)
        return self._unknown(kind, frame)  # kept whole

    def _error_terminal(self, pending: tuple[str, dict[str, Raw], Frame], extra: dict[str, Raw]) -> Terminal:
        text, error_extra, frame = pending
        failure: Failure | UnsetType
        if text == TRUNCATED_MESSAGE:
            failure = Failure(status="error", message=text, code=TRUNCATED_CODE)
        elif text == DEFAULT_MESSAGES["error"]:
            failure = UNSET
        else:
            failure = canonical_failure("error", Failure(status="error", message=text))
        end = Terminal(status="error", failure=failure)
        if frame.own_id and frame.last_id:
            end.event_id = frame.last_id  # the SSE id stood on the error frame
        merged = {**error_extra, **extra}
        if merged:
            end.extra = merged
        return end

    # -- readers, one per chunk type ------------------------------------------------------------

    def _part(self, kind: str, part_id: str) -> str | UnsetType:
        """A delta's part id; unset for the part the encoder invented for text that had none."""
        return UNSET if part_id == self._invented[kind] else part_id

    @reads(TextDeltaW, hot=True)
    def _on_text_delta(self, w: TextDeltaW, extra: Members) -> list[Event]:
        return with_extra(TextDelta(text=w.delta, part_id=self._part("text", w.id)), extra)

    @reads(ReasoningDeltaW, hot=True)
    def _on_reasoning_delta(self, w: ReasoningDeltaW, extra: Members) -> list[Event]:
        return with_extra(ReasoningDelta(text=w.delta, part_id=self._part("reasoning", w.id)), extra)

    def _invented_start(self, kind: str, part_id: str, extra: Members) -> bool:
        """A part start with the id this codec's encoder numbers (no event: the primary text)."""
        if extra or part_id != f"{PREFIX}{kind}-{self._counts[kind] + 1}":
            return False
        self._counts[kind] += 1
        self._invented[kind] = part_id
        return True

    def _invented_end(self, kind: str, part_id: str, extra: Members) -> bool:
        if extra or part_id != self._invented[kind]:
            return False
        self._invented[kind] = None
        return True

    @reads(TextStartW, hot=True)
    def _on_text_start(self, w: TextStartW, extra: Members) -> list[Event]:
        return [] if self._invented_start("text", w.id, extra) else with_extra(TextStart(part_id=w.id), extra)

    @reads(ReasoningStartW, hot=True)
    def _on_reasoning_start(self, w: ReasoningStartW, extra: Members) -> list[Event]:
        if self._invented_start("reasoning", w.id, extra):
            return []
        return with_extra(ReasoningStart(part_id=w.id), extra)

    @reads(TextEndW, hot=True)
    def _on_text_end(self, w: TextEndW, extra: Members) -> list[Event]:
        return [] if self._invented_end("text", w.id, extra) else with_extra(TextEnd(part_id=w.id), extra)

    @reads(ReasoningEndW, hot=True)
    def _on_reasoning_end(self, w: ReasoningEndW, extra: Members) -> list[Event]:
        return [] if self._invented_end("reasoning", w.id, extra) else with_extra(ReasoningEnd(part_id=w.id), extra)

    @reads(ToolInputDeltaW, hot=True)
    def _on_input_delta(self, w: ToolInputDeltaW, extra: Members) -> list[Event]:
        return with_extra(ToolInputDelta(call_id=w.tool_call_id, delta=w.input_text_delta), extra)

    @reads(StartStepW, hot=True)
    def _on_start_step(self, w: StartStepW, extra: Members) -> list[Event]:
        return with_extra(StepStart(), extra)

    @reads(FinishStepW, hot=True)
    def _on_finish_step(self, w: FinishStepW, extra: Members) -> list[Event]:
        return with_extra(StepFinish(), extra)

    @reads(ToolInputStartW, hot=True)
    def _on_input_start(self, w: ToolInputStartW, extra: Members) -> list[Event]:
        return with_extra(read_call(ToolInputStart(call_id=w.tool_call_id, name=w.tool_name)), extra)

    @reads(ToolInputAvailableW, hot=True)
    def _on_input_available(self, w: ToolInputAvailableW, extra: Members) -> list[Event]:
        return with_extra(read_call(ToolCall(call_id=w.tool_call_id, name=w.tool_name, input=w.input)), extra)

    @reads(ToolInputErrorW, hot=True)
    def _on_input_error(self, w: ToolInputErrorW, extra: Members) -> list[Event]:
        failure = Failure(status="error", message=w.error_text)
        call = ToolCall(call_id=w.tool_call_id, name=w.tool_name, input=w.input, status="failed", failure=failure)
        return with_extra(call, extra)

    @reads(ToolOutputAvailableW, hot=True)
    def _on_output(self, w: ToolOutputAvailableW, extra: Members) -> list[Event]:
        return with_extra(ToolOutput(call_id=w.tool_call_id, output=w.output), extra)

    @reads(ToolOutputErrorW, hot=True)
    def _on_output_error(self, w: ToolOutputErrorW, extra: Members) -> list[Event]:
        return with_extra(ToolError(call_id=w.tool_call_id, error=w.error_text), extra)

    @reads(ToolOutputDeniedW, hot=True)
    def _on_output_denied(self, w: ToolOutputDeniedW, extra: Members) -> list[Event]:
        return with_extra(ToolDenied(call_id=w.tool_call_id), extra)

    @reads(ToolApprovalRequestW, hot=True)
    def _on_approval_request(self, w: ToolApprovalRequestW, extra: Members) -> list[Event]:
        self._approvals[w.approval_id] = w.tool_call_id
        if w.approval_id != approval_id(w.tool_call_id):
            extra = {"approvalId": Raw(json_encode(w.approval_id)), **extra}
        return with_extra(ToolApprovalRequest(call_id=w.tool_call_id), extra)

    @reads(ToolApprovalResponseW)
    def _on_approval_response(self, w: ToolApprovalResponseW, extra: Members) -> list[Event]:
        call = self._approvals.get(w.approval_id)
        if call is None:  # an approval this stream never asked: kept whole
            return [self._unknown("tool-approval-response", self._current)]
        status: Literal["approved", "denied"] = "approved" if w.approved else "denied"
        return with_extra(ToolApprovalSettled(call_id=call, status=status, reason=w.reason), extra)

    @reads(SourceUrlW, hot=True)
    def _on_source_url(self, w: SourceUrlW, extra: Members) -> list[Event]:
        title = w.title if w.title is not UNSET else ""
        return with_extra(Sources(sources=[Source(id=w.source_id, title=title, kind="url", url=w.url)]), extra)

    @reads(MessageMetadataW, hot=True)
    def _on_metadata(self, w: MessageMetadataW, extra: Members) -> list[Event]:
        return with_extra(MessageMetadata(metadata=w.message_metadata), extra)

    @reads(StartW)
    def _on_start(self, w: StartW, extra: Members) -> list[Event]:
        start = RunStart(message_id=w.message_id)
        if w.message_id is UNSET and not extra:
            start.synthetic = True  # a bare start: what an encoder writes for a source without one
        return with_extra(start, extra)

    @reads(ErrorW)
    def _on_error(self, w: ErrorW, extra: Members) -> list[Event]:
        self._error = (w.error_text, extra, self._current)  # the frame after it decides
        return []

    @reads(AbortW)
    def _on_abort(self, w: AbortW, extra: Members) -> list[Event]:
        return with_extra(Terminal(status="cancelled"), extra)

    @reads(FinishW)
    def _on_finish(self, w: FinishW, extra: Members) -> list[Event]:
        return with_extra(Terminal(status="succeeded"), extra)
