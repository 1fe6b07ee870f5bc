"""The machinery every codec shares: sans-IO decoder and encoder state machines.

A decoder turns wire bytes into events: ``feed`` any chunking, ``close`` at end of input. It
enforces one terminal (synthesising an error terminal for a truncated stream), fills the
terminal's assembled text and turns bad frames into :class:`~streambridge.events.Malformed`
events (lenient) or raises :class:`StreamError` (strict).

An encoder turns events into bytes. It writes its protocol's preamble, nothing after the
terminal, and a terminal on ``close`` if none came. When its protocol cannot say all of an
event it writes a *carrier*: a data part in the protocol's escape hatch holding the whole event
(streambridge's own JSON) and how many of the following frames render it, so that the same
protocol's decoder restores the event exactly (the cross-trip law). See docs/design.md.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import logging
import types
import typing
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ClassVar, Literal, TypeVar

import msgspec
from msgspec import UNSET, Raw, UnsetType

from ..events import (
    EVENT_TYPES,
    DataPart,
    Event,
    Failure,
    Malformed,
    ReasoningDelta,
    RunStart,
    RunStatus,
    StepStart,
    Terminal,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
    Verbatim,
    decode_event,
    encode_event,
)
from .framing import (
    DEFAULT_MAX_EVENT_SIZE,
    Frame,
    Framing,
    FramingDetector,
    FramingError,
    NDJSONParser,
    SSEParser,
    make_parser,
    ndjson_frame,
    sse_frame,
)

log = logging.getLogger("streambridge")
_S = TypeVar("_S", bound=msgspec.Struct)
_C = TypeVar("_C", ToolCall, ToolInputStart)

#: what an encoder hands to ``_put``: an unnamed frame's payload, or ``(event name, payload)``.
Payload = bytes | tuple[str, bytes]

TRUNCATED_MESSAGE = "The stream ended without a terminal event."
TRUNCATED_CODE = "truncated"


def _truncated() -> Failure:
    return Failure(status="error", message=TRUNCATED_MESSAGE, code=TRUNCATED_CODE, recoverable=True)


def truncation_terminal() -> Terminal:
    """The error terminal for input that ended without one (synthetic: streambridge's own)."""
    return Terminal(synthetic=True, status="error", failure=_truncated())


def _is_truncation(failure: Failure) -> bool:
    return failure.code == TRUNCATED_CODE and failure.message == TRUNCATED_MESSAGE and failure.status == "error"


def _wire_terminal(event: Terminal) -> Terminal:
    """What an encoder writes for streambridge's truncation terminal: a plain error terminal
    with its code and message, which every decoder reads back as the synthetic one (so no
    carrier ever describes it)."""
    failure = event.failure
    if not event.synthetic or failure is UNSET or event.status != "error" or not _is_truncation(failure):
        return event
    if failure.recoverable is True and failure.retry_after_ms is UNSET and failure.correlation_id is UNSET:
        failure = msgspec.structs.replace(failure, recoverable=UNSET)
        return msgspec.structs.replace(event, synthetic=False, failure=failure)
    return event


def _read_terminal(event: Terminal) -> None:
    """The inverse of :func:`_wire_terminal`, for every decoder (one canonical form)."""
    failure = event.failure
    if event.synthetic or event.status != "error" or failure is UNSET or not _is_truncation(failure):
        return
    if failure.recoverable is UNSET and failure.retry_after_ms is UNSET and failure.correlation_id is UNSET:
        event.failure = _truncated()
        event.synthetic = True


#: what went wrong, for code that reacts differently (a proxy's fault codes): a frame that is
#: not what the protocol says, one that is not UTF-8, one over the size limit, input that
#: ended without its terminal (or inside a frame), or anything after the terminal.
ProblemKind = Literal["malformed", "encoding", "oversize", "truncated", "after-terminal"]


class StreamError(ValueError):
    """Bad input in strict mode: names the frame number, the byte offset and what was expected.

    ``expected`` says what the protocol wanted there (a noun phrase, maybe followed by what
    came instead); the message reads ``<codec>: frame <n> at byte <offset>: expected …``."""

    def __init__(
        self, codec: str, frame: int, offset: int, expected: str, raw: bytes = b"", kind: ProblemKind = "malformed"
    ) -> None:
        self.codec = codec
        self.frame = frame
        self.offset = offset
        self.expected = expected
        self.raw = raw
        self.kind = kind
        #: what the chunk held before the bad frame, translated (set by ``Translator.feed``)
        self.output = b""
        super().__init__(f"{codec}: frame {frame} at byte {offset}: expected {expected}")


class FrameProblem(Exception):
    """Raised inside a codec's frame decoder; the base class decides lenient vs strict.

    Its text is what was expected, as for :class:`StreamError`."""

    def __init__(self, expected: str, kind: ProblemKind = "malformed") -> None:
        super().__init__(expected)
        self.kind = kind


class _Carrier(msgspec.Struct):
    event: Raw
    covers: int = 0
    #: a terminal whose answer came whole (no delta streamed it): the covered frames start with
    #: that text, written for readers that need text frames
    whole: bool = False


_carrier_decoder = msgspec.json.Decoder(_Carrier)
_envelope_decoder = msgspec.json.Decoder(dict[str, Raw])
_str_decoder = msgspec.json.Decoder(str)
_NOT_STRING_STARTS = frozenset(b"{[-0123456789tfn")
json_encode = msgspec.json.Encoder().encode


def decode_envelope(data: bytes, frame: Frame) -> dict[str, Raw]:
    """The frame as a mapping of raw members; a :class:`FrameProblem` if it is no JSON object."""
    try:
        return _envelope_decoder.decode(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise FrameProblem(f"one JSON object ({exc})") from None


def raw_str(raw: Raw | None) -> str | None:
    """A raw JSON member as a Python string, or None when it is no JSON string."""
    if raw is None:
        return None
    view = memoryview(raw)
    if view and view[0] in _NOT_STRING_STARTS:
        return None  # an object, array, number or literal: no need to raise and catch
    try:
        return _str_decoder.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def as_received(part: DataPart) -> bool:
    """Whether writing a data part's ``data`` (its origin's own frame) says all of it: the frame
    has no place for the part's ``id``, ``transient`` or unknown fields."""
    return part.id is UNSET and part.transient is UNSET and part.extra is UNSET


def splice_extra(payload: bytes, extra: dict[str, Raw]) -> bytes:
    """Append unknown members to an encoded JSON object, in their received order."""
    if not extra:
        return payload  # none: an empty mapping must not leave a trailing comma
    members = b",".join(json_encode(k) + b":" + bytes(v) for k, v in extra.items())
    if payload == b"{}":
        return b"{" + members + b"}"
    return payload[:-1] + b"," + members + b"}"


def split_extra(envelope: dict[str, Raw], known: frozenset[str]) -> tuple[dict[str, Raw], dict[str, Raw]]:
    """The known members and the unknown ones, apart (order kept)."""
    known_part = {k: v for k, v in envelope.items() if k in known}
    extra = {k: v for k, v in envelope.items() if k not in known}
    return known_part, extra


_any_decoder = msgspec.json.Decoder()


def parse_arguments(arguments: str | UnsetType) -> tuple[Raw, bool]:
    """A tool input from raw argument text: the text itself when it is JSON, else ``{}``.

    The flag says whether the text survives (it does when it is JSON, kept byte for byte; not
    whitespace around it, which no JSON member keeps)."""
    if arguments is UNSET:
        return Raw(b"{}"), False
    data = arguments.encode()
    try:
        _any_decoder.decode(data)
    except msgspec.DecodeError:
        return Raw(b"{}"), False
    value = data.strip(b" \t\n\r")
    return Raw(value), value == data


def decode_known(cls: type[_S], known: dict[str, Raw], kind: str) -> tuple[_S, dict[str, Raw]]:
    """Decode the known members of a frame whose unknown top-level members were set apart.

    Members holding unknown fields deeper down (a new field inside nest's ``usage``) are
    decoded for what is known, and come back as the second value, byte for byte, for the
    event's :class:`~streambridge.events.Verbatim`: nothing is lost.
    """
    data = json_encode(known)
    try:
        return msgspec.json.decode(data, type=cls), {}
    except msgspec.ValidationError:
        pass
    try:
        wire = decode_lenient(cls, data)
    except msgspec.ValidationError as exc:
        raise FrameProblem(f"a valid {kind!r} frame ({exc})") from None
    return wire, verbatim_members(wire, known)


def decode_lenient(cls: type[_S], data: bytes | Raw) -> _S:
    """``data`` as ``cls`` with unknown fields at any depth left out (``ValidationError`` if
    it is not one)."""
    wire = _lenient_decoder(cls).decode(data)
    return msgspec.json.decode(json_encode(wire), type=cls)


def verbatim_members(wire: msgspec.Struct, original: dict[str, Raw]) -> dict[str, Raw]:
    """The original members that the decoded ``wire`` does not say byte for byte."""
    said = _envelope_decoder.decode(json_encode(wire))
    return {k: v for k, v in original.items() if k in said and bytes(said[k]) != bytes(v)}


@functools.cache
def _lenient_decoder(cls: type[msgspec.Struct]) -> msgspec.json.Decoder:
    return msgspec.json.Decoder(_lenient_type(cls))


@functools.cache
def _lenient_type(tp: Any) -> Any:
    """The same type with every Struct in it accepting unknown fields, at any depth."""
    if isinstance(tp, type) and issubclass(tp, msgspec.Struct):
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for f in msgspec.structs.fields(tp):
            if f.default is not msgspec.NODEFAULT:
                fields.append((f.name, _lenient_type(f.type), f.default))
            else:
                fields.append((f.name, _lenient_type(f.type)))
        config = tp.__struct_config__
        return msgspec.defstruct(
            tp.__name__,
            fields,
            kw_only=True,
            rename={f.name: f.encode_name for f in msgspec.structs.fields(tp)},
            tag=config.tag,
            tag_field=config.tag_field,
            omit_defaults=config.omit_defaults,
        )
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return typing.Union[tuple(_lenient_type(a) for a in typing.get_args(tp))]  # noqa: UP007
    if origin is list:
        return list[_lenient_type(typing.get_args(tp)[0])]  # type: ignore[misc]
    return tp


def derived_id(prefix: str, first: Event) -> str:
    """A deterministic id for something the source lacks: same input, same id."""
    return prefix + hashlib.sha1(encode_event(first)).hexdigest()[:12]


_HEX = frozenset("0123456789abcdef")


def is_derived(prefix: str, value: str) -> bool:
    """Whether an id has the form :func:`derived_id` gives it."""
    return len(value) == len(prefix) + 12 and value.startswith(prefix) and _HEX.issuperset(value[len(prefix) :])


_INVENTED_START = RunStart(synthetic=True)
#: the name of a tool call an encoder announces for an outcome (or input) whose call the source
#: never announced: every protocol needs calls announced first
UNKNOWN_TOOL = "unknown"
_INVENTED_CALLS: dict[type, Event] = {
    ToolCall: ToolCall(name=UNKNOWN_TOOL, synthetic=True),
    ToolInputStart: ToolInputStart(name=UNKNOWN_TOOL, synthetic=True),
}
_EMPTY_INPUT = Raw(b"{}")


def announcement(kind: type[ToolCall] | type[ToolInputStart], call_id: str) -> Event:
    """The tool call (or input start) an encoder invents to announce ``call_id``."""
    return kind(call_id=call_id, name=UNKNOWN_TOOL, synthetic=True)


def invented_call(event: Event) -> bool:
    """Whether a tool call (or input start) is an invented announcement: targets write it as
    a plain call of that name with an empty input, which :func:`read_call` reads back."""
    template = _INVENTED_CALLS.get(type(event))
    return template is not None and event.synthetic and msgspec.structs.replace(event, call_id="") == template


def read_call(event: _C) -> _C:
    """For every decoder: a call of the invented shape is the invented announcement."""
    if event.name != UNKNOWN_TOOL or event.synthetic:
        return event
    probe = msgspec.structs.replace(event, call_id="", synthetic=True)
    if type(probe) is ToolCall:
        if probe.input == _EMPTY_INPUT:
            probe.input = UNSET
        if probe.arguments_json == "":
            probe.arguments_json = UNSET
    if probe == _INVENTED_CALLS[type(event)]:
        event.synthetic = True
        if type(event) is ToolCall:
            event.input = event.arguments_json = UNSET
    return event


def invented_start(event: RunStart) -> bool:
    """A run start an encoder made up for a source without one (at most a derived run id).

    Targets that need a run start write it as a plain one with that id, and their decoders
    read an id of the derived form back as this invented start: no carrier describes it."""
    return event.synthetic and msgspec.structs.replace(event, run_id=UNSET) == _INVENTED_START


def _check_utf8(data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameProblem(
            f"valid UTF-8; byte 0x{data[exc.start]:02x} at offset {exc.start} of the frame is not", "encoding"
        ) from None


class TextPieces:
    """Keeps a growing list of text deltas small: every few thousand pieces are joined into one
    string, so a long answer costs about its own size in memory rather than an object per
    delta, and each piece is copied once (the terminal needs the whole text at the end)."""

    STEP = 4096

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self._joined = 0  # pieces before this index are already joined chunks
        self._joined_chars = 0
        self._counted = 0  # pieces before this index are counted in _counted_chars
        self._counted_chars = 0

    def compact(self) -> None:
        pieces, start = self.pieces, self._joined
        if len(pieces) - start >= self.STEP:
            chunk = "".join(pieces[start:])
            pieces[start:] = [chunk]
            self._joined = self._counted = len(pieces)
            self._joined_chars += len(chunk)
            self._counted_chars = self._joined_chars

    def chars(self) -> int:
        """How many characters the text has so far (each piece is counted once)."""
        pieces = self.pieces
        if self._counted < len(pieces):
            self._counted_chars += sum(map(len, pieces[self._counted :]))
            self._counted = len(pieces)
        return self._counted_chars

    def text(self) -> str:
        """The whole text, kept as the only piece: asking again (a terminal's text, then the
        check that it says what was streamed) costs no copy."""
        pieces = self.pieces
        if not pieces:
            return ""
        if len(pieces) > 1:
            whole = "".join(pieces)
            pieces[:] = [whole]
            self._joined = self._counted = 1
            self._joined_chars = self._counted_chars = len(whole)
        return pieces[0]


def _append_deltas(
    out: list[Event], texts: list[str], reasoning: bool = False, ids: Sequence[bytes] | None = None
) -> None:
    make = ReasoningDelta if reasoning else TextDelta
    if ids is None:
        for text in texts:
            out.append(make(text=text))
    else:
        for text, line in zip(texts, ids, strict=True):
            out.append(make(text=text, event_id=line[4:].decode()))  # an `id: <ASCII digits>` line


class EncodingSink:
    """A list-like target for a decoder that encodes every event as it is appended, so a
    translation needs no intermediate event list (the decoder appends, the encoder writes)."""

    __slots__ = ("_encoder", "count", "parts", "terminal")

    def __init__(self, encoder: Encoder, parts: list[bytes]) -> None:
        self._encoder = encoder
        self.parts = parts
        self.count = 0
        self.terminal: Terminal | None = None

    def deltas(self, texts: list[str], reasoning: bool = False, ids: Sequence[bytes] | None = None) -> None:
        """A run of plain text (or reasoning) deltas of the primary message, written without
        making events when the encoder can write them as they stand (the hot path of every
        translation: deltas are nearly all of a stream). ``ids`` are the frames' own
        ``id: <digits>`` lines, written back before each delta's frame in SSE output."""
        encoder = self._encoder
        if not encoder._text_ready or (ids is not None and not encoder._sse):
            _append_deltas(self, texts, reasoning, ids)  # type: ignore[arg-type]
            return
        if encoder._owed:
            encoder._pay(self.parts)
        # writing plain deltas changes no encoder state, so the whole run is one join
        self.count += len(texts)
        if reasoning:
            head = encoder._reasoning_head
        else:
            head = encoder._text_head
            if encoder._own_text:
                encoder._text.extend(texts)
        tail = encoder._text_tail
        if ids is not None:  # numbered frames: each delta's frame after its own id line
            self.parts.append(
                b"".join([line + b"\n" + head + json_encode(t) + tail for t, line in zip(texts, ids, strict=True)])
            )
        elif len(texts) == 1:  # a chunk of one frame, as a live upstream writes them
            self.parts.append(head + json_encode(texts[0]) + tail)
        else:
            self.parts.append(head + (tail + head).join(map(json_encode, texts)) + tail)

    def append(self, event: Event) -> None:
        self.count += 1
        encoder = self._encoder
        if type(event) is TextDelta and encoder._started and not encoder._terminated:
            frame = encoder._fast_text(event)
            if frame is not None:
                if encoder._owed:
                    encoder._pay(self.parts)
                if event.message_id is UNSET and encoder._own_text:
                    encoder._text.append(event.text)
                self.parts.append(frame)
                return
        elif type(event) is Terminal and self.terminal is None:
            self.terminal = event
        encoder._event(event, self.parts)


class Decoder:
    """Base of every codec decoder. Subclasses implement :meth:`_decode`.

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

    def __init__(
        self,
        framing: Framing | None = None,
        *,
        strict: bool = False,
        max_event_size: int = DEFAULT_MAX_EVENT_SIZE,
    ) -> None:
        self.framing: Framing | None = framing
        self.strict = strict
        self.max_event_size = max_event_size
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
        self._out: list[Event] = []
        self._out_deltas: Callable[[list[str], bool, Sequence[bytes] | None], None] = lambda *run: None
        #: the message id a text wire must carry to be primary text; None when every text wire
        #: of the protocol is (agentkit: its primary message, once known)
        self._text_owner: object = None
        self._whole = False  # the carrier just read is a terminal whose answer came whole
        self._calls: set[str] = set()  # tool calls announced so far
        self._pieces = TextPieces(self._text)

    # -- public API ---------------------------------------------------------------------

    def feed(self, data: bytes, into: list[Event] | None = None) -> list[Event]:
        """Decode a chunk; the events are appended to ``into`` (anything with ``append``, such as
        an encoder's sink) or to a new list, which is returned."""
        out: list[Event] = [] if into is None else into
        self._out = out
        self._out_deltas = getattr(out, "deltas", None) or functools.partial(_append_deltas, out)
        # Plain frames go straight to the codec's hot path while no carrier, held run start, bad
        # first frame or terminal needs the full way; that cannot change while the parser hands
        # them over.
        hot = self._hot_decoder is not None and not (
            self._covering or self._held is not None or self._early or self._terminated
        )
        self._parser.on_plain = self._take_run if hot else None
        frames = self._parser.feed(data)
        if self._parser.problems:
            self._in_order(frames, out)
        else:
            for frame in frames:
                self._frame(frame, out)
        self._pieces.compact()
        return out

    def close(self, into: list[Event] | None = None) -> list[Event]:
        """End of input: the rest, ending with a terminal (appended to ``into`` as in :meth:`feed`)."""
        out: list[Event] = [] if into is None else into
        self._parser.on_plain = None  # what remains takes the full way, into this call's list
        self._in_order(self._parser.close(), out)
        self._release(out)
        self._finish(out)
        if not self._terminated:
            if self.strict:
                self._no_terminal()
            log.warning("%s: input ended without a terminal event", self.codec)
            self._push(truncation_terminal(), out)
        return out

    def _no_terminal(self) -> None:
        """Strict mode at the end of input without a terminal: where the terminal was due."""
        parser = self._parser  # after close, the real parser (a detector has handed over)
        frames, end = parser._index, parser.consumed  # type: ignore[union-attr]
        after = f"after frame {frames}" if frames else "before any frame"
        words = f" ({self.terminal_words})" if self.terminal_words else ""
        expected = f"a terminal event before the end of input{words}; the input ended {after} without one"
        raise StreamError(self.codec, frames + 1, end, expected, kind="truncated")

    @property
    def terminated(self) -> bool:
        return self._terminated

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
    _hot_decoder: ClassVar[msgspec.json.Decoder | None] = None
    _hot_text: ClassVar[type] = type(None)
    _hot_reasoning: ClassVar[type] = type(None)

    def _take_wire(self, wire: Any) -> Event | None:
        """The hot path for one decoded ASCII frame that is not a primary delta: its event, or
        None to send the frame the full way instead.

        It must not take run starts, terminals or carriers (those need the full way), and what
        it changes before declining must be safe to change again on the full way."""
        return None

    def _take_run(self, blocks: Sequence[bytes], skip: int, ids: Sequence[bytes] | None = None) -> int:
        """The parser's hot path (see ``SSEParser.on_plain``): decode plain frames in order and
        hand each run of primary text (or reasoning) deltas to the output in one call, which an
        encoding sink writes without making an event per delta. ``ids`` (each frame's own
        ``id: <digits>`` line) become the events' ``event_id``."""
        decode = self._hot_decoder.decode  # type: ignore[union-attr]
        text_type, reasoning_type = self._hot_text, self._hot_reasoning
        owner = self._text_owner
        run: list[str] = []
        run_type: type | None = None
        run_from = 0
        taken = len(blocks)
        for index, block in enumerate(blocks):
            payload = block[skip:]
            try:
                wire = decode(payload)
            except (msgspec.ValidationError, msgspec.DecodeError):
                taken = index
                break
            t = type(wire)
            if (t is text_type or t is reasoning_type) and (owner is None or wire.message_id == owner):
                if t is not run_type:
                    if run:
                        self._take_deltas(run, run_type is reasoning_type, ids, run_from)
                    run, run_type, run_from = [], t, index
                run.append(wire.text)  # msgspec has checked its UTF-8
                continue
            if run:
                self._take_deltas(run, run_type is reasoning_type, ids, run_from)
                run, run_type = [], None
            # raw JSON members are not UTF-8-checked by msgspec: the full way checks those
            event = self._take_wire(wire) if payload.isascii() else None
            if event is None:
                taken = index
                break
            if ids is not None:
                event.event_id = ids[index][4:].decode()  # an `id: <ASCII digits>` line
            self._accept(event)
            owner = self._text_owner
        if run:
            self._take_deltas(run, run_type is reasoning_type, ids, run_from)
        if taken:
            self._begun = True
        return taken

    def _accept(self, event: Event) -> None:
        """A non-delta event from the hot path (a codec that settles events late sees it here)."""
        if type(event) is ToolCall:
            self._calls.add(event.call_id)
        self._out.append(event)

    #: the protocol cannot say a tool input start (its encoders invent none for input deltas
    #: of an unannounced call): the decoder invents it, so every decoder says the same
    _invents_input_start: ClassVar[bool] = True

    def _take_deltas(self, texts: list[str], reasoning: bool, ids: Sequence[bytes] | None, start: int) -> None:
        self._before_deltas(reasoning)
        if not reasoning:
            self._text.extend(texts)
        if ids is None:
            self._out_deltas(texts, reasoning, None)
        else:
            self._out_deltas(texts, reasoning, ids[start : start + len(texts)])

    def _before_deltas(self, reasoning: bool) -> None:
        """A run of primary deltas from the hot path is about to be passed on."""

    def _finish(self, out: list[Event]) -> None:
        """End of input: flush anything held back."""

    def _carrier(self, body: bytes, frame: Frame) -> Event:
        """Restore an event a streambridge encoder carried in this protocol's escape hatch."""
        try:
            carrier = _carrier_decoder.decode(body)
            event = decode_event(carrier.event)
        except (msgspec.DecodeError, msgspec.ValidationError) as exc:
            raise FrameProblem(f"a streambridge data part holding a valid event ({exc})") from None
        self._cover_next = max(carrier.covers, 0)
        self._from_carrier = True
        self._whole = carrier.whole and type(event) is Terminal and isinstance(event.text, str)
        return event

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

    def _push(self, event: Event, out: list[Event]) -> None:
        if self._terminated:
            self._after_terminal += 1
            log.warning("%s: %s event after the terminal event ignored", self.codec, type(event).__name__)
            return
        kind = type(event)
        self._begun = True
        if self._early and kind is not RunStart:
            self._flush_early(out)
        if kind is TextDelta:
            if event.message_id is UNSET:
                self._text.append(event.text)  # type: ignore[attr-defined]
        elif kind is ToolCall or kind is ToolInputStart:
            self._calls.add(event.call_id)  # type: ignore[attr-defined]
        elif kind is ToolInputDelta:
            if self._invents_input_start and event.call_id not in self._calls:  # type: ignore[attr-defined]
                self._calls.add(event.call_id)  # type: ignore[attr-defined]
                out.append(announcement(ToolInputStart, event.call_id))  # type: ignore[attr-defined]
        elif kind is Terminal:
            _read_terminal(event)  # type: ignore[arg-type]
            self._terminated = True
            if event.text is UNSET and event.message_id is UNSET:  # type: ignore[attr-defined]
                event.text = self._pieces.text()  # type: ignore[attr-defined]
        out.append(event)
        if self._early:  # bad frames that came before the run start follow it
            self._flush_early(out)

    def _flush_early(self, out: list[Event]) -> None:
        early, self._early = self._early, []
        for bad in early:  # (``out`` may be an encoding sink: append only)
            out.append(bad)

    # -- internals ----------------------------------------------------------------------

    def _frame(self, frame: Frame, out: list[Event]) -> None:
        if self._covering:
            self._covering -= 1
            with contextlib.suppress(FrameProblem):  # for the codec's state only: the carrier replaces it
                self._decode(frame)
            self._cover_next = 0  # a carrier among covered frames covers nothing more
            return
        self._from_carrier = False
        if self._terminated:
            self._trailing(frame)
            return
        try:
            if not frame.data.isascii():
                _check_utf8(frame.data)
            events = self._decode(frame)
        except FrameProblem as exc:
            self._release(out)
            self._bad_frame(frame, str(exc), out, exc.kind)
            return
        if self._whole:  # a carried terminal whose answer came whole: the delta it was made from
            self._whole = False
            events.insert(0, TextDelta(text=events[0].text, synthetic=True))  # type: ignore[attr-defined]
        if frame.own_id and frame.last_id:
            for event in events:
                if event.event_id is UNSET:  # an NDJSON-carried event brings its own
                    event.event_id = frame.last_id
        if self._cover_next:
            self._covering, self._cover_next = self._cover_next, 0
        if self._held is not None:
            if self._from_carrier and events and type(events[0]) is RunStart:
                if events[0].event_id is UNSET:  # its id stood on the native frame
                    events[0].event_id = self._held.event_id
                self._held = None  # a carried run start amends the native one before it
            else:
                self._release(out)
        if events and type(events[-1]) is RunStart and not self._from_carrier:
            self._held = events.pop()  # held until the next frame: a carrier may amend it
        for event in events:
            self._push(event, out)

    def _trailing(self, frame: Frame) -> None:
        """A frame after the terminal: never decoded, only counted (strict: an error). An
        OpenAI-style ``[DONE]`` sentinel after it is what such upstreams write: not even a warning."""
        self._after_terminal += 1
        if self.strict:
            expected = "nothing after the terminal event; this frame follows it"
            raise StreamError(self.codec, frame.index, frame.offset, expected, frame.data, "after-terminal")
        level = logging.DEBUG if frame.data.strip() == b"[DONE]" else logging.WARNING
        log.log(
            level, "%s: frame %d at byte %d after the terminal event ignored", self.codec, frame.index, frame.offset
        )

    def _release(self, out: list[Event]) -> None:
        if self._held is not None:
            held, self._held = self._held, None
            self._push(held, out)

    def _bad_frame(self, frame: Frame, expected: str, out: list[Event], kind: ProblemKind = "malformed") -> None:
        if self.strict:
            raise StreamError(self.codec, frame.index, frame.offset, expected, frame.data, kind)
        text = frame.data.decode("utf-8", "replace")
        where = {"codec": self.codec, "frame": frame.index, "offset": frame.offset, "expected": expected, "kind": kind}
        log.warning("%(codec)s: frame %(frame)d at byte %(offset)d: expected %(expected)s", where)
        bad = Malformed(raw=text, error=f"expected {expected}", frame=frame.index, offset=frame.offset)
        if self._begun:
            self._push(bad, out)
        else:  # before anything else: it waits for the next event, so a run start comes first
            self._early.append(bad)

    def _in_order(self, frames: list[Frame], out: list[Event]) -> None:
        """Frames and the framing problems among them (frames the parser could not deliver),
        in stream order: by frame number, however the input was chunked."""
        problems = self._parser.problems
        for frame in frames:
            while problems and problems[0].index < frame.index:
                self._framing_problem(problems.pop(0), out)
            self._frame(frame, out)
        while problems:
            self._framing_problem(problems.pop(0), out)

    def _framing_problem(self, problem: FramingError, out: list[Event]) -> None:
        self._release(out)  # no carrier amends a held run start: this frame is none
        frame = Frame(problem.raw, index=problem.index, offset=problem.offset)
        self._bad_frame(frame, str(problem), out, problem.kind)  # type: ignore[arg-type]


class Encoder:
    """Base of every codec encoder. Subclasses implement :meth:`_handle` and :meth:`_carrier_payload`."""

    codec: ClassVar[str] = ""
    default_framing: ClassVar[Framing] = "sse"

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
        self._bare_carriers: dict[tuple[type, bool, int], bytes] = {}
        self._whole_text: list[Event] = []  # text a decoder made from its source's terminal
        self._covered: list[bytes] = []  # the frames of that text, rendered by the terminal
        self.dropped = 0
        #: a plain primary text delta can be written from ``_text_head`` + JSON + ``_text_tail``,
        #: a plain primary reasoning delta from ``_reasoning_head`` + JSON + ``_text_tail``
        self._text_ready = False
        #: frames held back that plain text must be preceded by (see :meth:`_pay`)
        self._owed = False
        self._text_head = b""
        self._reasoning_head = b""
        self._text_tail = b""

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

    def share_text(self, decoder: Decoder) -> None:
        """Use the decoder's collected text instead of collecting it again: valid only when
        every event reaches this encoder as soon as the decoder has it (a Translator's sink)."""
        self._text = decoder._text
        self._pieces = decoder._pieces
        self._own_text = False

    def close(self) -> bytes:
        """End of output: guarantees exactly one terminal in the stream."""
        parts: list[bytes] = []
        if not self._terminated:
            self._event(truncation_terminal(), parts)
        return b"".join(parts)

    @property
    def terminated(self) -> bool:
        return self._terminated

    # -- for subclasses -----------------------------------------------------------------

    #: the terminal says the whole answer itself (agentkit's ``result.text``), so text that a
    #: decoder made from a terminal needs no frames of its own
    _terminal_says_text: ClassVar[bool] = False
    #: the protocol streams tool input after a start of its own (nest); where it does not, a
    #: carried input delta needs no invented start (its call is announced before its outcome)
    _says_input_start: ClassVar[bool] = False

    def _begin(self, event: Event, parts: list[bytes]) -> None:
        """Write the protocol's preamble before the first event."""

    def _fast_text(self, event: TextDelta) -> bytes | None:
        """The framed bytes of a text delta that needs nothing else; ``None`` otherwise."""
        if (
            self._text_ready
            and event.message_id is UNSET
            and not event.synthetic
            and event.part_id is UNSET
            and event.extra is UNSET
            and event.verbatim is UNSET
            and event.event_id is UNSET
        ):
            return self._text_head + json_encode(event.text) + self._text_tail
        return None

    def _plain_text_ok(self) -> bool:
        """Whether the protocol's state lets a plain text delta be written as it stands."""
        return bool(self._text_head)

    def _pay(self, parts: list[bytes]) -> None:
        """Write what ``_owed`` says must come before plain text written on the fast path."""
        self._owed = False

    def _handle(self, event: Event, parts: list[bytes]) -> None:
        raise NotImplementedError

    def _carrier_payload(self, event: Event, name: bytes, body: bytes) -> bytes:
        """The protocol's data part around a carrier's ``name`` (JSON) and ``body`` (the
        members from :func:`carrier_body`)."""
        raise NotImplementedError

    def _put(self, parts: list[bytes], event: Event, payloads: list[Payload], native: bool) -> None:
        """Frame an event's payloads, with a carrier when they do not say all of it.

        The carrier goes before the frames it covers, except for a run start: a protocol's
        first frame must stay first, so its carrier follows and amends it (covers 0). Members
        this codec decoded with unknown fields inside go back as they came; another codec's
        such members make a carrier.
        """
        if event.verbatim is not UNSET:
            if event.verbatim.origin == self.codec:
                payloads = _verbatim_payloads(payloads, event.verbatim.members)
            else:
                native = False
        line_id = ""  # the event's SSE id, written on its first frame
        if event.event_id is not UNSET:
            if self._sse and _is_id_line(event.event_id):
                line_id = event.event_id
            else:
                native = False  # NDJSON has no id line: the carrier keeps the id
        amend = type(event) is RunStart
        covered: list[bytes] = []
        if self._covered and type(event) is Terminal:
            covered, self._covered = self._covered, []
            native = False  # its text came whole: its carrier renders that text's frames too
        if not native and not amend:
            parts.append(self._carry(event, len(covered) + len(payloads), line_id, whole=bool(covered)))
            parts.extend(covered)
            line_id = ""
        frame_id = "" if amend and not native else line_id  # an amending carrier says the id
        for payload in payloads:
            if type(payload) is tuple:
                parts.append(self._emit(payload[1], payload[0], frame_id))
            else:
                parts.append(self._emit(payload, "", frame_id))  # type: ignore[arg-type]
            frame_id = ""
        if not native and amend:
            parts.append(self._carry(event, 0, line_id))

    def _emit(self, payload: bytes, name: str, event_id: str = "") -> bytes:
        """One framed frame, after its ``id:`` line when it has an id (nest numbers here)."""
        if not name and not event_id and self._sse and b"\n" not in payload and b"\r" not in payload:
            return b"data: " + payload + b"\n\n"
        return self._frame(payload, name, event_id)

    def _carry(self, event: Event, covers: int = 0, line_id: str = "", *, whole: bool = False) -> bytes:
        """The framed carrier of an event, with the event's id on its ``id:`` line when it has
        one (else in its body). Those of bare step brackets, the most frequent carriers, are
        made once per encoder."""
        template = _BARE_STRUCTURE.get((type(event), event.synthetic))
        if template is None or event != template:
            body = carrier_body(event, covers, keep_id=not line_id, whole=whole)
            return self._emit(self._carrier_payload(event, _carrier_name(event), body), "", line_id)
        key = (type(event), event.synthetic, covers)
        payload = self._bare_carriers.get(key)
        if payload is None:
            payload = self._carrier_payload(event, _carrier_name(event), carrier_body(event, covers))
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
        """Text a decoder made from its source's terminal (agentkit's non-streaming answer):
        written as plain text frames that the terminal's carrier covers, so the terminal comes
        back as it was and no carrier describes the synthetic text. (Should anything else
        follow such text, it is written as it is.)"""
        held, self._whole_text = self._whole_text, []
        if not for_terminal:
            for delta in held:
                self._handle(delta, parts)
            return
        frames: list[bytes] = []
        for delta in held:
            self._handle(msgspec.structs.replace(delta, synthetic=False), frames)
        self._covered = frames

    def _event(self, event: Event, parts: list[bytes]) -> None:
        if self._terminated:
            self.dropped += 1
            log.warning("%s: %s after the terminal event not written", self.codec, type(event).__name__)
            return
        if not self._started:
            self._started = True
            self._first = event
            self._begin(event, parts)
        t = type(event)
        if t in _NEEDS_CARE:
            if t is TextDelta:
                if event.message_id is UNSET and self._own_text:
                    self._text.append(event.text)  # type: ignore[attr-defined]
            elif t is Terminal:
                if event.text is UNSET and event.message_id is UNSET:  # type: ignore[attr-defined]
                    event = msgspec.structs.replace(event, text=self._assembled())  # as every decoder fills it
                event = _wire_terminal(event)  # type: ignore[arg-type]
            elif t is ToolInputDelta:
                if event.call_id not in self._announced and self._says_input_start:  # type: ignore[attr-defined]
                    self._announced.add(event.call_id)  # type: ignore[attr-defined]
                    self._handle(announcement(ToolInputStart, event.call_id), parts)  # type: ignore[attr-defined]
            else:  # a tool outcome
                self._announce(event.call_id, parts)  # type: ignore[attr-defined]
        if t is ToolInputStart and not self._says_input_start and invented_call(event):
            return  # invented for an input delta: this protocol's decoder invents it again
        if t is ToolCall and event.call_id in self._announced and invented_call(event):  # type: ignore[attr-defined]
            return  # an invented announcement of a call this output announced already
        if t is TextDelta and event.synthetic and event.message_id is UNSET and not self._terminal_says_text:
            self._whole_text.append(event)  # made from the source's terminal, which follows
            self._text_ready = False
            return
        if self._whole_text:
            self._write_whole_text(parts, for_terminal=t is Terminal)
        self._handle(event, parts)
        if t is ToolCall or t is ToolInputStart:
            self._announced.add(event.call_id)  # type: ignore[attr-defined]
        elif t is Terminal:
            self._terminated = True
            self._text_ready = False
            return
        self._text_ready = self._plain_text_ok()


def _is_id_line(event_id: str) -> bool:
    """Whether an id can stand on an SSE ``id:`` line and be read back the same."""
    return bool(event_id) and "\n" not in event_id and "\r" not in event_id and "\x00" not in event_id


def _verbatim_payloads(payloads: list[Payload], members: dict[str, Raw]) -> list[Payload]:
    """The payloads with the event's frame (the first unnamed one) saying ``members`` as
    received, in place of this codec's encoding of them."""
    out = list(payloads)
    for i, payload in enumerate(out):
        if type(payload) is bytes:
            frame = _envelope_decoder.decode(payload)
            frame.update(members)
            out[i] = json_encode(frame)
            break
    return out


#: the events ``_event`` does something for before the codec sees them
_NEEDS_CARE = frozenset((TextDelta, Terminal, ToolInputDelta, ToolOutput, ToolError, ToolDenied))


def carrier_body(event: Event, covers: int, *, keep_id: bool = True, whole: bool = False) -> bytes:
    """The shared members of a carrier: ``"covers":N,"whole":true,"event":{...}`` (covers left
    out when 0, whole when false).

    The event's ``event_id`` is left out when the frame's own ``id:`` line says it."""
    if not keep_id and event.event_id is not UNSET:
        event = msgspec.structs.replace(event, event_id=UNSET)
    body = b'"event":' + encode_event(event)
    if whole:
        body = b'"whole":true,' + body
    if covers:
        return b'"covers":' + str(covers).encode() + b"," + body
    return body


def _carrier_name(event: Event) -> bytes:
    """``"data-<name>"`` as JSON: the data part's own name, or the event's type."""
    if type(event) is DataPart and event.name:
        return json_encode("data-" + event.name)
    return _CARRIER_NAMES[type(event)]


_CARRIER_NAMES: dict[type, bytes] = {cls: json_encode("data-" + tag) for tag, cls in EVENT_TYPES.items()}
_BARE_STRUCTURE: dict[tuple[type, bool], Event] = {
    (StepStart, False): StepStart(),  # (synthetic brackets are never carried)
}


# -- the terminal ladder shared by every codec ---------------------------------------------

#: status → the failure code used when a protocol only has ``code`` to say it (nest, oma).
STATUS_CODES: dict[str, str] = {
    "error": "run_failed",
    "blocked": "content_filter",
    "refused": "refused",
    "notProvisioned": "not_provisioned",
    "cancelled": "cancelled",
}
#: failure code → status, for protocols whose failures are one ``error`` with a code.
CODE_STATUSES: dict[str, RunStatus] = {
    "content_filter": "blocked",
    "output_rejected": "blocked",
    "refused": "refused",
    "not_provisioned": "notProvisioned",
}
DEFAULT_MESSAGES: dict[str, str] = {
    "error": "The run failed.",
    "blocked": "The answer was blocked by a content filter.",
    "refused": "The model declined to answer.",
    "notProvisioned": "The assistant is not set up in this environment.",
    "cancelled": "The run was cancelled.",
}


def default_failure(status: str) -> Failure:
    """The failure an encoder attaches when a non-success terminal came without one."""
    return Failure(status=status, message=DEFAULT_MESSAGES[status], code=STATUS_CODES[status])  # type: ignore[arg-type]


def canonical_failure(status: str, failure: Failure | UnsetType) -> Failure | UnsetType:
    """A failure equal to the default one for its status is the same as none (one canonical form)."""
    if failure is not UNSET and status != "succeeded" and failure == default_failure(status):
        return UNSET
    return failure


def status_for_code(code: str | None) -> RunStatus:
    return CODE_STATUSES.get(code or "", "error")
