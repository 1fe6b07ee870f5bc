"""One side of a diff being decoded: in whole-frame pieces fast, frame by frame where it matters.

A decoder is fastest fed large chunks, but then an event is known only by its chunk's frames.
So a file is cut into :func:`units` that end where a frame ends (no frame half read), counted
by a :class:`FrameCounter` (each item learns the span of frames it came from), and decoded frame
by frame only where asked (:class:`FrameSpans`: the second pass, locating reported events).
stdin, which cannot be read twice, is decoded frame by frame from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from ..codecs.decoder import Decoder
from ..codecs.framing import DEFAULT_MAX_EVENT_SIZE, Framing, make_parser
from ..transcripts import CHUNK_SIZE, Detected, Source, cut_frames
from .normalise import Item, Normaliser

__all__ = ["FrameCounter", "FrameSpans", "Reading", "units"]

#: where a frame ends: after an empty line (SSE, any line ending) or a line (NDJSON)
_BOUNDARIES = {"sse": (b"\n\n", b"\n\r\n", b"\r\r"), "ndjson": (b"\n",)}


def units(chunks: Iterable[bytes], framing: Framing) -> Iterator[tuple[bytes, bool]]:
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


class FrameSpans:
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

    def batches(self, tick: Callable[[], None], wanted: FrameSpans | None = None) -> Iterator[list[Item]]:
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

    def _in_pieces(self, chunks: Iterable[bytes], decoder: Decoder, wanted: FrameSpans | None) -> Iterator[list[Item]]:
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
