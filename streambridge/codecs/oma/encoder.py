"""oma's encoder: events in, wire bytes out."""

from __future__ import annotations

from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolOutput,
    Usage,
)
from ..carrier import Payload, as_received, carrier_name
from ..encoder import Encoder, handles
from ..envelope import (
    input_of,
    json_encode,
    splice_extra,
)
from ..errors import FrameProblem
from ..fidelity import client_data
from ..framing import Framing
from ..synthetic import invented_call
from ..terminals import canonical_failure, default_failure, status_for_code
from ..textpath import TextPieces
from .wire import (
    LEDGER_EVENTS,
    OmaEventW,
    RunLedger,
    ToolResultBlock,
    ToolUseBlock,
    encode,
    error_payloads,
    read_done,
    read_error,
)

__all__ = ["OmaEncoder"]

#: structure oma has no place for: dropped when synthetic, carried otherwise.
_STRUCTURE: frozenset[type[Event]] = frozenset(
    (RunStart, StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd)
)


_TOOL_CALL_WRITES = (
    "call_id",
    "name",
    "input",
    "arguments_json",
    "signature",
    "message_id",
    "synthetic",
    "tool_kind",
    "parent_id",
    "status",
    "started_at",
    "ended_at",
    "result_text",
    "failure",
)
_TERMINAL_WRITES = (
    "status",
    "text",
    "usage",
    "failure",
    "model",
    "result",
    "error_info",
    "message_id",
    "synthetic",
    "provider",
    "guarded",
    "correlation_id",
    "turn_id",
)


class OmaEncoder(Encoder):
    codec = "oma"
    default_framing = "ndjson"
    writes_everywhere = frozenset({"extra"})  # unknown members spliced back by _write
    artifact_parts = True

    def __init__(self, framing: Framing | None = None) -> None:
        super().__init__(framing)
        self._ledger = RunLedger(self._pieces)
        self._text_head = self._head + b'{"type":"text","data":'
        self._reasoning_head = self._head + b'{"type":"reasoning","data":'
        self._text_tail = b"}" + self._tail

    def share_text(self, answer: TextPieces) -> None:
        super().share_text(answer)
        self._ledger = RunLedger(self._pieces)

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        return b'{"type":' + name + b',"data":{' + body + b"}}"

    def _client_part(self, event: Event) -> Payload:
        """Oma's data is the event's members themselves."""
        return b'{"type":' + carrier_name(event) + b',"data":' + client_data(event) + b"}"

    def _write(self, kind: bytes, data: bytes, event: Event, info: bytes = b"") -> bytes:
        payload = b'{"type":"' + kind + b'","data":' + data
        if info:
            payload += b',"errorInfo":' + info
        payload += b"}"
        if event.extra is not UNSET:
            payload = splice_extra(payload, event.extra)
        return payload

    def _handle(self, e: Event, parts: list[bytes]) -> None:
        if type(e) in LEDGER_EVENTS:  # the done payload lists the run's tool calls
            self._ledger.see(e)
        super()._handle(e, parts)

    @handles(TextDelta, ReasoningDelta, writes=("text", "message_id", "synthetic", "part_id"))
    def _delta(self, e: TextDelta | ReasoningDelta, parts: list[bytes]) -> None:
        kind = b"text" if type(e) is TextDelta else b"reasoning"
        native = e.message_id is UNSET and not e.synthetic and e.part_id is UNSET
        self._put(parts, e, [self._write(kind, json_encode(e.text), e)], native)

    @handles(*_STRUCTURE, writes=("synthetic",))
    def _structure(self, e: Event, parts: list[bytes]) -> None:
        """oma has no place for it: dropped when synthetic, else carried."""
        if not e.synthetic:
            self._put(parts, e, [], False)

    @handles(ToolDenied, writes=("call_id", "reason"))
    def _denied(self, e: ToolDenied, parts: list[bytes]) -> None:
        content = json_encode(e.reason if e.reason is not UNSET else "denied")
        block = ToolResultBlock(tool_use_id=e.call_id, content=Raw(content), is_error=True)
        self._put(parts, e, [self._write(b"tool_result", encode(block), e)], False)

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient", "message_id"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        if e.origin == "oma":  # one of oma's own frames, kept whole: written back as it came
            self._put(parts, e, [bytes(e.data)], e.message_id is UNSET and as_received(e))
        else:
            self._put(parts, e, [], False)

    @handles(ToolCall, writes=_TOOL_CALL_WRITES)
    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        native = (
            e.message_id is UNSET
            and not e.synthetic
            and e.tool_kind is UNSET
            and e.parent_id is UNSET
            and e.status is UNSET
            and e.started_at is UNSET
            and e.ended_at is UNSET
            and e.result_text is UNSET
            and e.failure is UNSET
        )
        raw_input, native, carried = input_of(e, native)
        block = ToolUseBlock(id=e.call_id, name=e.name, input=raw_input, signature=e.signature)
        self._put(parts, carried, [self._write(b"tool_use", encode(block), e)], native or invented_call(e))

    @handles(ToolOutput, writes=("call_id", "output", "is_error", "message_id", "synthetic"))
    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        raw = bytes(e.output)
        native = e.message_id is UNSET and not e.synthetic
        if raw[:1] in (b'"', b"["):
            content = raw
        else:
            content, native = json_encode(raw.decode()), False
        block = ToolResultBlock(tool_use_id=e.call_id, content=Raw(content), is_error=e.is_error)
        self._put(parts, e, [self._write(b"tool_result", encode(block), e)], native)

    @handles(ToolError, writes=("call_id", "error", "failure", "output", "message_id", "synthetic"))
    def _tool_error(self, e: ToolError, parts: list[bytes]) -> None:
        native = e.message_id is UNSET and not e.synthetic and e.failure is UNSET
        if e.output is not UNSET:
            content = bytes(e.output)
            native = native and not e.error and content[:1] == b"["
        else:
            content = json_encode(e.error)
        block = ToolResultBlock(tool_use_id=e.call_id, content=Raw(content), is_error=True)
        self._put(parts, e, [self._write(b"tool_result", encode(block), e)], native)

    @handles(Terminal, writes=_TERMINAL_WRITES)
    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        native = (
            e.message_id is UNSET
            and not e.synthetic
            and (e.text is UNSET or e.text == self._assembled())
            and e.provider is UNSET
            and e.guarded is UNSET
            and e.correlation_id is UNSET
            and e.turn_id is UNSET
            and canonical_failure(e.status, e.failure) is e.failure  # the default one decodes to none
        )
        if e.status in ("succeeded", "cancelled"):
            if e.result is UNSET:  # the done payload made here says no model and no failure
                native = native and e.model is UNSET and _usage_native(e.usage) and e.failure is UNSET
            kind = "done"
            data = bytes(e.result) if e.result is not UNSET else self._ledger.done_payload(e)
            info = bytes(e.error_info) if e.error_info is not UNSET else b""
        else:
            kind = "error"
            data, info = error_payloads(e.failure if e.failure is not UNSET else default_failure(e.status))
            native = native and e.model is UNSET and e.usage is UNSET and _failure_native(e)
            if e.result is not UNSET:
                data = bytes(e.result)
                info = bytes(e.error_info) if e.error_info is not UNSET else b""
        if native and (e.result is not UNSET or e.error_info is not UNSET):
            native = self._reads_back(e, OmaEventW(type=kind, data=Raw(data), error_info=Raw(info) if info else UNSET))
        self._put(parts, e, [self._write(kind.encode(), data, e, info)], native)

    def _reads_back(self, e: Terminal, w: OmaEventW) -> bool:
        """Whether a terminal written with a kept payload reads back as the same terminal: the
        payload (not the event's other fields) says the status, failure, usage and model."""
        try:
            end = read_done(w, self._ledger, self._assembled()) if w.type == "done" else read_error(w)
        except FrameProblem:
            return False
        if end.text is UNSET:
            end.text = self._assembled()  # as Decoder._push fills it
        end.extra = e.extra
        return end == e


def _usage_native(u: Usage | UnsetType) -> bool:
    if u is UNSET:
        return True
    return (
        u.cached_tokens is UNSET
        and u.cache_write_tokens is UNSET
        and u.cache_read_tokens is UNSET
        and u.reasoning_tokens is UNSET
        and u.cost_usd is UNSET
        and u.duration_ms is UNSET
        and u.model is UNSET
        # tokenUsage says both counts (0 when not reported) and reads back as both, unless 0
        and u.input_tokens is not UNSET
        and u.output_tokens is not UNSET
        and bool(u.input_tokens or u.output_tokens)
    )


def _failure_native(e: Terminal) -> bool:
    f = e.failure
    if f is UNSET:
        return True
    return (
        f.status == e.status
        and f.code is not UNSET
        and status_for_code(f.code) == e.status
        and f.recoverable is not False
        and f.retry_after_ms is UNSET
        and f.correlation_id is UNSET
    )
