"""The ag-ui encoder: model events in, AG-UI 1.0 events out, in the order the spec's rules and
the TypeScript client's ``verifyEvents`` accept (AG-UI 1.0 §4).

Ordering repair, all of it read back by the decoder as invented (no carrier describes it):

* ``RUN_STARTED`` comes first, with the source's ids, else ids derived from the input
  (``run-<hash>``, ``thr-<run id>``);
* text and reasoning without a message of their own get one, numbered per stream
  (``sb-text-<n>`` / ``sb-reasoning-<n>``, roles ``assistant`` / ``reasoning``), closed before
  the other kind, before tool calls and before the terminal; empty deltas (which 0.x clients
  reject) go in their carrier only;
* a tool call is opened (``TOOL_CALL_START``) before its arguments and closed
  (``TOOL_CALL_END``) once; outcomes of calls never announced get an announcement first (a call
  named ``unknown`` with no arguments); a call's arguments after its end, a second start, or
  an end of a call that is not open go in carriers only;
* a step the source named is written with its name, finished at most once; one it did not name
  gets no frame (it rides forward on the next event's ``rawEvent``);
* ``RUN_FINISHED`` comes after every message, tool call and step is closed (the closing frames of
  the source's own items are covered by the terminal's carrier); ``RUN_ERROR`` needs none;
  nothing follows the terminal.

What AG-UI has no place for rides on its event's ``rawEvent`` (codecs/riding.py), an event with
no frame of its own that a client is not shown rides forward on the next one's, and the rest travel in ``CUSTOM {name: "streambridge.carrier", value: {name,
covers?, event}}`` events, which AG-UI consumers ignore (``CUSTOM`` is legal anywhere in a run).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    DataPart,
    Elicitation,
    Event,
    MessageMetadata,
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
    ToolApprovalRequest,
    ToolApprovalSettled,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    encode_event,
)
from ..carrier import TOOL_EVENTS, Payload
from ..encoder import Encoder, handles
from ..envelope import input_of, json_encode, json_object, splice_extra
from ..framing import Framing
from ..riding import AG_UI_SLOT
from ..synthetic import invented_call, invented_start, read_call
from ..terminals import default_failure, says_only_outcome
from .decoder import custom_is_data, whole_event
from .native import with_usage
from .readings import (
    CANCELLED,
    error_code,
    interrupt_id,
    interrupt_of,
    outcome_of,
    read_arguments,
    read_interrupt,
    read_outcome,
    read_run_error,
    read_start,
)
from .wire import CARRIER_NAME, KEPT, PREFIX, kept

__all__ = ["DENIED_TEXT", "AgUiEncoder", "AgUiEvent"]

#: what a denied call's ``TOOL_CALL_RESULT`` says (under the denial's carrier)
DENIED_TEXT = "The tool call was denied."
#: the CUSTOM name prefix of an artifact refusal that names no artifact (so no activity)
ARTIFACT_PREFIX = b"streambridge."
_CARRIER_HEAD = b'{"type":"CUSTOM","name":' + json_encode(CARRIER_NAME) + b',"value":{"name":'
_KIND = {TextDelta: "text", TextStart: "text", TextEnd: "text"}
_KIND.update({ReasoningDelta: "reasoning", ReasoningStart: "reasoning", ReasoningEnd: "reasoning"})
_ROLES = {"text": b"assistant", "reasoning": b"reasoning"}
_TYPES = {"text": b"TEXT_MESSAGE", "reasoning": b"REASONING_MESSAGE"}
#: per kind, the heads of a message's frames up to its id, and its start's default role, made once
_HEADS = {
    (kind, what): b'{"type":"' + _TYPES[kind] + what + b'","messageId":'
    for kind in _TYPES
    for what in (b"_START", b"_CONTENT", b"_END")
}
_DEFAULT_ROLES = {kind: b',"role":"' + role + b'"}' for kind, role in _ROLES.items()}
#: outcomes that settle a call's waiting approval or elicitation
_SETTLES = (ToolApprovalSettled, ToolOutput, ToolError, ToolDenied)

AgUiEvent = bytes


def _plain(event: Event) -> bool:
    return event.message_id is UNSET and not event.synthetic


def _bare(event: Event) -> Event:
    """The event as a decoder reads it from a native frame: its unknown members (written back
    around the frame's own), its SSE id (on the frame's line) and its frame as received (an
    AG-UI one, written back as it came) compared apart."""
    own = event.verbatim is not UNSET and event.verbatim.origin == "ag-ui"
    if event.extra is UNSET and event.event_id is UNSET and not own:
        return event
    return msgspec.structs.replace(event, extra=UNSET, event_id=UNSET, verbatim=UNSET if own else event.verbatim)


class _Split:
    """An event's unknown members with the ones a frame writes in place taken out."""

    __slots__ = ("rest", "taken")

    def __init__(self, event: Event, *names: str) -> None:
        if event.extra is UNSET:  # (nearly every event: nothing to look for)
            self.taken: dict[str, Raw] = {}
            self.rest: dict[str, Raw] = {}
            return
        rest = dict(event.extra)
        self.taken = {name: rest.pop(kept(name)) for name in names if kept(name) in rest}
        self.rest = rest

    def get(self, name: str) -> bytes | None:
        raw = self.taken.get(name)
        return None if raw is None else bytes(raw)


class AgUiEncoder(Encoder):
    codec = "ag-ui"
    # _plain decides about the fields every event has; every frame splices the unknown members back
    names_messages = True
    writes_everywhere = frozenset({"message_id", "synthetic", "extra"})
    _says_input_start = True
    artifact_parts = True

    def __init__(self, framing: Framing | None = None) -> None:
        super().__init__(framing)
        self._ids = (b"", b"")  # the run's (threadId, runId) as JSON
        self._counts = {"text": 0, "reasoning": 0, "result": 0}
        self._invented: dict[str, str | None] = {"text": None, "reasoning": None}
        self._real: dict[str, list[str]] = {"text": [], "reasoning": []}  # the source's open messages
        self._steps: list[str] = []  # open step names
        self._open: dict[str, tuple[str, list[str]]] = {}  # open tool calls: name, argument text
        self._closed: set[str] = set()
        self._stops: dict[str, bytes] = {}  # waiting approvals and elicitations: interrupt id → interrupt
        self._stop_calls: dict[str, list[str]] = {}  # call id → its waiting interrupt ids
        self._said_stops: set[str] = set()  # every interrupt id an event said
        self._metadata: dict[str, Any] = {}  # (client fidelity) message metadata, for RUN_FINISHED
        self._waiting: list[ToolApprovalRequest | Elicitation] = []  # said by the outcome alone, if it comes next
        self._text_tail = b"}" + self._tail
        #: per kind, the message whose content head was made last and that head
        self._heads: dict[str, tuple[str, bytes]] = {}

    # -- frames ---------------------------------------------------------------------------------

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        if body.startswith(b'"id":'):  # an artifact's own part: an activity whose message id is the ref
            ref, data = body[5:].split(b',"data":', 1)
            head = b'{"type":"ACTIVITY_SNAPSHOT","messageId":' + ref + b',"activityType":' + name
            return head + b',"content":' + data + b"}"
        if body.startswith(b'"data":'):  # a refusal without a ref: no activity to replace
            return b'{"type":"CUSTOM","name":"' + ARTIFACT_PREFIX + name[1:] + b',"value":' + body[7:] + b"}"
        return _CARRIER_HEAD + name + b"," + body + b"}}"

    def _frame_of(self, head: bytes, members: dict[str, Raw]) -> bytes:
        """``head`` (an object's opening and known members, without its ``}``) with the unknown
        members after them."""
        return splice_extra(head + b"}", members) if members else head + b"}"

    def _carry_only(self, e: Event, parts: list[bytes]) -> None:
        """AG-UI has no place (or no legal place here) for the event: its carrier says it."""
        self._put(parts, e, [], False)

    # -- structure ------------------------------------------------------------------------------

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        """``RUN_STARTED`` opens every stream: the source's ids, or ids derived from the input. A
        run start's other members (message id, model…) go in its carrier, after it."""
        start = event if type(event) is RunStart else RunStart(synthetic=True)
        run_id = start.run_id if start.run_id is not UNSET else self._derived("run-")
        thread_id = start.thread_id if start.thread_id is not UNSET else "thr-" + run_id
        self._ids = (json_encode(thread_id), json_encode(run_id))
        head = b'{"type":"RUN_STARTED","threadId":' + self._ids[0] + b',"runId":' + self._ids[1]
        payload = self._frame_of(head, start.extra if start.extra is not UNSET else {})
        native = invented_start(start) or (not start.synthetic and read_start(thread_id, run_id) == _bare(start))
        self._put(parts, start, [payload], native)

    @handles(RunStart, writes=("run_id", "thread_id"))
    def _run_start(self, e: RunStart, parts: list[bytes]) -> None:
        if e is not self._first:  # a second run start: AG-UI runs do not nest
            self._carry_only(e, parts)

    def _handle(self, e: Event, parts: list[bytes]) -> None:
        t = type(e)
        if t in TOOL_EVENTS and (self._invented["text"] is not None or self._invented["reasoning"] is not None):
            self._close_invented("text", parts)
            self._close_invented("reasoning", parts)
        super()._handle(e, parts)

    @handles(StepStart, StepFinish, writes=())
    def _step(self, e: StepStart | StepFinish, parts: list[bytes]) -> None:
        """A step the source named; a synthetic one (a bracket a decoder implied) is not
        written: AG-UI steps are labels, which no client needs. Nor is a step whose source
        named none (a model call's bracket): only a name this encoder would invent. It rides on
        the next frame at ``exact`` (codecs/riding.py), and is not said at all to a live client."""
        if e.synthetic:
            return
        split = _Split(e, "stepName")
        said = split.get("stepName")
        if said is None and self.fidelity == "client":
            return
        name = msgspec.json.decode(said) if said is not None else None
        if not isinstance(name, str | None):
            self._carry_only(e, parts)
            return
        if type(e) is StepStart:
            if name is None or name in self._steps:  # unnamed, or a name already open
                self._carry_only(e, parts)
                return
            self._steps.append(name)
            native, kind = True, b"STEP_STARTED"
        else:
            top = self._steps[-1] if self._steps else None
            name = name if name is not None else top
            if name is None or name not in self._steps:  # never finish a step that is not open
                self._carry_only(e, parts)
                return
            self._steps.remove(name)
            native = (name == top) == (said is None)
            kind = b"STEP_FINISHED"
        head = b'{"type":"' + kind + b'","stepName":' + json_encode(name)
        self._put(parts, e, [self._frame_of(head, split.rest)], _plain(e) and native)

    # -- text and reasoning ---------------------------------------------------------------------

    def _start_frame(self, kind: str, message_id: str, role: bytes | None = None) -> bytes:
        head = _HEADS[kind, b"_START"] + json_encode(message_id)
        return head + (b',"role":' + role + b"}" if role else _DEFAULT_ROLES[kind])

    def _end_frame(self, kind: str, message_id: str) -> bytes:
        return _HEADS[kind, b"_END"] + json_encode(message_id) + b"}"

    def _content_frame(self, kind: str, message_id: str, text: str) -> bytes:
        return _HEADS[kind, b"_CONTENT"] + json_encode(message_id) + b',"delta":' + json_encode(text) + b"}"

    def _open_invented(self, kind: str, parts: list[bytes]) -> str:
        part = self._invented[kind]
        if part is None:
            self._close_invented("reasoning" if kind == "text" else "text", parts)
            part = self._new_invented(kind)
            parts.append(self._emit(self._start_frame(kind, part), ""))
        return part

    def _new_invented(self, kind: str) -> str:
        self._counts[kind] += 1
        part = f"{PREFIX}{kind}-{self._counts[kind]}"
        self._invented[kind] = part
        return part

    def _close_invented(self, kind: str, parts: list[bytes]) -> None:
        end = self._invented_end(kind)
        if end is not None:
            parts.append(self._emit(end, ""))

    def _invented_end(self, kind: str) -> bytes | None:
        """The end of the invented message of ``kind`` when one is open (unframed)."""
        part, self._invented[kind] = self._invented[kind], None
        return None if part is None else self._end_frame(kind, part)

    def _plain_text_ok(self) -> bool:
        """Whether a delta may go out as its content event alone (the fast path): no approval
        waits to be let out before it. The heads of plain deltas follow this encoder's own open
        messages."""
        ready = not self._waiting
        text, reasoning = self._invented["text"], self._invented["reasoning"]
        self._text_head = self._content_head("text", text) if ready and text else b""
        self._reasoning_head = self._content_head("reasoning", reasoning) if ready and reasoning else b""
        return ready

    def _opened_head(self, parts: list[bytes], reasoning: bool) -> bytes | None:
        """What :meth:`_delta` writes before a plain delta that opens this encoder's message,
        where no approval waits: the other kind's end, the message's start."""
        kind, other = ("reasoning", "text") if reasoning else ("text", "reasoning")
        if self._waiting or self._invented[kind] is not None:
            return None
        if self._invented[other] is not None:
            self._close_invented(other, parts)
        # the message's start, and the head of its content, from one encoding of its id
        part = self._new_invented(kind)
        quoted = json_encode(part)
        parts.append(self._emit(_HEADS[kind, b"_START"] + quoted + _DEFAULT_ROLES[kind], ""))
        head = self._head + _HEADS[kind, b"_CONTENT"] + quoted + b',"delta":'
        self._heads[kind] = (part, head)
        # (what _plain_text_ok says now: ready, with this message the one open)
        self._text_head, self._reasoning_head = (b"", head) if reasoning else (head, b"")
        self._text_ready = True
        self._derived_place = None
        return head

    def _part_head(self, reasoning: bool, part_id: str | UnsetType) -> bytes | None:
        """A delta of the source's own message, open here."""
        kind = "reasoning" if reasoning else "text"
        return None if part_id is UNSET or part_id not in self._real[kind] else self._content_head(kind, part_id)

    def _content_head(self, kind: str, message_id: str) -> bytes:
        """``{"type":"<KIND>_CONTENT","messageId":<id>,"delta":`` framed, as :meth:`_content_frame`
        writes it."""
        made = self._heads.get(kind)
        if made is not None and made[0] == message_id:
            return made[1]
        head = self._head + _HEADS[kind, b"_CONTENT"] + json_encode(message_id) + b',"delta":'
        self._heads[kind] = (message_id, head)
        return head

    def write_deltas(
        self,
        parts: list[bytes],
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> bool:
        """An empty delta (which 0.x clients reject) goes in its carrier only: a run with one is
        written one event at a time."""
        return "" not in texts and super().write_deltas(parts, texts, reasoning, ids, part_id)

    def _fast_text(self, event: TextDelta) -> bytes | None:
        return super()._fast_text(event) if event.text else None

    @handles(TextDelta, ReasoningDelta, writes=("text", "part_id"))
    def _delta(self, e: TextDelta | ReasoningDelta, parts: list[bytes]) -> None:
        kind = _KIND[type(e)]
        if e.message_id is not UNSET and e.text and e.part_id is UNSET and not e.message_id.startswith(PREFIX):
            self._other_message(e, kind, e.message_id, parts)
            return
        if e.message_id is not UNSET or not e.text or (e.part_id is not UNSET and e.part_id.startswith(PREFIX)):
            self._carry_only(e, parts)  # another message's part, empty (0.x rejects it), or looks invented
            return
        rest = e.extra if e.extra is not UNSET else {}
        if e.part_id is UNSET:
            part = self._open_invented(kind, parts)
            self._put(parts, e, [self._frame_of(self._content_frame(kind, part, e.text)[:-1], rest)], _plain(e))
            return
        payloads: list[Payload] = []
        if e.part_id not in self._real[kind]:  # never content for a message that is not open
            self._real[kind].append(e.part_id)
            payloads.append(self._start_frame(kind, e.part_id))
        payloads.append(self._frame_of(self._content_frame(kind, e.part_id, e.text)[:-1], rest))
        self._put(parts, e, payloads, _plain(e) and len(payloads) == 1)

    def _other_message(self, e: TextDelta | ReasoningDelta, kind: str, message_id: str, parts: list[bytes]) -> None:
        """Another message's text (agentkit's interleaved messages): AG-UI messages have ids of
        their own, so clients show it as that message; its carrier says it was another message's."""
        payloads: list[Payload] = []
        if message_id not in self._real[kind]:
            self._real[kind].append(message_id)
            payloads.append(self._start_frame(kind, message_id))
        payloads.append(self._content_frame(kind, message_id, e.text))
        self._put(parts, e, payloads, False)

    @handles(TextStart, ReasoningStart, writes=("part_id",))
    def _start(self, e: TextStart | ReasoningStart, parts: list[bytes]) -> None:
        kind = _KIND[type(e)]
        if e.synthetic and e.message_id is UNSET and e.part_id is UNSET and e.extra is UNSET:
            return  # a message a decoder implied: this encoder opens one where text needs it
        if e.message_id is not UNSET or (e.part_id is not UNSET and e.part_id.startswith(PREFIX)):
            self._carry_only(e, parts)
            return
        split = _Split(e, "role")
        if e.part_id is UNSET:  # the primary text's message, opened by the source itself
            self._close_invented(kind, parts)
            payload = self._start_frame(kind, self._new_invented(kind), split.get("role"))
            self._put(parts, e, [payload], False)
            return
        if e.part_id in self._real[kind]:  # never open a message that is open
            self._carry_only(e, parts)
            return
        self._real[kind].append(e.part_id)
        role = split.get("role")
        payload = self._frame_of(self._start_frame(kind, e.part_id, role)[:-1], split.rest)
        self._put(
            parts, e, [payload], _plain(e) and role != b'"' + _ROLES[kind] + b'"'
        )  # (the default reads as unsaid)

    @handles(TextEnd, ReasoningEnd, writes=("part_id",))
    def _end(self, e: TextEnd | ReasoningEnd, parts: list[bytes]) -> None:
        kind = _KIND[type(e)]
        if e.synthetic and e.message_id is UNSET and e.part_id is UNSET and e.extra is UNSET:
            self._close_invented(kind, parts)  # a message's end a decoder implied (0.x thinking)
            return
        if e.message_id is not UNSET or (e.part_id is not UNSET and e.part_id.startswith(PREFIX)):
            self._carry_only(e, parts)
            return
        if e.part_id is UNSET:
            part = self._invented[kind]
            self._invented[kind] = None
            self._put(parts, e, [] if part is None else [self._end_frame(kind, part)], False)
            return
        if e.part_id not in self._real[kind]:  # never end a message that is not open
            self._carry_only(e, parts)
            return
        self._real[kind].remove(e.part_id)
        rest = e.extra if e.extra is not UNSET else {}
        self._put(parts, e, [self._frame_of(self._end_frame(kind, e.part_id)[:-1], rest)], _plain(e))

    # -- tools ----------------------------------------------------------------------------------

    def _call_start(self, call_id: str, name: str, parent: bytes | None = None) -> bytes:
        head = (
            b'{"type":"TOOL_CALL_START","toolCallId":' + json_encode(call_id) + b',"toolCallName":' + json_encode(name)
        )
        return head + (b',"parentMessageId":' + parent if parent is not None else b"") + b"}"

    def _call_args(self, call_id: str, delta: str) -> bytes:
        return (
            b'{"type":"TOOL_CALL_ARGS","toolCallId":' + json_encode(call_id) + b',"delta":' + json_encode(delta) + b"}"
        )

    def _call_end(self, call_id: str) -> bytes:
        return b'{"type":"TOOL_CALL_END","toolCallId":' + json_encode(call_id) + b"}"

    @handles(ToolInputStart, writes=("call_id", "name"))
    def _input_start(self, e: ToolInputStart, parts: list[bytes]) -> None:
        if e.call_id in self._open or e.call_id in self._closed:  # never open a call twice
            self._carry_only(e, parts)
            return
        self._open[e.call_id] = (e.name, [])
        split = _Split(e, "parentMessageId")
        payload = self._frame_of(self._call_start(e.call_id, e.name, split.get("parentMessageId"))[:-1], split.rest)
        probe = read_call(ToolInputStart(call_id=e.call_id, name=e.name))
        self._put(
            parts, e, [payload], probe == _bare(msgspec.structs.replace(e, extra=UNSET)) and e.message_id is UNSET
        )

    @handles(ToolInputDelta, writes=("call_id", "delta"))
    def _input_delta(self, e: ToolInputDelta, parts: list[bytes]) -> None:
        call = self._open.get(e.call_id)
        if call is None:  # no arguments after a call's end
            self._carry_only(e, parts)
            return
        call[1].append(e.delta)
        rest = e.extra if e.extra is not UNSET else {}
        self._put(parts, e, [self._frame_of(self._call_args(e.call_id, e.delta)[:-1], rest)], _plain(e))

    @handles(ToolCall, writes=("call_id", "name", "input", "arguments_json"))
    def _tool_call(self, e: ToolCall, parts: list[bytes]) -> None:
        """The end of a streamed call; a whole call (or an invented announcement) as start,
        arguments and end. Native only where the decoder reads the frames back as this call
        (argument text that is JSON reads back as the input); a carried call is carried in that
        spelling, so it comes back the same whichever way it went."""
        call_id = e.call_id
        _, _, carried = input_of(e, False)
        if call_id in self._closed:
            self._carry_only(carried, parts)
            return
        rest = e.extra if e.extra is not UNSET else {}
        end = self._frame_of(self._call_end(call_id)[:-1], rest)
        self._closed.add(call_id)
        streamed = self._open.pop(call_id, None)
        if invented_call(e) and streamed is None:
            self._put(parts, e, [self._call_start(call_id, e.name), end], True)
            return
        if streamed is not None:
            probe = read_arguments(call_id, streamed[0], "".join(streamed[1]))
            self._put(parts, carried, [end], e.message_id is UNSET and probe == _bare(carried))
            return
        text = _arguments(carried)
        payloads: list[Payload] = [self._call_start(call_id, e.name)]
        if text:
            payloads.append(self._call_args(call_id, text))
        self._put(parts, carried, [*payloads, end], False)

    def _result(self, e: Event, call_id: str, content: bytes) -> tuple[bytes, bool]:
        """``TOOL_CALL_RESULT``: a new message (``sb-result-<n>``, unless the source named it);
        whether its message id reads back as the event says it (the decoder counts the same)."""
        split = _Split(e, "messageId")
        said = split.get("messageId")
        derived = json_encode(f"{PREFIX}result-{self._counts['result'] + 1}")
        ok = True
        if said is None or said == derived:
            self._counts["result"] += 1
            ok = said is None
            said = derived
        head = b'{"type":"TOOL_CALL_RESULT","messageId":' + said + b',"toolCallId":' + json_encode(call_id)
        return self._frame_of(head + b',"content":' + content, split.rest), ok

    def _settle(self, call_id: str) -> None:
        for stop in self._stop_calls.pop(call_id, []):
            self._stops.pop(stop, None)

    @handles(ToolOutput, writes=("call_id", "output", "is_error"))
    def _tool_output(self, e: ToolOutput, parts: list[bytes]) -> None:
        self._settle(e.call_id)
        raw = bytes(e.output)
        text = raw[:1] == b'"'  # a text result is the content itself; structured data is serialized into it
        payload, ok = self._result(e, e.call_id, raw if text else json_encode(raw.decode()))
        self._put(parts, e, [payload], _plain(e) and ok and text and e.is_error is UNSET)

    @handles(ToolError, writes=("call_id", "error", "failure", "output"))
    def _tool_error(self, e: ToolError, parts: list[bytes]) -> None:
        self._settle(e.call_id)
        payload, _ = self._result(e, e.call_id, json_encode(e.error))
        self._put(parts, e, [payload], False)  # (AG-UI results have no error flag)

    @handles(ToolDenied, writes=("call_id", "reason", "failure"))
    def _denied(self, e: ToolDenied, parts: list[bytes]) -> None:
        self._settle(e.call_id)
        payload, _ = self._result(e, e.call_id, json_encode(e.reason if e.reason is not UNSET else DENIED_TEXT))
        self._put(parts, e, [payload], False)

    @handles(ToolApprovalRequest, Elicitation, writes=("call_id", "reason", "expires_at", "request"))
    def _stop(self, e: ToolApprovalRequest | Elicitation, parts: list[bytes]) -> None:
        """Said by its carrier where it happens (for a live client, nowhere but in the outcome);
        still waiting when the run ends, it is an interrupt of ``RUN_FINISHED``'s outcome. One the interrupt says all of waits: right
        before a ``RUN_FINISHED`` written natively, the interrupt alone says it (the decoder
        makes it from the outcome), else its carrier goes out before whatever comes next."""
        stop = interrupt_id(e)
        new = stop not in self._said_stops
        self._said_stops.add(stop)
        if stop not in self._stops:
            self._stops[stop] = interrupt_of(e)
            self._stop_calls.setdefault(e.call_id, []).append(stop)
        if self.fidelity == "client":
            return  # a live client reads it where AG-UI says it: an interrupt of RUN_FINISHED's outcome
        if new and _plain(e) and e.event_id is UNSET and e.verbatim is UNSET:
            said = read_interrupt(Raw(self._stops[stop]))
            if encode_event(said) == encode_event(e):
                self._waiting.append(e)
                return
        self._let_out(parts)
        self._carry_only(e, parts)

    def write_event(self, event: Event, parts: list[bytes]) -> None:
        t = type(event)
        stop = t is ToolApprovalRequest or t is Elicitation  # (it decides in _stop)
        if self._waiting and not stop:
            if type(event) is Terminal and self._finishes_natively(event):
                waiting, self._waiting = self._waiting, []
                for said in waiting:  # said by the outcome: a field it has no place for still gets the carrier
                    self._put(parts, said, [], True)
            else:
                self._let_out(parts)
        super().write_event(event, parts)

    def _let_out(self, parts: list[bytes]) -> None:
        """The waiting stops in their carriers, where they happened (something follows them)."""
        waiting, self._waiting = self._waiting, []
        for stop in waiting:
            self._carry_only(stop, parts)

    def _finishes_natively(self, e: Terminal) -> bool:
        """Whether this terminal will be a bare native ``RUN_FINISHED`` (the decoder then reads
        the interrupts of its outcome, which it does not under a carrier)."""
        return (
            e.status == "succeeded"
            and _plain(e)
            and (e.verbatim is UNSET or e.verbatim.origin == self.codec)  # (its own: written back as it came)
            and (e.extra is UNSET or not any(name.startswith(KEPT) for name in e.extra))  # (unknown ones: spliced)
            and e.event_id is UNSET
            and e.failure is UNSET
            and says_only_outcome(e, self._assembled(), ("result",))
            and (e.result is UNSET or bytes(e.result) != b"null")
            and not self._whole_text
            and not self._open
            and not self._steps
            and not any(self._real.values())
        )

    @handles(ToolApprovalSettled, writes=())
    def _settled(self, e: ToolApprovalSettled, parts: list[bytes]) -> None:
        self._settle(e.call_id)
        self._carry_only(e, parts)

    # -- the rest -------------------------------------------------------------------------------

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        """An AG-UI event kept whole, written back as it came; this codec's ``CUSTOM`` as
        ``CUSTOM``; another protocol's data part in a carrier (its name and value in it)."""
        if e.origin != self.codec:
            self._carry_only(e, parts)
            return
        ok = _plain(e) and e.id is UNSET and e.transient is UNSET
        if whole_event(e.name, e.data):
            self._put(parts, e, [bytes(e.data)], ok and e.extra is UNSET)
            return
        rest = e.extra if e.extra is not UNSET else {}
        head = b'{"type":"CUSTOM","name":' + json_encode(e.name) + b',"value":' + bytes(e.data)
        self._put(parts, e, [self._frame_of(head, rest)], ok and custom_is_data(e.name, e.data))

    @handles(
        Terminal,
        writes=(
            *("status", "text", "usage", "failure", "provider", "model", "guarded"),
            *("correlation_id", "turn_id", "result", "error_info"),
        ),
    )
    def _terminal(self, e: Terminal, parts: list[bytes]) -> None:
        """``RUN_FINISHED`` (success, the interrupts still waiting, or cancelled) after closing
        everything open; ``RUN_ERROR {message, code}`` for a failure."""
        ended = [end for kind in ("text", "reasoning") if (end := self._invented_end(kind)) is not None]
        ends: list[Payload] = []
        if self._covered:  # they follow the answer that came whole, under its carrier
            ends += ended
        else:  # not the terminal's frames: its id goes on its own
            parts.extend(self._emit(end, "") for end in ended)
        native = _plain(e) and says_only_outcome(e, self._assembled(), ("result",))
        if e.status in ("succeeded", "cancelled"):
            frames = self._close_all()
            payload, ok = self._finished(e)
            self._put(parts, e, [*ends, *frames, payload], native and ok and not frames and e.failure is UNSET)
            return
        failure = e.failure if e.failure is not UNSET else default_failure(e.status)
        code = error_code(e.status, failure.code)
        head = b'{"type":"RUN_ERROR","message":' + json_encode(failure.message)
        if code is not UNSET:
            head += b',"code":' + json_encode(code)
        if self.fidelity == "client" and (e.extra is UNSET or "usage" not in e.extra):
            head = with_usage(head, e)
        ok = failure.status == e.status and read_run_error(failure.message, code) == (e.status, e.failure)
        ok = ok and failure.recoverable is UNSET and failure.retry_after_ms is UNSET
        ok = ok and failure.correlation_id is UNSET and e.result is UNSET
        self._put(parts, e, [*ends, self._frame_of(head, e.extra if e.extra is not UNSET else {})], native and ok)

    def _close_all(self) -> list[Payload]:
        """The ends of the source's messages, calls and steps still open (RUN_FINISHED needs them)."""
        frames: list[Payload] = []
        for kind, open_ids in self._real.items():
            frames.extend(self._end_frame(kind, part) for part in open_ids)
            open_ids.clear()
        for call_id in self._open:
            frames.append(self._call_end(call_id))
            self._closed.add(call_id)
        self._open.clear()
        while self._steps:
            frames.append(b'{"type":"STEP_FINISHED","stepName":' + json_encode(self._steps.pop()) + b"}")
        return frames

    def _finished(self, e: Terminal) -> tuple[bytes, bool]:
        split = _Split(e, "threadId", "runId", "outcome")
        thread, run = split.get("threadId"), split.get("runId")
        ok = (thread is None) == (run is None)
        head = b'{"type":"RUN_FINISHED","threadId":' + (thread or self._ids[0]) + b',"runId":' + (run or self._ids[1])
        if thread is not None and (thread, run) == self._ids:
            ok = False  # the run's own ids read back as unsaid
        if e.result is not UNSET:
            ok = ok and bytes(e.result) != b"null"  # (AG-UI's result is never null)
            if bytes(e.result) != b"null":
                head += b',"result":' + bytes(e.result)
        outcome = split.get("outcome")
        if outcome is None:
            if e.status == "cancelled":
                outcome = CANCELLED
            elif self._stops:
                outcome = outcome_of(list(self._stops.values()))
        else:
            ok = ok and self._reads_back(outcome, e.status)
        if outcome is not None:
            head += b',"outcome":' + outcome
        if self.fidelity == "client" and "usage" not in split.rest:
            head = with_usage(head, e)
        if self._metadata and "metadata" not in split.rest:
            head += b',"metadata":' + json_encode(self._metadata)
        return self._frame_of(head, split.rest), ok

    ride_slot = AG_UI_SLOT  # every event's rawEvent carries its event there (codecs/riding.py)
    rides_forward = True

    def _put_for_client(
        self, parts: list[bytes], event: Event, payloads: list[Payload], covered: list[bytes], line_id: str
    ) -> None:
        """A live client's stream, where a message's metadata (an AI SDK message's, say) goes in
        AG-UI's own slot for it, the ``metadata`` of ``RUN_FINISHED`` (merged per key, the last
        write winning, as AG-UI merges it), rather than in a ``CUSTOM`` event of its own."""
        if type(event) is MessageMetadata and not payloads:
            members = json_object(bytes(event.metadata))
            if members is not None:
                self._metadata.update(members)
                return
        super()._put_for_client(parts, event, payloads, covered, line_id)

    def _shown(self, event: Event) -> bool:
        """A message's metadata goes in ``RUN_FINISHED``'s (see :meth:`_put_for_client`)."""
        return type(event) is not MessageMetadata and super()._shown(event)

    def _reads_back(self, outcome: bytes, status: str) -> bool:
        """Whether a kept outcome is read back as kept, for a terminal of this status: one the
        decoder keeps (not one it would write itself), of that status, whose interrupts all
        stand for events said before (the decoder makes events of the others)."""
        kind, interrupts, exact = read_outcome(Raw(outcome))
        if exact or (kind == "cancelled") != (status == "cancelled"):
            return False
        return all(interrupt_id(read_interrupt(raw)) in self._said_stops for raw in interrupts)


def _arguments(call: ToolCall) -> str:
    """A whole call's argument text: as sent, else its input's JSON."""
    if call.arguments_json is not UNSET:
        return call.arguments_json
    if call.input is not UNSET:
        return bytes(call.input).decode()
    return ""
