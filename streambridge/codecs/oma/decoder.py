"""oma's decoder: wire bytes in, events out."""

from __future__ import annotations

from typing import Unpack

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Event,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolError,
    ToolOutput,
)
from ..decoder import Decoder, DecoderOptions, reads_one
from ..envelope import (
    decode_envelope,
    decode_lenient,
    json_encode,
    raw_str,
    split_extra,
    verbatim_members,
)
from ..errors import FrameProblem
from ..framing import Frame, Framing
from ..sinks import EventSink
from ..synthetic import read_call
from .wire import (
    LEDGER_EVENTS,
    OmaEventW,
    OneBlock,
    ReasoningW,
    RunLedger,
    TextW,
    ToolResultBlock,
    ToolResultW,
    ToolUseBlock,
    ToolUseW,
    read_done,
    read_error,
)

__all__ = ["OmaDecoder"]

_event_decoder = msgspec.json.Decoder(OmaEventW)
_plain_decoder = msgspec.json.Decoder(TextW | ReasoningW | ToolUseW | ToolResultW)
_block_decoders: dict[type[ToolUseBlock | ToolResultBlock], msgspec.json.Decoder[ToolUseBlock | ToolResultBlock]] = {
    cls: msgspec.json.Decoder(cls) for cls in (ToolUseBlock, ToolResultBlock)
}
_FIELDS = frozenset(("type", "data", "errorInfo"))


class OmaDecoder(Decoder):
    codec = "oma"
    default_framing = "ndjson"
    terminal_words = "done or error"

    #: what the hot path reads besides text (the full way reads every frame as an ``OmaEventW``,
    #: whose ``type`` is any string, and dispatches with ``match``)
    wire_types = ToolUseW | ToolResultW

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._ledger = RunLedger(self._pieces)

    def _push(self, event: Event, out: EventSink) -> None:
        if self._terminated:
            return super()._push(event, out)
        super()._push(event, out)
        if type(event) in LEDGER_EVENTS:
            self._ledger.see(event)

    def _take_wire(self, wire: object) -> Event | None:
        reader = self._hot_readers.get(type(wire))  # (Decoder._take_wire, inlined: once per event)
        if reader is None:
            return None
        event = reader(wire)
        self._ledger.see(event)  # (the hot path's events are tool calls and outcomes)
        return event

    _hot_decoder = _plain_decoder
    _hot_text = TextW
    _hot_reasoning = ReasoningW

    @reads_one(ToolUseW, hot=True)
    def _on_tool_use(self, w: ToolUseW) -> Event:
        b = w.data  # (_call, inlined: once per hot tool call)
        return read_call(ToolCall(call_id=b.id, name=b.name, input=b.input, signature=b.signature))

    @reads_one(ToolResultW, hot=True)
    def _on_tool_result(self, w: ToolResultW) -> Event:
        return self._tool_result(w.data)

    def _decode(self, frame: Frame) -> list[Event]:
        try:
            w = _event_decoder.decode(frame.data)
            extra: dict[str, Raw] | UnsetType = UNSET
        except msgspec.ValidationError:
            envelope = decode_envelope(frame.data, frame)
            kind = raw_str(envelope.get("type"))
            if kind is None or "data" not in envelope:
                return [self._unknown(kind or "", frame)]
            known, extra = split_extra(envelope, _FIELDS)
            try:
                w = _event_decoder.decode(json_encode(known))
            except msgspec.ValidationError as exc:
                raise FrameProblem(f"a StreamEvent {{type, data, errorInfo?}} ({exc})") from None
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON StreamEvent object ({exc})") from None
        events = self._event(w, frame)
        if extra and events and type(events[0]) is not DataPart:
            events[0].extra = extra
        return events

    def _event(self, w: OmaEventW, frame: Frame) -> list[Event]:
        match w.type:
            case "text" | "reasoning":
                return [self._delta(w)]
            case "tool_use" | "tool_result":
                return self._block(w, frame)
            case "done":
                return [read_done(w, self._ledger, self._pieces.text())]
            case "error":
                return [read_error(w)]
            case _:
                return [self._other(w, frame)]

    def _delta(self, w: OmaEventW) -> Event:
        text = raw_str(w.data)
        if text is None:
            raise FrameProblem(f"a string as the data of a {w.type!r} event")
        return TextDelta(text=text) if w.type == "text" else ReasoningDelta(text=text)

    def _block(self, w: OmaEventW, frame: Frame) -> list[Event]:
        """A tool call or result: its block read for what this codec knows, the rest verbatim."""
        cls: type[ToolUseBlock | ToolResultBlock] = ToolUseBlock if w.type == "tool_use" else ToolResultBlock
        try:
            block = _block_decoders[cls].decode(w.data)
            verbatim: dict[str, Raw] = {}
        except msgspec.ValidationError:
            try:  # fields this codec does not know: read for what it knows, kept verbatim
                block = decode_lenient(cls, w.data)
            except msgspec.ValidationError:
                return [self._unknown(w.type, frame)]
            verbatim = verbatim_members(OneBlock(data=block), {"data": w.data})
        event = _call(block) if isinstance(block, ToolUseBlock) else self._tool_result(block)
        return self._with_verbatim([event], verbatim)

    def _other(self, w: OmaEventW, frame: Frame) -> Event:
        """A carrier, an artifact's data part, or a type kept whole (``loop_detected``,
        ``budget_exceeded``, and types this codec does not know)."""
        t = w.type
        body = bytes(w.data)
        if t.startswith("data-") and body.startswith(b"{"):
            members = decode_envelope(body, frame)
            if "event" in members:
                return self._carrier(body)
            artifact = self._artifact_part(t, members)
            if artifact is not None:
                return artifact
        return self._unknown(t, frame)

    def _tool_result(self, r: ToolResultBlock) -> Event:
        if r.is_error is True:
            text = raw_str(r.content)
            if text is not None:
                return ToolError(call_id=r.tool_use_id, error=text)
            return ToolError(call_id=r.tool_use_id, error="", output=r.content)
        return ToolOutput(call_id=r.tool_use_id, output=r.content, is_error=r.is_error)


def _call(b: ToolUseBlock) -> ToolCall:
    return read_call(ToolCall(call_id=b.id, name=b.name, input=b.input, signature=b.signature))
