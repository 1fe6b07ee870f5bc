"""The ai-sdk encoder: events in, UI message stream chunks out, in the order the client's
reducer (``process-ui-message-stream.ts``) accepts.

Ordering repair, all of it read back by the decoder as invented (no carrier describes it):

* text and reasoning deltas without a part get one: ``text-start`` / ``reasoning-start`` with
  a fresh id ``sb-text-<n>`` / ``sb-reasoning-<n>`` (numbered per stream), closed by an
  ``*-end`` before tool calls, before the other kind of part opens, before ``finish-step`` and
  before the terminal;
* a step is opened before content, and text after tool calls in a step goes to a new step
  (``finish-step`` + ``start-step``, the judge of :mod:`.steps`); ``finish-step`` forgets open
  part ids, so the next step opens fresh ones;
* a tool call is announced before its input deltas, approvals and outcomes (a call named
  ``unknown`` with an empty input, as every protocol invents it);
* the terminal is ``finish``, ``abort`` or ``error`` + ``finish``, then ``data: [DONE]``;
  nothing follows it. A failure that ends a step (a step's end, then an error terminal) is
  written in ai's own order, as its servers write a failed stream: ``error`` inside the step,
  then ``finish-step``, then ``finish``, the source's parts left as the source left them (so a
  step's end waits for the event after it).

A source's own part ids (an ai-sdk stream's ``"0"``, ``"msg_…"``) are kept; where the client
needs a start or an end for one that the source did not say, it is written under the event's
carrier (covered frames), so it is read back as part of that event.
"""

from __future__ import annotations

from typing import ClassVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Event,
    Failure,
    MessageMetadata,
    Queue,
    ReasoningDelta,
    ReasoningEnd,
    ReasoningStart,
    RunStart,
    Sources,
    Status,
    StepFinish,
    StepStart,
    Terminal,
    TextDelta,
    TextEnd,
    TextStart,
    Title,
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)
from ..carrier import TOOL_EVENTS, Payload, carrier_name
from ..encoder import Encoder, handles
from ..envelope import envelope_decoder, input_of, json_encode
from ..fidelity import ANSWER, client_data
from ..framing import Framing
from ..riding import AI_SDK_SLOT
from ..steps import BracketWriter, StepJudge, bare
from ..synthetic import invented_call, invented_start, rederived_start
from ..terminals import DEFAULT_MESSAGES, TRUNCATED_CODE, TRUNCATED_MESSAGE, says_only_outcome
from .native import client_finish, with_run_metadata
from .profiles import V7, Profile
from .wire import (
    PREFIX,
    AbortW,
    Chunk,
    ErrorW,
    FinishStepW,
    FinishW,
    MessageMetadataW,
    SourceUrlW,
    StartStepW,
    StartW,
    ToolApprovalRequestW,
    ToolApprovalResponseW,
    ToolInputAvailableW,
    ToolInputDeltaW,
    ToolInputErrorW,
    ToolInputStartW,
    ToolOutputAvailableW,
    ToolOutputDeniedW,
    ToolOutputErrorW,
)

__all__ = ["DONE", "LATE", "LATE_HEAD", "TRANSIENT", "AiSdkEncoder", "approval_id"]

_encode = msgspec.json.Encoder().encode
#: the end marker the SDK's SSE writer sends when the stream closes
DONE = b"[DONE]"
_ERROR_FINISH = b'{"type":"finish","finishReason":"error"}'
_START_STEP = _encode(StartStepW())
_FINISH_STEP = _encode(FinishStepW())
#: ``{"type":"<kind>-<what>","id":`` of every part chunk, made once (frames are built per part)
_PART_HEADS = {
    (kind, what): b'{"type":"' + kind.encode() + b"-" + what.encode() + b'","id":'
    for kind in ("text", "reasoning")
    for what in ("start", "end", "delta")
}
#: events whose data parts are marked ``transient`` (passing UI state, not message content)
TRANSIENT: frozenset[type[Event]] = frozenset((Status, Title, Queue))
_OPENS_TOOL = (ToolInputStart, ToolCall)
_KIND = {TextDelta: "text", TextStart: "text", TextEnd: "text"}
_KIND.update({ReasoningDelta: "reasoning", ReasoningStart: "reasoning", ReasoningEnd: "reasoning"})
#: what a denial says to a client without ``tool-output-denied`` (under the denial's carrier)
DENIED_TEXT = "The tool call was denied."
_BODY_HEADS = (b'"id"', b'"data"')
#: how every carrier's members start (see :func:`~streambridge.codecs.carrier.carrier_body`)
_CARRIER_HEADS = (b'"event"', b'"covers"', b'"whole"')
#: the chunks with no ``providerMetadata`` in any profile (strict objects): in a call whose start
#: had a carrier, their carriers ride late (codecs/riding.py), so they take no frame of their own
LATE: frozenset[type[Event]] = frozenset((ToolInputDelta, ToolApprovalRequest))
#: a frame of its own saying late entries, when the frame after them has no slot
LATE_HEAD = b'{"type":"data-late","data":{'
_LATE_TAIL = b'},"transient":true}'
_SETTLED = ("approved", "denied")


def approval_id(call_id: str) -> str:
    """The approval id an encoder gives an approval of ``call_id`` that came without one."""
    return "approval-" + call_id


def writes_part_start(e: Event) -> bool:
    """Whether a part start is this message's own, written as a frame where its content begins
    (the step judge takes it for content): not another message's, not one a decoder implied,
    not one whose id looks invented (its data part alone says it)."""
    if type(e) is not TextStart and type(e) is not ReasoningStart:
        return False
    part = e.part_id
    return e.message_id is UNSET and not e.synthetic and (part is UNSET or not part.startswith(PREFIX))


def judged_type(e: Event) -> type:
    """The type the step judge takes an event for: a part start that opens no part frame of this
    message is neutral (its encoder and decoder judge alike)."""
    t = type(e)
    return t if (t is not TextStart and t is not ReasoningStart) or writes_part_start(e) else Event


def _plain(event: Event) -> bool:
    return event.message_id is UNSET and not event.synthetic


class AiSdkEncoder(BracketWriter, Encoder):
    codec = "ai-sdk"
    profile: ClassVar[Profile] = V7
    # _plain decides about the fields every event has; _chunk splices unknown members back
    writes_everywhere = frozenset({"message_id", "synthetic", "extra"})
    artifact_parts = True
    _says_input_start = True

    def __init__(self, framing: Framing | None = None) -> None:
        super().__init__(framing)
        self._step_open = False
        self._tool_in_step = False
        self._steps: StepJudge[Event | None] = StepJudge(part_starts=True)
        self._counts = {"text": 0, "reasoning": 0}
        self._invented: dict[str, str | None] = {"text": None, "reasoning": None}
        self._real: dict[str, list[str]] = {"text": [], "reasoning": []}
        self._approvals: dict[str, str] = {}  # call id → the approval id its request said
        self._held_finish: StepFinish | None = None  # a step's end, until the event after it
        self._text_tail = b"}" + self._tail
        #: per kind, the part whose delta head was made last and that head
        self._heads: dict[str, tuple[str, bytes]] = {}

    # -- frames ---------------------------------------------------------------------------

    def _chunk(self, w: Chunk, event: Event) -> tuple[bytes, bool]:
        tag = w.__struct_config__.tag
        assert isinstance(tag, str)  # (every chunk type has its string tag)
        return self._splice(_encode(w), event, tag)

    def _splice(self, payload: bytes, e: Event, kind: str) -> tuple[bytes, bool]:
        """A chunk with the event's unknown members that the profile lets a chunk of this type
        carry; False when some had to be left out (the event then needs its carrier)."""
        if e.extra is UNSET:
            return payload, True
        allowed = [(k, v) for k, v in e.extra.items() if self.profile.field(kind, k)]
        if allowed:
            members = b",".join(json_encode(k) + b":" + bytes(v) for k, v in allowed)
            payload = payload[:-1] + b"," + members + b"}"
        return payload, len(allowed) == len(e.extra)

    ride_slot = AI_SDK_SLOT  # a chunk with providerMetadata carries its event there (codecs/riding.py)
    late_types = LATE

    def _late_payload(self, members: bytes) -> bytes:
        return LATE_HEAD + members + _LATE_TAIL

    rides_forward = True

    def _has_slot(self, frame: bytes) -> bool:
        """Text and reasoning parts, tool inputs, sources, files: the types whose
        ``providerMetadata`` this profile's client reads."""
        return self.profile.field(frame[9 : frame.index(b'"', 9)].decode(), "providerMetadata")

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        if body.startswith(_BODY_HEADS):  # an artifact's own part: ``id`` and ``data`` of its own
            return b'{"type":' + name + b"," + body + b"}"
        head = b'{"type":' + name
        if type(event) is DataPart and event.id is not UNSET:
            head += b',"id":' + json_encode(event.id)  # what a client reconciles parts by
        tail = b',"transient":true}' if self._transient(event, body) else b"}"
        return head + b',"data":{' + body + b"}" + tail

    def _client_part(self, event: Event) -> Payload:
        tail = b',"transient":true}' if self._transient(event, b"") else b"}"
        return b'{"type":' + carrier_name(event) + b',"data":' + client_data(event) + tail

    def _transient(self, event: Event, body: bytes) -> bool:
        """Whether ``useChat`` should leave a data part out of the message: passing UI state,
        every carrier (streambridge's bookkeeping, which only its decoder reads) and, for a
        live client, any event that is not part of the answer."""
        if type(event) is DataPart and event.transient is not UNSET:
            return event.transient is True or body.startswith(_CARRIER_HEADS)
        if type(event) in TRANSIENT or body.startswith(_CARRIER_HEADS):
            return True
        return self.fidelity == "client" and type(event) not in ANSWER

    # -- structure ------------------------------------------------------------------------

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        """``start`` opens every stream; it names the message when the run start does. A run
        start's other members (run and thread ids, model…) go in its data part, after it."""
        start = event if type(event) is RunStart else RunStart(synthetic=True)
        if rederived_start(start):
            start = RunStart(synthetic=True)  # its id comes back wherever one is needed
        payload, ok = self._chunk(StartW(), start)  # ai's own order: other members, then the id
        if self.fidelity == "client":
            payload = with_run_metadata(payload, start)
        if start.message_id is not UNSET:
            payload = payload[:-1] + b',"messageId":' + json_encode(start.message_id) + b"}"
        own = start.verbatim is not UNSET and start.verbatim.origin == self.codec  # (written back as it came)
        rest = msgspec.structs.replace(
            start, message_id=UNSET, extra=UNSET, event_id=UNSET, verbatim=UNSET if own else start.verbatim
        )
        said = start.message_id is not UNSET or start.extra is not UNSET  # else it reads back invented
        native = invented_start(start) or (ok and said and rest == RunStart())
        self._put(parts, start, [payload], native)

    @handles(RunStart, writes=("message_id",))
    def _run_start(self, e: RunStart, parts: list[bytes]) -> None:
        if e is not self._first:
            self._put(parts, e, [], False)

    def _handle(self, e: Event, parts: list[bytes]) -> None:
        t = type(e)
        held = self._held_finish
        if held is not None:
            self._held_finish = None
            if type(e) is Terminal and self._fails_in_step(e, held):
                self._open_step(parts)  # a step's end says a step was open
                self._reader(StepFinish, parts)  # (what its reader meets next: the error waits for its finish)
                self._failed_step(e, parts)
                return
            self._step_finish(held, parts)
        if t is not StepStart and t is not StepFinish and (not e.synthetic or t in _OPENS_TOOL):
            self._prelude(e, parts)
        super()._handle(e, parts)

    def _prelude(self, e: Event, parts: list[bytes]) -> None:
        """Before an event's frames: the step it needs, the parts it closes, its call's
        announcement; then the held brackets are decided by it."""
        t = type(e)
        if t in _KIND:
            if t is TextDelta or t is ReasoningDelta or self._starts_part(e):
                if self._tool_in_step:
                    self._close_step(parts)
                self._open_step(parts)
            self._close_invented("reasoning" if _KIND[t] == "text" else "text", parts)
        elif t in TOOL_EVENTS:
            if self._invented["text"] is not None or self._invented["reasoning"] is not None:
                self._close_invented("text", parts)
                self._close_invented("reasoning", parts)
            if t in _OPENS_TOOL:
                self._open_step(parts)
            elif type(e) is ToolApprovalRequest:
                self._announce(e.call_id, parts)
        self._reader(judged_type(e), parts)

    def _starts_part(self, e: Event) -> bool:
        """A source's part start this encoder writes as its frame (content begins there, so the
        step it needs opens before it); at client fidelity a part opens with its first delta."""
        if (type(e) is not TextStart and type(e) is not ReasoningStart) or not writes_part_start(e):
            return False
        part = e.part_id
        return self.fidelity != "client" or part is UNSET or part in self._real[_KIND[type(e)]]

    def _open_step(self, parts: list[bytes]) -> None:
        if not self._step_open:
            self._set_step(open_=True)
            self._bracket(StepStart, None, parts)

    def _close_step(self, parts: list[bytes]) -> None:
        if self._step_open:
            self._close_invented("text", parts)
            self._close_invented("reasoning", parts)
            for open_ids in self._real.values():
                open_ids.clear()  # the client forgets them: a delta of one opens it again
            self._set_step(open_=False)
            self._bracket(StepFinish, None, parts)

    def _set_step(self, *, open_: bool) -> None:
        self._step_open = open_
        self._tool_in_step = False

    def _write_bracket(self, t: type, e: Event | None, parts: list[bytes], *, implied: bool) -> None:
        chunk, tag = (_START_STEP, "start-step") if t is StepStart else (_FINISH_STEP, "finish-step")
        if e is None:
            parts.append(self._emit(chunk, ""))
            return
        payload, ok = self._splice(chunk, e, tag)
        payloads: list[Payload] = []
        native = _plain(e) and ok and not implied
        if t is StepFinish:
            payloads = self._close_real()
            native = native and not payloads
        self._put(parts, e, [*payloads, payload], native)

    @handles(StepStart, StepFinish, writes=())
    def _step(self, e: Event, parts: list[bytes]) -> None:
        """A source's step bracket; a synthetic one is implied structure: this encoder closes
        and opens the step with its own brackets where the content after it needs them."""
        t = type(e)
        if e.synthetic:
            return
        if type(e) is StepFinish:
            self._held_finish = e  # an error terminal may follow (see _failed_step)
            return
        self._set_step(open_=True)
        self._bracket(t, e, parts)

    def _step_finish(self, e: StepFinish, parts: list[bytes]) -> None:
        """A source's step end, once the event after it is not a failure that ends the stream."""
        if self._invented["text"] is not None or self._invented["reasoning"] is not None:
            self._close_invented("text", parts)
            self._close_invented("reasoning", parts)
        if not self._step_open:
            self._open_step(parts)
        self._set_step(open_=False)
        self._bracket(StepFinish, e, parts)

    # -- text and reasoning parts -----------------------------------------------------------

    def _plain_text_ok(self) -> bool:
        """Whether a delta may go out as its chunk alone (the fast path): a step open with no
        tool call in it (for the judge too), no bracket or step end waiting. The heads of plain
        deltas follow this encoder's own open part (a delta of one kind closes the other's)."""
        steps = self._steps
        ready = self._step_open and not self._tool_in_step and self._held_finish is None
        ready = ready and steps.step_open and not steps.tool_in_step and not steps.pending
        text, reasoning = self._invented["text"], self._invented["reasoning"]
        self._text_head = self._delta_head("text", text) if ready and text and reasoning is None else b""
        self._reasoning_head = self._delta_head("reasoning", reasoning) if ready and reasoning and text is None else b""
        return ready

    def _opened_head(self, parts: list[bytes], reasoning: bool) -> bytes | None:
        """What :meth:`_prelude` and :meth:`_delta_with` write before a plain delta that opens
        this encoder's part, where no bracket waits and no tool call is in the step: the step's
        ``start-step`` (when none is open), the other kind's end, the part's start."""
        steps = self._steps
        if self._held_finish is not None or self._tool_in_step or steps.pending or steps.tool_in_step:
            return None
        if self._step_open != steps.step_open:
            return None
        kind, other = ("reasoning", "text") if reasoning else ("text", "reasoning")
        invented = self._invented
        if invented[kind] is not None:
            return None  # (open, yet no head: the other kind is open too; its delta closes that)
        opens_step = not self._step_open
        if opens_step:  # the step it needs, held until the delta decides it (after the other's end)
            self._set_step(open_=True)
            self._riders_at_hold = 0
        if invented[other] is not None:
            self._close_invented(other, parts)
        if opens_step:
            parts.append(self._emit(_START_STEP, ""))
        steps.follow(ReasoningDelta if reasoning else TextDelta)  # (the state a step-start's leaves too)
        # the part's start, and the head of its deltas, from one encoding of its id
        part = self._new_invented(kind)
        quoted = json_encode(part)
        parts.append(self._emit(_PART_HEADS[kind, "start"] + quoted + b"}", ""))
        head = self._head + _PART_HEADS[kind, "delta"] + quoted + b',"delta":'
        self._heads[kind] = (part, head)
        # (what _plain_text_ok says now: ready, with this part the one open)
        self._text_head, self._reasoning_head = (b"", head) if reasoning else (head, b"")
        self._text_ready = True
        self._derived_place = None
        return head

    def _part_head(self, reasoning: bool, part_id: str | UnsetType) -> bytes | None:
        """A delta of the source's own part, open here, when no part of the other kind of this
        encoder's is open (the delta would close it)."""
        kind, other = ("reasoning", "text") if reasoning else ("text", "reasoning")
        if part_id is UNSET or self._invented[other] is not None or part_id not in self._real[kind]:
            return None
        return self._delta_head(kind, part_id)

    def _delta_head(self, kind: str, part_id: str) -> bytes:
        """``{"type":"<kind>-delta","id":<part>,"delta":`` framed, as :meth:`_delta_chunk` writes it."""
        made = self._heads.get(kind)
        if made is not None and made[0] == part_id:
            return made[1]
        head = self._head + _PART_HEADS[kind, "delta"] + json_encode(part_id) + b',"delta":'
        self._heads[kind] = (part_id, head)
        return head

    def _part(self, kind: str, what: str, part_id: str) -> bytes:
        return _PART_HEADS[kind, what] + json_encode(part_id) + b"}"

    def _delta_chunk(self, kind: str, part_id: str, text: str) -> bytes:
        return _PART_HEADS[kind, "delta"] + json_encode(part_id) + b',"delta":' + json_encode(text) + b"}"

    def _open_invented(self, kind: str, parts: list[bytes]) -> str:
        part = self._invented[kind]
        if part is None:
            part = self._new_invented(kind)
            parts.append(self._emit(self._part(kind, "start", part), ""))
        return part

    def _new_invented(self, kind: str) -> str:
        self._counts[kind] += 1
        part = f"{PREFIX}{kind}-{self._counts[kind]}"
        self._invented[kind] = part
        return part

    def _close_invented(self, kind: str, parts: list[bytes]) -> None:
        part = self._invented[kind]
        if part is not None:
            self._invented[kind] = None
            parts.append(self._emit(self._part(kind, "end", part), ""))

    def _close_real(self) -> list[Payload]:
        """The ends of the source's parts still open (frames for the event that closes them)."""
        ends: list[Payload] = []
        real = self._real
        if not real["text"] and not real["reasoning"]:  # (the most frequent: none, or invented ones)
            return ends
        for kind, open_ids in real.items():
            ends.extend(self._part(kind, "end", part) for part in open_ids)
            open_ids.clear()
        return ends

    def _delta_with(self, e: TextDelta | ReasoningDelta, kind: str, parts: list[bytes]) -> None:
        if e.message_id is not UNSET:  # another message's text: not this message's parts
            self._put(parts, e, [], False)
            return
        if e.part_id is UNSET:
            part = self._open_invented(kind, parts)
            payload, ok = self._splice(self._delta_chunk(kind, part, e.text), e, kind + "-delta")
            self._put(parts, e, [payload], _plain(e) and ok)
            return
        if e.part_id.startswith(PREFIX):  # looks invented: said by its data part alone
            self._put(parts, e, [], False)
            return
        payloads: list[Payload] = []
        native = _plain(e)
        if e.part_id not in self._real[kind]:
            self._real[kind].append(e.part_id)
            payloads.append(self._part(kind, "start", e.part_id))
            native = False
        payload, ok = self._splice(self._delta_chunk(kind, e.part_id, e.text), e, kind + "-delta")
        self._put(parts, e, [*payloads, payload], native and ok)

    @handles(TextDelta, ReasoningDelta, writes=("text", "part_id"))
    def _delta(self, e: TextDelta | ReasoningDelta, parts: list[bytes]) -> None:
        self._delta_with(e, _KIND[type(e)], parts)

    @handles(TextStart, ReasoningStart, writes=("part_id",))
    def _start(self, e: TextStart | ReasoningStart, parts: list[bytes]) -> None:
        if e.synthetic and e.message_id is UNSET and e.part_id is UNSET and e.extra is UNSET:
            return  # a part a decoder implied: this encoder opens one where text needs it
        kind = _KIND[type(e)]
        if e.message_id is not UNSET or (e.part_id is not UNSET and e.part_id.startswith(PREFIX)):
            self._put(parts, e, [], False)
            return
        if e.part_id is UNSET:  # a part of the primary text the source opened itself
            self._close_invented(kind, parts)
            part = self._new_invented(kind)
            payload, _ = self._splice(self._part(kind, "start", part), e, kind + "-start")
            self._put(parts, e, [payload], False)
            return
        if self.fidelity == "client" and e.part_id not in self._real[kind]:
            return  # its first delta opens it (after the step it needs), as ai does: no empty part
        if e.part_id not in self._real[kind]:
            self._real[kind].append(e.part_id)
        payload, ok = self._splice(self._part(kind, "start", e.part_id), e, kind + "-start")
        self._put(parts, e, [payload], _plain(e) and ok)

    @handles(TextEnd, ReasoningEnd, writes=("part_id",))
    def _end(self, e: TextEnd | ReasoningEnd, parts: list[bytes]) -> None:
        if e.synthetic and e.message_id is UNSET and e.part_id is UNSET and e.extra is UNSET:
            return
        kind = _KIND[type(e)]
        if e.message_id is not UNSET or (e.part_id is not UNSET and e.part_id.startswith(PREFIX)):
            self._put(parts, e, [], False)
            return
        if e.part_id is UNSET:
            part = self._invented[kind]
            self._invented[kind] = None
            frames: list[Payload] = (
                [] if part is None else [self._splice(self._part(kind, "end", part), e, kind + "-end")[0]]
            )
            self._put(parts, e, frames, False)
            return
        if e.part_id not in self._real[kind]:  # the client has no such part: said by its data part
            self._put(parts, e, [], False)
            return
        self._real[kind].remove(e.part_id)
        payload, ok = self._splice(self._part(kind, "end", e.part_id), e, kind + "-end")
        self._put(parts, e, [payload], _plain(e) and ok)

    # -- tools --------------------------------------------------------------------------------

    @handles(ToolInputStart, writes=("call_id", "name"))
    def _input_start(self, e: ToolInputStart, parts: list[bytes]) -> None:
        self._tool_in_step = True
        ends = [] if invented_call(e) else self._close_real()
        payload, ok = self._chunk(ToolInputStartW(tool_call_id=e.call_id, tool_name=e.name), e)
        native = invented_call(e) or (_plain(e) and ok and e.tool_kind is UNSET and e.parent_id is UNSET)
        self._put(parts, e, [*ends, payload], native and not ends)

    @handles(ToolInputDelta, writes=("call_id", "delta"))
    def _input_delta(self, e: ToolInputDelta, parts: list[bytes]) -> None:
        payload, ok = self._chunk(ToolInputDeltaW(tool_call_id=e.call_id, input_text_delta=e.delta), e)
        self._put(parts, e, [payload], _plain(e) and ok)

    @handles(ToolCall, writes=("call_id", "name", "input", "arguments_json", "status", "failure"))
    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        self._tool_in_step = True
        ends = [] if invented_call(e) else self._close_real()
        native = (
            _plain(e)
            and e.tool_kind is UNSET
            and e.parent_id is UNSET
            and e.started_at is UNSET
            and e.ended_at is UNSET
            and e.result_text is UNSET
            and e.signature is UNSET
        )
        failure = e.failure
        input_error = (
            e.status == "failed"
            and failure is not UNSET
            and failure.status == "error"
            and failure == Failure(status="error", message=failure.message)
            and self.profile.allows("tool-input-error")
        )
        native = native and (input_error or (e.status is UNSET and failure is UNSET))
        raw_input, native, carried = input_of(e, native)  # (carried in the spelling read back)
        w: Chunk
        if input_error and failure is not UNSET:
            w = ToolInputErrorW(tool_call_id=e.call_id, tool_name=e.name, input=raw_input, error_text=failure.message)
        else:
            w = ToolInputAvailableW(tool_call_id=e.call_id, tool_name=e.name, input=raw_input)
        payload, ok = self._chunk(w, e)
        self._put(parts, carried, [*ends, payload], (native and ok and not ends) or (invented_call(e) and not ends))

    @handles(ToolOutput, writes=("call_id", "output", "is_error"))
    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        payload, ok = self._chunk(ToolOutputAvailableW(tool_call_id=e.call_id, output=e.output), e)
        self._put(parts, e, [payload], _plain(e) and ok and e.is_error is UNSET)

    @handles(ToolError, writes=("call_id", "error", "failure", "output"))
    def _tool_error(self, e: ToolError, parts: list[bytes]) -> None:
        payload, ok = self._chunk(ToolOutputErrorW(tool_call_id=e.call_id, error_text=e.error), e)
        self._put(parts, e, [payload], _plain(e) and ok and e.failure is UNSET and e.output is UNSET)

    @handles(ToolDenied, writes=("call_id", "reason", "failure"))
    def _denied(self, e: ToolDenied, parts: list[bytes]) -> None:
        """``tool-output-denied`` (ai ≥ 6); an older client gets ``tool-output-error`` under
        the denial's data part, so its call settles too."""
        native = _plain(e) and e.reason is UNSET and e.failure is UNSET
        if self.profile.allows("tool-output-denied"):
            payload, ok = self._chunk(ToolOutputDeniedW(tool_call_id=e.call_id), e)
        else:
            payload, ok = _encode(ToolOutputErrorW(tool_call_id=e.call_id, error_text=DENIED_TEXT)), False
        self._put(parts, e, [payload], native and ok)

    @handles(ToolApprovalRequest, writes=("call_id",))
    def _approval_request(self, e: ToolApprovalRequest, parts: list[bytes]) -> None:
        if not self.profile.allows("approvals"):
            self._put(parts, e, [], False)
            return
        extra = dict(e.extra) if e.extra is not UNSET else {}
        said = extra.pop("approvalId", None)
        approval = _str(said) if said is not None else None
        ok = said is None or approval is not None
        approval = approval or approval_id(e.call_id)
        self._approvals[e.call_id] = approval
        w = ToolApprovalRequestW(approval_id=approval, tool_call_id=e.call_id)
        probe = msgspec.structs.replace(e, extra=extra or UNSET)
        payload, ok2 = self._chunk(w, probe)
        native = _plain(e) and ok and ok2
        native = native and e.approver is UNSET and e.expires_at is UNSET and e.reason is UNSET
        native = native and e.confirmation is UNSET and e.target is UNSET
        self._put(parts, e, [payload], native)

    @handles(ToolApprovalSettled, writes=("call_id", "status", "reason"))
    def _approval_settled(self, e: ToolApprovalSettled, parts: list[bytes]) -> None:
        approval = self._approvals.get(e.call_id)  # the client settles the approval it was asked
        if approval is None or not self.profile.allows("tool-approval-response") or e.status not in _SETTLED:
            self._put(parts, e, [], False)
            return
        w = ToolApprovalResponseW(approval_id=approval, approved=e.status == "approved", reason=e.reason)
        payload, ok = self._chunk(w, e)
        native = _plain(e) and ok and e.approver is UNSET and e.decided_by is UNSET
        native = native and e.decided_via is UNSET and e.remember is UNSET
        self._put(parts, e, [payload], native)

    # -- the rest -------------------------------------------------------------------------------

    @handles(Sources, writes=("sources",))
    def _sources(self, e: Sources, parts: list[bytes]) -> None:
        """One ``source-url`` per source; native for one url source with nothing else to say."""
        payloads: list[Payload] = []
        native = _plain(e) and len(e.sources) == 1
        for s in e.sources:
            if s.url is UNSET:
                native = False
                continue
            w = SourceUrlW(source_id=s.id, url=s.url, title=s.title or UNSET)
            payload, ok = self._chunk(w, e)
            native = native and ok and s.kind == "url"
            native = native and s.snippet is UNSET and s.entity_logical_name is UNSET
            native = native and s.record_id is UNSET and s.score is UNSET
            payloads.append(payload)
        self._put(parts, e, payloads, native and bool(payloads))

    @handles(MessageMetadata, writes=("metadata",))
    def _message_metadata(self, e: MessageMetadata, parts: list[bytes]) -> None:
        payload, ok = self._chunk(MessageMetadataW(message_metadata=e.metadata), e)
        self._put(parts, e, [payload], _plain(e) and ok)

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        """This codec's own data part (``{type, id?, data, transient?}``) or a chunk of a type
        it keeps whole, written back as it came; any other one in its data part."""
        if e.origin != self.codec:
            self._put(parts, e, [], False)
            return
        if whole_frame(e.name, e.data):
            ok = e.id is UNSET and e.transient is UNSET and e.extra is UNSET
            self._put(parts, e, [bytes(e.data)], _plain(e) and ok)
            return
        payload = data_part(e.name, e.id, e.data, e.transient)
        payload, ok = self._splice(payload, e, "data")
        self._put(parts, e, [payload], _plain(e) and ok)

    @handles(
        Terminal,
        writes=(
            *("status", "text", "usage", "failure", "provider", "model", "guarded"),
            *("correlation_id", "turn_id", "result", "error_info"),
        ),
    )
    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        """``finish``, ``abort``, or ``error`` then ``finish``, then ``[DONE]``; the parts still
        open are closed first."""
        frames = self._invented_ends()
        lead = len(frames)
        real = self._close_real()
        frames.extend(real)
        native = not real and self._says_all(e)
        ok = True
        if e.status == "cancelled":
            payload, ok = self._chunk(AbortW(), e)
            frames.append(payload)
            native = native and e.failure is UNSET
        else:
            if e.status != "succeeded":
                frames.append(_encode(ErrorW(error_text=_error_text(e))))
                native = native and e.status == "error" and _native_failure(e)
            else:
                native = native and e.failure is UNSET
            payload, ok = self._finish(e)
            frames.append(payload)
        frames.append(DONE)
        self._put(parts, e, frames, native and ok, lead)

    def _invented_ends(self) -> list[Payload]:
        """The ends of this encoder's own open parts (frames for the event that closes them)."""
        frames: list[Payload] = []
        for kind in ("text", "reasoning"):
            part = self._invented[kind]
            if part is not None:
                self._invented[kind] = None
                frames.append(self._part(kind, "end", part))
        return frames

    def _says_all(self, e: Terminal) -> bool:
        """Whether the terminal's chunks say all of it but its status and failure."""
        return _plain(e) and says_only_outcome(e, self._assembled())

    def _fails_in_step(self, e: Terminal, step_end: StepFinish) -> bool:
        """A plain step end followed by an error that ``error {errorText}`` says whole: ai's
        own failed stream (its decoder reads the step end back where it stood)."""
        return (
            e.status == "error"
            and bare(step_end)
            and _plain(step_end)
            and _native_failure(e)
            and self._says_all(e)
            and self._finish(e)[1]
        )

    def _finish(self, e: Terminal) -> tuple[bytes, bool]:
        """The ``finish`` chunk: a failure's says ``finishReason: "error"`` unless the source said
        one; for a live client, every finish says its reason and the run's usage, as ai's own
        ``streamText`` server does (:func:`client_finish`)."""
        said = e.extra is not UNSET and "finishReason" in e.extra
        if self.fidelity == "client":
            return self._splice(client_finish(e, self.profile.allows("finishReason")), e, "finish")
        if e.status != "succeeded" and self.profile.allows("finishReason") and not said:
            return self._splice(_ERROR_FINISH, e, "finish")
        return self._splice(_encode(FinishW()), e, "finish")

    def _failed_step(self, e: Terminal, parts: list[bytes]) -> None:
        """ai's failed stream: ``error`` inside the step, ``finish-step``, ``finish``: the
        source's own parts stay as it left them; only this encoder's are closed."""
        frames = self._invented_ends()
        lead = len(frames)
        frames.append(_encode(ErrorW(error_text=_error_text(e))))
        frames.append(_encode(FinishStepW()))
        frames += [self._finish(e)[0], DONE]
        self._set_step(open_=False)
        self._put(parts, e, frames, True, lead)

    def _cared(self, event: Event, parts: list[bytes]) -> Event:
        if type(event) is Terminal and self._whole_text:
            self._reader(Terminal, parts)  # held brackets go before an answer that came whole
        return super()._cared(event, parts)


def _str(raw: Raw) -> str | None:
    try:
        value = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None


def _error_text(e: Terminal) -> str:
    if e.failure is not UNSET:
        return e.failure.message
    return DEFAULT_MESSAGES[e.status]


def _native_failure(e: Terminal) -> bool:
    """Whether ``error {errorText}`` says all of an error terminal's failure: none, a message
    alone (not the default one, which reads back as none), or the truncation terminal."""
    f = e.failure
    if f is UNSET:
        return True
    if f.status != "error" or f.recoverable is not UNSET or f.retry_after_ms is not UNSET:
        return False
    if f.correlation_id is not UNSET:
        return False
    if f.code is UNSET:
        return f.message not in (DEFAULT_MESSAGES["error"], TRUNCATED_MESSAGE)
    return f.code == TRUNCATED_CODE and f.message == TRUNCATED_MESSAGE


def data_part(name: str, part_id: str | msgspec.UnsetType, data: Raw, transient: bool | msgspec.UnsetType) -> bytes:
    """``{"type":"data-<name>","id":…,"data":…,"transient":…}`` (id and transient when set)."""
    out = b'{"type":' + json_encode("data-" + name)
    if part_id is not UNSET:
        out += b',"id":' + json_encode(part_id)
    out += b',"data":' + bytes(data)
    if transient is not UNSET:
        out += b',"transient":' + (b"true" if transient else b"false")
    return out + b"}"


def whole_frame(name: str, data: Raw) -> bool:
    """Whether a data part of this codec holds a whole chunk (a type kept whole): a JSON object
    whose ``type`` is the part's name."""
    raw = bytes(data)
    if not raw.startswith(b"{"):
        return False
    try:
        members = envelope_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    kind = members.get("type")
    return kind is not None and bytes(kind) == json_encode(name)
