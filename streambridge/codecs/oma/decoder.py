"""oma's decoder: wire bytes in, events out."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Event,
    ReasoningDelta,
    Terminal,
    TextDelta,
    ToolCall,
    ToolError,
    ToolOutput,
)
from ..decoder import Decoder
from ..envelope import (
    decode_envelope,
    decode_lenient,
    json_encode,
    raw_str,
    split_extra,
    verbatim_members,
)
from ..errors import FrameProblem
from ..framing import Frame
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

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._ledger = RunLedger(self._pieces)

    def _push(self, event: Event, out: list[Event]) -> None:
        if self._terminated:
            return super()._push(event, out)
        super()._push(event, out)
        if type(event) in LEDGER_EVENTS:
            self._ledger.see(event)  # type: ignore[arg-type]

    _hot_decoder = _plain_decoder
    _hot_text = TextW
    _hot_reasoning = ReasoningW

    def _take_wire(self, w: ToolUseW | ToolResultW) -> Event | None:
        event: Event
        if type(w) is ToolUseW:
            b = w.data
            event = read_call(ToolCall(call_id=b.id, name=b.name, input=b.input, signature=b.signature))
        else:
            event = self._tool_result(w.data)  # type: ignore[arg-type]
        self._ledger.see(event)  # type: ignore[arg-type]
        return event

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
        t = w.type
        if t == "text" or t == "reasoning":
            text = raw_str(w.data)
            if text is None:
                raise FrameProblem(f"a string as the data of a {t!r} event")
            return [TextDelta(text=text) if t == "text" else ReasoningDelta(text=text)]
        if t == "tool_use" or t == "tool_result":
            cls: type[ToolUseBlock | ToolResultBlock] = ToolUseBlock if t == "tool_use" else ToolResultBlock
            event: Event
            try:
                block = _block_decoders[cls].decode(w.data)
                verbatim: dict[str, Raw] = {}
            except msgspec.ValidationError:
                try:  # fields this codec does not know: read for what it knows, kept verbatim
                    block = decode_lenient(cls, w.data)
                except msgspec.ValidationError:
                    return [self._unknown(t, frame)]
                verbatim = verbatim_members(OneBlock(data=block), {"data": w.data})
            if type(block) is ToolUseBlock:
                event = read_call(
                    ToolCall(call_id=block.id, name=block.name, input=block.input, signature=block.signature)
                )
            else:
                event = self._tool_result(block)  # type: ignore[arg-type]  # a ToolResultBlock: no narrowing in a type() check's else
            return self._with_verbatim([event], verbatim)
        if t == "done":
            return [self._done(w)]
        if t == "error":
            return [self._error(w)]
        body = bytes(w.data)
        if t.startswith("data-") and body.startswith(b"{"):
            members = decode_envelope(body, frame)
            if "event" in members:
                return [self._carrier(body, frame)]
            artifact = self._artifact_part(t, members)
            if artifact is not None:
                return [artifact]
        return [self._unknown(t, frame)]  # loop_detected, budget_exceeded and unknown types

    def _tool_result(self, r: ToolResultBlock) -> Event:
        if r.is_error is True:
            text = raw_str(r.content)
            if text is not None:
                return ToolError(call_id=r.tool_use_id, error=text)
            return ToolError(call_id=r.tool_use_id, error="", output=r.content)
        return ToolOutput(call_id=r.tool_use_id, output=r.content, is_error=r.is_error)

    def _done(self, w: OmaEventW) -> Terminal:
        return read_done(w, self._ledger, self._pieces.text())

    def _error(self, w: OmaEventW) -> Terminal:
        return read_error(w)
