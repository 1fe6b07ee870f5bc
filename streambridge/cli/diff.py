"""``streambridge diff``: do two transcripts say the same thing? Even in different protocols.

Both files are decoded to events and normalised before comparing:

* text and reasoning deltas are merged (how a model chunked its text is not its meaning); a
  merged text (or a terminal's assembled text) longer than ``TEXT_LIMIT`` characters is
  compared by its length and BLAKE2b digest and shown by its start, so memory does not grow
  with the answer;
* ids that producers generate (run, thread, turn, message, call and UI ids) are shown by their
  order of appearance (``call#1``) and compared as joins: ids first met in two events that agree
  are paired, and the pair must hold wherever either id comes back (a new random id is not a
  difference, a join that breaks is, and an extra call does not shift every later id);
* structure a codec invented (``synthetic`` steps and run starts) is dropped, and so are
  transport cursors (SSE ``id:`` lines, ``event_id``).

Across protocols only what both say natively is compared: the event types both codecs have,
and for the common ones their core fields (text, tool name and input, outputs as JSON, the
terminal's status and failure). ``--exact-ids`` compares id values as well.

The comparison streams, in time linear in the input: both files are decoded chunk by chunk
and their events compared in lockstep. At a difference it looks up to ``WINDOW`` events ahead
on each side for the nearest point (fewest events passed over) where ``CONFIRM`` events agree
again (or both streams end), and reports what lies before it as one hunk: ``delete`` (only in
A), ``insert`` (only in B) or ``replace``. When one side has ended, the rest of the other is
one hunk (its first ``WINDOW`` events shown, the others counted). It stops at ``--max`` hunks.

Limits: a run of more than ``WINDOW`` inserted or deleted events, or a stretch of differences
too dense to find ``CONFIRM`` agreeing events, is reported as replaced events one at a time
until the streams agree again; ids are remembered for the last ``ID_MEMORY`` distinct ids of
each kind (an id that comes back after that counts as new, on both sides alike).

Frame numbers: a file is decoded in chunks cut at frame boundaries (the fast path of every
decoder), so an event is first known only by its chunk's frames. When there are differences, a
second pass re-decodes the file frame by frame in just the chunks that hold reported events.
stdin, which cannot be read twice, is decoded frame by frame from the start.

Memory is bounded by the difference window (the look-ahead, the reported hunks, the id
memory), not by the files; a decoder itself keeps the answer text its terminal carries and its
tool calls' ids.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import msgspec
import typer
from msgspec import UNSET

from ..codecs import Codec
from ..codecs.decoder import Decoder
from ..codecs.framing import DEFAULT_MAX_EVENT_SIZE, Framing, make_parser
from ..codecs.terminals import default_failure
from ..events import (
    Event,
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
    encode_event,
)
from ..transcripts import CHUNK_SIZE, Detected, Source, cut_frames
from .common import (
    EXIT_FINDINGS,
    ProgressBar,
    UserError,
    VerboseOption,
    complete_protocol,
    set_verbose,
)
from .options import protocol_help
from .transcripts import detect, open_source

#: events looked ahead on each side to resync after a difference
WINDOW = 32
#: events that must agree (or both streams end) for a resync point to count
CONFIRM = 3
#: characters of a merged text kept as text; a longer one is compared by digest
TEXT_LIMIT = 4096
#: characters of a digested text shown
PREVIEW = 100
#: distinct ids of each kind remembered per side (and twice as many pairs of ids)
ID_MEMORY = 1024
#: characters of an event shown in a hunk
SHOWN = 160
_DIGEST_STEP = 1 << 16  # characters encoded at once into a digest
#: bytes read in the first pass above which its decoders are collected before the second
_COLLECT_AFTER = 1 << 20
DEFAULT_MAX = 10

_STRUCTURE = (RunStart, StepStart, StepFinish, TextStart, TextEnd, ReasoningStart, ReasoningEnd)
_MERGED = (TextDelta, ReasoningDelta)
_ID_KINDS = {
    "callId": "call",
    "parentId": "call",
    "toolCallId": "call",
    "messageId": "msg",
    "uiId": "ui",
    "runId": "run",
    "threadId": "thread",
    "turnId": "turn",
    "correlationId": "corr",
}
_ID_FIELDS = frozenset(_ID_KINDS)
#: across protocols, the fields compared for each event type (others: everything).
_CORE_FIELDS = {
    "text": ("text",),
    "reasoning": ("text",),
    "run-start": (),
    "tool-call": ("callId", "name", "input"),
    "tool-output": ("callId", "output"),
    "tool-error": ("callId", "error"),
    "tool-denied": ("callId", "reason"),
    "terminal": ("status", "failure"),
    "data": ("name", "data"),
    "malformed": ("raw",),
}
_IGNORED = ("synthetic", "eventId")  # invented structure and transport cursors (SSE ids)
#: where a frame ends: after an empty line (SSE, any line ending) or a line (NDJSON)
_BOUNDARIES = {"sse": (b"\n\n", b"\n\r\n", b"\r\r"), "ndjson": (b"\n",)}
_decode_any = msgspec.json.Decoder()

Ref = str  # an id as one side shows it: its kind and order of appearance (``call#3``)


# -- normalised events -------------------------------------------------------------------------


class Item:
    """One normalised event: its comparison key, its ids' labels, how to show it, where it was.

    ``frame`` is the frame it came from (None: the end of input); while ``lo`` is not None the
    event is only known to come from a frame after ``lo`` and up to ``frame``."""

    __slots__ = ("frame", "index", "key", "lo", "refs", "shown_fields", "tag")

    def __init__(
        self,
        tag: str,
        key: str,
        refs: tuple[Ref, ...],
        shown_fields: dict[str, Any],
        where: tuple[int | None, int | None],
        index: int,
    ) -> None:
        self.tag, self.key, self.refs, self.shown_fields = tag, key, refs, shown_fields
        (self.frame, self.lo), self.index = where, index

    @property
    def shown(self) -> str:
        text = _key(self.tag, self.shown_fields)
        return text if len(text) <= SHOWN else text[: SHOWN - 3] + "..."


def _key(tag: str, fields: dict[str, Any]) -> str:
    return f"{tag} {msgspec.json.encode(fields, order='sorted').decode()}"


class _Ids:
    """Generated ids by order of appearance, one counter per kind, the last ``ID_MEMORY`` of
    each kind remembered (a bounded memory, whatever the length of the stream)."""

    def __init__(self) -> None:
        self.seen: dict[str, OrderedDict[str, int]] = {}
        self.counts: dict[str, int] = {}

    def label(self, kind: str, value: str) -> int:
        seen = self.seen.setdefault(kind, OrderedDict())
        label = seen.get(value)
        if label is not None:
            seen.move_to_end(value)
            return label
        label = self.counts[kind] = self.counts.get(kind, 0) + 1
        seen[value] = label
        if len(seen) > ID_MEMORY:
            seen.popitem(last=False)
        return label

    def replace(self, fields: dict[str, Any]) -> tuple[tuple[Ref, ...], dict[str, Any]]:
        """Labels put in ``fields`` (for showing); the refs and the fields a key is made of."""
        refs: list[Ref] = []
        keyed: dict[str, str] = {}
        for name in sorted(_ID_FIELDS.intersection(fields)):  # as they stand in the key
            value = fields[name]
            if isinstance(value, str):
                kind = _ID_KINDS[name]
                fields[name] = ref = f"{kind}#{self.label(kind, value)}"
                refs.append(ref)
                keyed[name] = f"{kind}#"
        return tuple(refs), ({**fields, **keyed} if keyed else fields)


class _Digest:
    """A long text as its length, digest and start: constant memory however long it grows."""

    def __init__(self) -> None:
        self.hash = hashlib.blake2b(digest_size=16)
        self.chars = 0
        self.head = ""

    def update(self, text: str) -> None:
        if not self.head:
            self.head = text[:PREVIEW]
        self.chars += len(text)
        for start in range(0, len(text), _DIGEST_STEP):  # a terminal's answer: no whole copy
            self.hash.update(text[start : start + _DIGEST_STEP].encode("utf-8", "surrogatepass"))

    def compared(self) -> dict[str, Any]:
        return {"blake2b": self.hash.hexdigest(), "chars": self.chars}

    def shown(self) -> str:
        return f"{self.head}... ({self.chars:,} characters)"


def _text_value(text: str) -> tuple[Any, str | None]:
    """How a text is compared, and shown when not as itself."""
    if len(text) <= TEXT_LIMIT:
        return text, None
    digest = _Digest()
    digest.update(text)
    return digest.compared(), digest.shown()


class _TextRun:
    """Merged deltas of one kind and message: kept as pieces up to ``TEXT_LIMIT`` characters,
    then digested in batches of that size (the same digest however the text was chunked)."""

    def __init__(self, tag: str, message_id: object, fields: dict[str, Any], frame: int | None, lo: int | None) -> None:
        self.tag, self.message_id, self.fields, self.frame, self.lo = tag, message_id, fields, frame, lo
        self.keyed = "text" in fields  # an empty delta alone has no text member (as received)
        self.parts: list[str] = [fields.pop("text", "")]
        self.size = len(self.parts[0])
        self.digest: _Digest | None = None

    def extend(self, texts: Sequence[str]) -> None:
        self.keyed = True
        self.parts.extend(texts)
        self.size += sum(map(len, texts))
        if self.size > TEXT_LIMIT:
            self._spill()

    def _spill(self) -> None:
        if self.digest is None:
            self.digest = _Digest()
        self.digest.update("".join(self.parts))
        self.parts, self.size = [], 0

    def value(self) -> tuple[Any, str | None]:
        if self.digest is None:
            return "".join(self.parts), None
        self._spill()
        return self.digest.compared(), self.digest.shown()


class Normaliser:
    """The sink a decoder writes into: events in, normalised items out (in ``items``).

    It takes what a decoder hands over, one event (``append``) or a run of plain deltas
    (``deltas``, without making an event per delta), and tags each item with the frames the
    reader says are being fed (``at``)."""

    def __init__(self, vocabulary: frozenset[str] | None, exact_ids: bool) -> None:
        self.vocabulary = vocabulary
        self.ids = None if exact_ids else _Ids()
        self.items: list[Item] = []
        self.count = 0
        self.run: _TextRun | None = None
        self.frame: int | None = None
        self.lo: int | None = None

    def at(self, frame: int | None, lo: int | None = None) -> None:
        self.frame, self.lo = frame, lo

    def take(self) -> list[Item]:
        items, self.items = self.items, []
        return items

    def append(self, event: Event) -> None:
        tag: str = event.__struct_config__.tag  # type: ignore[assignment]  # msgspec says str | int | None: every event's is a str (no cast per event)
        if (event.synthetic and isinstance(event, _STRUCTURE)) or (
            self.vocabulary is not None and tag not in self.vocabulary
        ):
            return
        if isinstance(event, _MERGED):
            if self._continues(tag, event.message_id):
                self.run.extend((event.text,))  # type: ignore[union-attr]
                return
            self.finish()
            self.run = _TextRun(tag, event.message_id, self._fields(tag, event)[0], self.frame, self.lo)
            return
        self.finish()
        self._emit(tag, *self._fields(tag, event), self.frame, self.lo)

    def deltas(self, texts: list[str], reasoning: bool = False, ids: Sequence[bytes] | None = None) -> None:
        """A run of plain deltas of the primary message (a decoder's hot path); ids, the
        frames' SSE ``id:`` lines, are transport cursors and ignored."""
        tag = "reasoning" if reasoning else "text"
        if not texts or (self.vocabulary is not None and tag not in self.vocabulary):
            return
        if not self._continues(tag, UNSET):
            self.append((ReasoningDelta if reasoning else TextDelta)(text=texts[0]))
            texts = texts[1:]
        if texts:
            self.run.extend(texts)  # type: ignore[union-attr]

    def finish(self) -> None:
        """Emit the merged run in progress (before the next item, and at the end)."""
        run, self.run = self.run, None
        if run is not None:
            value, shown = run.value()
            if run.keyed:
                run.fields["text"] = value
            self._emit(run.tag, run.fields, shown, run.frame, run.lo)

    def _continues(self, tag: str, message_id: object) -> bool:
        run = self.run
        return run is not None and run.tag == tag and (self.vocabulary is not None or run.message_id == message_id)

    def _fields(self, tag: str, event: Event) -> tuple[dict[str, Any], str | None]:
        """An event's compared fields, and its text as shown when that is a digest (a
        terminal's assembled answer, compared without copying it into a key)."""
        long_text = shown = None
        if isinstance(event, Terminal) and isinstance(event.text, str) and len(event.text) > TEXT_LIMIT:
            long_text, event = event.text, msgspec.structs.replace(event, text=UNSET)
        fields = _decode_any.decode(encode_event(event))
        del fields["type"]
        for name in _IGNORED:
            fields.pop(name, None)
        if long_text is not None:
            fields["text"], shown = _text_value(long_text)
        if self.vocabulary is not None:
            fields = _core(tag, fields, event)
        return fields, shown

    def _emit(self, tag: str, fields: dict[str, Any], shown: str | None, frame: int | None, lo: int | None) -> None:
        refs: tuple[Ref, ...] = ()
        keyed = fields
        if self.ids is not None:
            refs, keyed = self.ids.replace(fields)
        shown_fields = fields if shown is None else {**fields, "text": shown}
        self.items.append(Item(tag, _key(tag, keyed), refs, shown_fields, (frame, lo), self.count))
        self.count += 1


def _as_json(value: Any) -> Any:
    """A JSON string that holds a JSON object or array compares as that value (agentkit's
    ``resultText`` is text where nest's ``output`` is JSON)."""
    if isinstance(value, str) and value[:1] in ("{", "["):
        try:
            return _decode_any.decode(value)
        except msgspec.DecodeError:
            return value
    return value


def _core(tag: str, fields: dict[str, Any], event: Event) -> dict[str, Any]:
    keep = _CORE_FIELDS.get(tag)
    if tag == "tool-call" and "input" not in fields and "argumentsJson" in fields:
        fields["input"] = _as_json(fields["argumentsJson"])
    if tag == "tool-output":
        fields["output"] = _as_json(fields.get("output"))
    if tag == "terminal":
        if event.status == "succeeded":  # type: ignore[attr-defined]
            fields.pop("failure", None)
        else:
            _failure(fields, event)  # type: ignore[arg-type]
    if keep is None:
        return {k: v for k, v in fields.items() if k not in ("messageId", "extra")}
    return {k: fields[k] for k in keep if k in fields}


def _failure(fields: dict[str, Any], end: Terminal) -> None:
    failure = end.failure if end.failure is not UNSET else default_failure(end.status)
    fields["failure"] = {"code": failure.code if failure.code is not UNSET else None, "message": failure.message}


def vocabulary_for(a: Codec, b: Codec) -> frozenset[str] | None:
    """None (everything) for one protocol; otherwise the event types both say natively, plus
    passthroughs (unknown kinds, bad frames), which every codec forwards verbatim."""
    if a is b:
        return None
    return (a.native & b.native) | {"data", "malformed"}


# -- reading: whole-frame chunks, frame counts, frame-by-frame where it matters ---------------


def units(chunks: Iterable[bytes], framing: str) -> Iterator[tuple[bytes, bool]]:
    """The input in pieces that end where a frame ends (the rest of each read is carried to the
    next), so a decoder fed one piece has no frame half read. A piece that finds no frame end in
    more than the largest frame plus a read is passed on anyway, marked False (not aligned)."""
    seps = _BOUNDARIES[framing]
    carry: list[bytes] = []
    carried = 0
    tail = b""  # the carry's last bytes: a frame end may straddle two reads
    for chunk in chunks:
        probe = tail + chunk
        end = _last_end(probe, seps) - len(tail)
        if end <= 0:
            carry.append(chunk)
            carried += len(chunk)
            tail = probe[-2:]
            if carried > DEFAULT_MAX_EVENT_SIZE + CHUNK_SIZE:
                yield b"".join(carry), False
                carry, carried = [], 0
            continue
        yield b"".join([*carry, chunk[:end]]), True
        rest = chunk[end:]
        carry, carried, tail = ([rest] if rest else []), len(rest), rest[-2:]
    if carry:
        yield b"".join(carry), True


def _last_end(data: bytes, seps: tuple[bytes, ...]) -> int:
    """Where the last frame boundary in ``data`` ends (0: none), looking back from the end in
    growing steps (a boundary is nearly always close to it)."""
    step, start = 4096, len(data)
    while True:
        start = max(0, start - step)
        found = [(data.rfind(sep, start), len(sep)) for sep in seps]
        end = max((at + size for at, size in found if at >= 0), default=0)
        if end or not start:
            return end
        start += 2  # a boundary across the step's start is found in the next step
        step *= 2


class FrameCounter:
    """Counts the frames in each piece with the framing's own parser (its hot path takes plain
    frames without making them), numbering them as every decoder does."""

    def __init__(self, framing: Framing) -> None:
        self.parser = make_parser(framing)
        self.parser.on_plain = self._take_all if framing == "sse" else self._take_lines
        self.taken = 0

    def count(self, data: bytes) -> int:
        before = self.taken
        frames = self.parser.feed(data)
        self.parser.problems.clear()
        return self.taken - before + len(frames)

    def _take_all(self, blocks: Sequence[bytes], skip: int, ids: Sequence[bytes] | None) -> int:
        self.taken += len(blocks)  # SSE offers only one-line data events: each a frame
        return len(blocks)

    def _take_lines(self, lines: Sequence[bytes], skip: int, ids: Sequence[bytes] | None) -> int:
        for taken, line in enumerate(lines):  # a blank NDJSON line is no frame: left to the parser
            if not line.strip():
                self.taken += taken
                return taken
        self.taken += len(lines)
        return len(lines)


class _Wanted:
    """Frame spans (after ``lo``, up to ``hi``) whose pieces are decoded frame by frame."""

    def __init__(self, spans: Iterable[tuple[int, int]]) -> None:
        self.spans = sorted(set(spans))
        self.next = 0

    def __call__(self, lo: int, hi: int) -> bool:
        spans = self.spans
        while self.next < len(spans) and spans[self.next][1] < lo:
            self.next += 1
        return self.next < len(spans) and spans[self.next][0] <= hi


@dataclass
class Reading:
    """One side being decoded: its source, codec and framing, and what pass one learnt."""

    source: Source
    detected: Detected
    normaliser: Normaliser
    aligned: bool = True

    def batches(self, tick: Callable[[], None], wanted: _Wanted | None = None) -> Iterator[list[Item]]:
        """Items as they are decoded, a batch per piece fed: in whole-frame pieces (each item
        knows its piece's frames) or, for stdin, frame by frame (each knows its frame)."""
        decoder = self.detected.codec.decoder(self.detected.framing)
        chunks = _ticking(self.source.chunks(), tick)
        if self.source.is_file and (wanted is None or self.aligned):
            yield from self._in_pieces(chunks, decoder, wanted)
        else:
            yield from self._by_frame(chunks, decoder, 0)
        norm = self.normaliser
        norm.at(None)
        decoder.close(into=norm)
        norm.finish()
        yield norm.take()

    def _in_pieces(self, chunks: Iterable[bytes], decoder: Decoder, wanted: _Wanted | None) -> Iterator[list[Item]]:
        framing = self.detected.framing
        counter = FrameCounter(framing)
        done = 0
        for piece, aligned in units(chunks, framing):
            lo, done = done, done + counter.count(piece)
            self.aligned = self.aligned and aligned
            if wanted is not None and wanted(lo, done):
                yield from self._by_frame((piece,), decoder, lo)
                continue
            self.normaliser.at(done, lo)
            decoder.feed(piece, into=self.normaliser)
            yield self.normaliser.take()

    def _by_frame(self, chunks: Iterable[bytes], decoder: Decoder, base: int) -> Iterator[list[Item]]:
        """Frame by frame (``base`` frames before these bytes): an event belongs to the frame
        whose feeding brought it out (the last one, for bytes that complete none)."""
        norm = self.normaliser
        frame: int | None = base or None
        for piece in cut_frames(chunks, self.detected.framing):
            if piece.frames:
                frame = base + piece.frames[-1].index
            norm.at(frame)
            decoder.feed(piece.raw, into=norm)
            yield norm.take()


def _ticking(chunks: Iterable[bytes], tick: Callable[[], None]) -> Iterator[bytes]:
    for chunk in chunks:
        yield chunk
        tick()


# -- comparing -------------------------------------------------------------------------------


class Lookahead:
    """The items of one side not yet compared, pulled from its decoder only as far as asked."""

    def __init__(self, batches: Iterator[list[Item]]) -> None:
        self._batches = batches
        self._buffer: deque[Item] = deque()
        self.taken = 0

    def get(self, ahead: int) -> Item | None:
        buffer = self._buffer
        while len(buffer) <= ahead:
            if not self._pull():
                return None
        return buffer[ahead]

    def _pull(self) -> bool:
        for batch in self._batches:
            if batch:
                self._buffer.extend(batch)
                return True
        return False

    def advance(self) -> None:
        self._buffer.popleft()
        self.taken += 1

    def take(self, count: int) -> list[Item]:
        items = [self._buffer.popleft() for _ in range(count)]
        self.taken += count
        return items

    def drain(self, keep: int) -> tuple[list[Item], int]:
        """Everything left: the first ``keep`` items, and how many more there were."""
        kept: list[Item] = []
        more = 0
        while self.get(0) is not None:
            item = self._buffer.popleft()
            if len(kept) < keep:
                kept.append(item)
            else:
                more += 1
        self.taken += len(kept) + more
        return kept, more


class Joins:
    """Which id of A is which id of B: paired when first met in agreeing events, then held."""

    def __init__(self) -> None:
        self.a_to_b: dict[Ref, Ref] = {}
        self.b_to_a: dict[Ref, Ref] = {}

    def fit(self, a: tuple[Ref, ...], b: tuple[Ref, ...], new: dict[Ref, Ref], back: dict[Ref, Ref]) -> bool:
        """Whether the ids agree with the pairs so far (and those in ``new``, which gets the
        new pairs they make)."""
        for x, y in zip(a, b, strict=True):
            to_b = new.get(x) or self.a_to_b.get(x)
            to_a = back.get(y) or self.b_to_a.get(y)
            if to_b is None and to_a is None:
                new[x], back[y] = y, x
            elif to_b != y or to_a != x:
                return False
        return True

    def commit(self, new: dict[Ref, Ref]) -> None:
        for x, y in new.items():
            self.a_to_b[x] = y
            self.b_to_a[y] = x
        while len(self.a_to_b) > 2 * ID_MEMORY:  # the oldest pairs are forgotten first
            self.b_to_a.pop(self.a_to_b.pop(next(iter(self.a_to_b))), None)

    def pair_free(self, a: tuple[Ref, ...], b: tuple[Ref, ...]) -> None:
        """Pair the unpaired ids of two events reported as changed, in order (as numbering by
        order of appearance would): the rest of a changed call still joins."""
        new = {
            x: y
            for x, y in zip(a, b, strict=False)
            if _kind(x) == _kind(y) and x not in self.a_to_b and y not in self.b_to_a
        }
        if len(set(new.values())) == len(new):
            self.commit(new)


def _kind(ref: Ref) -> str:
    return ref.partition("#")[0]


@dataclass
class Mark:
    """A reported event: its position, how it is shown, and where it came from."""

    index: int
    shown: str
    frame: int | None
    lo: int | None

    @classmethod
    def of(cls, item: Item) -> Mark:
        return cls(item.index, item.shown, item.frame, item.lo)

    @property
    def where(self) -> str:
        if self.lo is not None:
            return f"frames {self.lo + 1}-{self.frame}"
        return "end" if self.frame is None else f"frame {self.frame}"


@dataclass
class Hunk:
    """One difference: where it starts on each side and the events only each side has."""

    tag: str
    at: tuple[int, int]
    heads: tuple[Mark | None, Mark | None]
    removed: list[Mark]
    added: list[Mark]
    more: tuple[int, int] = (0, 0)

    def marks(self) -> Iterator[tuple[int, Mark]]:
        """Every mark with its side (0 for A, 1 for B)."""
        for side, head in enumerate(self.heads):
            if head is not None:
                yield side, head
        yield from ((0, mark) for mark in self.removed)
        yield from ((1, mark) for mark in self.added)

    def lines(self) -> list[str]:
        head_a, head_b = (h.where if h is not None else "-" for h in self.heads)
        lines = [f"@@ event {self.at[0] + 1} of A ({head_a}), event {self.at[1] + 1} of B ({head_b}): {self.tag}"]
        lines += [f"- A {mark.where}: {mark.shown}" for mark in self.removed]
        if self.more[0]:
            lines.append(f"- A ... and {self.more[0]:,} more event(s)")
        lines += [f"+ B {mark.where}: {mark.shown}" for mark in self.added]
        if self.more[1]:
            lines.append(f"+ B ... and {self.more[1]:,} more event(s)")
        return lines


_REST = -1  # "everything left" in a resync step


class Comparison:
    """Two item streams compared in lockstep, resynced within the window after a difference.

    ``comparisons`` counts item comparisons: at most one per event while the sides agree, and
    a bounded number (the window's) per difference, so the work is linear in the input."""

    def __init__(self, a: Iterator[list[Item]], b: Iterator[list[Item]], limit: int) -> None:
        self.a, self.b = Lookahead(a), Lookahead(b)
        self.joins = Joins()
        self.limit = limit
        self.hunks: list[Hunk] = []
        self.stopped = False
        self.comparisons = 0

    def run(self) -> Comparison:
        a, b = self.a, self.b
        while True:
            left, right = a.get(0), b.get(0)
            if left is None and right is None:
                return self
            if left is not None and right is not None and self._agree(left, right):
                a.advance()
                b.advance()
                continue
            if len(self.hunks) >= self.limit:
                self.stopped = True
                return self
            self._report(*self._resync())

    def _agree(self, left: Item, right: Item) -> bool:
        """Lockstep: the two items agree, and their new id pairs are kept."""
        self.comparisons += 1
        if left.key != right.key:
            return False
        if not left.refs:
            return True
        new: dict[Ref, Ref] = {}
        if not self.joins.fit(left.refs, right.refs, new, {}):
            return False
        if new:
            self.joins.commit(new)
        return True

    def _same(self, left: Item | None, right: Item | None, new: dict[Ref, Ref], back: dict[Ref, Ref]) -> bool:
        self.comparisons += 1
        if left is None or right is None or left.key != right.key:
            return False
        return not left.refs or self.joins.fit(left.refs, right.refs, new, back)

    def _run_length(self, skip_a: int, skip_b: int) -> int:
        """How many items agree from ``skip_a`` ahead in A and ``skip_b`` in B (``CONFIRM``
        when the two streams end together)."""
        new: dict[Ref, Ref] = {}
        back: dict[Ref, Ref] = {}
        for step in range(CONFIRM):
            left, right = self.a.get(skip_a + step), self.b.get(skip_b + step)
            if left is None and right is None:
                return CONFIRM
            if not self._same(left, right, new, back):
                return step
        return CONFIRM

    def _resync(self) -> tuple[int, int]:
        """Items to pass over on each side: the nearest point where ``CONFIRM`` items agree,
        else the nearest where one does, else one each (or the rest, past an end)."""
        partial = None
        for cost in range(1, 2 * WINDOW + 1):
            for skip_a in range(max(0, cost - WINDOW), min(cost, WINDOW) + 1):
                agreeing = self._run_length(skip_a, cost - skip_a)
                if agreeing == CONFIRM:
                    return skip_a, cost - skip_a
                if agreeing and partial is None:
                    partial = (skip_a, cost - skip_a)
        if partial is not None:
            return partial
        if self.a.get(0) is None:
            return 0, _REST
        if self.b.get(0) is None:
            return _REST, 0
        return 1, 1

    def _report(self, skip_a: int, skip_b: int) -> None:
        heads = (self.a.get(0), self.b.get(0))
        at = (self.a.taken, self.b.taken)
        removed, more_a = self.a.drain(WINDOW) if skip_a == _REST else (self.a.take(skip_a), 0)
        added, more_b = self.b.drain(WINDOW) if skip_b == _REST else (self.b.take(skip_b), 0)
        for x, y in zip(removed, added, strict=False):
            self.joins.pair_free(x.refs, y.refs)
        tag = "replace" if removed and added else "delete" if removed else "insert"
        self.hunks.append(
            Hunk(
                tag,
                at,
                (None if heads[0] is None else Mark.of(heads[0]), None if heads[1] is None else Mark.of(heads[1])),
                [Mark.of(item) for item in removed],
                [Mark.of(item) for item in added],
                (more_a, more_b),
            )
        )


# -- the command -----------------------------------------------------------------------------


@contextlib.contextmanager
def progress_for(sources: Sequence[Source], description: str) -> Iterator[Callable[[], None]]:
    """The shared bar (see :class:`~.common.ProgressBar`) over the bytes of ``sources`` when all
    are files; the report is printed after it is gone, so the two never share a line."""
    if not all(s.is_file and s.size for s in sources):
        yield lambda: None
        return
    with ProgressBar(description, sum(s.size or 0 for s in sources)) as bar:
        yield lambda: bar.update(sum(s.consumed for s in sources))


@dataclass
class DiffResult:
    """What ``diff`` found: the sides, the hunks, whether it stopped early, and its work (item
    comparisons, bytes read of each input in the first pass, the sides read a second time)."""

    names: tuple[str, str]
    codecs: tuple[str, str]
    vocabulary: frozenset[str] | None
    events: tuple[int, int]
    hunks: list[Hunk]
    stopped: bool
    comparisons: int
    read: tuple[int, int]
    frames_located: list[int] = field(default_factory=list)

    def lines(self) -> list[str]:
        events = [f"stopped at event {n:,}" if self.stopped else f"{n} events" for n in self.events]
        lines = [
            f"{side}: {name} ({codec}, {count})"
            for side, name, codec, count in zip("AB", self.names, self.codecs, events, strict=True)
        ]
        if self.vocabulary is not None:
            shown = ", ".join(sorted(self.vocabulary - {"data", "malformed"}))
            lines.append(f"compared: what both say natively ({shown}) and passthroughs")
        for hunk in self.hunks:
            lines += hunk.lines()
        if self.stopped:
            lines.append(f"... more difference(s) follow: stopped after {len(self.hunks)} (--max shows more)")
            lines.append(f"stopped after {len(self.hunks)} difference(s)")
        else:
            lines.append(f"{len(self.hunks)} difference(s)" if self.hunks else "no differences")
        return lines


def _open_side(arg: str, protocol: str | None, option: str, stack: contextlib.ExitStack) -> tuple[Source, Detected]:
    source = stack.enter_context(open_source(arg))
    return source, detect(source, protocol, option, report=False)


def diff_files(
    a: str | Path,
    b: str | Path,
    protocol_a: str | None = None,
    protocol_b: str | None = None,
    *,
    exact_ids: bool = False,
    limit: int = DEFAULT_MAX,
) -> DiffResult:
    """Compare two transcripts by meaning, streaming; the first ``limit`` differences."""
    if str(a) == "-" and str(b) == "-":
        raise UserError("only one of A and B can be stdin (-)")
    with contextlib.ExitStack() as stack:
        source_a, detected_a = _open_side(str(a), protocol_a, "--protocol-a", stack)
        source_b, detected_b = _open_side(str(b), protocol_b, "--protocol-b", stack)
        vocabulary = vocabulary_for(detected_a.codec, detected_b.codec)
        sides = [
            Reading(s, d, Normaliser(vocabulary, exact_ids))
            for s, d in ((source_a, detected_a), (source_b, detected_b))
        ]
        result = _first_pass(sides, limit)
    locate_frames(result, sides, vocabulary, exact_ids)
    return result


def _first_pass(sides: list[Reading], limit: int) -> DiffResult:
    """Both sides decoded and compared as they are read; the decoders go when it returns."""
    sources = [side.source for side in sides]
    with progress_for(sources, "comparing") as tick:
        batches = [side.batches(tick) for side in sides]
        comparison = Comparison(batches[0], batches[1], limit).run()
    return DiffResult(
        (sources[0].name, sources[1].name),
        (sides[0].detected.codec.name, sides[1].detected.codec.name),
        sides[0].normaliser.vocabulary,
        (comparison.a.taken, comparison.b.taken),
        comparison.hunks,
        comparison.stopped,
        comparison.comparisons,
        (sources[0].consumed, sources[1].consumed),
    )


def locate_frames(result: DiffResult, sides: list[Reading], vocabulary: frozenset[str] | None, exact_ids: bool) -> None:
    """Pass two: each file with reported events known only by their piece's frames is decoded
    again, frame by frame in those pieces only, up to the last of them."""
    for side, reading in enumerate(sides):
        marks: dict[int, list[Mark]] = {}
        for hunk in result.hunks:
            for mark_side, mark in hunk.marks():
                if mark_side == side and mark.lo is not None:
                    marks.setdefault(mark.index, []).append(mark)
        if marks:
            if reading.source.consumed > _COLLECT_AFTER:
                gc.collect()  # the first pass's decoders are cyclic garbage holding their texts
            _locate(reading, marks, vocabulary, exact_ids)
            result.frames_located.append(side)


def _locate(reading: Reading, marks: dict[int, list[Mark]], vocabulary: frozenset[str] | None, exact_ids: bool) -> None:
    last = max(marks)
    wanted = _Wanted(
        (mark.lo, mark.frame)
        for group in marks.values()
        for mark in group
        if mark.lo is not None and mark.frame is not None
    )
    with open_source(reading.source.name) as source:
        again = Reading(source, reading.detected, Normaliser(vocabulary, exact_ids), reading.aligned)
        with progress_for([source], "locating frames") as tick:
            for batch in again.batches(tick, wanted):
                for item in batch:
                    for mark in marks.get(item.index, ()):
                        mark.frame, mark.lo = item.frame, item.lo
                if again.normaliser.count > last:
                    return


def diff_command(
    a: Annotated[str, typer.Argument(metavar="A", help="First transcript or capture file (- reads stdin).")],
    b: Annotated[str, typer.Argument(metavar="B", help="Second transcript or capture file (- reads stdin).")],
    protocol_a: Annotated[
        str | None,
        typer.Option(
            "--protocol-a",
            metavar="PROTOCOL",
            help=protocol_help("Protocol of A (sniffed when left out)."),
            autocompletion=complete_protocol,
        ),
    ] = None,
    protocol_b: Annotated[
        str | None,
        typer.Option(
            "--protocol-b",
            metavar="PROTOCOL",
            help="Protocol of B (sniffed when left out).",
            autocompletion=complete_protocol,
        ),
    ] = None,
    exact_ids: Annotated[
        bool, typer.Option("--exact-ids", help="Compare id values too (by default generated ids are ignored).")
    ] = False,
    limit: Annotated[
        int, typer.Option("--max", metavar="N", min=1, help="Stop after this many differences (1 or more).")
    ] = DEFAULT_MAX,
    verbose: VerboseOption = False,
) -> None:
    """Compare two transcripts by meaning (even across protocols); exit 1 when they differ."""
    set_verbose(verbose)
    result = diff_files(a, b, protocol_a, protocol_b, exact_ids=exact_ids, limit=limit)
    for line in result.lines():
        typer.echo(line)
    if result.hunks:
        raise typer.Exit(EXIT_FINDINGS)
