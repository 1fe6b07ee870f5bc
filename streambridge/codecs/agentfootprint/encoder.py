"""agentfootprint's encoder: events in, the ``toSSE`` envelope stream out.

A mapped event is written as its envelope; it is native only when the decoder would read that
frame back as the same event (:mod:`.mapping` holds both directions), else a carrier precedes it.
Meta is the event's own when it came with one (``extra``), else the default meta of the run
(zeros, empty paths, the run's ids)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ...events import (
    ArtifactPresented,
    ArtifactRefused,
    BudgetExhausted,
    DataPart,
    Elicitation,
    Event,
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
)
from ..carrier import Payload, as_received, carrier_name
from ..encoder import Encoder, field_defaults, handles
from ..envelope import decode_lenient, input_of, json_encode, splice_extra
from ..fidelity import client_data
from ..synthetic import invented_call, invented_start
from .mapping import DECODERS, PAYLOADS, Tally, from_payload, pause_id, to_payload
from .wire import CARRIER_TYPE, PREFIX
from .wire import TOKEN_CONTENT as _TOKEN_CONTENT
from .wire import TOKEN_HEAD as _TOKEN_HEAD
from .wire import TOKEN_INDEX as _TOKEN_INDEX

__all__ = ["AgentFootprintEncoder"]

_TEXT_REST = msgspec.structs.astuple(TextDelta())[1:]  # every field of a plain delta but its text
_TOKEN_EVENT = b"event: " + PREFIX.encode() + b"stream.token\ndata: "

_CARRIER_HEAD = b'{"type":"' + CARRIER_TYPE.encode() + b'"'
_MAPPED: tuple[type[Event], ...] = (StepStart, StepFinish, TextDelta, ReasoningDelta, ToolCall, ToolOutput, ToolError)
_MAPPED += (ToolDenied, Terminal, ToolProgress, BudgetExhausted, Elicitation, ArtifactPresented, ArtifactRefused)
#: every field of the mapped types: the read-back check decides about each of them
_MAPPED_FIELDS = tuple(sorted({name for kind in _MAPPED for name in field_defaults(kind)}))
_START_FIELDS = tuple(field_defaults(RunStart))


class AgentFootprintEncoder(Encoder):
    codec = "agentfootprint"
    default_framing = "sse"
    writes_everywhere = frozenset({"message_id", "synthetic", "extra"})

    def __init__(self, framing: Any = None) -> None:
        super().__init__(framing)
        self._tally = Tally()

    def _emit(self, payload: bytes, name: str, event_id: str = "") -> bytes:
        """SSE names every frame by its type (a carrier too); NDJSON lines say it inside."""
        if not self._sse:
            name = ""
        elif not name and payload.startswith(_CARRIER_HEAD):
            name = CARRIER_TYPE
        return super()._emit(payload, name, event_id)

    def _fast_text(self, event: TextDelta) -> bytes | None:
        """A plain primary token, written from the tally's counters with no read-back: what
        ``_mapped`` writes for it, by construction (the hot path of a translation)."""
        if msgspec.structs.astuple(event)[1:] != _TEXT_REST or not self._tally.meta:
            return None
        tally = self._tally
        head = b"%s%d,%s%d,%s" % (_TOKEN_HEAD, tally.iteration, _TOKEN_INDEX, tally.tokens, _TOKEN_CONTENT)
        tally.tokens += 1
        tally.primary_token(event.text)
        payload = head + json_encode(event.text) + b'},"meta":' + tally.meta + b"}"
        if self._sse:
            return _TOKEN_EVENT + payload + b"\n\n"
        return payload + b"\n"

    def write_deltas(
        self,
        parts: list[bytes],
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> bool:
        """A run of plain primary tokens in one join: each its ``stream.token`` envelope,
        numbered from the tally's counters as :meth:`_fast_text` numbers one."""
        tally = self._tally
        if reasoning or ids is not None or part_id is not UNSET or not tally.meta:
            return False
        if not self._started or self._terminated:
            return False
        if self._owed:
            self._pay(parts)
        if self._own_text:
            self._text.extend(texts)
        head = b"%s%d,%s" % (_TOKEN_HEAD, tally.iteration, _TOKEN_INDEX)
        tail = b'},"meta":' + tally.meta + (b"}\n\n" if self._sse else b"}\n")
        before = (_TOKEN_EVENT if self._sse else b"") + head
        first = tally.tokens
        parts.append(
            b"".join(
                [before + b"%d,%s" % (first + k, _TOKEN_CONTENT) + json_encode(t) + tail for k, t in enumerate(texts)]
            )
        )
        tally.tokens += len(texts)
        tally.primary_tokens(texts)
        return True

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        return _CARRIER_HEAD + b',"payload":{"name":' + name + b"," + body + b"}}"

    def _client_part(self, event: Event) -> Payload:
        """agentfootprint has no data part of its own: a client gets an envelope of the part's
        own type (``data-<type>``, named so in SSE), an unknown kind to its readers, never a carrier."""
        kind = carrier_name(event)
        return kind.decode()[1:-1], b'{"type":' + kind + b',"payload":' + client_data(event) + b"}"

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        """The turn start, with the run's ids in its meta (a derived run id for a source
        without a run start: the decoder reads that back as invented)."""
        start = event if type(event) is RunStart else RunStart(synthetic=True)
        run_id = start.run_id if start.run_id is not UNSET else self._derived("run-")
        self._tally.start(run_id, start.thread_id)
        said = to_payload(start, self._tally)
        assert said is not None  # a run start always has its frame
        back = RunStart(run_id=run_id, thread_id=start.thread_id)
        back.synthetic = start.thread_id is UNSET and start.run_id is UNSET
        native = invented_start(start) or back == _probe(start)
        self._put(parts, start, [self._frame_of(start, said[0], said[1])], native)

    def _frame_of(self, e: Event, kind: str, payload: bytes) -> tuple[str, bytes]:
        """The envelope of ``e``: its own payload and meta where it came with them."""
        if e.verbatim is not UNSET and e.verbatim.origin == self.codec and "payload" in e.verbatim.members:
            payload = bytes(e.verbatim.members["payload"])
        meta = self._tally.meta
        frame = b'{"type":' + json_encode(kind) + b',"payload":' + payload
        if e.extra is not UNSET:
            extra = dict(e.extra)
            own = extra.pop("meta", None)
            if own is not None:
                meta = bytes(own)
            return kind, splice_extra(frame + b',"meta":' + meta + b"}", extra)
        return kind, frame + b',"meta":' + meta + b"}"

    @handles(RunStart, writes=_START_FIELDS)
    def _run_start(self, e: RunStart, parts: list[bytes]) -> None:
        if e is not self._first:  # the first one is the turn start (_begin)
            self._put(parts, e, [], False)

    @handles(*_MAPPED, writes=_MAPPED_FIELDS)
    def _mapped(self, e: Event, parts: list[bytes]) -> None:
        if (type(e) is StepStart or type(e) is StepFinish) and e.synthetic:
            return  # implied structure: no carrier describes it
        if type(e) is ArtifactPresented and self._skips_derived(e):
            return  # an artifact its tool output says (written for a live client only)
        if type(e) is ToolCall:
            if invented_call(e) and e.call_id == pause_id(self._tally):
                return  # the announcement a pause request implies: its decoder invents it again
            e = _as_read(e)
        said = to_payload(e, self._tally)
        assert said is not None  # every mapped type has its frame
        frame = self._frame_of(e, *said)
        native = self._read_back(e, said[0], frame) == _probe(e, self._tally)
        self._tally.observe(e)
        self._put(parts, e, [frame], native)

    def _read_back(self, e: Event, kind: str, frame: tuple[str, bytes]) -> Event | None:
        """What the decoder reads from the payload written (verbatim payloads say ``e`` itself)."""
        if e.verbatim is not UNSET:
            return _probe(e, self._tally) if e.verbatim.origin == self.codec else None
        payload = msgspec.json.decode(frame[1], type=dict[str, Raw])["payload"]
        return from_payload(DECODERS[kind].decode(payload), self._tally)

    @handles(DataPart, writes=("name", "origin", "data", "id", "transient"))
    def _data(self, e: DataPart, parts: list[bytes]) -> None:
        if e.origin == self.codec and self._reads_whole(e.name, bytes(e.data)):  # one of its own frames
            self._put(parts, e, [(e.name, bytes(e.data))], e.message_id is UNSET and as_received(e))
        else:
            self._put(parts, e, [], False)

    def _reads_whole(self, name: str, data: bytes) -> bool:
        """Whether the decoder reads this frame back as a data part of this name: an envelope
        of another type than the frame's name says (or a payload of no mapped shape), named on
        one ``event:`` line (NDJSON: by its type)."""
        try:
            members = msgspec.json.decode(data, type=dict[str, Raw])
            kind = msgspec.json.decode(members["type"], type=str)
        except (msgspec.DecodeError, msgspec.ValidationError, KeyError):
            return False
        if "payload" not in members or kind == CARRIER_TYPE or "\n" in name or "\r" in name:
            return False
        if not self._sse and name != kind:
            return False
        if name != kind or kind not in DECODERS:
            return True
        try:
            decode_lenient(PAYLOADS[kind[len(PREFIX) :]], members["payload"])
        except msgspec.ValidationError:
            return True  # a payload of another shape: kept whole
        return False


def _probe(e: Event, tally: Tally | None = None) -> Event:
    """``e`` as the decoder would make it from its payload alone: no meta, no unknown members,
    no SSE id (the shared encoder writes those), a terminal's text only when it differs."""
    probe = msgspec.structs.replace(e, extra=UNSET, verbatim=UNSET, event_id=UNSET)
    if type(probe) is Terminal and tally is not None and probe.text == tally.joined():
        probe.text = UNSET
    return probe


def _as_read(call: ToolCall) -> ToolCall:
    """A call as the decoder reads its frame: JSON argument text is the input itself (written as
    received), other text is carried in its own spelling."""
    raw, native, carried = input_of(call, True)
    if native and call.arguments_json is not UNSET:
        return msgspec.structs.replace(call, input=raw, arguments_json=UNSET)
    return carried
