"""agentkit's decoder: wire bytes in, events out."""

from __future__ import annotations

from typing import Unpack

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    Citation,
    DataPart,
    Event,
    Failure,
    ReasoningDelta,
    RunStart,
    Source,
    Sources,
    Status,
    Suggestions,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolKind,
    ToolOutput,
    Usage,
)
from ..decoder import Decoder, DecoderOptions, Members, reads, reads_one, with_extra
from ..envelope import decode_envelope, decode_known, raw_str, split_extra
from ..errors import FrameProblem
from ..framing import Frame, Framing
from ..synthetic import invented_start, is_derived, read_call
from ..terminals import canonical_failure
from .wire import (
    _T,
    DEFAULT_PROVIDER,
    AgentFailure,
    AgentFrame,
    AgentUsage,
    CitationW,
    SourcesW,
    StatusW,
    SuggestionsW,
    TextDeltaW,
    ThinkingDeltaW,
    ToolCallW,
    ToolResultW,
    TurnEndW,
    TurnStartW,
    default_status,
    encode,
    str_encode,
)

__all__ = ["AgentkitDecoder"]

_TYPES: dict[str, type[_T]] = {c.__struct_config__.tag: c for c in AgentFrame.__args__}
_FIELDS = {t: frozenset(("type", *c.__struct_encode_fields__)) for t, c in _TYPES.items()}
_frame_decoder = msgspec.json.Decoder(AgentFrame)


def _failure_in(f: AgentFailure | UnsetType) -> Failure | UnsetType:
    if f is UNSET:
        return UNSET
    return Failure(
        status=f.status,
        message=f.message,
        code=f.code,
        recoverable=f.recoverable,
        retry_after_ms=f.retry_after_ms,
        correlation_id=f.correlation_id,
    )


def _usage_in(u: AgentUsage | UnsetType) -> Usage | UnsetType:
    if u is UNSET:
        return UNSET
    return Usage(
        input_tokens=u.input_tokens,
        output_tokens=u.output_tokens,
        cached_tokens=u.cached_tokens,
        cost_usd=u.cost_usd,
        duration_ms=u.duration_ms,
        model=u.model,
    )


_NO_PRIMARY = object()  # no text is primary before the primary message is known
_APPROVAL_KIND: dict[bool | UnsetType, ToolKind | UnsetType] = {True: "action", False: "read"}


class AgentkitDecoder(Decoder):
    codec = "agentkit"
    start_words = "turn_start"
    terminal_words = "turn_end"

    wire_types = AgentFrame

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._turn: str | None = None
        self._primary: str | None = None
        self._text_owner = _NO_PRIMARY
        self._provider = DEFAULT_PROVIDER
        self._model: str | UnsetType = UNSET

    def _mid(self, message_id: str) -> str | UnsetType:
        if self._primary is None:
            self._primary = self._text_owner = message_id
        return UNSET if message_id == self._primary else message_id

    _hot_decoder = _frame_decoder
    _hot_text = TextDeltaW
    _hot_reasoning = ThinkingDeltaW

    def _take_wire(self, wire: object) -> Event | None:
        reader = self._hot_readers.get(type(wire))  # (Decoder._take_wire, inlined: once per event)
        if reader is None:
            return None
        event = reader(wire)
        if type(event) is TextDelta and event.message_id is UNSET:  # primary text, before the primary is known
            self._text.append(event.text)
        return event

    def _decode(self, frame: Frame) -> list[Event]:
        try:
            wire = _frame_decoder.decode(frame.data)
        except msgspec.ValidationError:
            return self._slow(frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON AgentEvent object ({exc})") from None
        return self._read_wire(wire, {})

    def _slow(self, frame: Frame) -> list[Event]:
        envelope = decode_envelope(frame.data, frame)
        kind = raw_str(envelope.get("type"))
        if kind in _TYPES:
            known, extra = split_extra(envelope, _FIELDS[kind])
            wire, verbatim = decode_known(_TYPES[kind], known, kind)
            return self._with_verbatim(self._read_wire(wire, extra), verbatim)
        if kind is not None and kind.startswith("data-") and "event" in envelope:
            return [self._carrier(frame.data)]
        mid = raw_str(envelope.get("messageId"))
        if mid is None:
            return [self._unknown(kind or "", frame)]
        members = {k: v for k, v in envelope.items() if k != "type" and k != "messageId"}
        part = self._artifact_part(kind or "", members) or self._unknown(kind or "", frame)
        part.message_id = self._mid(mid)
        return [part]

    # -- readers, one per event type -----------------------------------------------------------

    @reads_one(TextDeltaW, hot=True)
    def _on_text_delta(self, w: TextDeltaW) -> Event:
        return TextDelta(text=w.text, message_id=self._mid(w.message_id))

    @reads_one(ThinkingDeltaW, hot=True)
    def _on_thinking_delta(self, w: ThinkingDeltaW) -> Event:
        return ReasoningDelta(text=w.text, message_id=self._mid(w.message_id))

    @reads(TurnStartW)
    def _on_turn_start(self, w: TurnStartW, extra: Members) -> list[Event]:
        return with_extra(self._turn_start(w), extra)

    @reads_one(SourcesW, hot=True)
    def _on_sources(self, w: SourcesW) -> Event:
        sources = [Source(**msgspec.structs.asdict(s)) for s in w.sources]
        return Sources(message_id=self._mid(w.message_id), sources=sources)

    @reads_one(CitationW, hot=True)
    def _on_citation(self, w: CitationW) -> Event:
        c = w.citation
        citation = Citation(
            message_id=self._mid(w.message_id), marker=c.marker, source_id=c.source_id, start=c.start, end=c.end
        )
        return citation

    @reads_one(SuggestionsW, hot=True)
    def _on_suggestions(self, w: SuggestionsW) -> Event:
        return Suggestions(message_id=self._mid(w.message_id), prompts=w.prompts)

    @reads_one(StatusW, hot=True)
    def _on_status(self, w: StatusW) -> Event:
        return Status(message_id=self._mid(w.message_id), label=w.label)

    @reads(TurnEndW)
    def _on_turn_end(self, w: TurnEndW, extra: Members) -> list[Event]:
        return self._turn_end(w, extra)

    def _turn_start(self, w: TurnStartW) -> RunStart:
        self._turn = w.turn_id
        self._primary = self._text_owner = w.message_id
        self._provider = w.provider if w.provider is not UNSET else DEFAULT_PROVIDER
        self._model = w.model
        mid = UNSET if w.message_id == "msg-" + w.turn_id else w.message_id
        start = RunStart(
            run_id=w.turn_id,
            message_id=mid,
            model=w.model,
            provider=w.provider,
            thread_id=w.session_id,
            correlation_id=w.correlation_id,
        )
        start.synthetic = is_derived("turn-", w.turn_id) and invented_start(  # made up for a source without one
            msgspec.structs.replace(start, synthetic=True)
        )
        return start

    @reads_one(ToolCallW, hot=True)
    def _on_tool_call(self, w: ToolCallW) -> ToolCall:
        c = w.call
        kind = _APPROVAL_KIND.get(c.requires_approval, UNSET)
        status = UNSET if c.status == default_status(kind) else c.status
        return read_call(
            ToolCall(
                message_id=self._mid(w.message_id),
                call_id=c.id,
                name=c.name,
                arguments_json=c.arguments_json,
                tool_kind=kind,
                status=status,
                started_at=c.started_at,
                ended_at=c.ended_at,
                result_text=c.result_text,
                failure=_failure_in(c.failure),
            )
        )

    @reads_one(ToolResultW, hot=True)
    def _on_tool_result(self, w: ToolResultW) -> Event:
        mid = self._mid(w.message_id)
        output: Raw | UnsetType
        failure = _failure_in(w.failure)
        if w.status == "succeeded" and failure is UNSET:
            output = Raw(b"null") if w.result_text is UNSET else Raw(str_encode(w.result_text))
            return ToolOutput(message_id=mid, call_id=w.call_id, output=output)
        if w.status == "failed":
            error = failure.message if failure is not UNSET else ""
            if failure is not UNSET and failure == Failure(status="error", message=error):
                failure = UNSET
            output = UNSET if w.result_text is UNSET else Raw(str_encode(w.result_text))
            return ToolError(message_id=mid, call_id=w.call_id, error=error, failure=failure, output=output)
        if w.status == "denied":
            return ToolDenied(message_id=mid, call_id=w.call_id, reason=w.result_text, failure=failure)
        return DataPart(name="tool_result", origin="agentkit", data=Raw(encode(w)), message_id=mid)

    def _turn_end(self, w: TurnEndW, extra: Members) -> list[Event]:
        r = w.result
        mid = self._mid(w.message_id)
        events: list[Event] = []
        if mid is UNSET and not self._text and r.text:  # no primary delta came: a non-streaming turn
            events.append(TextDelta(text=r.text, synthetic=True))
        failure = canonical_failure(r.status, _failure_in(r.failure))
        end = Terminal(
            message_id=mid,
            status=r.status,
            text=r.text,
            usage=_usage_in(r.usage),
            failure=failure,
            provider=UNSET if r.provider == self._provider else r.provider,
            model=UNSET if r.model == self._model else r.model,
            guarded=r.guarded,
            correlation_id=r.correlation_id,
            turn_id=UNSET if w.turn_id == self._turn else w.turn_id,
        )
        events += with_extra(end, extra)
        return events
