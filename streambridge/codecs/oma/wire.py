"""oma's wire shapes (msgspec Structs) and the vocabulary both directions share."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ...events import (
    Event,
    Failure,
    RunStatus,
    Terminal,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolOutput,
    Usage,
)
from ..envelope import (
    parse_arguments,
    raw_str,
)
from ..errors import FrameProblem
from ..terminals import DEFAULT_MESSAGES, STATUS_CODES, canonical_failure, status_for_code
from ..textpath import TextPieces

__all__ = [
    "LEDGER_EVENTS",
    "OmaEventW",
    "OneBlock",
    "ReasoningW",
    "RunLedger",
    "TextW",
    "TokenUsage",
    "ToolResultBlock",
    "ToolResultW",
    "ToolUseBlock",
    "ToolUseW",
    "encode",
    "error_payloads",
    "read_done",
    "read_error",
]

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


class OneBlock(Struct, **_W):
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


_probe_decoder = msgspec.json.Decoder(_LayerProbe)
_status_decoder = msgspec.json.Decoder(_AgentStatus)
_error_data_decoder = msgspec.json.Decoder(_ErrorData)
_error_info_decoder = msgspec.json.Decoder(_ErrorInfo)
encode = msgspec.json.Encoder().encode
_AGENT_CODES: dict[str, str] = {"succeeded": "ok", "cancelled": "cancelled"}
#: what a RunLedger looks at
LEDGER_EVENTS = frozenset((ToolCall, ToolOutput, ToolError, ToolDenied))


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

    def see(self, e: Event) -> None:
        """Tool calls and outcomes (:data:`LEDGER_EVENTS`; text is read from the shared pieces,
        at no cost per delta)."""
        if type(e) is ToolCall:
            self._calls[e.call_id] = [e.name, e.input if e.input is not UNSET else e.arguments_json, ""]
        elif type(e) is ToolOutput or type(e) is ToolError or type(e) is ToolDenied:
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
        return encode(
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
    if type(e) is ToolDenied:
        return e.reason if e.reason is not UNSET else "denied"
    return ""


def error_payloads(failure: Failure) -> tuple[bytes, bytes]:
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
    return encode(data), encode(info)


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
    payload, info_payload = error_payloads(failure)
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
        return _status_decoder.decode(encode(status))
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
