"""The ag-ui decoder: AG-UI events in, model events out.

What an encoder invents reads back as invented, as in ai-sdk: text and reasoning messages with
the ids it numbers (``sb-text-<n>``, ``sb-reasoning-<n>``) are the primary text (their starts
and ends are no events), result messages ``sb-result-<n>`` say no id (every step frame has its
source's name: an unnamed step rides on another frame),
a tool call named ``unknown`` with no arguments is an invented announcement. Chunks
(``TEXT_MESSAGE_CHUNK``, ``TOOL_CALL_CHUNK``, ``REASONING_MESSAGE_CHUNK``) expand as AG-UI 1.0
§4.3 says; ``THINKING_TEXT_MESSAGE_*`` (0.x) is read as reasoning. Events the model has no
meaning for (state, messages snapshot, activity, subagents, reasoning spans, ``RAW``) and
unknown types are kept whole; a ``CUSTOM`` event is a data part (its name and value), or a
streambridge carrier."""

from __future__ import annotations

import operator
from typing import Unpack

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Elicitation,
    Event,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    ToolApprovalRequest,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)
from ..artifacts import PART_NAMES
from ..decoder import Decoder, DecoderOptions, Members, reads, with_extra
from ..envelope import decode_envelope, decode_known, json_encode, raw_str, split_extra
from ..errors import FrameProblem, check_utf8
from ..framing import Frame, Framing
from ..riding import AG_UI_SLOT
from ..sinks import EventSink
from ..synthetic import read_call
from .readings import interrupt_id, read_arguments, read_interrupt, read_outcome, read_run_error, read_start
from .wire import (
    CARRIER_NAME,
    EVENTS,
    FIELDS,
    PREFIX,
    AgUiEvent,
    AgUiWire,
    CustomW,
    HotEvent,
    ReasoningMessageChunkW,
    ReasoningMessageContentW,
    ReasoningMessageEndW,
    ReasoningMessageStartW,
    RunErrorW,
    RunFinishedW,
    RunStartedW,
    StepFinishedW,
    StepStartedW,
    TextMessageChunkW,
    TextMessageContentW,
    TextMessageEndW,
    TextMessageStartW,
    ThinkingTextMessageContentW,
    ThinkingTextMessageEndW,
    ThinkingTextMessageStartW,
    ToolCallArgsW,
    ToolCallChunkW,
    ToolCallEndW,
    ToolCallResultRoleW,
    ToolCallResultW,
    ToolCallStartW,
    kept,
)

__all__ = ["AgUiDecoder", "custom_is_data", "whole_event"]

_event_decoder = msgspec.json.Decoder(AgUiEvent)
#: events that do not end the items chunks opened (AG-UI 1.0 §4.3)
_KEEP_CHUNKS = frozenset(
    {"RAW", "ACTIVITY_SNAPSHOT", "ACTIVITY_DELTA", "REASONING_ENCRYPTED_VALUE", "SUBAGENT_STARTED"}
)
_CHUNKS: dict[type, str] = {TextMessageChunkW: "text", ReasoningMessageChunkW: "reasoning", ToolCallChunkW: "tool"}
_CHUNK_TYPES = {"text": "TEXT_MESSAGE_CHUNK", "reasoning": "REASONING_MESSAGE_CHUNK", "tool": "TOOL_CALL_CHUNK"}
_ROLES = {"text": "assistant", "reasoning": "reasoning"}


def whole_event(name: str, data: Raw) -> bool:
    """Whether a data part of this codec holds a whole AG-UI event (a type kept whole): a JSON
    object whose ``type`` is the part's name."""
    raw = bytes(data)
    if not raw.startswith(b"{"):
        return False
    try:
        members = msgspec.json.decode(raw, type=dict[str, Raw])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    kind = members.get("type")
    return kind is not None and bytes(kind) == json_encode(name)


def custom_is_data(name: str, value: Raw) -> bool:
    """Whether ``CUSTOM {name, value}`` reads back as a data part of that name and value (not
    as a whole event, and not as a carrier)."""
    return name != CARRIER_NAME and not whole_event(name, value)


class _Call:
    __slots__ = ("args", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self.args: list[str] = []


class AgUiDecoder(Decoder):
    codec = "ag-ui"
    tag_field = "type"
    start_words = "RUN_STARTED"
    terminal_words = "RUN_FINISHED or RUN_ERROR"
    _invents_input_start = False  # the protocol says TOOL_CALL_START

    wire_types = AgUiEvent

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._ids: tuple[str, str] | None = None  # (thread, run) of RUN_STARTED
        self._counts = {"text": 0, "reasoning": 0, "result": 0}
        self._invented: dict[str, str | None] = {"text": None, "reasoning": None}
        self._steps: list[str] = []  # open step names, in opening order
        self._open: dict[str, _Call] = {}  # open tool calls
        self._chunk: dict[str, str | None] = {"text": None, "reasoning": None, "tool": None}
        self._chunk_role: dict[str, str] = {}
        self._held_call: ToolInputStart | None = None
        self._stops: set[str] = set()  # interrupt ids of the approvals and elicitations said
        self._covered = False
        self._fault: FrameProblem | None = None  # a bad frame among covered ones

    # -- the hot path: runs of one message's deltas, the other frequent events by their readers

    _hot_decoder = msgspec.json.Decoder(HotEvent)
    _hot_text = TextMessageContentW
    _hot_reasoning = ReasoningMessageContentW
    _hot_delta = operator.attrgetter("delta")
    _hot_part = operator.attrgetter("message_id")
    _hot_in_order = True

    def _hot_paused(self) -> bool:
        """An announcement waiting for its end, or an item chunks opened (which the next event
        may end), needs the full way."""
        return self._held_call is not None or any(item is not None for item in self._chunk.values())

    def _delta_part(self, reasoning: bool, part: str) -> str | UnsetType:
        return self._part("reasoning" if reasoning else "text", part)

    # -- frames ------------------------------------------------------------------------------

    def _decode_covered(self, frame: Frame) -> None:
        """A frame a carrier covers is decoded for the state only, but a bad one is still a bad
        frame (a whole call's three frames are covered: a fault among them must not vanish)."""
        self._covered = True
        try:
            if not frame.data.isascii():
                check_utf8(frame.data)
            self._decode(frame)
        except FrameProblem as exc:
            self._fault = exc
        finally:
            self._covered = False

    def _finish(self, out: EventSink) -> None:
        held, self._held_call = self._held_call, None
        if held is not None and not self.terminated:
            self._push(held, out)

    def _frame(self, frame: Frame, out: EventSink) -> None:
        """An invented announcement (``TOOL_CALL_START`` named ``unknown``) waits for the frame
        after it: its own ``TOOL_CALL_END`` makes it one invented call, anything else lets it out
        as an invented input start first (with no id of that frame's)."""
        held = self._held_call
        if held is not None and frame.data != self._call_end_frame(held.call_id):
            self._held_call = None
            self._push(held, out)
        super()._frame(frame, out)
        fault, self._fault = self._fault, None
        if fault is not None:
            self._bad_frame(frame, str(fault), out, fault.kind)

    @staticmethod
    def _call_end_frame(call_id: str) -> bytes:
        return b'{"type":"TOOL_CALL_END","toolCallId":' + json_encode(call_id) + b"}"

    def _decode(self, frame: Frame) -> list[Event]:
        self._held_call = None  # (still held: this frame is its end, so the two are one call)
        carried = self._riding(frame, AG_UI_SLOT)
        if carried is not None:
            return carried
        try:
            wire: AgUiWire | None = _event_decoder.decode(frame.data)
            extra: dict[str, Raw] = {}
            kind = ""
        except msgspec.ValidationError:
            wire, extra, kind = self._slow(frame)
        except msgspec.DecodeError as exc:
            raise FrameProblem(f"one JSON event object with a string type ({exc})") from None
        if wire is None:  # kept whole
            events = [] if kind in _KEEP_CHUNKS else self._end_chunks()
            events.append(self._activity(frame) if kind == "ACTIVITY_SNAPSHOT" else self._unknown(kind, frame))
            return events
        events = self._end_chunks(keep=_CHUNKS.get(type(wire)))
        events += self._read_in_order(wire, extra, frame.data)
        return events

    def _slow(self, frame: Frame) -> tuple[AgUiWire | None, dict[str, Raw], str]:
        """Unknown members, types kept whole, invalid values of known types (malformed)."""
        envelope = decode_envelope(frame.data, frame)
        kind = raw_str(envelope.get("type"))
        if kind is None:
            raise FrameProblem("an event object with a string type")
        cls = EVENTS.get(kind)
        if cls is None:
            return None, {}, kind
        known, extra = split_extra(envelope, FIELDS[kind])
        wire, _ = decode_known(cls, known, kind)  # (Raw members hold whatever they hold)
        return wire, extra, kind

    # -- readers, one per event type ---------------------------------------------------------

    def _part(self, kind: str, message_id: str) -> str | UnsetType:
        """A delta's part id; unset for the message the encoder invented for text that had none."""
        return UNSET if message_id == self._invented[kind] else message_id

    @reads(TextMessageContentW, hot=True)
    def _on_text_content(self, w: TextMessageContentW, extra: Members) -> list[Event]:
        return with_extra(TextDelta(text=w.delta, part_id=self._part("text", w.message_id)), extra)

    @reads(ReasoningMessageContentW, hot=True)
    def _on_reasoning_content(self, w: ReasoningMessageContentW, extra: Members) -> list[Event]:
        return with_extra(ReasoningDelta(text=w.delta, part_id=self._part("reasoning", w.message_id)), extra)

    @reads(TextMessageStartW, hot=True)
    def _on_text_start(self, w: TextMessageStartW, extra: Members) -> list[Event]:
        return self._part_start("text", w.message_id, w.role, extra)

    @reads(ReasoningMessageStartW, hot=True)
    def _on_reasoning_start(self, w: ReasoningMessageStartW, extra: Members) -> list[Event]:
        return self._part_start("reasoning", w.message_id, w.role, extra)

    @reads(TextMessageEndW, hot=True)
    def _on_text_end(self, w: TextMessageEndW, extra: Members) -> list[Event]:
        if self._invented_end("text", w.message_id, extra):
            return []
        return with_extra(TextEnd(part_id=w.message_id), extra)

    @reads(ReasoningMessageEndW, hot=True)
    def _on_reasoning_end(self, w: ReasoningMessageEndW, extra: Members) -> list[Event]:
        if self._invented_end("reasoning", w.message_id, extra):
            return []
        return with_extra(ReasoningEnd(part_id=w.message_id), extra)

    def _invented_end(self, kind: str, message_id: str, extra: Members) -> bool:
        if extra or message_id != self._invented[kind]:
            return False
        self._invented[kind] = None
        return True

    @reads(ToolCallArgsW, hot=True)
    def _on_tool_args(self, w: ToolCallArgsW, extra: Members) -> list[Event]:
        call = self._open.get(w.tool_call_id)
        if call is not None:
            call.args.append(w.delta)
        return with_extra(ToolInputDelta(call_id=w.tool_call_id, delta=w.delta), extra)

    @reads(ToolCallStartW, hot=True)
    def _on_tool_start(self, w: ToolCallStartW, extra: Members) -> list[Event]:
        return self._call_start(w.tool_call_id, w.tool_call_name, w.parent_message_id, extra)

    @reads(ToolCallEndW, hot=True)
    def _on_tool_end(self, w: ToolCallEndW, extra: Members) -> list[Event]:
        return with_extra(self._call_end(w.tool_call_id), extra)

    @reads(ToolCallResultRoleW, hot=True)
    def _on_tool_result_role(self, w: ToolCallResultRoleW, extra: Members) -> list[Event]:
        """A result as the hot path reads it: its ``role``, written last, an unknown member as
        the full way reads it."""
        result = ToolCallResultW(message_id=w.message_id, tool_call_id=w.tool_call_id, content=w.content)
        return self._on_tool_result(result, extra if w.role is UNSET else {"role": w.role, **extra})

    @reads(ToolCallResultW, hot=True)
    def _on_tool_result(self, w: ToolCallResultW, extra: Members) -> list[Event]:
        e = ToolOutput(call_id=w.tool_call_id, output=w.content)
        if w.message_id == f"{PREFIX}result-{self._counts['result'] + 1}":
            self._counts["result"] += 1
        else:
            e.extra = {kept("messageId"): Raw(json_encode(w.message_id))}
        return with_extra(e, extra)

    @reads(StepStartedW, hot=True)
    def _on_step_started(self, w: StepStartedW, extra: Members) -> list[Event]:
        self._steps.append(w.step_name)  # (an unnamed step has no frame: see the encoder's _step)
        return with_extra(_named(StepStart(), w.step_name), extra)

    @reads(StepFinishedW, hot=True)
    def _on_step_finished(self, w: StepFinishedW, extra: Members) -> list[Event]:
        top = self._steps[-1] if self._steps else None
        if w.step_name in self._steps:
            self._steps.remove(w.step_name)
        finish = StepFinish() if w.step_name == top else _named(StepFinish(), w.step_name)
        return with_extra(finish, extra)

    @reads(CustomW)
    def _on_custom(self, w: CustomW, extra: Members) -> list[Event]:
        if w.name == CARRIER_NAME and bytes(w.value).startswith(b"{") and not extra:
            try:
                event = self._carrier(bytes(w.value))
            except FrameProblem:
                pass
            else:
                self._note_carried([event])
                return [event]
        if w.name.startswith("streambridge.data-artifact") and not extra:
            artifact = self._artifact_part(w.name[len("streambridge.") :], {"data": w.value})
            if artifact is not None:
                return [artifact]
        if custom_is_data(w.name, w.value):
            return with_extra(DataPart(name=w.name, origin=self.codec, data=w.value), extra)
        return [self._unknown("CUSTOM", self._current)]  # (kept whole: its value reads otherwise)

    def _note_carried(self, events: list[Event]) -> None:
        """A carried approval or elicitation is said: the outcome's interrupt about it is not
        read as a second one."""
        for event in events:
            if type(event) is ToolApprovalRequest or type(event) is Elicitation:
                self._stops.add(interrupt_id(event))

    @reads(RunStartedW)
    def _on_run_started(self, w: RunStartedW, extra: Members) -> list[Event]:
        self._ids = (w.thread_id, w.run_id)
        return with_extra(read_start(w.thread_id, w.run_id), extra)

    @reads(RunFinishedW)
    def _on_run_finished(self, w: RunFinishedW, extra: Members) -> list[Event]:
        return self._finished(w, extra)

    @reads(RunErrorW)
    def _on_run_error(self, w: RunErrorW, extra: Members) -> list[Event]:
        status, failure = read_run_error(w.message, w.code)
        return with_extra(Terminal(status=status, failure=failure), extra)

    @reads(ThinkingTextMessageContentW, hot=True)
    def _on_thinking_content(self, w: ThinkingTextMessageContentW, extra: Members) -> list[Event]:
        return with_extra(ReasoningDelta(text=w.delta), extra)

    @reads(ThinkingTextMessageStartW)
    def _on_thinking_start(self, w: ThinkingTextMessageStartW, extra: Members) -> list[Event]:
        return [self._unknown("THINKING_TEXT_MESSAGE_START", self._current)] if extra else []

    @reads(ThinkingTextMessageEndW)
    def _on_thinking_end(self, w: ThinkingTextMessageEndW, extra: Members) -> list[Event]:
        """The implied structure: a synthetic reasoning end (kept whole when it says more)."""
        if extra:
            return [self._unknown("THINKING_TEXT_MESSAGE_END", self._current)]
        return [ReasoningEnd(synthetic=True)]

    @reads(TextMessageChunkW)
    def _on_text_chunk(self, w: TextMessageChunkW, extra: Members) -> list[Event]:
        return self._chunked("text", w.message_id, w.delta, w.role, UNSET, extra)

    @reads(ReasoningMessageChunkW)
    def _on_reasoning_chunk(self, w: ReasoningMessageChunkW, extra: Members) -> list[Event]:
        return self._chunked("reasoning", w.message_id, w.delta, UNSET, UNSET, extra)

    @reads(ToolCallChunkW)
    def _on_tool_chunk(self, w: ToolCallChunkW, extra: Members) -> list[Event]:
        return self._chunked("tool", w.tool_call_id, w.delta, w.tool_call_name, w.parent_message_id, extra)

    def _part_start(self, kind: str, message_id: str, said: str | UnsetType, extra: Members) -> list[Event]:
        role = said if said is not UNSET else _ROLES[kind]
        invented = f"{PREFIX}{kind}-{self._counts[kind] + 1}"
        if not extra and said == _ROLES[kind] and message_id == invented:  # (an invented start says its role)
            self._counts[kind] += 1
            self._invented[kind] = message_id
            return []
        e: Event = TextStart(part_id=message_id) if kind == "text" else ReasoningStart(part_id=message_id)
        if role != _ROLES[kind]:
            e.extra = {kept("role"): Raw(json_encode(role))}
        return with_extra(e, extra)

    def _call_start(self, call_id: str, name: str, parent: str | UnsetType | None, extra: Members) -> list[Event]:
        self._open[call_id] = _Call(name)
        e = read_call(ToolInputStart(call_id=call_id, name=name))
        if isinstance(parent, str):
            e.extra = {kept("parentMessageId"): Raw(json_encode(parent))}
        elif e.synthetic and not extra and not self._covered:
            self._held_call = e  # START + END with nothing between: an invented announcement
            return []
        return with_extra(e, extra)

    def _call_end(self, call_id: str) -> ToolCall:
        call = self._open.pop(call_id, None)
        if call is None:
            return ToolCall(call_id=call_id)
        return read_arguments(call_id, call.name, "".join(call.args))

    def _activity(self, frame: Frame) -> Event:
        """An activity that is an artifact's own part (its message id the ref), else kept whole."""
        members = decode_envelope(frame.data, frame)
        kind = raw_str(members.get("activityType"))
        ref, content = members.get("messageId"), members.get("content")
        if kind in PART_NAMES and ref is not None and content is not None and len(members) == 4:
            artifact = self._artifact_part(kind, {"id": ref, "data": content})
            if artifact is not None:
                return artifact
        return self._unknown("ACTIVITY_SNAPSHOT", frame)

    def _finished(self, w: RunFinishedW, extra: Members) -> list[Event]:
        """The terminal, after the approvals and elicitations its interrupt outcome asks (those
        a carrier has not said already)."""
        events: list[Event] = []
        end = Terminal(status="succeeded", result=w.result)
        said: dict[str, Raw] = {}
        if self._ids != (w.thread_id, w.run_id):
            said = {kept("threadId"): Raw(json_encode(w.thread_id)), kept("runId"): Raw(json_encode(w.run_id))}
        outcome = w.outcome
        if isinstance(outcome, Raw) and bytes(outcome) != b"null":  # (null tolerated as absent)
            kind, interrupts, exact = read_outcome(outcome)
            if kind == "cancelled":
                end.status = "cancelled"
            elif kind == "interrupt" and not self._covered:
                for raw in interrupts:
                    stop = read_interrupt(raw)
                    stop_id = interrupt_id(stop)
                    if stop_id not in self._stops:
                        self._stops.add(stop_id)
                        events.append(stop)
            if not exact:  # a success outcome, a newer one, or one written otherwise: kept as received
                said[kept("outcome")] = outcome
        if said:
            end.extra = said
        return [*events, *with_extra(end, extra)]

    # -- chunks (AG-UI 1.0 §4.3) ----------------------------------------------------------------

    def _end_chunks(self, keep: str | None = None) -> list[Event]:
        """The ends of the items chunks opened, when an event that ends them arrives (a chunk
        ends only the items of the other lanes)."""
        out: list[Event] = []
        for lane, item in self._chunk.items():
            if item is not None and lane != keep:
                out.append(self._end_chunk(lane, item))
        return out

    def _end_chunk(self, lane: str, item: str) -> Event:
        self._chunk[lane] = None
        if lane == "tool":
            return self._call_end(item)
        return TextEnd(part_id=item) if lane == "text" else ReasoningEnd(part_id=item)

    def _chunked(
        self,
        lane: str,
        item_id: str | UnsetType,
        delta: str | UnsetType,
        opener: str | UnsetType,
        parent: str | UnsetType | None,
        extra: Members,
    ) -> list[Event]:
        """One chunk of a lane: it opens its item (``opener``: a text's role, a call's name),
        ends the open one when it names another, and carries a delta."""
        out: list[Event] = []
        open_id = self._chunk[lane]
        if open_id is not None and item_id is not UNSET and item_id != open_id:
            out.append(self._end_chunk(lane, open_id))
            open_id = None
        if open_id is None:
            opened = self._open_chunk(lane, item_id, opener, parent, extra)
            out.append(opened)
            open_id = self._chunk[lane]
        else:
            self._same_opener(lane, opener)
        assert open_id is not None  # (an item without an id was refused when it opened)
        if delta is UNSET:
            return out
        if lane == "tool":
            self._open[open_id].args.append(delta)
            out.append(ToolInputDelta(call_id=open_id, delta=delta))
        elif lane == "text":
            out.append(TextDelta(text=delta, part_id=open_id))
        else:
            out.append(ReasoningDelta(text=delta, part_id=open_id))
        return out

    def _open_chunk(
        self,
        lane: str,
        item_id: str | UnsetType,
        opener: str | UnsetType,
        parent: str | UnsetType | None,
        extra: Members,
    ) -> Event:
        if item_id is UNSET or (lane == "tool" and opener is UNSET):
            what = "toolCallId and toolCallName" if lane == "tool" else "messageId"
            raise FrameProblem(f"the first {_CHUNK_TYPES[lane]} of an item with its {what}")
        self._chunk[lane] = item_id
        e: Event
        if lane == "tool":
            assert isinstance(opener, str)
            self._chunk_role["tool"] = opener
            self._open[item_id] = _Call(opener)
            e = ToolInputStart(call_id=item_id, name=opener)
            if isinstance(parent, str):
                e.extra = {kept("parentMessageId"): Raw(json_encode(parent))}
        elif lane == "text":
            role = opener if opener is not UNSET else "assistant"
            self._chunk_role["text"] = role
            e = TextStart(part_id=item_id)
            if role != "assistant":
                e.extra = {kept("role"): Raw(json_encode(role))}
        else:
            e = ReasoningStart(part_id=item_id)
        return with_extra(e, extra)[0]

    def _same_opener(self, lane: str, said: str | UnsetType) -> None:
        """A later chunk that repeats an opener field must repeat its value (§4.3: fatal else)."""
        if said is not UNSET and lane in self._chunk_role and said != self._chunk_role[lane]:
            field = "toolCallName" if lane == "tool" else "role"
            raise FrameProblem(f"the {field} {self._chunk_role[lane]!r} the item's first chunk said, not {said!r}")


def _named(e: Event, name: str) -> Event:
    e.extra = {kept("stepName"): Raw(json_encode(name))}
    return e
