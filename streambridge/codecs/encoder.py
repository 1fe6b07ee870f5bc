"""The encoder state machine every codec shares (sans-IO): events in, bytes out.

It writes its protocol's preamble, nothing after the terminal, and a terminal on ``close`` if
none came. When its protocol cannot say all of an event it writes a carrier (carrier.py)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from ..events import (
    ArtifactPresented,
    ArtifactRefused,
    DataPart,
    Event,
    ReasoningDelta,
    RunStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    encode_event,
)
from .artifacts import part_body, part_name, present_result, said_as_derived
from .carrier import BARE_STRUCTURE, NEEDS_CARE, Payload, carrier_body, carrier_name, is_id_line, verbatim_payloads
from .envelope import json_encode
from .errors import Diagnostic, keep
from .fidelity import STRUCTURE, Fidelity, client_data
from .framing import (
    Framing,
    ndjson_frame,
    sse_frame,
)
from .riding import before_members, late_members, ride, ride_more, rides_on
from .sinks import append_deltas
from .synthetic import announcement, derived_id, invented_call
from .terminals import truncation_terminal, wire_terminal
from .textpath import TextPieces

__all__ = ["ARTIFACT_FIELDS", "SHARED_WRITES", "Encoder", "EncodingSink", "field_defaults", "handles"]

_Method = TypeVar("_Method", bound=Callable[..., None])
_HANDLES = "__handles__"

#: the fields the shared encoder writes for every event (``_put``): its SSE id and the members
#: it received with unknown fields inside
SHARED_WRITES = frozenset({"event_id", "verbatim"})
#: a text delta that can take the fast path has these fields at their defaults
_TEXT_REST = tuple(
    UNSET if f.default is msgspec.NODEFAULT else f.default
    for f in msgspec.structs.fields(TextDelta)
    if f.name != "text"
)
#: … and a delta of a part, these (after the text and the part id)
_PART_REST = _TEXT_REST[1:]


def handles(*types: type[Event], writes: Iterable[str] = ()) -> Callable[[_Method], _Method]:
    """Declare an encoder method the handler of ``types``, and the model fields it writes (or
    decides to carry). Any other field of those types that an event has set makes the shared
    encoder carry the event: a field added to the model later is carried, never dropped."""

    def mark(method: _Method) -> _Method:
        setattr(method, _HANDLES, (types, frozenset(writes)))
        return method

    return mark


@functools.cache
def _fields(kind: type[Event]) -> tuple[msgspec.structs.FieldInfo, ...]:
    """msgspec's fields of an event type, read once: each read evaluates the type's annotations
    (about a millisecond), and every encoder class asks for the same few dozen types."""
    return msgspec.structs.fields(kind)


def field_defaults(kind: type[Event]) -> dict[str, Any]:
    """Each field of an event type and its default (``NODEFAULT`` for a required one)."""
    defaults = {}
    for f in _fields(kind):
        if f.default is not msgspec.NODEFAULT:
            defaults[f.name] = f.default
        elif f.default_factory is not msgspec.NODEFAULT:
            defaults[f.name] = f.default_factory()
        else:
            defaults[f.name] = msgspec.NODEFAULT  # required: always set, so always unaccounted
    return defaults


#: what a message says (another message's, in a protocol naming none, would join the answer)
_CONTENT = frozenset((TextDelta, ReasoningDelta))
#: the events :meth:`Encoder._skips` may skip (the rest need not ask)
_MAY_SKIP = frozenset((ToolInputStart, ToolCall, TextDelta, DataPart))
#: the events that start a tool call's frames: carried, the call's slotless frames ride late
_STARTS_CALL = frozenset((ToolInputStart, ToolCall))


def only_brackets(part: DataPart) -> bool:
    """Whether a data part is a kind its origin protocol keeps whole that only brackets other
    events (its codec's ``spans``): nothing a client of another protocol is shown."""
    from . import get  # (the registry imports every encoder: looked up when first needed)

    try:
        return part.name in get(part.origin).spans
    except ValueError:  # a protocol no longer registered (UnknownProtocol)
        return False


class EncodingSink:
    """A list-like target for a decoder (an :class:`~streambridge.codecs.sinks.DeltaSink`) that
    encodes every event as it is appended, so a translation needs no intermediate event list (the
    decoder appends, the encoder writes). It counts the events and keeps the terminal."""

    __slots__ = ("_write_event", "_write_text", "count", "encoder", "parts", "terminal")

    def __init__(self, encoder: Encoder, parts: list[bytes]) -> None:
        self.encoder = encoder
        self.parts = parts
        self.count = 0
        self.terminal: Terminal | None = None
        self._write_text = encoder.write_text  # bound once: called per event
        self._write_event = encoder.write_event

    def deltas(
        self,
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> None:
        """A run of plain primary deltas (of one part, where the source names parts): written as
        a run when the encoder can (see :meth:`Encoder.write_deltas`), else appended one event each."""
        write = self.encoder.write_deltas
        if write(self.parts, texts, reasoning, ids, part_id):
            self.count += len(texts)
            return
        # the first may open its part (or close another): once it has, the rest may be a run
        append_deltas(self, texts[:1], reasoning, None if ids is None else ids[:1], part_id)
        rest, rest_ids = texts[1:], None if ids is None else ids[1:]
        if rest and write(self.parts, rest, reasoning, rest_ids, part_id):
            self.count += len(rest)
        elif rest:
            append_deltas(self, rest, reasoning, rest_ids, part_id)

    def append(self, event: Event) -> None:
        self.count += 1
        if type(event) is TextDelta:
            self._write_text(event, self.parts)
            return
        if type(event) is Terminal and self.terminal is None:
            self.terminal = event
        self._write_event(event, self.parts)


#: (``message_id``, ``extra`` and ``synthetic`` too: the handler decides when they need a carrier)
ARTIFACT_FIELDS = (
    *("ref", "as_", "snapshot", "tool_call_id", "iteration", "reason", "op", "detail", "tool"),
    *("message_id", "extra", "synthetic"),
)


class Encoder:
    """Base of every codec encoder.

    A subclass declares its handlers with :func:`handles` (one method per event type, and the
    model fields it writes) and implements :meth:`_carrier_payload`. Events of a type without a
    handler travel in a carrier. ``writes_everywhere`` names the fields every handler of the
    protocol writes through its shared helpers (say, unknown wire fields spliced back)."""

    codec: ClassVar[str] = ""
    default_framing: ClassVar[Framing] = "sse"
    writes_everywhere: ClassVar[frozenset[str]] = frozenset()
    #: per event type: its handler's name, the fields it writes (as declared), and the fields
    #: nothing writes, with their defaults
    handlers: ClassVar[dict[type[Event], str]] = {}
    writes: ClassVar[dict[type[Event], frozenset[str]]] = {}
    unwritten: ClassVar[dict[type[Event], tuple[tuple[str, Any], ...]]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        handlers = dict(cls.handlers)
        writes = dict(cls.writes)
        for name in dir(cls):
            declared = getattr(getattr(cls, name, None), _HANDLES, None)
            if declared is not None:
                kinds, names = declared
                fields = {kind: frozenset(field_defaults(kind)) for kind in kinds}
                unknown = names - frozenset().union(*fields.values())
                if unknown:
                    raise TypeError(f"{cls.__name__}.{name} declares fields its event types lack: {sorted(unknown)}")
                for kind in kinds:
                    handlers[kind] = name
                    writes[kind] = names & fields[kind]
        cls.handlers, cls.writes = handlers, writes
        unwritten = dict(cls.unwritten)
        for kind, written in writes.items():
            known = written | cls.writes_everywhere | SHARED_WRITES
            unwritten[kind] = tuple((n, d) for n, d in field_defaults(kind).items() if n not in known)
        cls.unwritten = unwritten

    def __init__(self, framing: Framing | None = None) -> None:
        self.framing: Framing = framing or self.default_framing
        self._frame = sse_frame if self.framing == "sse" else ndjson_frame
        self._sse = self.framing == "sse"
        self._head, self._tail = (b"data: ", b"\n\n") if self._sse else (b"", b"\n")
        self._started = False
        self._terminated = False
        self._first: Event | None = None
        self._text: list[str] = []
        self._pieces = TextPieces(self._text)
        self._own_text = True
        self._announced: set[str] = set()
        #: the artifact the tool output just written presents: where a decoder reads one as derived
        self._derived_place: ArtifactPresented | None = None
        self._bare_carriers: dict[tuple[type, bool, int], bytes] = {}
        self._whole_text: list[Event] = []  # text a decoder made from its source's terminal
        self._covered: list[bytes] = []  # the frames of that text, rendered by the terminal
        self._riders: list[Event] = []  # events waiting to ride on the next frame
        #: tool calls whose start had a carrier: their frames without a slot ride late
        self._late_calls: set[str] = set()
        #: the late entries of the bare frames written since the last frame with a slot
        self._late: list[bytes] = []
        self._writing_bare = False  # (a bare frame that rides late is being framed)
        #: step brackets a reader holds, written after the riders that passed them (the first
        #: ``_ahead`` of ``_riders``; see :meth:`steps.BracketWriter._reader`)
        self._passed = b""
        self._ahead = 0
        #: what the output promises (see :mod:`.fidelity`); set before the first event
        self.fidelity: Fidelity = "exact"
        self.dropped = 0
        #: events not written (after the terminal), until taken (:meth:`take_diagnostics`)
        self.diagnostics: list[Diagnostic] = []
        #: a plain primary text delta can be written from ``_text_head`` + JSON + ``_text_tail``,
        #: a plain primary reasoning delta from ``_reasoning_head`` + JSON + ``_text_tail``
        self._text_ready = False
        #: frames held back that plain text must be preceded by (see :meth:`_pay`)
        self._owed = False
        self._text_head = b""
        self._reasoning_head = b""
        self._text_tail = b""
        # bound from the class: an instance attribute of the same name cannot shadow a handler
        cls = type(self)
        self._dispatch: dict[type[Event], Callable[[Any, list[bytes]], None]] = {
            kind: getattr(cls, name).__get__(self, cls) for kind, name in self.handlers.items()
        }

    # -- public API ---------------------------------------------------------------------

    def sink(self, parts: list[bytes]) -> EncodingSink:
        """Something to decode into: each appended event is encoded at once, into ``parts``."""
        return EncodingSink(self, parts)

    def encode(self, events: Iterable[Event]) -> bytes:
        """Translate a batch of events (everything one received chunk held) into one write."""
        parts: list[bytes] = []
        append = self.sink(parts).append
        for event in events:
            append(event)
        self._pieces.compact()
        return b"".join(parts)

    def compact(self) -> None:
        """Keep the collected answer text small (see :class:`TextPieces`); called per batch."""
        self._pieces.compact()

    def share_text(self, answer: TextPieces) -> None:
        """Use the answer text a decoder collects (``Decoder.answer``) instead of collecting it
        again: valid only when every event reaches this encoder as soon as the decoder has it (a
        Translator's sink)."""
        self._pieces = answer
        self._text = answer.pieces
        self._own_text = False

    def write(self, event: Event, parts: list[bytes]) -> None:
        """Encode one event into ``parts`` (a plain primary text delta on the fast path)."""
        if type(event) is TextDelta:
            self.write_text(event, parts)
        else:
            self.write_event(event, parts)

    def write_text(self, event: TextDelta, parts: list[bytes]) -> None:
        """Encode a text delta: a plain primary one as it stands, when the state lets it."""
        if self._started and not self._terminated:
            frame = self._fast_text(event)
            if frame is not None:
                if self._owed:
                    self._pay(parts)
                if event.message_id is UNSET and self._own_text:
                    self._text.append(event.text)
                parts.append(frame)
                return
        self.write_event(event, parts)

    def write_deltas(
        self,
        parts: list[bytes],
        texts: list[str],
        reasoning: bool = False,
        ids: Sequence[bytes] | None = None,
        part_id: str | UnsetType = UNSET,
    ) -> bool:
        """Write a run of plain primary text (or reasoning) deltas with no event per delta, when
        the protocol's state lets them be written as they stand (the hot path of every
        translation: deltas are nearly all of a stream); False when they need events instead.
        ``ids`` are the frames' own ``id: <digits>`` lines, written before each delta's frame in
        SSE; ``part_id`` the part the deltas name (ai-sdk's and AG-UI's sources name one)."""
        if ids is not None and not self._sse:
            return False
        head: bytes | None
        if part_id is not UNSET:
            head = self._part_head(reasoning, part_id) if self._text_ready else None
        else:
            head = (self._reasoning_head if reasoning else self._text_head) if self._text_ready else None
            if not head and self._opens_runs():  # (its part is to be opened first)
                head = self._opened_head(parts, reasoning)
        if not head:  # (a protocol whose parts are named has a head only while its part is open)
            return False
        if self._owed:
            self._pay(parts)
        # writing plain deltas changes no encoder state, so the whole run is one join
        if not reasoning and self._own_text:
            self._text.extend(texts)
        tail = self._text_tail
        if ids is not None:  # numbered frames: each delta's frame after its own id line
            parts.append(
                b"".join([line + b"\n" + head + json_encode(t) + tail for t, line in zip(texts, ids, strict=True)])
            )
        elif len(texts) == 1:  # a chunk of one frame, as a live upstream writes them
            parts.append(head + json_encode(texts[0]) + tail)
        else:
            parts.append(head + (tail + head).join(map(json_encode, texts)) + tail)
        return True

    def close(self) -> bytes:
        """End of output: guarantees exactly one terminal in the stream."""
        parts: list[bytes] = []
        if not self._terminated:
            self.write_event(truncation_terminal(), parts)
        return b"".join(parts)

    @property
    def terminated(self) -> bool:
        return self._terminated

    def take_diagnostics(self) -> list[Diagnostic]:
        """The events not written since the last call (they came after the terminal)."""
        taken, self.diagnostics = self.diagnostics, []
        return taken

    # -- for subclasses -----------------------------------------------------------------

    #: the terminal says the whole answer itself (a result text), so text that a
    #: decoder made from a terminal needs no frames of its own
    _terminal_says_text: ClassVar[bool] = False
    #: the protocol streams tool input after a start of its own; where it does not, a
    #: carried input delta needs no invented start (its call is announced before its outcome)
    _says_input_start: ClassVar[bool] = False

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        """Write the protocol's preamble before the first event."""

    def _fast_text(self, event: TextDelta) -> bytes | None:
        """The framed bytes of a text delta that needs nothing else; ``None`` otherwise."""
        if not self._text_ready:
            return None
        fields = msgspec.structs.astuple(event)
        head: bytes | None
        if fields[1:] == _TEXT_REST:  # every field but the text unset
            head = self._text_head
        elif fields[2:] == _PART_REST:  # every field but the text and the part unset
            head = self._part_head(False, event.part_id)
        else:
            return None
        return head + json_encode(event.text) + self._text_tail if head else None

    def _opens_runs(self) -> bool:
        """Whether nothing but the protocol's own state stands between a run of plain deltas and
        :meth:`_opened_head` (no event is waiting, none owed, the stream under way)."""
        return (
            self._started
            and not self._terminated
            and not self._riders
            and not self._late
            and not self._whole_text
            and not self._owed
        )

    def _opened_head(self, parts: list[bytes], reasoning: bool) -> bytes | None:
        """Where a protocol invents the part a plain primary delta goes in (ai-sdk, AG-UI): the
        frames the delta's handler would write before the delta's own (its step, the other
        kind's end, its part's start), written, the state after them kept, and the head the
        delta is then written after; None (nothing written) where the delta needs its event.
        A step's first delta then costs no event, as its other deltas do."""
        return None

    def _part_head(self, reasoning: bool, part_id: str | UnsetType) -> bytes | None:
        """The head a plain delta of the part ``part_id`` is written after, when the state lets it
        be written as it stands (its part the one open, as the full way would write it); None
        where it needs its event. A protocol whose deltas name no part has none."""
        return None

    def _plain_text_ok(self) -> bool:
        """Whether the protocol's state lets a plain text delta be written as it stands."""
        return bool(self._text_head)

    def _pay(self, parts: list[bytes]) -> None:
        """Write what ``_owed`` says must come before plain text written on the fast path."""
        self._owed = False

    def _handle(self, event: Event, parts: list[bytes]) -> None:
        """Write an event through its type's handler. A type without one travels in a carrier;
        a synthetic one (structure a decoder implied) is dropped: no carrier describes it."""
        handler = self._dispatch.get(type(event))
        if handler is not None:
            handler(event, parts)
        elif not event.synthetic:
            self._put(parts, event, [], False)

    #: the protocol writes artifacts as ``data-artifact`` parts whose id is the ref, and its
    #: decoder reads them back (``Decoder._artifact_part``); otherwise they travel in carriers
    artifact_parts: ClassVar[bool] = False
    #: the protocol names the message of what it says (agentkit's and AG-UI's ``messageId``)
    names_messages: ClassVar[bool] = False
    #: the protocol's data part names its message (agentkit's ``messageId``)
    _parts_say_message_id: ClassVar[bool] = False

    def _skips_derived(self, e: ArtifactPresented | ArtifactRefused) -> bool:
        """An artifact derived from a tool output (``synthetic``) is written only for a live
        client (``client`` fidelity), plainly, where the tool output says it (right after it):
        an artifact-aware client shows it as the artifact it is, and a decoder reads that form,
        in that place, back as derived (see ``Decoder._follow_artifacts``). An archive
        (``exact``) needs none: the tool output says it to every reader."""
        return e.synthetic and self.fidelity != "client"

    @handles(ArtifactPresented, ArtifactRefused, writes=ARTIFACT_FIELDS)
    def _artifact(self, e: ArtifactPresented | ArtifactRefused, parts: list[bytes]) -> None:
        """An artifact as a ``data-artifact`` part whose id is its ref (see :mod:`.artifacts`),
        in the protocol's data part; a protocol with a native form overrides this. One derived
        from a tool output is written for a live client only (:meth:`_skips_derived`)."""
        if self._skips_derived(e):
            return
        if not self.artifact_parts:
            self._put(parts, e, [], False)
            return
        native = e.extra is UNSET and (e.message_id is UNSET or self._parts_say_message_id)
        self._put(parts, e, [self._carrier_payload(e, part_name(e), part_body(e))], native)

    def _says_it_all(self, event: Event) -> bool:
        """Whether an event its handler wrote natively reads back as itself: every field written
        (most types leave none unwritten), and no real artifact where a derived one is read."""
        if self.unwritten.get(type(event)) and not self._writes_every_field(event):
            return False
        return type(event) is not ArtifactPresented or not self._in_derived_place(event)

    def _note_place(self, event: Event) -> None:
        """After a tool output that presents an artifact, the place a decoder reads that
        artifact in as derived (kept past the derived one itself when it was not written)."""
        if type(event) is ToolOutput:
            place = self._derived_place = present_result(event.output, event.call_id)
            if place is not None:
                place.message_id = event.message_id  # (as the decoder derives it)
        elif not (type(event) is ArtifactPresented and event.synthetic and self._skips_derived(event)):
            self._derived_place = None

    def _in_derived_place(self, e: ArtifactPresented) -> bool:
        """A real artifact written where its tool output says it, saying no more: its decoder
        would read it as derived and drop it, so it needs a carrier (as a real step bracket in
        an implied place does)."""
        place = self._derived_place
        return place is not None and not e.synthetic and said_as_derived(e, place)

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        """The protocol's data part around a carrier's ``name`` (JSON) and ``body`` (the
        members from :func:`carrier_body`)."""
        raise NotImplementedError

    def _put(self, parts: list[bytes], event: Event, payloads: list[Payload], native: bool, lead: int = 0) -> None:
        """Frame an event's payloads, with a carrier when they do not say all of it.

        The carrier goes before the frames it covers, except for a run start: a protocol's
        first frame must stay first, so its carrier follows and amends it (covers 0). Members
        this codec decoded with unknown fields inside go back as they came; another codec's
        such members make a carrier. The first ``lead`` payloads are this encoder's own (ends of
        parts it invented, which its decoder reads as nothing): the event's ``id:`` line goes on
        the frame after them, the event's own.
        """
        if native:
            native = self._says_it_all(event)
        if event.verbatim is not UNSET:
            if event.verbatim.origin == self.codec:
                payloads = verbatim_payloads(payloads, event.verbatim.members)
            else:
                native = False
        line_id = self._line_id(event)  # the event's SSE id, written on its first frame
        if event.event_id is not UNSET and not line_id:
            native = False  # NDJSON has no id line (nor SSE for some ids): the carrier keeps the id
        amend = type(event) is RunStart
        covered: list[bytes] = []
        if self._covered and type(event) is Terminal:
            covered, self._covered = self._covered, []
            native = False  # its text came whole: its carrier renders that text's frames too
        if not native and self.fidelity == "client":
            self._put_for_client(parts, event, payloads, covered, line_id)
            return
        if self.late_types and self._went_late(parts, event, payloads, covered, native, line_id):
            return
        if not native and not amend:
            if not payloads and not covered and self._rides_forward(event, line_id):
                return
            payloads, native, line_id = self._with_carrier(parts, event, payloads, covered, line_id)
        frame_id = "" if amend and not native else line_id  # an amending carrier says the id
        if len(payloads) == 1 and type(payloads[0]) is bytes:  # nearly every event: one unnamed frame
            parts.append(self._emit(payloads[0], "", frame_id))
        else:
            self._emit_all(parts, payloads, frame_id, lead if native else 0)
        if not native and amend and not self._rides_forward(event, line_id):
            parts.append(self._carry(event, 0, line_id))

    def _line_id(self, event: Event) -> str:
        """The event's id as its frame's ``id:`` line says it, when one can."""
        if event.event_id is not UNSET and self._sse and is_id_line(event.event_id):
            return event.event_id
        return ""

    def _with_carrier(
        self, parts: list[bytes], event: Event, payloads: list[Payload], covered: list[bytes], line_id: str
    ) -> tuple[list[Payload], bool, str]:
        """An event's carrier: riding on the event's one frame (then it is native), else a frame
        of its own before the frames it covers, which takes the event's ``id:`` line."""
        rides = self.ride_slot is not None and len(payloads) == 1 and not covered
        ridden = self._ride(event, payloads[0], line_id) if rides else None
        if ridden is not None:
            return [ridden], True, line_id
        parts.append(self._carry(event, len(covered) + len(payloads), line_id, whole=bool(covered)))
        parts.extend(covered)
        return payloads, False, ""

    #: the events whose frame has no slot here, which ride late (codecs/riding.py) in a call
    #: whose start had a carrier; the same set as the decoder's :attr:`Decoder.late_types`
    late_types: ClassVar[frozenset[type[Event]]] = frozenset()

    def _went_late(
        self,
        parts: list[bytes],
        event: Event,
        payloads: list[Payload],
        covered: list[bytes],
        native: bool,
        line_id: str,
    ) -> bool:
        """Whether the event's frame was written bare, its carrier to ride late; a call's start
        that needs a carrier makes the call's slotless frames ride late."""
        if type(event) in _STARTS_CALL:
            if not native:
                self._late_calls.add(event.call_id)  # type: ignore[attr-defined]
            return False
        if type(event) not in self.late_types:  # (most events: asked first)
            return False
        payload = payloads[0] if len(payloads) == 1 and not covered else None
        if type(payload) is not bytes:
            return False
        if event.call_id not in self._late_calls:  # type: ignore[attr-defined]
            return False
        self._put_late(parts, event, payload, native, line_id)
        return True

    def _put_late(self, parts: list[bytes], event: Event, payload: bytes, native: bool, line_id: str) -> None:
        """The event's bare frame, its carrier (or ``null``, when the frame says it whole) kept
        for the next frame: its decoder holds the event until then."""
        self._writing_bare = True
        try:
            parts.append(self._emit(payload, "", line_id))
        finally:
            self._writing_bare = False
        self._late.append(b"null" if native else encode_event(event))
        self._text_ready = False  # (the next frame takes the entries: no delta passes the fast path)

    def _late_on(self, payload: bytes, name: str, event_id: str) -> bytes:
        """The next frame after bare frames that ride late: their entries in its slot, else
        in a frame of their own before it (and before the held brackets that go first)."""
        members = self._taken_late()
        slot = self.ride_slot
        if members and slot is not None and not name and not self._passed and self._has_slot(payload):
            carrying = ride_more(payload, members, slot)
            if carrying is not None:
                return self._emit(carrying, name, event_id)
        return self._late_frame(members) + self._emit(payload, name, event_id)

    def _taken_late(self) -> bytes:
        """The late entries as a carrier's members, taken; nothing when every one is null (the
        decoder lets out as read the events it holds)."""
        entries, self._late = self._late, []
        return late_members(entries) if any(entry != b"null" for entry in entries) else b""

    def _late_frame(self, members: bytes) -> bytes:
        """Late entries in a frame of their own (none for no members)."""
        return self._frame(self._late_payload(members), "", "") if members else b""

    def _late_payload(self, members: bytes) -> bytes:
        """A frame of its own saying late entries (only a protocol with :attr:`late_types`)."""
        raise NotImplementedError

    #: what a native backend of this protocol never tells its client (the hosting dialect's tool
    #: calls and reasoning): at ``client`` fidelity left out, not made data parts. (A terminal's
    #: own frame says it; the structure events shape a stream only: neither is ever a data part.)
    unsaid: ClassVar[frozenset[type[Event]]] = frozenset()

    #: where a carrier may ride on this protocol's frames (codecs/riding.py); None: nowhere
    ride_slot: ClassVar[bytes | None] = None

    def _ride(self, event: Event, payload: Payload, line_id: str) -> bytes | None:
        """The event's one frame with its carrier inside, in the protocol's :attr:`ride_slot`
        (its decoder reads the carrier back from there), or None: the carrier is a frame of its
        own before it. ``line_id`` is the id the frame's ``id:`` line will say."""
        slot = self.ride_slot
        if slot is None or type(payload) is not bytes or not rides_on(payload, slot) or not self._has_slot(payload):
            return None
        body = carrier_body(event, 0, keep_id=not line_id)
        if self._riders and not line_id:  # (else they go before it: see _board)
            body = self._rider_members() + b"," + body
        return ride(payload, body, slot)

    #: an event with no frame of its own rides forward on the next frame that has the slot,
    #: instead of taking a carrier frame of its own (codecs/riding.py)
    rides_forward: ClassVar[bool] = False

    def _rides_forward(self, event: Event, line_id: str) -> bool:
        """Whether the carrier of an event with no frame here waits to ride on the next frame:
        one a live client is not shown (:meth:`_shown`; what it is shown keeps a frame of its
        own, as at ``client`` fidelity), whose id needs no ``id:`` line of a frame of its own."""
        if not self.rides_forward or line_id or self._shown(event):
            return False
        self._riders.append(event)
        self._text_ready = False  # (the next frame takes it, so no delta may pass on the fast path)
        return True

    def _rider_members(self) -> bytes:
        """The carrier members saying the waiting riders (how many of them passed held step
        brackets, when some did), none waiting after."""
        riders, self._riders = self._riders, []
        members = before_members([encode_event(event) for event in riders])
        if self._ahead:
            members += b',"ahead":' + str(self._ahead).encode()
            self._ahead = 0
        return members

    def _board(self, payload: bytes, name: str, event_id: str) -> bytes:
        """A frame with the waiting riders on it when it has the slot and no ``id:`` line of
        its own (which the riders' events would take for theirs); else their carrier frames
        before it, in order."""
        slot = self.ride_slot
        assert slot is not None  # (only a protocol with a slot keeps riders)
        if not name and not event_id and rides_on(payload, slot) and self._has_slot(payload):
            return self._emit(ride(payload, self._rider_members(), slot), name, event_id)
        late = self._late_frame(self._taken_late())  # (before the riders' frames)
        riders, self._riders = self._riders, []
        passed, self._passed = self._passed, b""  # (after the riders that passed them)
        ahead, self._ahead = self._ahead, 0
        alone = [self._carry(event) for event in riders[:ahead]]
        alone.append(passed)
        alone.extend(self._carry(event) for event in riders[ahead:])
        return late + b"".join(alone) + self._emit(payload, name, event_id)

    def _has_slot(self, frame: bytes) -> bool:
        """Whether this frame's type has the ride slot (every one, unless the protocol says)."""
        return True

    def _put_for_client(
        self, parts: list[bytes], event: Event, payloads: list[Payload], covered: list[bytes], line_id: str
    ) -> None:
        """What a native backend would send (``client`` fidelity): the event's own frames and
        nothing about what they leave out; an event with meaning and no frame here as a data
        part of its members; one that only shapes the stream not at all."""
        parts.extend(covered)
        if payloads and not self._loses_message(event):
            self._emit_all(parts, payloads, line_id)
        elif self._shown(event):
            self._emit_all(parts, [self._client_part(event)], line_id)

    def _shown(self, event: Event) -> bool:
        """Whether a live client is shown an event that has no frame here, as a data part: not
        one that only shapes the stream, a terminal (its own frame says it) or an unsaid one."""
        return type(event) not in STRUCTURE and type(event) is not Terminal and type(event) not in self.unsaid

    def _loses_message(self, event: Event) -> bool:
        """Whether the event's own frame would say another message's content as the answer's
        (the protocol names no messages): then it is a data part instead."""
        return type(event) in _CONTENT and event.message_id is not UNSET and not self.names_messages

    def _client_part(self, event: Event) -> Payload:
        """An event with meaning and no frame here, as the protocol's data part: the event's
        members (no carrier bookkeeping) under ``data``."""
        return self._carrier_payload(event, carrier_name(event), b'"data":' + client_data(event))

    def _writes_every_field(self, event: Event) -> bool:
        """Whether no field that no handler writes is set (such a field is carried, never dropped)."""
        for name, default in self.unwritten.get(type(event), ()):
            if getattr(event, name) != default:
                break
        else:
            return True
        return False

    def _emit_all(self, parts: list[bytes], payloads: list[Payload], frame_id: str, lead: int = 0) -> None:
        """The payloads framed, the one after the ``lead`` invented ones after the event's
        ``id:`` line when it has one."""
        for index, payload in enumerate(payloads):
            said = frame_id if index == lead else ""
            if isinstance(payload, tuple):
                parts.append(self._emit(payload[1], payload[0], said))
            else:
                parts.append(self._emit(payload, "", said))

    def _emit(self, payload: bytes, name: str, event_id: str = "") -> bytes:
        """One framed frame, after its ``id:`` line when it has an id (an encoder numbering frames does so here)."""
        if self._riders:
            return self._board(payload, name, event_id)
        if self._late and not self._writing_bare:
            return self._late_on(payload, name, event_id)
        if self._passed:  # (their riders rode on the frame before this one's carrier)
            passed, self._passed = self._passed, b""
            return passed + self._emit(payload, name, event_id)
        # (a byte's value tested, not a one-byte string: ten times as fast, every frame passes here)
        if not name and not event_id and self._sse and 10 not in payload and 13 not in payload:
            return b"data: " + payload + b"\n\n"
        return self._frame(payload, name, event_id)

    def _carry(self, event: Event, covers: int = 0, line_id: str = "", *, whole: bool = False) -> bytes:
        """The framed carrier of an event, with the event's id on its ``id:`` line when it has
        one (else in its body). Those of bare step brackets, the most frequent carriers, are
        made once per encoder."""
        template = BARE_STRUCTURE.get((type(event), event.synthetic))
        late = bool(self._late) and not self._riders and not self._passed  # (else those frames go first)
        if template is None or event != template or late:
            body = carrier_body(event, covers, keep_id=not line_id, whole=whole)
            members = self._taken_late() if late else b""  # (the entries of the bare frames before it)
            if members:
                body += b"," + members
            return self._emit(self._carrier_payload(event, carrier_name(event), body), "", line_id)
        key = (type(event), event.synthetic, covers)
        payload = self._bare_carriers.get(key)
        if payload is None:
            payload = self._carrier_payload(event, carrier_name(event), carrier_body(event, covers))
            self._bare_carriers[key] = payload
        return self._emit(payload, "", "")

    def _announce(self, call_id: str, parts: list[bytes]) -> None:
        """Every protocol needs a tool call announced before its outcome: invent one if missing."""
        if call_id not in self._announced:
            self._announced.add(call_id)
            self._handle(announcement(ToolCall, call_id), parts)

    def _derived(self, prefix: str) -> str:
        return derived_id(prefix, self._first) if self._first is not None else prefix + "0"

    def _assembled(self) -> str:
        return self._pieces.text()

    # -- internals ----------------------------------------------------------------------

    def _write_whole_text(self, parts: list[bytes], *, for_terminal: bool) -> None:
        """Text a decoder made from its source's terminal (a non-streamed answer):
        written as plain text frames that the terminal's carrier covers, so the terminal comes
        back as it was and no carrier describes the synthetic text. (Should anything else
        follow such text, it is written as it is.)"""
        held, self._whole_text = self._whole_text, []
        if not for_terminal:
            for delta in held:
                self._handle(delta, parts)
            return
        frames: list[bytes] = []
        riders, self._riders = self._riders, []  # (they ride on the terminal's carrier, before these)
        passed, self._passed = self._passed, b""
        for delta in held:
            self._handle(msgspec.structs.replace(delta, synthetic=False), frames)
        self._covered = frames
        self._riders = riders + self._riders
        self._passed = passed + self._passed

    def write_event(self, event: Event, parts: list[bytes]) -> None:
        """Encode one event through its handler (what every event but a fast text delta takes)."""
        if self._terminated:
            self.dropped += 1
            message = f"{type(event).__name__} after the terminal event not written"
            keep(self.diagnostics, Diagnostic(self.codec, "after-terminal", message))
            return
        if not self._started:
            self._started = True
            self._first = event
            self._begin(event, parts)
        t = type(event)  # (what _cared returns is of the same type)
        if t in NEEDS_CARE:
            event = self._cared(event, parts)
        if t in _MAY_SKIP and self._skips(event):
            return
        if self._whole_text:
            self._write_whole_text(parts, for_terminal=t is Terminal)
        self._handle(event, parts)
        if t is ToolOutput or self._derived_place is not None:  # (else nothing to note)
            self._note_place(event)
        if type(event) is ToolCall or type(event) is ToolInputStart:
            self._announced.add(event.call_id)
        elif t is Terminal:
            self._terminated = True
            self._text_ready = False
            return
        self._text_ready = self._plain_text_ok() and not self._riders and not self._late

    def _cared(self, event: Event, parts: list[bytes]) -> Event:
        """What every protocol does before its handler sees an event of :data:`NEEDS_CARE`:
        the answer text collected, a terminal in its wire form, a tool call announced."""
        if type(event) is TextDelta:
            if event.message_id is UNSET and self._own_text:
                self._text.append(event.text)
        elif type(event) is Terminal:
            if event.text is UNSET and event.message_id is UNSET:
                event = msgspec.structs.replace(event, text=self._assembled())  # as every decoder fills it
            return wire_terminal(event)
        elif type(event) is ToolInputDelta:
            if event.call_id not in self._announced and self._says_input_start:
                self._announced.add(event.call_id)
                self._handle(announcement(ToolInputStart, event.call_id), parts)
        elif type(event) is ToolOutput or type(event) is ToolError or type(event) is ToolDenied:
            self._announce(event.call_id, parts)
        return event

    def _skips(self, event: Event) -> bool:
        """Events this encoder does not write: an invented announcement its protocol's decoder
        invents again (or that announces a call already announced), text a decoder made from its
        source's terminal, held until that terminal comes, and for a live client another
        protocol's span brackets (:func:`only_brackets`)."""
        if type(event) is ToolInputStart:
            return not self._says_input_start and invented_call(event)
        if type(event) is ToolCall:
            return event.call_id in self._announced and invented_call(event)
        if type(event) is DataPart:
            return self.fidelity == "client" and event.origin != self.codec and only_brackets(event)
        if type(event) is TextDelta and event.synthetic and event.message_id is UNSET and not self._terminal_says_text:
            self._whole_text.append(event)  # made from the source's terminal, which follows
            self._text_ready = False
            return True
        return False
