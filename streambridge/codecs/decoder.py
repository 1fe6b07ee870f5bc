"""The decoder state machine every codec shares (sans-IO): wire bytes in, events out.

``feed`` any chunking, ``close`` at end of input. It enforces one terminal (an error terminal
for a truncated stream), fills the terminal's assembled text, and turns bad frames into
:class:`~streambridge.events.Malformed` events (lenient) or raises
:class:`~streambridge.codecs.errors.StreamError` (strict). What it went on from is kept as
:class:`~streambridge.codecs.errors.Diagnostic` data in ``diagnostics``: it logs nothing."""

from __future__ import annotations

import contextlib
import functools
import operator
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypedDict, TypeVar, Unpack, get_args, overload

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..events import (
    ArtifactPresented,
    DataPart,
    Event,
    Malformed,
    RunStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    Verbatim,
    decode_event,
)
from .artifacts import PART_NAMES, present_result, read_part, said_as_derived
from .carrier import carrier_decoder, rider_decoder
from .envelope import envelope_decoder, splice_extra
from .errors import Diagnostic, FrameProblem, ProblemKind, StreamError, check_utf8, keep
from .framing import (
    DEFAULT_MAX_EVENT_SIZE,
    Frame,
    Framing,
    FramingDetector,
    FramingError,
    NDJSONParser,
    SSEParser,
    make_parser,
)
from .riding import ridden
from .sinks import EventSink, append_deltas
from .synthetic import announcement
from .terminals import read_terminal, truncation_terminal
from .textpath import TextPieces

__all__ = ["Decoder", "DecoderOptions", "Members", "OneReader", "Reader", "reads", "reads_one", "with_extra"]

_Sink = TypeVar("_Sink", bound=EventSink)

#: a frame's members its codec does not know, in order (empty when it has none)
Members = dict[str, Raw]


class DecoderOptions(TypedDict, total=False):
    """How a decoder reads: ``strict`` raises :class:`StreamError` on bad input instead of
    forwarding it; frames over ``max_event_size`` bytes are refused; ``hot_path`` False sends
    every frame the full way (tests compare the two)."""

    strict: bool
    max_event_size: int
    hot_path: bool


_D = TypeVar("_D", bound="Decoder")
_Wire = TypeVar("_Wire")
_E = TypeVar("_E", bound=Event)
#: a reader: the decoder, one decoded wire frame, its unknown members → the frame's events
Reader = Callable[[_D, _Wire, Members], list[Event]]
#: a one-event reader: the decoder, one decoded wire frame → its one event (see :func:`reads_one`)
OneReader = Callable[[_D, _Wire], _E]
_READS = "__reads__"


def reads(wire: type[_Wire], *, hot: bool = False) -> Callable[[Reader[_D, _Wire]], Reader[_D, _Wire]]:
    """Declare a decoder method the reader of one wire type (stack one per type a method reads).

    The decoder's table maps each wire type to its reader, the mirror of an encoder's
    :func:`~streambridge.codecs.encoder.handles`; mypy checks that the method takes that type, so
    every wire attribute a reader touches is type-checked. Where a wire type always makes one
    event from the wire alone, :func:`reads_one` is the shorter, faster form. ``hot`` lets the
    hot path call it for a plain frame (no unknown members: ``extra`` empty), as for
    :func:`reads_one`: it makes no run start or terminal and does not look at
    :attr:`Decoder._current`, but it may make no event (an invented part's start)."""

    def mark(method: Reader[_D, _Wire]) -> Reader[_D, _Wire]:
        setattr(method, _READS, (*getattr(method, _READS, ()), (wire, False, hot)))
        return method

    return mark


def reads_one(
    wire: type[_Wire], *, hot: bool = False
) -> Callable[[OneReader[_D, _Wire, _E]], OneReader[_D, _Wire, _E]]:
    """Declare a decoder method the reader of one wire type that makes exactly one event from
    the wire: ``(self, w) -> Event``. The full way puts the frame's unknown members on that
    event (:func:`with_extra`). ``hot`` lets the hot path call it for a plain frame, with no
    list, members or frame made: such a reader makes no run start or terminal (those need the
    full way) and does not look at :attr:`Decoder._current`."""

    def mark(method: OneReader[_D, _Wire, _E]) -> OneReader[_D, _Wire, _E]:
        setattr(method, _READS, (*getattr(method, _READS, ()), (wire, True, hot)))
        return method

    return mark


def with_extra(event: Event, extra: Members) -> list[Event]:
    """A reader's one event, with the frame's unknown members when it has any (after the members
    the reader kept there itself)."""
    if extra:
        event.extra = extra if event.extra is UNSET else {**event.extra, **extra}
    return [event]


def _with_members(read_one: Callable[[Any], Event]) -> Callable[[Any, Members], list[Event]]:
    """A one-event reader as the full way calls every reader."""

    def read(wire: object, extra: Members) -> list[Event]:
        return with_extra(read_one(wire), extra)

    return read


_NO_FRAME = Frame(b"")
#: what the hot path did with a frame that is no primary delta (see ``Decoder._take_other``)
_DECLINED, _TAKEN, _TAKEN_LAST = "declined", "taken", "taken, the rest the full way"
_wire_encode = msgspec.json.Encoder().encode


class Decoder:
    """Base of every codec decoder. Subclasses implement :meth:`_decode`, which reads a frame's
    wire object and hands it to its reader (:func:`reads`, through :meth:`_read`).

    ``framing`` None (the default) detects it from the first significant bytes (see
    :func:`~streambridge.codecs.framing.detect_framing`; ``default_framing`` when the input
    has none); once known, ``framing`` says it and decoding runs as if it had been given.
    """

    codec: ClassVar[str] = ""
    default_framing: ClassVar[Framing] = "sse"
    #: the protocol's own words, for messages: the member that names a frame's kind, the run
    #: start and the terminal ("" where the protocol has no word of its own)
    tag_field: ClassVar[str] = "type"
    start_words: ClassVar[str] = ""
    terminal_words: ClassVar[str] = ""
    #: the protocol's union of wire types with readers: each member must have one (checked when
    #: the class is made, so a union member added later cannot go unread)
    wire_types: ClassVar[object] = None
    #: per wire type: the name of its reader; the types whose reader makes one event
    #: (:func:`reads_one`), and those the hot path may read
    readers: ClassVar[dict[type, str]] = {}
    one_reads: ClassVar[frozenset[type]] = frozenset()
    hot_reads: ClassVar[frozenset[type]] = frozenset()
    #: the events whose frame has no carrier slot: in a tool call whose start came with a
    #: carrier, held until the next frame, which may say them late (codecs/riding.py); the same
    #: set as the encoder's
    late_types: ClassVar[frozenset[type[Event]]] = frozenset()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        readers, one, hot = dict(cls.readers), set(cls.one_reads), set(cls.hot_reads)
        for name in dir(cls):
            for wire, is_one, is_hot in getattr(getattr(cls, name, None), _READS, ()):
                readers[wire] = name
                (one.add if is_one else one.discard)(wire)
                (hot.add if is_hot else hot.discard)(wire)
        cls.readers, cls.one_reads, cls.hot_reads = readers, frozenset(one), frozenset(hot)
        unread = [t.__name__ for t in get_args(cls.wire_types) if t not in readers]
        if unread:
            raise TypeError(f"{cls.__name__} has no reader for {', '.join(unread)}")

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        self.framing: Framing | None = framing
        self.strict = options.get("strict", False)
        self.max_event_size = max_event_size = options.get("max_event_size", DEFAULT_MAX_EVENT_SIZE)
        self._parser: SSEParser | NDJSONParser | FramingDetector
        if framing is None:
            self._parser = FramingDetector(self.default_framing, max_event_size, self._detected)
        else:
            self._parser = make_parser(framing, max_event_size)
        self._terminated = False
        self._covering = 0
        self._cover_next = 0
        self._text: list[str] = []
        self._after_terminal = 0
        self._held: Event | None = None
        self._begun = False  # an event went out (a bad frame before any waits in _early)
        self._early: list[Event] = []
        self._from_carrier = False
        #: how many of a frame's events rode forward on it (carried), before the frame's own
        self._carried_first = 0
        #: riders that came before the step brackets held back (see steps.BracketReader)
        self._ahead_of_held: list[Event] = []
        self._late_calls: set[str] = set()  # tool calls whose start came with a carrier
        self._late_held: list[Event] = []  # events of bare frames that may be said late
        self._late: list[Raw] | None = None  # the late entries the frame just read holds
        self._cut = 0  # the frame the input ended inside (a last NDJSON line without its newline)
        self._out: EventSink = []
        self._out_deltas: Callable[..., None] = lambda *run: None
        #: the message id a text wire must carry to be primary text; None when every text wire
        #: of the protocol is (a protocol whose every text names its message: the primary one, once known)
        self._text_owner: object = None
        self._whole = False  # the carrier just read is a terminal whose answer came whole
        self._calls: set[str] = set()  # tool calls announced so far
        self._presented: set[str] = set()  # refs of the artifacts presented so far
        #: the artifact derived from the event just pushed (a tool output presenting one)
        self._derived: ArtifactPresented | None = None
        self._pieces = TextPieces(self._text)
        #: frames of known kinds may take the codec's hot path (off: every frame the full way,
        #: for tests that compare the two)
        self._hot = options.get("hot_path", True) and self._hot_decoder is not None
        #: frames the hot path took so far
        self.hot_frames = 0
        #: problems gone on from, oldest first, until taken (:meth:`take_diagnostics`)
        self.diagnostics: list[Diagnostic] = []
        cls = type(self)  # readers bound from the class, as an encoder's handlers
        bound = {wire: getattr(cls, name).__get__(self, cls) for wire, name in self.readers.items()}
        self._readers: dict[type, Callable[[Any, Members], list[Event]]] = {
            wire: _with_members(reader) if wire in self.one_reads else reader for wire, reader in bound.items()
        }
        self._hot_readers: dict[type, Callable[[Any], Event]] = {
            wire: bound[wire] for wire in self.hot_reads & self.one_reads
        }
        #: the hot readers that make a list of events (:func:`reads` with ``hot``), given no members
        self._hot_lists: dict[type, Callable[[Any, Members], list[Event]]] = {
            wire: bound[wire] for wire in self.hot_reads - self.one_reads
        }
        #: the frame being decoded on the full way (readers the hot path never takes may look)
        self._current = _NO_FRAME

    # -- public API ---------------------------------------------------------------------

    @overload
    def feed(self, data: bytes) -> list[Event]: ...
    @overload
    def feed(self, data: bytes, into: _Sink) -> _Sink: ...
    def feed(self, data: bytes, into: EventSink | None = None) -> EventSink:
        """Decode a chunk; the events are appended to ``into`` (an :class:`EventSink`: a list, or
        an encoder's sink) or to a new list, which is returned."""
        out: EventSink = [] if into is None else into
        self._bind(out)
        # Plain frames go straight to the codec's hot path while no carrier, held run start, bad
        # first frame or terminal needs the full way; that cannot change while the parser hands
        # them over.
        hot = self._hot and not (
            self._covering
            or self._held is not None
            or self._early
            or self._terminated
            or self._late_held
            or self._hot_paused()
        )
        self._parser.on_plain = self._take_run if hot else None
        try:
            frames = self._parser.feed(data)
            if self._parser.problems:
                self._in_order(frames, out)
            else:
                for frame in frames:
                    self._frame(frame, out)
        finally:  # (a fault in strict mode too: what came before it travels on the error)
            self._chunk_done()
        self._pieces.compact()
        return out

    @overload
    def close(self) -> list[Event]: ...
    @overload
    def close(self, into: _Sink) -> _Sink: ...
    def close(self, into: EventSink | None = None) -> EventSink:
        """End of input: the rest, ending with a terminal (appended to ``into`` as in :meth:`feed`)."""
        out: EventSink = [] if into is None else into
        self._bind(out)
        self._parser.on_plain = None  # what remains takes the full way, into this call's list
        try:
            self._ending(out)
            self._release(out)
            self._finish(out)
            if not self._terminated:
                if self.strict:
                    self._no_terminal()
                keep(self.diagnostics, Diagnostic(self.codec, "truncated", "input ended without a terminal event"))
                self._push(truncation_terminal(), out)
        finally:
            self._chunk_done()
        return out

    def _ending(self, out: EventSink) -> None:
        """What the parser held at the end of input: a line that came without its end and does
        not read was cut (``truncated``, as an SSE event without its blank line, not ``malformed``)."""
        frames = self._parser.close()
        parser = self._parser  # (after close, the real parser: a detector has handed over)
        assert not isinstance(parser, FramingDetector)
        self._cut = parser.cut_frame
        self._in_order(frames, out)

    def _bind(self, out: EventSink) -> None:
        """Where this call's events go (the hot path and runs of deltas write there directly)."""
        self._out = out
        deltas = getattr(out, "deltas", None)
        self._out_deltas = deltas if deltas is not None else functools.partial(append_deltas, out)

    def _no_terminal(self) -> None:
        """Strict mode at the end of input without a terminal: where the terminal was due."""
        parser = self._parser  # after close, the real parser (a detector has handed over)
        assert not isinstance(parser, FramingDetector)
        frames, end = parser.frames_seen, parser.consumed
        after = f"after frame {frames}" if frames else "before any frame"
        words = f" ({self.terminal_words})" if self.terminal_words else ""
        expected = f"a terminal event before the end of input{words}; the input ended {after} without one"
        raise StreamError(self.codec, frames + 1, end, expected, kind="truncated")

    @property
    def terminated(self) -> bool:
        return self._terminated

    @property
    def cut_frame(self) -> int:
        """The frame the input ended inside, delivered at :meth:`close` (an NDJSON last line
        without its newline); 0 when none. When it does not read, it is ``truncated``."""
        return self._cut

    def take_diagnostics(self) -> list[Diagnostic]:
        """The problems kept since the last call (bad frames, a missing terminal, events after it)."""
        taken, self.diagnostics = self.diagnostics, []
        return taken

    @property
    def answer(self) -> TextPieces:
        """The primary text decoded so far (an encoder fed by this decoder may share it)."""
        return self._pieces

    def continues(self, previous: Decoder) -> None:
        """Decode a run that goes on from where ``previous`` ended (an interrupted AG-UI run
        resumed): its answer text adds to the one decoded so far, as the client sees one turn."""
        self._text = previous._text
        self._pieces = previous._pieces

    @property
    def ignored_after_terminal(self) -> int:
        """Events that came after the terminal event (a protocol violation), logged and not passed on."""
        return self._after_terminal

    def _detected(self, framing: Framing, parser: SSEParser | NDJSONParser) -> None:
        """The detector decided: its parser takes its place, so the hot path is as with a
        framing given."""
        self.framing = framing
        self._parser = parser

    # -- for subclasses -----------------------------------------------------------------

    def _decode(self, frame: Frame) -> list[Event]:
        raise NotImplementedError

    #: the hot path's decoder of plain frames of known kinds (None where a codec has none), and
    #: its text and reasoning delta wire types (whose ``text`` is the delta)
    _hot_decoder: ClassVar[msgspec.json.Decoder[Any] | None] = None
    _hot_text: ClassVar[type] = type(None)
    _hot_reasoning: ClassVar[type] = type(None)
    #: the delta's text member of those types, and where each delta names its part (ai-sdk's
    #: ``id``, AG-UI's ``messageId``) the member that does: a run is then one part's deltas
    #: (:meth:`_delta_part`); None where a protocol's primary deltas name no part
    _hot_delta: ClassVar[operator.attrgetter[str]] = operator.attrgetter("text")
    _hot_part: ClassVar[operator.attrgetter[str] | None] = None
    #: the full way compares each frame with how its codec writes it (:meth:`_read_in_order`): the
    #: hot path takes only frames written so (one C-level encode each), and sends the others there
    _hot_in_order: ClassVar[bool] = False

    def _hot_paused(self) -> bool:
        """Whether state the full way keeps between frames (an error waiting for its end, an
        item left open) must see the next frames: then a feed sends them all the full way."""
        return False

    def _delta_part(self, reasoning: bool, part: str) -> str | UnsetType:
        """The ``part_id`` of the events of a run of deltas naming ``part`` (see ``_hot_part``)."""
        return part

    def _decode_covered(self, frame: Frame) -> None:
        """A frame a carrier covers: the carrier's event replaces it, so it is decoded only for
        the state the codec keeps (a codec whose state follows the carried events skips it)."""
        with contextlib.suppress(FrameProblem):
            self._decode(frame)

    def _read_wire(self, wire: object, extra: Members) -> list[Event]:
        """The events of one decoded wire frame, by its type's reader (see :func:`reads`)."""
        return self._readers[type(wire)](wire, extra)

    def _take_wire(self, wire: object) -> Event | None:
        """The hot path for one decoded ASCII frame that is not a primary delta: its event when
        its type has a hot reader (:func:`reads_one`), else None to send the frame the full way."""
        reader = self._hot_readers.get(type(wire))
        return None if reader is None else reader(wire)

    def _take_run(self, blocks: Sequence[bytes], skip: int, ids: Sequence[bytes] | None = None) -> int:
        """The parser's hot path (see ``SSEParser.on_plain``): decode plain frames in order and
        hand each run of primary text (or reasoning) deltas (of one part, where deltas name
        theirs) to the output in one call, which an encoding sink writes without making an event
        per delta. ``ids`` (each frame's own ``id: <digits>`` line) become the events' ``event_id``."""
        hot_decoder = self._hot_decoder
        assert hot_decoder is not None  # (the hot path is on only for a codec that has one)
        decode = hot_decoder.decode
        text_type, reasoning_type = self._hot_text, self._hot_reasoning
        text_of, part_of, in_order = self._hot_delta, self._hot_part, self._hot_in_order
        keyed = part_of is not None
        owner = self._text_owner
        run: list[str] = []
        run_type: type | None = None
        run_part: str | None = None
        run_from = 0
        taken = len(blocks)
        for index, block in enumerate(blocks):
            payload = block[skip:]
            try:
                wire = decode(payload)
            except (msgspec.ValidationError, msgspec.DecodeError):
                taken = index
                break
            if in_order and _wire_encode(wire) != payload:  # written otherwise: kept as received
                taken = index
                break
            t = type(wire)
            if (t is text_type or t is reasoning_type) and (keyed or owner is None or wire.message_id == owner):
                part = part_of(wire) if part_of is not None else None
                if t is not run_type or part != run_part:
                    if run:
                        self._take_deltas(run, run_type is reasoning_type, ids, run_from, run_part)
                    run, run_type, run_part, run_from = [], t, part, index
                run.append(text_of(wire))  # msgspec has checked its UTF-8
                continue
            if run:
                self._take_deltas(run, run_type is reasoning_type, ids, run_from, run_part)
                run, run_type = [], None
            # raw JSON members are not UTF-8-checked by msgspec: the full way checks those
            took = self._take_other(wire, None if ids is None else ids[index]) if payload.isascii() else _DECLINED
            if took is not _TAKEN:
                taken = index if took is _DECLINED else index + 1
                break
            owner = self._text_owner
        if run:
            self._take_deltas(run, run_type is reasoning_type, ids, run_from, run_part)
        self.hot_frames += taken
        return taken

    def _take_other(self, wire: object, id_line: bytes | None) -> str:
        """A plain frame that is no primary delta, on the hot path: its events when its type has
        a hot reader. ``id_line`` is its ``id:`` line. Whether it was taken (else it goes the
        full way), and whether the frames after it must (:meth:`_hot_paused`: it left state
        that the full way keeps)."""
        event = self._take_wire(wire)
        if event is not None:
            if self._late_calls and self._holds_late_event(event):
                return _DECLINED  # (the full way holds it)
            if id_line is not None:
                event.event_id = id_line[4:].decode()  # an `id: <ASCII digits>` line
            self._accept(event)
            return _TAKEN
        read = self._hot_lists.get(type(wire))
        if read is None:
            return _DECLINED
        events = read(wire, {})
        if self._late_calls and any(self._holds_late_event(event) for event in events):
            return _DECLINED
        for event in events:
            if id_line is not None and event.event_id is UNSET:
                event.event_id = id_line[4:].decode()
            self._accept(event)
        return _TAKEN_LAST if self._hot_paused() else _TAKEN

    def _accept(self, event: Event) -> None:
        """A non-delta event from the hot path (a codec that settles events late sees it here)."""
        if self._derived_again(event):
            return
        self._begun = True
        if type(event) is ToolCall or type(event) is ToolInputStart:
            self._calls.add(event.call_id)
        self._out.append(event)
        self._follow_artifacts(event, self._out)

    #: the protocol cannot say a tool input start (its encoders invent none for input deltas
    #: of an unannounced call): the decoder invents it, so every decoder says the same
    _invents_input_start: ClassVar[bool] = True

    def _take_deltas(
        self, texts: list[str], reasoning: bool, ids: Sequence[bytes] | None, start: int, part: str | None = None
    ) -> None:
        """A run of primary deltas, of the part named ``part`` where deltas name theirs."""
        self._before_deltas(reasoning)
        self._begun = True
        if not reasoning:
            self._text.extend(texts)
        run_ids = None if ids is None else ids[start : start + len(texts)]
        part_id = UNSET if part is None else self._delta_part(reasoning, part)
        if part_id is UNSET:  # (a sink written before parts were named takes three arguments)
            self._out_deltas(texts, reasoning, run_ids)
        else:
            self._out_deltas(texts, reasoning, run_ids, part_id)

    def _before_deltas(self, reasoning: bool) -> None:
        """A run of primary deltas from the hot path is about to be passed on."""

    def _finish(self, out: EventSink) -> None:
        """End of input: flush anything held back."""

    def _chunk_done(self) -> None:
        """The end of a :meth:`feed` or :meth:`close` call, even one that raised (a codec that
        gathers events across frames hands them on here)."""

    def _carrier(self, body: bytes) -> Event:
        """Restore an event a streambridge encoder carried in this protocol's escape hatch."""
        try:
            carrier = carrier_decoder.decode(body)
            event = decode_event(carrier.event)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameProblem(f"a streambridge data part holding a valid event ({exc})") from None
        self._cover_next = max(carrier.covers, 0)
        self._from_carrier = True
        if carrier.late:
            self._take_late(carrier.late)
        if self.late_types and (type(event) is ToolInputStart or type(event) is ToolCall):
            self._late_calls.add(event.call_id)
        self._whole = carrier.whole and type(event) is Terminal and isinstance(event.text, str)
        return event

    def _read_in_order(self, wire: msgspec.Struct, extra: Members, data: bytes) -> list[Event]:
        """A frame's events by its reader; a frame its codec would write otherwise (its members
        in another order, a default spelled out) keeps the whole frame as received on its event
        (``verbatim``, which its own encoder writes back as it came and another protocol
        carries), so A → A and A → B → A give it back byte for byte. Written as the codec
        writes it: its wire type's members as msgspec encodes them, then the unknown ones."""
        written = _wire_encode(wire)
        written_so = (splice_extra(written, extra) if extra else written) == data  # (before the reader runs)
        events = self._readers[type(wire)](wire, extra)
        if not written_so and events:
            events[-1].verbatim = Verbatim(origin=self.codec, members=envelope_decoder.decode(data))
        return events

    def _riding(self, frame: Frame, slot: bytes) -> list[Event] | None:
        """The events of a carrier riding on this frame in its protocol's ``slot``
        (codecs/riding.py): those riding forward on it, then the frame's own (the carrier's, the
        frame without it read for the state the codec keeps, as a covered frame is; or the
        frame's when it says its event itself). None when none rides on it."""
        if not frame.data.endswith(b"}}"):  # (the least any slot closes with)
            return None
        carried = ridden(frame.data, slot)
        if carried is None:
            return None
        body, rest = carried
        try:
            rider = rider_decoder.decode(body)
            before = [decode_event(raw) for raw in rider.before]
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameProblem(f"a streambridge member holding valid events ({exc})") from None
        if rider.late:
            self._take_late(rider.late)
        without = msgspec.structs.replace(frame, data=rest)
        self._ahead_of_held = before[: rider.ahead]
        self._note_carried(before)  # (before the frame's own, which may depend on them)
        if rider.event:  # the frame's own event rides too
            event = self._carrier(body)
            self._note_carried([event])
            self._decode_covered(without)
            return [*before, event]
        events = self._decode(without)  # the frame says its own event (or is a carrier itself)
        if not self._from_carrier:
            self._carried_first = len(before)  # (its own events are read as they stand)
        self._from_carrier = True
        return [*before, *events]

    def _take_late(self, entries: list[Raw]) -> None:
        """A carrier's ``late`` entries: one per bare frame held, each its event or null."""
        if len(entries) != len(self._late_held):
            held = len(self._late_held)
            raise FrameProblem(f"one late entry per bare frame held before it ({held}), not {len(entries)}")
        self._late = entries

    def _holds_late_event(self, event: Event) -> bool:
        """Whether a frame's event waits for the next frame, which may say it late."""
        return type(event) in self.late_types and event.call_id in self._late_calls  # type: ignore[attr-defined]

    def _held_late(self, events: list[Event], out: EventSink) -> bool:
        """Hold a bare frame's event that may be said late (see codecs/riding.py: a frame a
        carrier came with is never bare); let the held ones out (replaced by what this frame
        says of them) at any other frame."""
        if len(events) == 1 and not self._from_carrier and self._holds_late_event(events[0]):
            self._late_held.append(events[0])
            self._parser.on_plain = None  # (the frames after it go the full way)
            return True
        if self._late_held:
            self._release_late(out)
        return False

    def _release_late(self, out: EventSink) -> None:
        """The held events, each replaced by its late entry when one says it."""
        held, self._late_held = self._late_held, []
        entries, self._late = self._late, None
        for index, event in enumerate(held):
            entry = None if entries is None else entries[index]
            if entry is not None and bytes(entry) != b"null":
                try:
                    event = decode_event(entry)
                except (msgspec.DecodeError, msgspec.ValidationError):
                    message = f"a late entry that is no event kept the bare frame's event ({bytes(entry)[:80]!r})"
                    keep(self.diagnostics, Diagnostic(self.codec, "malformed", message))
            self._push(event, out)

    def _note_carried(self, events: list[Event]) -> None:
        """Events a carrier restored, seen before the frames after them are read (a codec that
        must know what a carrier said overrides this)."""

    def _with_verbatim(self, events: list[Event], members: dict[str, Raw]) -> list[Event]:
        """Attach a frame's members that hold unknown fields to the frame's event (its last)."""
        if members and events:
            events[-1].verbatim = Verbatim(origin=self.codec, members=members)
        return events

    def _unknown(self, name: str, frame: Frame, message_id: str | None = None) -> DataPart:
        """An unknown kind: kept whole, verbatim."""
        part = DataPart(name=name, origin=self.codec, data=Raw(frame.data))
        if message_id is not None:
            part.message_id = message_id
        return part

    def _push(self, event: Event, out: EventSink) -> None:
        if self._terminated:
            self._after_terminal += 1
            message = f"{type(event).__name__} event after the terminal event ignored"
            keep(self.diagnostics, Diagnostic(self.codec, "after-terminal", message))
            return
        if self._derived_again(event):
            return
        self._begun = True
        if self._early and type(event) is not RunStart:
            self._flush_early(out)
        if type(event) is TextDelta:
            if event.message_id is UNSET:
                self._text.append(event.text)
        elif type(event) is ToolCall or type(event) is ToolInputStart:
            self._calls.add(event.call_id)
        elif type(event) is ToolInputDelta:
            if self._invents_input_start and event.call_id not in self._calls:
                self._calls.add(event.call_id)
                out.append(announcement(ToolInputStart, event.call_id))
        elif type(event) is Terminal:
            self._end(event)
        out.append(event)
        self._follow_artifacts(event, out)
        if self._early:  # bad frames that came before the run start follow it
            self._flush_early(out)

    def _end(self, end: Terminal) -> None:
        """The terminal: read into its canonical form, and given the answer when it says none."""
        read_terminal(end)
        self._terminated = True
        if end.text is UNSET and end.message_id is UNSET:
            end.text = self._pieces.text()

    def _follow_artifacts(self, event: Event, out: EventSink) -> None:
        """A tool output that is a ``present`` result presents its artifact, unless the stream
        said so itself first (agentfootprint's ``artifacts.presented`` precedes the result)."""
        if type(event) is ArtifactPresented:
            self._presented.add(event.ref)
            return
        if type(event) is not ToolOutput:
            return
        output: ToolOutput = event
        artifact = present_result(output.output, output.call_id)
        if artifact is not None and artifact.ref not in self._presented:
            self._presented.add(artifact.ref)
            artifact.message_id = output.message_id
            out.append(artifact)
            self._derived = artifact

    def _derived_again(self, event: Event) -> bool:
        """Whether ``event`` is the artifact just derived from a tool output, written plainly
        right after it (what encoders write for a live client: ``Encoder._skips_derived``): read
        as the derived one it is, it is dropped (the derived one went out). Only the event right
        after the output, not restored from a carrier, saying what the derived one says (its
        protocol's own fields at their defaults, no unknown members): the same rule as implied
        step brackets, whose encoders carry a real one in an implied place."""
        derived, self._derived = self._derived, None
        if derived is None or type(event) is not ArtifactPresented or self._from_carrier:
            return False
        return said_as_derived(event, derived)

    def _artifact_part(self, name: str, members: dict[str, Raw]) -> Event | None:
        """The artifact event of a ``data-artifact`` part this protocol's encoder wrote (see
        :mod:`.artifacts`); ``None`` when the part is something else."""
        return read_part(name, members) if name in PART_NAMES else None

    def _flush_early(self, out: EventSink) -> None:
        early, self._early = self._early, []
        for bad in early:  # (``out`` may be an encoding sink: append only)
            out.append(bad)

    # -- internals ----------------------------------------------------------------------

    def _frame(self, frame: Frame, out: EventSink) -> None:
        if self._covering:
            self._covering -= 1
            self._decode_covered(frame)
            self._cover_next = 0  # a carrier among covered frames covers nothing more
            return
        self._from_carrier = False
        self._late = None
        if self._terminated:
            self._trailing(frame)
            return
        self._current = frame
        try:  # (inline, not a step of its own: once per frame)
            if not frame.data.isascii():
                check_utf8(frame.data)
            events = self._decode(frame)
        except FrameProblem as exc:
            self._release(out)
            self._bad_frame(frame, str(exc), out, exc.kind)
            return
        self._settle_frame(frame, events)
        if self._held is not None:
            self._amend_or_release(events, out)
        if self._late_calls and self._held_late(events, out):
            return
        if self._carried_first:  # events rode forward on a frame that says its own itself
            self._push_riders(events, out)
            return
        if events and type(events[-1]) is RunStart and not self._from_carrier:
            self._held = events.pop()  # held until the next frame: a carrier may amend it
        for event in events:
            self._push(event, out)

    def _settle_frame(self, frame: Frame, events: list[Event]) -> None:
        """What a frame says beyond its events: an answer that came whole, the frame's ``id:``
        line, how many frames after it its carrier covers."""
        if self._whole:
            _with_whole_text(events)
            self._whole = False
        if frame.own_id and frame.last_id:
            _stamp_ids(events, frame.last_id)
        if self._cover_next:
            self._covering, self._cover_next = self._cover_next, 0

    def _push_riders(self, events: list[Event], out: EventSink) -> None:
        """The events that rode forward on a frame, as carried ones, then the frame's own."""
        count, self._carried_first = self._carried_first, 0
        for event in events[:count]:
            self._push(event, out)
        self._from_carrier = False
        for event in events[count:]:
            self._push(event, out)

    def _amend_or_release(self, events: list[Event], out: EventSink) -> None:
        """A held run start: a carried run start right after amends it, anything else lets it out."""
        held = self._held
        assert held is not None
        first = events[0] if events else None
        if self._passes_held_start(events):
            return  # (riders may still amend it: see steps.BracketReader)
        if self._from_carrier and type(first) is RunStart:
            if first.event_id is UNSET:  # its id stood on the native frame
                first.event_id = held.event_id
            self._held = None
        else:
            self._release(out)

    def _trailing(self, frame: Frame) -> None:
        """A frame after the terminal: never decoded, only counted (strict: an error). An
        OpenAI-style ``[DONE]`` sentinel after it is what such upstreams write: no diagnostic."""
        self._after_terminal += 1
        if self.strict:
            expected = "nothing after the terminal event; this frame follows it"
            raise StreamError(self.codec, frame.index, frame.offset, expected, frame.data, "after-terminal")
        if frame.data.strip() != b"[DONE]":
            said = Diagnostic(
                self.codec, "after-terminal", "after the terminal event ignored", frame.index, frame.offset
            )
            keep(self.diagnostics, said)

    def _passes_held_start(self, events: list[Event]) -> bool:
        """Whether a frame's events leave a held run start held (a codec's structure its
        encoder writes between a run start and the carrier amending it)."""
        return False

    def _release(self, out: EventSink) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._push(held, out)
        if self._late_held:
            self._late = None
            self._release_late(out)

    def _bad_frame(self, frame: Frame, expected: str, out: EventSink, kind: ProblemKind = "malformed") -> None:
        if kind == "malformed" and frame.index == self._cut:  # the input ended inside it
            kind = "truncated"
            expected += "; the input ended inside this line"
        if self.strict:
            raise StreamError(self.codec, frame.index, frame.offset, expected, frame.data, kind)
        text = frame.data.decode("utf-8", "replace")
        keep(self.diagnostics, Diagnostic(self.codec, kind, f"expected {expected}", frame.index, frame.offset))
        bad = Malformed(raw=text, error=f"expected {expected}", frame=frame.index, offset=frame.offset)
        if self._begun:
            self._push(bad, out)
        else:  # before anything else: it waits for the next event, so a run start comes first
            self._early.append(bad)

    def _in_order(self, frames: list[Frame], out: EventSink) -> None:
        """Frames and the framing problems among them (frames the parser could not deliver),
        in stream order: by frame number, however the input was chunked."""
        problems = self._parser.problems
        for frame in frames:
            while problems and problems[0].index < frame.index:
                self._framing_problem(problems.pop(0), out)
            self._frame(frame, out)
        while problems:
            self._framing_problem(problems.pop(0), out)

    def _framing_problem(self, problem: FramingError, out: EventSink) -> None:
        self._release(out)  # no carrier amends a held run start: this frame is none
        frame = Frame(problem.raw, index=problem.index, offset=problem.offset)
        self._bad_frame(frame, str(problem), out, problem.kind)


def _with_whole_text(events: list[Event]) -> None:
    """A carried terminal whose answer came whole: put the delta it was made from before it."""
    end = events[-1]  # (after any events that rode forward on its frame)
    assert type(end) is Terminal and isinstance(end.text, str)  # (what sets _whole says so)
    events.insert(len(events) - 1, TextDelta(text=end.text, synthetic=True))


def _stamp_ids(events: list[Event], frame_id: str) -> None:
    """The frame's own ``id:`` on its events (an NDJSON-carried event brings its own)."""
    for event in events:
        if event.event_id is UNSET:
            event.event_id = frame_id
