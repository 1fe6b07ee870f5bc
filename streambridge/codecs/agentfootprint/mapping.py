"""What both directions share: one function from an event to its envelope payload and one back,
with the stream state they depend on (:class:`Tally`: iteration and token counters, the text of
the current LLM call, token totals). The decoder keeps what its mapping would not write back byte
for byte (as the event's verbatim ``payload``); the encoder writes an event natively only when
the decoder would read it back the same. One pair of functions, so the two cannot drift apart."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    ArtifactPresented,
    ArtifactRefused,
    ArtifactSnapshot,
    BudgetExhausted,
    Elicitation,
    Event,
    Failure,
    ReasoningDelta,
    RunStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolOutput,
    ToolProgress,
    Usage,
)
from ..envelope import input_of, raw_str
from ..synthetic import read_call
from ..terminals import DEFAULT_MESSAGES, TRUNCATED_CODE, TRUNCATED_MESSAGE, canonical_failure
from ..textpath import TextPieces
from .wire import (
    PREFIX,
    AfUsage,
    BudgetP,
    EventMeta,
    FatalP,
    LlmEndP,
    LlmStartP,
    PauseP,
    PresentedP,
    RefusedP,
    SnapshotP,
    ThinkingP,
    TokenP,
    ToolEndP,
    ToolProgressP,
    ToolStartP,
    TurnEndP,
    TurnStartP,
)

__all__ = ["PAYLOADS", "Tally", "from_payload", "to_payload"]

_encode = msgspec.json.Encoder().encode

#: the mapped event types (without the prefix) and their payload shapes
PAYLOADS: dict[str, type[msgspec.Struct]] = {
    "agent.turn_start": TurnStartP,
    "stream.llm_start": LlmStartP,
    "stream.token": TokenP,
    "stream.thinking_delta": ThinkingP,
    "stream.llm_end": LlmEndP,
    "stream.tool_start": ToolStartP,
    "stream.tool_progress": ToolProgressP,
    "stream.tool_end": ToolEndP,
    "agent.budget_exhausted": BudgetP,
    "pause.request": PauseP,
    "artifacts.presented": PresentedP,
    "artifacts.refused": RefusedP,
    "agent.turn_end": TurnEndP,
    "error.fatal": FatalP,
}
#: the payload decoders, by full type name
DECODERS = {PREFIX + name: msgspec.json.Decoder(cls) for name, cls in PAYLOADS.items()}
TERMINAL_TYPES = frozenset({PREFIX + "agent.turn_end", PREFIX + "error.fatal"})


class Tally:
    """The stream state payloads are numbered and summed by, fed the same events on both sides
    (the encoder what it writes as frames, the decoder what it reads from them)."""

    def __init__(self) -> None:
        self.iteration = 0  # LLM calls started (``stream.llm_start``)
        self.tokens = 0  # ``stream.token`` frames in this call
        self.thinking = 0  # ``stream.thinking_delta`` frames in this call
        self.call_text = TextPieces([])  # this call's text (``llm_end.content``)
        self.call_tools = 0  # tool calls started in this call
        self.text = TextPieces([])  # the turn's text
        self.total_input = 0
        self.total_output = 0
        self.meta = b""  # the default meta (set by the run start)
        self.tool_names: dict[str, str] = {}  # tool names by call id
        self.pauses = 0  # pause requests so far (their elicitations are numbered by it)

    def start(self, run_id: str, session_id: str | UnsetType) -> None:
        self.meta = _encode(EventMeta(run_id=run_id, session_id=session_id))

    def observe(self, event: Event) -> None:
        if type(event) is TextDelta:
            self.tokens += 1  # every token frame, another message's too
            if event.message_id is UNSET:
                self.primary_token(event.text)
        elif type(event) is ReasoningDelta:
            self.thinking += 1
        elif type(event) is StepStart:
            self.iteration += 1
            self.tokens = self.thinking = self.call_tools = 0
            self.call_text = TextPieces([])
        elif type(event) is ToolCall:
            self.call_tools += 1
            self.tool_names[event.call_id] = event.name
        elif type(event) is Elicitation:
            self.pauses += 1
        elif type(event) is StepFinish:
            self.tokens = self.thinking = self.call_tools = 0
            self.call_text = TextPieces([])
            if event.usage is not UNSET:
                self.total_input += event.usage.input_tokens or 0
                self.total_output += event.usage.output_tokens or 0

    def primary_token(self, text: str) -> None:
        """A token of the turn's own message (its frame is counted by the caller)."""
        self.call_text.pieces.append(text)
        self.text.pieces.append(text)
        self.call_text.compact()  # a long answer costs about its own size
        self.text.compact()

    def primary_tokens(self, texts: list[str]) -> None:
        """A run of them (its frames are counted by the caller)."""
        self.call_text.pieces.extend(texts)
        self.text.pieces.extend(texts)
        self.call_text.compact()
        self.text.compact()

    def joined(self) -> str:
        return self.text.text()


# -- event → payload ----------------------------------------------------------------------


def to_payload(event: Event, tally: Tally) -> tuple[str, bytes] | None:
    """The envelope type and payload bytes that say ``event`` (None: no frame says it)."""
    builder = _BUILDERS.get(type(event))
    if builder is None:
        return None
    name, payload = builder(event, tally)
    return PREFIX + name, _encode(payload)


def _turn_start(e: RunStart, tally: Tally) -> tuple[str, msgspec.Struct]:
    return "agent.turn_start", TurnStartP(turn_index=0, user_prompt="")


def _bare_start(iteration: int) -> LlmStartP:
    return LlmStartP(iteration=iteration, provider="", model="", system_prompt_chars=0, messages_count=0, tools_count=0)


def _llm_start(e: StepStart, tally: Tally) -> tuple[str, msgspec.Struct]:
    return "stream.llm_start", _bare_start(tally.iteration + 1)


def _token(e: TextDelta | ReasoningDelta, tally: Tally) -> tuple[str, msgspec.Struct]:
    if type(e) is TextDelta:
        return "stream.token", TokenP(iteration=tally.iteration, token_index=tally.tokens, content=e.text)
    return "stream.thinking_delta", ThinkingP(iteration=tally.iteration, token_index=tally.thinking, content=e.text)


def _llm_end(e: StepFinish, tally: Tally) -> tuple[str, msgspec.Struct]:
    u = e.usage
    usage = AfUsage(input=0, output=0)
    if u is not UNSET:
        usage = AfUsage(
            input=u.input_tokens or 0,
            output=u.output_tokens or 0,
            cache_read=u.cache_read_tokens,
            cache_write=u.cache_write_tokens,
            thinking=u.reasoning_tokens,
        )
    w = LlmEndP(
        iteration=tally.iteration,
        content=tally.call_text.text(),
        tool_call_count=tally.call_tools,
        usage=usage,
        stop_reason="tool_use" if tally.call_tools else "end_turn",
        duration_ms=0,
    )
    return "stream.llm_end", w


def _tool_start(e: ToolCall, tally: Tally) -> tuple[str, msgspec.Struct]:
    args, _, _ = input_of(e, True)
    return "stream.tool_start", ToolStartP(tool_name=e.name, tool_call_id=e.call_id, args=args)


def _tool_end(e: ToolOutput | ToolError | ToolDenied, tally: Tally) -> tuple[str, msgspec.Struct]:
    if isinstance(e, ToolOutput):
        return "stream.tool_end", ToolEndP(tool_call_id=e.call_id, result=e.output)
    if isinstance(e, ToolError):
        result = e.output if e.output is not UNSET else Raw(_encode(e.error))
        return "stream.tool_end", ToolEndP(tool_call_id=e.call_id, result=result, error=True)
    # a denial: nothing ran; a reader sees a failed call (the carrier says it was denied)
    reason = e.reason if e.reason is not UNSET else "denied"
    return "stream.tool_end", ToolEndP(tool_call_id=e.call_id, result=Raw(_encode(reason)), error=True)


def _terminal(e: Terminal, tally: Tally) -> tuple[str, msgspec.Struct]:
    if e.status == "succeeded":
        u = e.usage
        w = TurnEndP(
            turn_index=0,
            final_content=e.text if isinstance(e.text, str) else tally.joined(),
            total_input_tokens=tally.total_input if u is UNSET else u.input_tokens or 0,
            total_output_tokens=tally.total_output if u is UNSET else u.output_tokens or 0,
            iteration_count=tally.iteration,
            duration_ms=0,
        )
        return "agent.turn_end", w
    message = e.failure.message if e.failure is not UNSET else DEFAULT_MESSAGES[e.status]
    return "error.fatal", FatalP(error=message)


def _tool_progress(e: ToolProgress, tally: Tally) -> tuple[str, msgspec.Struct]:
    name = e.name if e.name is not UNSET else tally.tool_names.get(e.call_id, "")
    w = ToolProgressP(tool_call_id=e.call_id, tool_name=name, iteration=tally.iteration, payload=e.data)
    return "stream.tool_progress", w


def _budget(e: BudgetExhausted, tally: Tally) -> tuple[str, msgspec.Struct]:
    w = BudgetP(reason=e.reason, iteration=tally.iteration, limit=e.limit, action=e.action or "wrapped-up")
    if e.pending_tool_calls is not UNSET:
        w.pending_tool_calls = e.pending_tool_calls
    return "agent.budget_exhausted", w


def _pause(e: Elicitation, tally: Tally) -> tuple[str, msgspec.Struct]:
    return "pause.request", PauseP(reason="", question_payload=e.request)


def _presented(e: ArtifactPresented, tally: Tally) -> tuple[str, msgspec.Struct]:
    s = e.snapshot
    w = PresentedP(
        ref=e.ref,
        as_=e.as_,
        snapshot=SnapshotP(kind=s.kind, media_type=s.media_type, bytes=s.bytes, label=s.label),
        tool_call_id=e.tool_call_id or "",
        iteration=tally.iteration if e.iteration is UNSET else e.iteration,
    )
    return "artifacts.presented", w


def _refused(e: ArtifactRefused, tally: Tally) -> tuple[str, msgspec.Struct]:
    w = RefusedP(op=e.op or "dispatch", reason=e.reason, ref=e.ref, detail=e.detail, tool=e.tool)
    return "artifacts.refused", w


_BUILDERS: dict[type, Any] = {
    ToolProgress: _tool_progress,
    BudgetExhausted: _budget,
    Elicitation: _pause,
    ArtifactPresented: _presented,
    ArtifactRefused: _refused,
    RunStart: _turn_start,
    StepStart: _llm_start,
    TextDelta: _token,
    ReasoningDelta: _token,
    StepFinish: _llm_end,
    ToolCall: _tool_start,
    ToolOutput: _tool_end,
    ToolError: _tool_end,
    ToolDenied: _tool_end,
    Terminal: _terminal,
}


# -- payload → event ----------------------------------------------------------------------


def from_payload(w: msgspec.Struct, tally: Tally) -> Event:
    """The event a payload says, by its shape's reader (:data:`_READERS`, one per payload type).
    ``RunStart`` ids come from the envelope's meta, which the decoder reads itself."""
    return _READERS[type(w)](w, tally)


def _read_token(w: TokenP, tally: Tally) -> Event:
    return TextDelta(text=w.content)


def _read_thinking(w: ThinkingP, tally: Tally) -> Event:
    return ReasoningDelta(text=w.content)


def _read_turn_start(w: TurnStartP, tally: Tally) -> Event:
    return RunStart()


def _read_llm_start(w: LlmStartP, tally: Tally) -> Event:
    return StepStart()


def _read_llm_end(w: LlmEndP, tally: Tally) -> Event:
    return StepFinish(usage=_usage_in(w.usage))


def _read_tool_start(w: ToolStartP, tally: Tally) -> Event:
    return read_call(ToolCall(call_id=w.tool_call_id, name=w.tool_name, input=w.args))


def _read_fatal(w: FatalP, tally: Tally) -> Event:
    code = TRUNCATED_CODE if w.error == TRUNCATED_MESSAGE else "run_failed"  # streambridge's own end
    failure = Failure(status="error", message=w.error, code=code)
    return Terminal(status="error", failure=canonical_failure("error", failure))


def _usage_in(u: AfUsage) -> Usage | UnsetType:
    usage = Usage(
        input_tokens=u.input,
        output_tokens=u.output,
        cache_read_tokens=u.cache_read,
        cache_write_tokens=u.cache_write,
        reasoning_tokens=u.thinking,
    )
    return UNSET if usage == _NO_USAGE else usage


_NO_USAGE = Usage(input_tokens=0, output_tokens=0)


def _read_tool_end(w: ToolEndP, tally: Tally) -> Event:
    if w.error is not True:
        return ToolOutput(call_id=w.tool_call_id, output=w.result)
    text = raw_str(w.result)
    if text is None:
        return ToolError(call_id=w.tool_call_id, output=w.result)
    return ToolError(call_id=w.tool_call_id, error=text)


def _read_turn_end(w: TurnEndP, tally: Tally) -> Event:
    end = Terminal(status="succeeded")
    if w.final_content != tally.joined():
        end.text = w.final_content
    if (w.total_input_tokens, w.total_output_tokens) != (tally.total_input, tally.total_output):
        end.usage = Usage(input_tokens=w.total_input_tokens, output_tokens=w.total_output_tokens)
    return end


def _read_progress(w: ToolProgressP, tally: Tally) -> Event:
    named = w.tool_name != tally.tool_names.get(w.tool_call_id, "")
    return ToolProgress(call_id=w.tool_call_id, name=w.tool_name if named else UNSET, data=w.payload)


def _read_budget(w: BudgetP, tally: Tally) -> Event:
    return BudgetExhausted(reason=w.reason, action=w.action, limit=w.limit, pending_tool_calls=w.pending_tool_calls)


def pause_id(tally: Tally) -> str:
    """The id of the next pause request's elicitation (pauses are numbered in the stream)."""
    return f"pause-{tally.pauses}"


def _read_pause(w: PauseP, tally: Tally) -> Event:
    """A pause request asks the person for input: an elicitation."""
    return Elicitation(call_id=pause_id(tally), request=w.question_payload)


def _read_presented(w: PresentedP, tally: Tally) -> Event:
    s = w.snapshot
    return ArtifactPresented(
        ref=w.ref,
        as_=w.as_,
        snapshot=ArtifactSnapshot(kind=s.kind, media_type=s.media_type, bytes=s.bytes, label=s.label),
        tool_call_id=w.tool_call_id or UNSET,
        iteration=UNSET if w.iteration == tally.iteration else w.iteration,
    )


def _read_refused(w: RefusedP, tally: Tally) -> Event:
    return ArtifactRefused(op=w.op, reason=w.reason, ref=w.ref, detail=w.detail, tool=w.tool)


_Reader = Callable[[Any, Tally], Event]  # (each reader's own signature names its payload type)
_READERS: dict[type[msgspec.Struct], _Reader] = {
    TurnStartP: _read_turn_start,
    LlmStartP: _read_llm_start,
    TokenP: _read_token,
    ThinkingP: _read_thinking,
    LlmEndP: _read_llm_end,
    ToolStartP: _read_tool_start,
    ToolProgressP: _read_progress,
    ToolEndP: _read_tool_end,
    BudgetP: _read_budget,
    PauseP: _read_pause,
    PresentedP: _read_presented,
    RefusedP: _read_refused,
    TurnEndP: _read_turn_end,
    FatalP: _read_fatal,
}
