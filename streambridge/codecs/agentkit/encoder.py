"""agentkit's encoder: events in, wire bytes out."""

from __future__ import annotations

import msgspec
from msgspec import UNSET, UnsetType

from ...events import (
    Citation,
    DataPart,
    Event,
    Failure,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    Sources,
    Status,
    StepFinish,
    StepStart,
    Suggestions,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolKind,
    ToolOutput,
    Usage,
)
from ..carrier import as_received
from ..encoder import Encoder, handles
from ..envelope import json_encode, raw_str, splice_extra
from ..framing import Framing
from ..synthetic import invented_call, invented_start
from ..terminals import canonical_failure, default_failure
from .wire import (
    _T,
    DEFAULT_PROVIDER,
    AgentCitation,
    AgentFailure,
    AgentSource,
    AgentToolCall,
    AgentTurnResult,
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

__all__ = ["AgentkitEncoder"]

#: structure agentkit has no place for: dropped when synthetic, carried otherwise.
_STRUCTURE: frozenset[type[Event]] = frozenset(
    (StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd)
)


def _failure_out(f: Failure | UnsetType) -> AgentFailure | UnsetType:
    if f is UNSET:
        return UNSET
    status = "error" if f.status == "succeeded" else f.status
    return AgentFailure(
        status=status,
        message=f.message,
        code=f.code,
        recoverable=f.recoverable,
        retry_after_ms=f.retry_after_ms,
        correlation_id=f.correlation_id,
    )


def _failure_native(f: Failure | UnsetType) -> bool:
    """Whether agentkit says the failure as it is (an ``AgentFailure`` has no ``succeeded``
    status: :func:`_failure_out` writes ``error`` for it)."""
    return f is UNSET or f.status != "succeeded"


def _usage_out(u: Usage | UnsetType) -> tuple[AgentUsage | UnsetType, bool]:
    if u is UNSET:
        return UNSET, True
    native = (
        u.cache_write_tokens is UNSET
        and u.cache_read_tokens is UNSET
        and u.reasoning_tokens is UNSET
        and u.cost_usd is not None
    )
    cost = u.cost_usd if u.cost_usd is not None else UNSET
    return (
        AgentUsage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cached_tokens=u.cached_tokens,
            cost_usd=cost,
            duration_ms=u.duration_ms,
            model=u.model,
        ),
        native,
    )


_KIND_APPROVAL: dict[ToolKind | UnsetType, bool | UnsetType] = {"action": True, "read": False}


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
    "synthetic",
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
    "synthetic",
)


class AgentkitEncoder(Encoder):
    codec = "agentkit"
    # every agentkit event names its message (the turn's primary one when the event has none),
    # and unknown members are spliced back by _wire
    names_messages = True
    writes_everywhere = frozenset({"extra", "message_id"})
    artifact_parts = True
    _parts_say_message_id = True

    def __init__(self, framing: Framing | None = None) -> None:
        super().__init__(framing)
        self._turn = ""
        self._primary = ""
        self._text_tail = b"}" + self._tail  # the head is set with the primary message id
        self._provider = DEFAULT_PROVIDER
        self._model: str | UnsetType = UNSET

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        mid = event.message_id if event.message_id is not UNSET else self._primary
        return b'{"type":' + name + b',"messageId":' + json_encode(mid) + b"," + body + b"}"

    def _fast_text(self, e: TextDelta) -> bytes | None:
        if (
            e.message_id is UNSET
            or e.synthetic
            or e.part_id is not UNSET
            or e.extra is not UNSET
            or e.verbatim is not UNSET
            or e.event_id is not UNSET
        ):
            return super()._fast_text(e)
        mid = json_encode(e.message_id)  # another agent's message: agentkit says it natively
        return (
            self._head
            + b'{"type":"text_delta","messageId":'
            + mid
            + b',"text":'
            + json_encode(e.text)
            + self._text_tail
        )

    def _wire(self, w: _T, event: Event) -> bytes:
        payload = encode(w)
        if event.extra is not UNSET:
            payload = splice_extra(payload, event.extra)
        return payload

    _terminal_says_text = True  # result.text

    def _mid(self, event: Event) -> str:
        return event.message_id if event.message_id is not UNSET else self._primary

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        if type(event) is not RunStart:
            self._handle(RunStart(synthetic=True), parts)

    @handles(TextDelta, writes=("text", "synthetic", "part_id"))
    def _text_delta(self, e: TextDelta, parts: list[bytes]) -> None:
        if e.synthetic and e.message_id is UNSET:
            return  # made from result.text by a decoder: turn_end says it again
        self._put(parts, e, [self._wire(TextDeltaW(message_id=self._mid(e), text=e.text), e)], e.part_id is UNSET)

    @handles(ReasoningDelta, writes=("text", "synthetic", "part_id"))
    def _reasoning_delta(self, e: ReasoningDelta, parts: list[bytes]) -> None:
        w = ThinkingDeltaW(message_id=self._mid(e), text=e.text)
        self._put(parts, e, [self._wire(w, e)], _plain(e) and e.part_id is UNSET)

    @handles(*_STRUCTURE, writes=("synthetic",))
    def _structure(self, e: Event, parts: list[bytes]) -> None:
        """agentkit has no place for it: dropped when synthetic, else carried."""
        if not e.synthetic:
            self._put(parts, e, [], False)

    @handles(ToolDenied, writes=("call_id", "reason", "failure", "synthetic"))
    def _denied(self, e: ToolDenied, parts: list[bytes]) -> None:
        w = ToolResultW(
            message_id=self._mid(e),
            call_id=e.call_id,
            status="denied",
            result_text=e.reason,
            failure=_failure_out(e.failure),
        )
        self._put(parts, e, [self._wire(w, e)], _plain(e) and _failure_native(e.failure))

    @handles(Sources, writes=("sources", "synthetic"))
    def _sources(self, e: Sources, parts: list[bytes]) -> None:
        sources = [AgentSource(**msgspec.structs.asdict(s)) for s in e.sources]
        self._put(parts, e, [self._wire(SourcesW(message_id=self._mid(e), sources=sources), e)], _plain(e))

    @handles(Citation, writes=("marker", "source_id", "start", "end", "synthetic"))
    def _citation(self, e: Citation, parts: list[bytes]) -> None:
        c = AgentCitation(marker=e.marker, source_id=e.source_id, start=e.start, end=e.end)
        self._put(parts, e, [self._wire(CitationW(message_id=self._mid(e), citation=c), e)], _plain(e))

    @handles(Suggestions, writes=("prompts", "synthetic"))
    def _suggestions(self, e: Suggestions, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(SuggestionsW(message_id=self._mid(e), prompts=e.prompts), e)], _plain(e))

    @handles(Status, writes=("label", "synthetic"))
    def _status(self, e: Status, parts: list[bytes]) -> None:
        self._put(parts, e, [self._wire(StatusW(message_id=self._mid(e), label=e.label), e)], _plain(e))

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        if e.origin == "agentkit":  # one of agentkit's own frames, kept whole: written back as it came
            self._put(parts, e, [bytes(e.data)], as_received(e))
        else:
            self._put(parts, e, [], False)

    @handles(RunStart, writes=("run_id", "resumed", "thread_id", "model", "provider", "correlation_id", "synthetic"))
    def _run_start(self, e: RunStart, parts: list[bytes]) -> None:
        if self._turn:
            self._put(parts, e, [], False)  # a second run start: agentkit has one turn per stream
            return
        self._turn = e.run_id if e.run_id is not UNSET else self._derived("turn-")
        self._primary = e.message_id if e.message_id is not UNSET else "msg-" + self._turn
        primary = json_encode(self._primary)
        self._text_head = self._head + b'{"type":"text_delta","messageId":' + primary + b',"text":'
        self._reasoning_head = self._head + b'{"type":"thinking_delta","messageId":' + primary + b',"text":'
        self._provider = e.provider if e.provider is not UNSET else DEFAULT_PROVIDER
        self._model = e.model
        w = TurnStartW(
            turn_id=self._turn,
            message_id=self._primary,
            model=e.model,
            provider=e.provider,
            session_id=e.thread_id,
            correlation_id=e.correlation_id,
        )
        native = invented_start(e) or (not e.synthetic and e.run_id is not UNSET and e.resumed is UNSET)
        native = native and e.message_id != "msg-" + self._turn  # the derived id is read back as UNSET
        self._put(parts, e, [self._wire(w, e)], native)

    @handles(ToolCall, writes=_TOOL_CALL_WRITES)
    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        native = _plain(e) and e.parent_id is UNSET and e.signature is UNSET and _failure_native(e.failure)
        # the status that follows from the tool kind is read back as UNSET (canonical form)
        native = native and e.status != default_status(e.tool_kind)
        carried = e
        if e.arguments_json is not UNSET:
            arguments = e.arguments_json
            native = native and e.input is UNSET
        elif e.input is not UNSET:
            arguments = bytes(e.input).decode()
            if not native:  # carried in the spelling the decoder reads: the argument text
                carried = msgspec.structs.replace(e, input=UNSET, arguments_json=arguments)
        else:
            arguments, native = "", False
        status = e.status if e.status is not UNSET else default_status(e.tool_kind)
        approval = _KIND_APPROVAL.get(e.tool_kind, UNSET)
        call = AgentToolCall(
            id=e.call_id,
            name=e.name,
            arguments_json=arguments,
            status=status,
            started_at=e.started_at,
            ended_at=e.ended_at,
            result_text=e.result_text,
            failure=_failure_out(e.failure),
            requires_approval=approval,
        )
        self._put(
            parts, carried, [self._wire(ToolCallW(message_id=self._mid(e), call=call), e)], native or invented_call(e)
        )

    @handles(ToolOutput, writes=("call_id", "output", "is_error", "synthetic"))
    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        raw = bytes(e.output)
        native = _plain(e) and e.is_error is UNSET
        if raw == b"null":
            text: str | UnsetType = UNSET
        else:
            said = raw_str(e.output)
            text = raw.decode() if said is None else said
            if said is None or str_encode(said) != raw:  # read back as msgspec writes it ("é", not "\u00e9")
                native = False
        w = ToolResultW(message_id=self._mid(e), call_id=e.call_id, status="succeeded", result_text=text)
        self._put(parts, e, [self._wire(w, e)], native)

    @handles(ToolError, writes=("call_id", "error", "failure", "output", "synthetic"))
    def _tool_error(self, e: ToolError, parts: list[bytes]) -> None:
        native = _plain(e) and _failure_native(e.failure)
        # the failure agentkit writes for a bare error is read back as UNSET (canonical form)
        native = native and e.failure != Failure(status="error", message=e.error)
        failure = _failure_out(e.failure)
        if failure is UNSET and e.error:
            failure = AgentFailure(status="error", message=e.error)
        elif failure is not UNSET and failure.message != e.error:
            native = False
        text: str | UnsetType = UNSET
        if e.output is not UNSET:
            decoded = raw_str(e.output)
            text = decoded if decoded is not None else bytes(e.output).decode()
            native = native and decoded is not None and str_encode(decoded) == bytes(e.output)
        w = ToolResultW(message_id=self._mid(e), call_id=e.call_id, status="failed", result_text=text, failure=failure)
        self._put(parts, e, [self._wire(w, e)], native)

    @handles(Terminal, writes=_TERMINAL_WRITES)
    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        usage, usage_native = _usage_out(e.usage)
        failure = e.failure
        if failure is UNSET and e.status != "succeeded":
            failure = default_failure(e.status)
        result = AgentTurnResult(
            status=e.status,
            text=e.text if e.text is not UNSET else self._assembled(),
            guarded=e.guarded,
            provider=e.provider if e.provider is not UNSET else self._provider,
            model=e.model if e.model is not UNSET else self._model,
            usage=usage,
            failure=_failure_out(failure),
            correlation_id=e.correlation_id,
        )
        w = TurnEndW(
            turn_id=e.turn_id if e.turn_id is not UNSET else self._turn, message_id=self._mid(e), result=result
        )
        native = (
            not e.synthetic
            and usage_native
            and e.result is UNSET
            and e.error_info is UNSET
            and (e.failure is UNSET or e.failure.status == e.status)
            and (e.status != "succeeded" or e.failure is UNSET)
            and canonical_failure(e.status, e.failure) is e.failure  # the default one decodes to none
            # the turn's own provider, model and id are read back as UNSET (canonical form)
            and (e.provider is UNSET or e.provider != self._provider)
            and (e.model is UNSET or e.model != self._model)
            and (e.turn_id is UNSET or e.turn_id != self._turn)
            # a primary answer no delta streamed reads back as a non-streaming turn (a delta added)
            and not (e.message_id is UNSET and e.text and not self._text)
            and e.text is not UNSET  # (another message's terminal) turn_end always says a text
        )
        self._put(parts, e, [self._wire(w, e)], native)


def _plain(event: Event) -> bool:
    return not event.synthetic
