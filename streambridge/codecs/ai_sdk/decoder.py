"""The ai-sdk decoder: UI message stream chunks in, events out.

``data: [DONE]`` is the end marker, never a frame to decode; a stream that ends after its
terminal without it is complete. ``error`` waits for the frame after it: with the ``finish``
that follows it (this codec's form of a failure) it is the terminal; followed by anything else
it was a passing error (kept whole, as a data part of this codec); at the end of the input it
is the terminal. What the encoder invents reads back as invented: parts with the ids it numbers
(``sb-text-<n>``, ``sb-reasoning-<n>``) are the primary text (their starts and ends are no
events), bare step brackets where it puts them are synthetic (nest's judge, :mod:`..nest.steps`), a call named
``unknown`` with an empty input is an invented announcement."""

from __future__ import annotations

from typing import Any

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
from ..decoder import Decoder
from ..envelope import decode_envelope, decode_known, json_encode, raw_str, split_extra
from ..errors import FrameProblem
from ..framing import Frame
from ..nest.steps import StepJudge
from ..synthetic import read_call
from ..terminals import DEFAULT_MESSAGES, TRUNCATED_CODE, TRUNCATED_MESSAGE, canonical_failure
from .encoder import approval_id, data_part, whole_frame
from .wire import (
    CHUNKS,
    FIELDS,
    PREFIX,
    AbortW,
    AiSdkChunk,
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


class AiSdkDecoder(Decoder):
    codec = "ai-sdk"
    tag_field = "type"
    start_words = "start"
    terminal_words = "finish, abort or error"
    _invents_input_start = False  # the protocol says tool-input-start

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._steps: StepJudge[Event] = StepJudge()
        self._counts = {"text": 0, "reasoning": 0}
        self._invented: dict[str, str | None] = {"text": None, "reasoning": None}
        self._approvals: dict[str, str] = {}  # approval id → call id
        #: an ``error`` chunk waiting for the frame after it: (text, unknown members, frame)
        self._error: tuple[str, dict[str, Raw], Frame] | None = None
        #: what came between an error and its finish (ai's own streams close the step there)
        self._after_error: list[Event] = []

    # -- implied step brackets (as nest's decoder) -------------------------------------------

    def _push(self, event: Event, out: list[Event]) -> None:
        t = type(event)
        steps = self._steps
        if (t is StepStart or t is StepFinish) and not self._from_carrier and _bare(event) and steps.holds(t):
            steps.hold(t, event)
            return
        if steps.pending:
            self._settle(t, out)
        steps.follow(t)
        super()._push(event, out)

    def _settle(self, following: type | None, out: list[Event]) -> None:
        for _, bracket, implied in self._steps.settle(following):
            bracket.synthetic = implied
            super()._push(bracket, out)

    def _finish(self, out: list[Event]) -> None:
        pending, self._error = self._error, None
        held, self._after_error = self._after_error, []
        for event in held:
            self._push(event, out)
        if pending is not None and not self.terminated:
            self._push(self._error_terminal(pending, {}), out)
        if self._steps.pending:
            self._settle(None, out)

    def _trailing(self, frame: Frame) -> None:
        """After the terminal only ``[DONE]`` is expected (and the ``finish`` that closes an
        error, read with it)."""
        if frame.data.strip() == _DONE:
            return
        super()._trailing(frame)

    # -- frames ----------------------------------------------------------------------------

    def _decode(self, frame: Frame) -> list[Event]:
        data = frame.data
        pending, self._error = self._error, None
        held, self._after_error = self._after_error, []
        if data.strip() == _DONE:
            return held if pending is None else [*held, self._error_terminal(pending, {})]
        try:
            wire = _chunk_decoder.decode(data)
            extra: dict[str, Raw] = {}
        except msgspec.ValidationError:
            wire, extra, events = self._slow(frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON chunk object with a string type ({exc})") from None
        else:
            events = []
        if pending is not None and type(wire) is FinishStepW and not extra:
            self._error = pending  # an error, then its step closed, then its finish: still the end
            self._after_error = [*held, *self._chunk(wire, extra, frame)]
            return []
        if pending is not None and type(wire) is FinishW:
            reason = extra.get("finishReason")
            if reason is not None and bytes(reason) == _ERROR_FINISH:
                del extra["finishReason"]  # what this codec writes after an error
            return [*held, self._error_terminal(pending, extra)]
        if wire is not None:
            events = self._chunk(wire, extra, frame)
        if pending is not None:  # an error followed by something else than finish: a passing one
            passing = self._unknown("error", pending[2])
            if pending[2].own_id and pending[2].last_id:
                passing.event_id = pending[2].last_id  # the SSE id stood on the error frame
            return [passing, *held, *events]
        return events

    def _slow(self, frame: Frame) -> tuple[Any, dict[str, Raw], list[Event]]:
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
                    return self._carrier(bytes(data), frame)
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

    # ``w`` is Any: each branch below knows its type from ``type(w)``
    def _chunk(self, w: Any, extra: dict[str, Raw], frame: Frame) -> list[Event]:
        t = type(w)
        e: Event
        if t is TextDeltaW or t is ReasoningDeltaW:
            kind = "text" if t is TextDeltaW else "reasoning"
            part = UNSET if w.id == self._invented[kind] else w.id
            e = TextDelta(text=w.delta, part_id=part) if t is TextDeltaW else ReasoningDelta(text=w.delta, part_id=part)
        elif t is TextStartW or t is ReasoningStartW:
            kind = "text" if t is TextStartW else "reasoning"
            if not extra and w.id == f"{PREFIX}{kind}-{self._counts[kind] + 1}":
                self._counts[kind] += 1
                self._invented[kind] = w.id
                return []
            e = TextStart(part_id=w.id) if t is TextStartW else ReasoningStart(part_id=w.id)
        elif t is TextEndW or t is ReasoningEndW:
            kind = "text" if t is TextEndW else "reasoning"
            if not extra and w.id == self._invented[kind]:
                self._invented[kind] = None
                return []
            e = TextEnd(part_id=w.id) if t is TextEndW else ReasoningEnd(part_id=w.id)
        elif t is ToolInputDeltaW:
            e = ToolInputDelta(call_id=w.tool_call_id, delta=w.input_text_delta)
        elif t is StartStepW:
            e = StepStart()
        elif t is FinishStepW:
            e = StepFinish()
        elif t is ToolInputStartW:
            e = read_call(ToolInputStart(call_id=w.tool_call_id, name=w.tool_name))
        elif t is ToolInputAvailableW:
            e = read_call(ToolCall(call_id=w.tool_call_id, name=w.tool_name, input=w.input))
        elif t is ToolInputErrorW:
            failure = Failure(status="error", message=w.error_text)
            e = ToolCall(call_id=w.tool_call_id, name=w.tool_name, input=w.input, status="failed", failure=failure)
        elif t is ToolOutputAvailableW:
            e = ToolOutput(call_id=w.tool_call_id, output=w.output)
        elif t is ToolOutputErrorW:
            e = ToolError(call_id=w.tool_call_id, error=w.error_text)
        elif t is ToolOutputDeniedW:
            e = ToolDenied(call_id=w.tool_call_id)
        elif t is ToolApprovalRequestW:
            self._approvals[w.approval_id] = w.tool_call_id
            e = ToolApprovalRequest(call_id=w.tool_call_id)
            if w.approval_id != approval_id(w.tool_call_id):
                extra = {"approvalId": Raw(json_encode(w.approval_id)), **extra}
        elif t is ToolApprovalResponseW:
            call = self._approvals.get(w.approval_id)
            if call is None:  # an approval this stream never asked: kept whole
                return [self._unknown("tool-approval-response", frame)]
            e = ToolApprovalSettled(call_id=call, status="approved" if w.approved else "denied", reason=w.reason)
        elif t is SourceUrlW:
            title = w.title if w.title is not UNSET else ""
            e = Sources(sources=[Source(id=w.source_id, title=title, kind="url", url=w.url)])
        elif t is MessageMetadataW:
            e = MessageMetadata(metadata=w.message_metadata)
        elif t is StartW:
            e = RunStart(message_id=w.message_id)
            if w.message_id is UNSET and not extra:
                e.synthetic = True  # a bare start: what an encoder writes for a source without one
        elif t is ErrorW:
            self._error = (w.error_text, extra, frame)
            return []
        elif t is AbortW:
            e = Terminal(status="cancelled")
        elif t is FinishW:
            e = Terminal(status="succeeded")
        else:  # pragma: no cover - the union is closed
            raise FrameProblem(f"a known chunk type, not {t.__name__}")
        if extra:
            e.extra = extra
        return [e]


def _bare(event: Event) -> bool:
    return event == StepStart() if type(event) is StepStart else event == StepFinish()
