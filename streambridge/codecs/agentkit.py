"""``agentkit``: @dataverse-kit/agent-kit's ``AgentEvent`` stream.

One JSON ``AgentEvent`` per SSE ``data:`` frame (or NDJSON line), no event names, no
``[DONE]``; every event carries ``messageId``; exactly one ``turn_end`` ends the turn with one
of six statuses. Upstream defines no wire: this framing is streambridge's (agentkit.md §2).

Canonical forms (so a cross trip comes back exact): the turn's own ``messageId`` decodes to
``UNSET``; a tool call's ``status`` that follows from ``requiresApproval`` (``proposed`` when
it needs approval, else ``running``) decodes to ``UNSET``; a failure equal to the default one
for its status decodes to ``UNSET``; ``result.provider`` / ``result.model`` equal to the
turn's decode to ``UNSET``.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec
from msgspec import UNSET, Raw, Struct, UnsetType

from ..events import (
    Citation,
    DataPart,
    Event,
    Failure,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    Source,
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
from .carrier import as_received
from .decoder import Decoder
from .encoder import Encoder
from .errors import FrameProblem
from .framing import Frame
from .synthetic import invented_call, invented_start, is_derived, read_call
from .terminals import canonical_failure, default_failure
from .wire import decode_envelope, decode_known, json_encode, raw_str, splice_extra, split_extra

_W = {"kw_only": True, "omit_defaults": True, "rename": "camel", "forbid_unknown_fields": True, "gc": False}
DEFAULT_PROVIDER = "streambridge"

ToolCallStatus = Literal["proposed", "running", "succeeded", "failed", "denied"]


class AgentUsage(Struct, **_W):
    input_tokens: int | UnsetType = UNSET
    output_tokens: int | UnsetType = UNSET
    cached_tokens: int | UnsetType = UNSET
    cost_usd: int | float | UnsetType = UNSET
    duration_ms: int | float | UnsetType = UNSET
    model: str | UnsetType = UNSET


class AgentFailure(Struct, **_W):
    status: Literal["blocked", "refused", "error", "notProvisioned", "cancelled"]
    message: str
    code: str | UnsetType = UNSET
    recoverable: bool | UnsetType = UNSET
    retry_after_ms: int | float | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class AgentSource(Struct, **_W):
    id: str
    title: str
    kind: str
    url: str | UnsetType = UNSET
    snippet: str | UnsetType = UNSET
    entity_logical_name: str | UnsetType = UNSET
    record_id: str | UnsetType = UNSET
    score: int | float | UnsetType = UNSET


class AgentCitation(Struct, **_W):
    marker: str
    source_id: str
    start: int | UnsetType = UNSET
    end: int | UnsetType = UNSET


class AgentToolCall(Struct, **_W):
    id: str
    name: str
    arguments_json: str
    status: ToolCallStatus
    started_at: int | float | UnsetType = UNSET
    ended_at: int | float | UnsetType = UNSET
    result_text: str | UnsetType = UNSET
    failure: AgentFailure | UnsetType = UNSET
    requires_approval: bool | UnsetType = UNSET


class AgentTurnResult(Struct, kw_only=True, omit_defaults=True, rename="camel", forbid_unknown_fields=True, gc=False):
    # _W spelled out: mypy sees kw_only (a required field follows optional ones) only as a literal keyword
    status: Literal["succeeded", "blocked", "refused", "error", "notProvisioned", "cancelled"]
    text: str
    guarded: bool | UnsetType = UNSET
    provider: str
    model: str | UnsetType = UNSET
    usage: AgentUsage | UnsetType = UNSET
    failure: AgentFailure | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class _T(Struct, tag_field="type", **_W):
    pass


class TurnStartW(_T, tag="turn_start"):
    turn_id: str
    message_id: str
    model: str | UnsetType = UNSET
    provider: str | UnsetType = UNSET
    session_id: str | UnsetType = UNSET
    correlation_id: str | UnsetType = UNSET


class TextDeltaW(_T, tag="text_delta"):
    message_id: str
    text: str


class ThinkingDeltaW(_T, tag="thinking_delta"):
    message_id: str
    text: str


class ToolCallW(_T, tag="tool_call"):
    message_id: str
    call: AgentToolCall


class ToolResultW(_T, tag="tool_result"):
    message_id: str
    call_id: str
    status: ToolCallStatus
    result_text: str | UnsetType = UNSET
    failure: AgentFailure | UnsetType = UNSET


class SourcesW(_T, tag="sources"):
    message_id: str
    sources: list[AgentSource]


class CitationW(_T, tag="citation"):
    message_id: str
    citation: AgentCitation


class SuggestionsW(_T, tag="suggestions"):
    message_id: str
    prompts: list[str]


class StatusW(_T, tag="status"):
    message_id: str
    label: str


class TurnEndW(_T, tag="turn_end"):
    turn_id: str
    message_id: str
    result: AgentTurnResult


AgentFrame = (
    TurnStartW
    | TextDeltaW
    | ThinkingDeltaW
    | ToolCallW
    | ToolResultW
    | SourcesW
    | CitationW
    | SuggestionsW
    | StatusW
    | TurnEndW
)
_TYPES: dict[str, type[_T]] = {c.__struct_config__.tag: c for c in AgentFrame.__args__}
_FIELDS = {t: frozenset(("type", *c.__struct_encode_fields__)) for t, c in _TYPES.items()}
_frame_decoder = msgspec.json.Decoder(AgentFrame)
_encode = msgspec.json.Encoder().encode
_str_encode = msgspec.json.Encoder().encode

#: structure agentkit has no place for: dropped when synthetic, carried otherwise.
_STRUCTURE = frozenset((StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd))


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


_NO_PRIMARY = object()  # no text is primary before the primary message is known
_APPROVAL_KIND: dict[bool | UnsetType, ToolKind | UnsetType] = {True: "action", False: "read"}
_KIND_APPROVAL: dict[ToolKind | UnsetType, bool | UnsetType] = {"action": True, "read": False}


def _default_status(tool_kind: str | UnsetType) -> ToolCallStatus:
    return "proposed" if tool_kind == "action" else "running"


class AgentkitDecoder(Decoder):
    codec = "agentkit"
    start_words = "turn_start"
    terminal_words = "turn_end"

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
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

    def _take_wire(self, wire: _T) -> Event | None:
        if type(wire) is TurnStartW or type(wire) is TurnEndW:
            return None
        event = self._event(wire, UNSET)[0]
        if type(event) is TextDelta and event.message_id is UNSET:
            self._text.append(event.text)
        return event

    def _decode(self, frame: Frame) -> list[Event]:
        try:
            wire = _frame_decoder.decode(frame.data)
        except msgspec.ValidationError:
            return self._slow(frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON AgentEvent object ({exc})") from None
        return self._event(wire, UNSET)

    def _slow(self, frame: Frame) -> list[Event]:
        envelope = decode_envelope(frame.data, frame)
        kind = raw_str(envelope.get("type"))
        if kind in _TYPES:
            known, extra = split_extra(envelope, _FIELDS[kind])
            wire, verbatim = decode_known(_TYPES[kind], known, kind)
            return self._with_verbatim(self._event(wire, extra or UNSET), verbatim)
        if kind is not None and kind.startswith("data-") and "event" in envelope:
            return [self._carrier(frame.data, frame)]
        mid = raw_str(envelope.get("messageId"))
        part = self._unknown(kind or "", frame)
        if mid is not None:
            part.message_id = self._mid(mid)
        return [part]

    # ``w`` is Any: each branch below knows its type from ``type(w)`` (mypy cannot narrow by it)
    def _event(self, w: Any, extra: dict[str, Raw] | UnsetType) -> list[Event]:
        t = type(w)
        e: Event
        if t is TextDeltaW:
            e = TextDelta(text=w.text, message_id=self._mid(w.message_id))
        elif t is ThinkingDeltaW:
            e = ReasoningDelta(text=w.text, message_id=self._mid(w.message_id))
        elif t is TurnStartW:
            e = self._turn_start(w)
        elif t is ToolCallW:
            e = self._tool_call(w)
        elif t is ToolResultW:
            e = self._tool_result(w)
        elif t is SourcesW:
            e = Sources(
                message_id=self._mid(w.message_id),
                sources=[Source(**msgspec.structs.asdict(s)) for s in w.sources],
            )
        elif t is CitationW:
            c = w.citation
            e = Citation(
                message_id=self._mid(w.message_id), marker=c.marker, source_id=c.source_id, start=c.start, end=c.end
            )
        elif t is SuggestionsW:
            e = Suggestions(message_id=self._mid(w.message_id), prompts=w.prompts)
        elif t is StatusW:
            e = Status(message_id=self._mid(w.message_id), label=w.label)
        else:
            return self._turn_end(w, extra)
        if extra is not UNSET:
            e.extra = extra
        return [e]

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

    def _tool_call(self, w: ToolCallW) -> ToolCall:
        c = w.call
        kind = _APPROVAL_KIND.get(c.requires_approval, UNSET)
        status = UNSET if c.status == _default_status(kind) else c.status
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

    def _tool_result(self, w: ToolResultW) -> Event:
        mid = self._mid(w.message_id)
        output: Raw | UnsetType
        failure = _failure_in(w.failure)
        if w.status == "succeeded" and failure is UNSET:
            output = Raw(b"null") if w.result_text is UNSET else Raw(_str_encode(w.result_text))
            return ToolOutput(message_id=mid, call_id=w.call_id, output=output)
        if w.status == "failed":
            error = failure.message if failure is not UNSET else ""
            if failure is not UNSET and failure == Failure(status="error", message=error):
                failure = UNSET
            output = UNSET if w.result_text is UNSET else Raw(_str_encode(w.result_text))
            return ToolError(message_id=mid, call_id=w.call_id, error=error, failure=failure, output=output)
        if w.status == "denied":
            return ToolDenied(message_id=mid, call_id=w.call_id, reason=w.result_text, failure=failure)
        return DataPart(name="tool_result", origin="agentkit", data=Raw(_encode(w)), message_id=mid)

    def _turn_end(self, w: TurnEndW, extra: dict[str, Raw] | UnsetType) -> list[Event]:
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
        if extra is not UNSET:
            end.extra = extra
        events.append(end)
        return events


class AgentkitEncoder(Encoder):
    codec = "agentkit"

    def __init__(self, framing: Literal["sse", "ndjson"] | None = None) -> None:
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
        payload = _encode(w)
        if event.extra is not UNSET:
            payload = splice_extra(payload, event.extra)
        return payload

    _terminal_says_text = True  # result.text

    def _mid(self, event: Event) -> str:
        return event.message_id if event.message_id is not UNSET else self._primary

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        if type(event) is not RunStart:
            self._handle(RunStart(synthetic=True), parts)

    # ``e`` is Any: each branch below knows its type from ``type(e)`` (mypy cannot narrow by it)
    def _handle(self, e: Any, parts: list[bytes]) -> None:
        t = type(e)
        if t is TextDelta:
            if e.synthetic and e.message_id is UNSET:
                return  # made from result.text by a decoder: turn_end says it again
            self._put(parts, e, [self._wire(TextDeltaW(message_id=self._mid(e), text=e.text), e)], e.part_id is UNSET)
        elif t is ReasoningDelta:
            self._put(
                parts,
                e,
                [self._wire(ThinkingDeltaW(message_id=self._mid(e), text=e.text), e)],
                _plain(e) and e.part_id is UNSET,
            )
        elif t in _STRUCTURE:  # agentkit has no place for it: dropped when synthetic, else carried
            if not e.synthetic:
                self._put(parts, e, [], False)
        elif t is RunStart:
            self._run_start(e, parts)
        elif t is ToolCall:
            self._tool_call(e, parts)
        elif t is ToolOutput:
            self._tool_output(e, parts)
        elif t is ToolError:
            self._tool_error(e, parts)
        elif t is ToolDenied:
            w = ToolResultW(
                message_id=self._mid(e),
                call_id=e.call_id,
                status="denied",
                result_text=e.reason,
                failure=_failure_out(e.failure),
            )
            self._put(parts, e, [self._wire(w, e)], _plain(e) and _failure_native(e.failure))
        elif t is Sources:
            sources = [AgentSource(**msgspec.structs.asdict(s)) for s in e.sources]
            self._put(parts, e, [self._wire(SourcesW(message_id=self._mid(e), sources=sources), e)], _plain(e))
        elif t is Citation:
            c = AgentCitation(marker=e.marker, source_id=e.source_id, start=e.start, end=e.end)
            self._put(parts, e, [self._wire(CitationW(message_id=self._mid(e), citation=c), e)], _plain(e))
        elif t is Suggestions:
            self._put(parts, e, [self._wire(SuggestionsW(message_id=self._mid(e), prompts=e.prompts), e)], _plain(e))
        elif t is Status:
            self._put(parts, e, [self._wire(StatusW(message_id=self._mid(e), label=e.label), e)], _plain(e))
        elif t is DataPart and e.origin == "agentkit":
            self._put(parts, e, [bytes(e.data)], as_received(e))
        elif t is Terminal:
            self._terminal(e, parts)
        else:
            self._put(parts, e, [], False)

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

    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        native = _plain(e) and e.parent_id is UNSET and e.signature is UNSET and _failure_native(e.failure)
        # the status that follows from the tool kind is read back as UNSET (canonical form)
        native = native and e.status != _default_status(e.tool_kind)
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
        status = e.status if e.status is not UNSET else _default_status(e.tool_kind)
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

    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        raw = bytes(e.output)
        native = _plain(e) and e.is_error is UNSET
        if raw == b"null":
            text: str | UnsetType = UNSET
        else:
            text = raw_str(e.output)  # type: ignore[assignment]
            if text is None:
                text, native = raw.decode(), False
            elif _str_encode(text) != raw:  # read back as msgspec writes the string ("é", not "\u00e9")
                native = False
        w = ToolResultW(message_id=self._mid(e), call_id=e.call_id, status="succeeded", result_text=text)
        self._put(parts, e, [self._wire(w, e)], native)

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
            native = native and decoded is not None and _str_encode(decoded) == bytes(e.output)
        w = ToolResultW(message_id=self._mid(e), call_id=e.call_id, status="failed", result_text=text, failure=failure)
        self._put(parts, e, [self._wire(w, e)], native)

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
