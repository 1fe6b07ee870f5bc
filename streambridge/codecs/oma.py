"""``oma``: open-multi-agent's ``StreamEvent {type, data, errorInfo?}``.

Eight types; exactly one ``done`` or ``error`` ends a stream. The meaning of ``data`` depends on
the layer that produced the events (model adapter, runner, ``Agent``); ``done`` payloads of the
three layers are told apart by shape and re-emitted exactly as received. Errors are written
explicitly as ``{name, message, code?}`` plus ``errorInfo`` — never ``{}``. OMA defines no wire:
NDJSON lines (default) or SSE ``data:`` frames are streambridge's choice (oma.md §6).
"""

from __future__ import annotations

from typing import Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ..events import (
    DataPart,
    Event,
    Failure,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    RunStatus,
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
from .carrier import as_received
from .decoder import Decoder
from .encoder import Encoder
from .errors import FrameProblem
from .framing import Frame
from .synthetic import invented_call, read_call
from .terminals import DEFAULT_MESSAGES, STATUS_CODES, canonical_failure, default_failure, status_for_code
from .textpath import TextPieces
from .wire import (
    decode_envelope,
    decode_lenient,
    json_encode,
    parse_arguments,
    raw_str,
    splice_extra,
    split_extra,
    verbatim_members,
)

_W = {"kw_only": True, "omit_defaults": True, "forbid_unknown_fields": True, "gc": False}


class OmaEventW(Struct, rename="camel", **_W):
    type: str
    data: Raw
    error_info: Raw | UnsetType = UNSET


class ToolUseBlock(Struct, tag_field="type", tag="tool_use", **_W):
    id: str
    name: str
    input: Raw
    signature: str | UnsetType = UNSET


class ToolResultBlock(Struct, tag_field="type", tag="tool_result", **_W):
    tool_use_id: str
    content: Raw
    is_error: bool | UnsetType = UNSET


class _OneBlock(Struct, **_W):
    """An event's ``data`` member alone: what an encoder writes of a content block."""

    data: ToolUseBlock | ToolResultBlock


class _Hot(Struct, tag_field="type", **_W):
    """The frequent event types, decoded in one step on the hot path."""


class TextW(_Hot, tag="text"):
    text: str = msgspec.field(name="data")


class ReasoningW(_Hot, tag="reasoning"):
    text: str = msgspec.field(name="data")


class ToolUseW(_Hot, tag="tool_use"):
    data: ToolUseBlock


class ToolResultW(_Hot, tag="tool_result"):
    data: ToolResultBlock


class TokenUsage(Struct, **_W):
    input_tokens: int = 0
    output_tokens: int = 0


class _LayerProbe(Struct, rename="camel"):
    """Just the members that tell the three ``done`` layers apart (oma.md §2)."""

    stop_reason: object = UNSET
    success: object = UNSET
    status: object = UNSET
    turns: object = UNSET
    aborted: object = UNSET
    usage: TokenUsage | UnsetType = UNSET
    token_usage: TokenUsage | UnsetType = UNSET
    model: object = UNSET


class _AgentStatus(Struct):
    code: str = "ok"
    message: str | UnsetType = UNSET


class _ErrorData(Struct):
    message: str | UnsetType = UNSET
    code: str | UnsetType = UNSET
    name: str | UnsetType = UNSET


class _ErrorInfo(Struct):
    message: str | UnsetType = UNSET
    code: str | UnsetType = UNSET
    retryable: bool | UnsetType = UNSET


_event_decoder = msgspec.json.Decoder(OmaEventW)
_plain_decoder = msgspec.json.Decoder(TextW | ReasoningW | ToolUseW | ToolResultW)
_block_decoders: dict[type[ToolUseBlock | ToolResultBlock], msgspec.json.Decoder[ToolUseBlock | ToolResultBlock]] = {
    cls: msgspec.json.Decoder(cls) for cls in (ToolUseBlock, ToolResultBlock)
}
_probe_decoder = msgspec.json.Decoder(_LayerProbe)
_status_decoder = msgspec.json.Decoder(_AgentStatus)
_error_data_decoder = msgspec.json.Decoder(_ErrorData)
_error_info_decoder = msgspec.json.Decoder(_ErrorInfo)
_FIELDS = frozenset(("type", "data", "errorInfo"))
_encode = msgspec.json.Encoder().encode

#: structure oma has no place for: dropped when synthetic, carried otherwise.
_STRUCTURE = frozenset((RunStart, StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd))
_AGENT_CODES: dict[str, str] = {"succeeded": "ok", "cancelled": "cancelled"}
#: what a RunLedger looks at
_LEDGER_EVENTS = frozenset((ToolCall, ToolOutput, ToolError, ToolDenied))


class RunLedger:
    """What a synthesised ``done`` reports: the last turn's text and the tool calls.

    Decoder and encoder keep one each, so the decoder can recognise a ``done`` the encoder
    would have written itself (and decode it to the canonical form, without a payload).
    """

    def __init__(self, text: TextPieces) -> None:
        self._text = text  # the codec's primary text, appended as it passes
        self._turn_from = 0  # character offsets into that text
        self._next_from: int | None = None
        #: call id → [tool name, input (raw, or argument text parsed at ``done``), output text]
        self._calls: dict[str, list[object]] = {}

    def _last_turn(self, end: int) -> tuple[int, int]:
        """Where the last turn with text starts and ends (character offsets)."""
        if self._next_from is None:
            return self._turn_from, end
        if end > self._next_from:
            return self._next_from, end
        return self._turn_from, self._next_from

    def see(self, e: ToolCall | ToolOutput | ToolError | ToolDenied) -> None:
        """Tool calls and outcomes (text is read from the shared pieces, at no cost per delta)."""
        if type(e) is ToolCall:
            self._calls[e.call_id] = [e.name, e.input if e.input is not UNSET else e.arguments_json, ""]
        else:  # an outcome
            end = self._text.chars()
            self._turn_from, _ = self._last_turn(end)
            self._next_from = end
            call = self._calls.get(e.call_id)
            if call is not None:
                call[2] = _content_text(e)

    def _last_turn_text(self) -> str:
        text = self._text.text()
        start, stop = self._last_turn(len(text))
        return text[start:stop]

    def done_payload(self, end: Terminal) -> bytes:
        usage = end.usage if end.usage is not UNSET else Usage()
        status: dict[str, object] = {"code": _AGENT_CODES.get(end.status, "error")}
        if end.failure is not UNSET and end.failure.message:
            status["message"] = end.failure.message
        return _encode(
            {
                "success": end.status == "succeeded",
                "status": status,
                "output": self._last_turn_text(),
                "messages": [],
                "tokenUsage": {
                    "input_tokens": usage.input_tokens if usage.input_tokens is not UNSET else 0,
                    "output_tokens": usage.output_tokens if usage.output_tokens is not UNSET else 0,
                },
                "toolCalls": [
                    {
                        "toolName": name,
                        "input": parse_arguments(raw)[0] if raw is UNSET or type(raw) is str else raw,
                        "output": output,
                        "duration": 0,
                    }
                    for name, raw, output in self._calls.values()
                ],
            }
        )


def _content_text(e: Event) -> str:
    if type(e) is ToolOutput:
        text = raw_str(e.output)
        return text if text is not None else bytes(e.output).decode()
    if type(e) is ToolError:
        return e.error
    return e.reason if e.reason is not UNSET else "denied"  # type: ignore[attr-defined]


def _error_payloads(failure: Failure) -> tuple[bytes, bytes]:
    """``error.data`` and ``errorInfo`` written explicitly (a serialised ``Error`` is ``{}``)."""
    code = failure.code if failure.code is not UNSET else STATUS_CODES.get(failure.status, "run_failed")
    data = {"name": "Error", "message": failure.message, "code": code}
    info = {
        "kind": "provider",
        "code": code,
        "name": "Error",
        "message": failure.message,
        "retryable": failure.recoverable is True,
    }
    return _encode(data), _encode(info)


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
        if type(event) in _LEDGER_EVENTS:
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
                verbatim = verbatim_members(_OneBlock(data=block), {"data": w.data})
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
        if t.startswith("data-") and body.startswith(b"{") and "event" in decode_envelope(body, frame):
            return [self._carrier(body, frame)]
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


def read_done(w: OmaEventW, ledger: RunLedger, text: str) -> Terminal:
    """The terminal a ``done`` event says, after the primary ``text`` (the decoder's reading,
    which the encoder checks a kept payload against)."""
    try:
        probe = _probe_decoder.decode(w.data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FrameProblem(f"a done payload object ({exc})") from None
    end = Terminal(status="succeeded")
    usage = probe.token_usage
    if probe.stop_reason is not UNSET:  # LLMResponse (adapter layer)
        usage = probe.usage
        if isinstance(probe.model, str):
            end.model = probe.model
    elif probe.success is not UNSET and (status := _status_of(probe.status)) is not None:  # AgentRunResult
        end.status, end.failure = _agent_status(status)
    elif probe.aborted is True:  # RunResult
        end.status = "cancelled"
    if usage is not UNSET and (usage.input_tokens or usage.output_tokens):
        end.usage = Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    end.text = text
    if bytes(w.data) != ledger.done_payload(end):
        end.result = w.data
    if w.error_info is not UNSET:
        end.error_info = w.error_info
    return end


def read_error(w: OmaEventW) -> Terminal:
    """The terminal an ``error`` event says."""
    try:
        data = _error_data_decoder.decode(w.data)
        info = _error_info_decoder.decode(w.error_info) if w.error_info is not UNSET else _ErrorInfo()
    except (msgspec.DecodeError, msgspec.ValidationError):
        data, info = _ErrorData(), _ErrorInfo()
    code = data.code if data.code is not UNSET else info.code
    message = data.message if data.message is not UNSET else info.message
    status = status_for_code(code if code is not UNSET else None)
    failure = Failure(
        status=status,
        message=message if message is not UNSET else DEFAULT_MESSAGES[status],
        code=code,
        recoverable=True if info.retryable is True else UNSET,
    )
    end = Terminal(status=status, failure=canonical_failure(status, failure))
    payload, info_payload = _error_payloads(failure)
    if bytes(w.data) != payload or w.error_info is UNSET or bytes(w.error_info) != info_payload:
        end.result = w.data
        end.error_info = w.error_info
    return end


def _status_of(status: object) -> _AgentStatus | None:
    """An AgentRunResult's ``status`` ({code, message?}); None when it is not one (then the
    payload is no AgentRunResult, and is kept as received like any other)."""
    if status is UNSET:
        return None
    try:
        return _status_decoder.decode(_encode(status))
    except msgspec.ValidationError:
        return None


def _agent_status(status: _AgentStatus) -> tuple[RunStatus, Failure | UnsetType]:
    code = status.code
    if code in ("ok", "suspended", "skipped"):
        return "succeeded", UNSET
    if code == "cancelled":
        if status.message is UNSET:
            return "cancelled", UNSET
        return "cancelled", Failure(status="cancelled", message=status.message, code="cancelled")
    run_status = status_for_code(code)
    message = status.message if status.message is not UNSET else DEFAULT_MESSAGES[run_status]
    return run_status, canonical_failure(run_status, Failure(status=run_status, message=message, code=code))


class OmaEncoder(Encoder):
    codec = "oma"
    default_framing = "ndjson"

    def __init__(self, framing: Literal["sse", "ndjson"] | None = None) -> None:
        super().__init__(framing)
        self._ledger = RunLedger(self._pieces)
        self._text_head = self._head + b'{"type":"text","data":'
        self._reasoning_head = self._head + b'{"type":"reasoning","data":'
        self._text_tail = b"}" + self._tail

    def share_text(self, decoder: Decoder) -> None:
        super().share_text(decoder)
        self._ledger = RunLedger(self._pieces)

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        return b'{"type":' + name + b',"data":{' + body + b"}}"

    def _write(self, kind: bytes, data: bytes, event: Event, info: bytes = b"") -> bytes:
        payload = b'{"type":"' + kind + b'","data":' + data
        if info:
            payload += b',"errorInfo":' + info
        payload += b"}"
        if event.extra is not UNSET:
            payload = splice_extra(payload, event.extra)
        return payload

    def _handle(self, e: Event, parts: list[bytes]) -> None:
        t = type(e)
        if t in _LEDGER_EVENTS:
            self._ledger.see(e)  # type: ignore[arg-type]  # e is one of them: mypy cannot narrow e from t = type(e)
        if t is TextDelta or t is ReasoningDelta:
            kind = b"text" if t is TextDelta else b"reasoning"
            native = e.message_id is UNSET and not e.synthetic and e.part_id is UNSET  # type: ignore[attr-defined]
            self._put(parts, e, [self._write(kind, json_encode(e.text), e)], native)  # type: ignore[attr-defined]
        elif t in _STRUCTURE:  # oma has no place for it: dropped when synthetic, else carried
            if not e.synthetic:
                self._put(parts, e, [], False)
        elif t is ToolCall:
            self._tool_call(e, parts)  # type: ignore[arg-type]
        elif t is ToolOutput:
            self._tool_output(e, parts)  # type: ignore[arg-type]
        elif t is ToolError:
            self._tool_error(e, parts)  # type: ignore[arg-type]
        elif t is ToolDenied:
            content = json_encode(e.reason if e.reason is not UNSET else "denied")  # type: ignore[attr-defined]
            block = ToolResultBlock(tool_use_id=e.call_id, content=Raw(content), is_error=True)  # type: ignore[attr-defined]
            self._put(parts, e, [self._write(b"tool_result", _encode(block), e)], False)
        elif t is DataPart and e.origin == "oma":  # type: ignore[attr-defined]
            self._put(parts, e, [bytes(e.data)], e.message_id is UNSET and as_received(e))  # type: ignore[attr-defined, arg-type]  # e is a DataPart (t = type(e))
        elif t is Terminal:
            self._terminal(e, parts)  # type: ignore[arg-type]
        else:
            self._put(parts, e, [], False)

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
        raw_input = e.input
        carried = e
        if raw_input is UNSET:
            raw_input, ok = parse_arguments(e.arguments_json)
            native = native and ok
            if ok and not native:  # carried in the spelling the decoder reads: the input, parsed
                carried = msgspec.structs.replace(e, input=raw_input, arguments_json=UNSET)
        elif e.arguments_json is not UNSET:
            native = False
        block = ToolUseBlock(id=e.call_id, name=e.name, input=raw_input, signature=e.signature)
        self._put(parts, carried, [self._write(b"tool_use", _encode(block), e)], native or invented_call(e))

    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        raw = bytes(e.output)
        native = e.message_id is UNSET and not e.synthetic
        if raw[:1] in (b'"', b"["):
            content = raw
        else:
            content, native = json_encode(raw.decode()), False
        block = ToolResultBlock(tool_use_id=e.call_id, content=Raw(content), is_error=e.is_error)
        self._put(parts, e, [self._write(b"tool_result", _encode(block), e)], native)

    def _tool_error(self, e: ToolError, parts: list[bytes]) -> None:
        native = e.message_id is UNSET and not e.synthetic and e.failure is UNSET
        if e.output is not UNSET:
            content = bytes(e.output)
            native = native and not e.error and content[:1] == b"["
        else:
            content = json_encode(e.error)
        block = ToolResultBlock(tool_use_id=e.call_id, content=Raw(content), is_error=True)
        self._put(parts, e, [self._write(b"tool_result", _encode(block), e)], native)

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
            data, info = _error_payloads(e.failure if e.failure is not UNSET else default_failure(e.status))
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
