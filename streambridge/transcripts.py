"""Reading transcripts: stream bodies, capture files and stdin; sniffing; cutting into frames.

Every tool that reads a recorded stream (the validator, diff, the CLI's commands, a caller's
own script) needs the same few things, so they live here, in the library, with no terminal
I/O: a problem is a :class:`TranscriptError` (a ``ValueError``) whose message names the file.

A capture file (what ``streambridge record`` writes, as in ``tests/data/captures/nest/``) is
``HTTP <status>``, header lines, an empty line, then the exact body. A :class:`Source` accepts
it and works on the body; the status and headers are kept as framing facts (:class:`Capture`).

Sniffing takes the framing from the first significant byte by the rule every decoder uses
(:func:`~streambridge.codecs.framing.detect_framing`), and the protocol from the first complete
frames: every registered codec's ``sniff`` hook says how strongly a frame looks like its protocol
(:class:`~streambridge.codecs.codec.Likeness`), and the first frame any codec claims decides.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from . import codecs
from .codecs import Codec
from .codecs.codec import Likeness
from .codecs.framing import (
    DEFAULT_MAX_EVENT_SIZE,
    Frame,
    Framing,
    FramingError,
    detect_framing,
    make_parser,
    size_limit,
)

__all__ = [
    "CHUNK_SIZE",
    "HEADER_LIMIT",
    "SNIFF_FRAMES",
    "SNIFF_LIMIT",
    "TRANSCRIPT_SUFFIXES",
    "Capture",
    "Detected",
    "FrameCutter",
    "FramingNotSupported",
    "LineSplitter",
    "Piece",
    "ProtocolNotDetected",
    "Source",
    "TranscriptError",
    "cut_frames",
    "detect",
    "first_frames",
    "framing_hint",
    "open_source",
    "protocol_of_frame",
    "sniff",
    "transcripts_in",
]

#: bytes read at once
CHUNK_SIZE = 64 * 1024
#: body bytes read ahead, at most, to sniff the protocol from (a longer first frame is read whole)
SNIFF_LIMIT = 1024 * 1024
#: bytes a capture's status line and headers may take
HEADER_LIMIT = 64 * 1024
#: frames looked at when sniffing
SNIFF_FRAMES = 8
#: what names a transcript in a directory
TRANSCRIPT_SUFFIXES = frozenset({".sse", ".ndjson", ".jsonl", ".http"})

_STATUS_LINE = re.compile(rb"HTTP(?:/\d(?:\.\d)?)? (\d{3})[^\r\n]*\r?\n")


class TranscriptError(ValueError):
    """A transcript that cannot be read as one (a broken capture header, a directory, a stream
    whose protocol cannot be told); the message names the file."""


class ProtocolNotDetected(TranscriptError):
    """The first frames match no registered protocol (or there are none): name the protocol."""


class FramingNotSupported(TranscriptError):
    """The protocol named for a transcript has no such framing as the transcript is in."""


@dataclass
class Capture:
    """The status line and headers of a recorded HTTP response."""

    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None


@dataclass(frozen=True)
class Detected:
    """A transcript's protocol and framing, named or sniffed."""

    codec: Codec
    framing: Framing


class Source:
    """One input transcript, read in chunks (constant memory); the capture header parsed off.

    ``head`` holds body bytes already read (for sniffing); :meth:`chunks` yields them first.
    ``capture`` is the parsed capture header, or the one given for a bare body.
    """

    def __init__(
        self, name: str, stream: BinaryIO, size: int | None, is_file: bool, capture: Capture | None = None
    ) -> None:
        self.name = name
        self.owns_stream = is_file
        self.is_file = is_file
        self.size = size
        self.capture: Capture | None = None
        self.body_offset = 0
        self.consumed = 0  # bytes of the file read so far (progress)
        self._stream = stream
        self._read: Callable[[int], bytes] = getattr(stream, "read1", stream.read)
        self._head = b""
        self._eof = False
        self._parse_capture()
        if self.capture is None:
            self.capture = capture

    @classmethod
    def from_bytes(cls, data: bytes, name: str = "<bytes>", capture: Capture | None = None) -> Source:
        """A transcript held in memory (a capture file's bytes, or a body with ``capture`` its
        response's status and headers)."""
        return cls(name, io.BytesIO(data), len(data), is_file=False, capture=capture)

    # -- reading -------------------------------------------------------------------------

    def _more(self) -> bytes:
        if self._eof:
            return b""
        data = self._read(CHUNK_SIZE)
        if not data:
            self._eof = True
        self.consumed += len(data)
        return data

    @property
    def head(self) -> bytes:
        return self._head

    def read_more(self) -> bool:
        """Read once more ahead (what is available: a live pipe is not waited for); False at EOF."""
        data = self._more()
        self._head += data
        return bool(data)

    def read_while(self, wanted: Callable[[bytes], bool], limit: int) -> None:
        """Read ahead while ``wanted`` says so of each new chunk, up to ``limit`` bytes of head
        (joined once: a long read costs linear time)."""
        parts, size = [self._head], len(self._head)
        while size <= limit and (data := self._more()):
            parts.append(data)
            size += len(data)
            if not wanted(data):
                break
        self._head = b"".join(parts)

    def peek(self, want: int) -> bytes:
        """At least ``want`` body bytes (fewer at end of input), without consuming them."""
        while len(self._head) < want and self.read_more():
            pass
        return self._head

    @property
    def exhausted(self) -> bool:
        return self._eof

    def chunks(self) -> Iterator[bytes]:
        if self._head:
            head, self._head = self._head, b""
            yield head
        while True:
            data = self._more()
            if not data:
                return
            yield data

    def close(self) -> None:
        if self.owns_stream:
            self._stream.close()

    def __enter__(self) -> Source:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- capture format ------------------------------------------------------------------

    def _parse_capture(self) -> None:
        if not self.peek(4).startswith(b"HTTP"):
            return
        while b"\n" not in self._head[:1024] and len(self._head) < 1024 and self.read_more():
            pass
        match = _STATUS_LINE.match(self._head)
        if match is None:
            return
        while (end := _header_end(self._head)) is None and len(self._head) <= HEADER_LIMIT and self.read_more():
            pass
        if end is None:
            raise TranscriptError(f"{self.name}: a capture file needs an empty line after its headers")
        block, sep = end
        lines = self._head[match.end() : block].decode("utf-8", "replace").splitlines()
        headers = []
        for line in lines:
            name, colon, value = line.partition(":")
            if not colon:
                raise TranscriptError(f"{self.name}: capture header line {line!r} has no ':'")
            headers.append((name.strip().lower(), value.strip()))
        self.capture = Capture(int(match.group(1)), headers)
        self.body_offset = block + sep
        self._head = self._head[self.body_offset :]


def _header_end(data: bytes) -> tuple[int, int] | None:
    """Where the header block ends and the length of the empty line that ends it."""
    candidates = [(i, len(sep)) for sep in (b"\n\n", b"\r\n\r\n") if (i := data.find(sep)) >= 0]
    return min(candidates) if candidates else None


def open_source(arg: str | os.PathLike[str], *, stdin: BinaryIO | None = None) -> Source:
    """``-`` is stdin (``stdin``, else ``sys.stdin``'s bytes); anything else a file (an
    ``OSError`` names it when it cannot be read, a :class:`TranscriptError` when it is a
    directory or its capture header is broken)."""
    if str(arg) == "-":
        return Source("<stdin>", stdin if stdin is not None else sys.stdin.buffer, None, is_file=False)
    path = Path(arg)
    if path.is_dir():
        raise TranscriptError(f"{path}: is a directory, not a transcript")
    stream = path.open("rb")
    try:
        size = path.stat().st_size
        return Source(str(path), stream, size, is_file=True)
    except BaseException:
        stream.close()
        raise


def transcripts_in(directory: Path) -> list[Path]:
    """Every transcript under a directory (by suffix), in a stable order."""
    return sorted(p for p in directory.rglob("*") if p.is_file() and p.suffix in TRANSCRIPT_SUFFIXES)


# -- sniffing --------------------------------------------------------------------------------


def framing_hint(capture: Capture | None) -> Framing | None:
    """The framing a capture's content-type names, if any."""
    content_type = (capture.header("content-type") or "") if capture else ""
    if "ndjson" in content_type or "jsonl" in content_type:
        return "ndjson"
    if "event-stream" in content_type:
        return "sse"
    return None


def first_frames(body: bytes, framing: Framing, complete: bool) -> list[Frame]:
    """The first ``SNIFF_FRAMES`` frames of a body (an unfinished last one too when ``complete``)."""
    parser = make_parser(framing, DEFAULT_MAX_EVENT_SIZE)
    frames = parser.feed(body)
    if complete:
        frames += parser.close()
    return frames[:SNIFF_FRAMES]


def protocol_of_frame(frame: Frame) -> str | None:
    """The registered protocol one frame looks most like (the first registered on a tie), or None
    when no codec claims it."""
    best: str | None = None
    best_likeness: int = Likeness.NONE
    for name in codecs.names():
        likeness = codecs.get(name).sniff(frame)
        if likeness > best_likeness:
            best, best_likeness = name, likeness
            if likeness == Likeness.MARKER:
                break  # (none after it can say more: a tie goes to the first; the rest stay unimported)
    return best


def sniff(body: bytes, capture: Capture | None = None, complete: bool = True) -> tuple[str, Framing] | None:
    """(protocol, framing) from the start of a body, or None when the first frames do not say."""
    framing = detect_framing(body) or framing_hint(capture)
    if framing is None:
        return None
    for frame in first_frames(body, framing, complete):
        protocol = protocol_of_frame(frame)
        if protocol is not None:
            return protocol, framing
    return None


def detect(source: Source, protocol: str | Codec | None = None) -> Detected:
    """The codec and framing of an input: the protocol given (a name or a codec; an unknown
    name is :class:`~streambridge.codecs.UnknownProtocol`, a ``ValueError``), or sniffed from
    its first frames (:class:`ProtocolNotDetected` when they do not tell)."""
    if protocol is None:
        return _sniffed(source)
    codec = codecs.get(protocol) if isinstance(protocol, str) else protocol
    while (framing := detect_framing(source.head)) is None and len(source.head) < 4096 and source.read_more():
        pass  # reads only what a live pipe has: the first byte of the body tells the framing
    chosen = framing or framing_hint(source.capture) or codec.default_framing
    if chosen not in codec.framings:
        expected = ", ".join(codec.framings)
        raise FramingNotSupported(f"{codec.name} has no {chosen!r} framing (expected one of {expected})")
    return Detected(codec, chosen)


def _sniffed(source: Source) -> Detected:
    while True:
        body = source.head
        found = sniff(body, source.capture, complete=source.exhausted)
        if found is not None or source.exhausted or len(body) >= SNIFF_LIMIT:
            break
        source.read_more()
    oversize = False
    if found is None and not source.exhausted and len(body) >= SNIFF_LIMIT:
        oversize = _read_first_frame(source)
        body = source.head
        found = sniff(body, source.capture, complete=source.exhausted)
    if found is None:
        raise ProtocolNotDetected(f"{source.name}: cannot tell the protocol ({_why_not(source, body, oversize)})")
    return Detected(codecs.get(found[0]), found[1])


def _why_not(source: Source, body: bytes, oversize: bool) -> str:
    what = "it is empty" if not body.strip() else "its first frames match no known protocol"
    if oversize:
        what = f"its first frame is larger than the limit ({size_limit(DEFAULT_MAX_EVENT_SIZE)})"
    status = source.capture.status if source.capture else 200
    if not 200 <= status < 300:
        what += f"; the recorded answer is HTTP {status}"
    return what


def _read_first_frame(source: Source) -> bool:
    """Read on while the body's first frame is incomplete, up to the size limit, so that a long
    first frame is sniffed too; True when it is larger than the limit (no protocol tells then)."""
    framing = detect_framing(source.head) or framing_hint(source.capture) or "sse"
    parser = make_parser(framing, DEFAULT_MAX_EVENT_SIZE)
    if not parser.feed(source.head) and not parser.problems:
        source.read_while(
            lambda chunk: not (parser.feed(chunk) or parser.problems), DEFAULT_MAX_EVENT_SIZE + CHUNK_SIZE
        )
    first = parser.problems[0] if parser.problems else None
    return first is not None and first.index == 1 and first.kind == "oversize"


# -- cutting a stream into frames ------------------------------------------------------------


class LineSplitter:
    """Lines with their endings (LF, CRLF or a lone CR), whatever the chunking."""

    def __init__(self) -> None:
        self._parts: list[bytes] = []  # a line still open across chunks (joined once: long lines stay linear)

    def feed(self, chunk: bytes) -> list[bytes]:
        if b"\n" not in chunk and b"\r" not in chunk:
            if chunk:
                self._parts.append(chunk)
            return []
        data = b"".join([*self._parts, chunk]) if self._parts else chunk
        self._parts = []
        lines: list[bytes] = []
        start, length = 0, len(data)
        while start < length:
            lf = data.find(b"\n", start)
            cr = data.find(b"\r", start, lf if lf >= 0 else length)
            if cr >= 0:
                if cr + 1 == length:
                    break  # a CR at the end: the LF of a CRLF may come with the next chunk
                end = cr + 2 if data[cr + 1 : cr + 2] == b"\n" else cr + 1
            elif lf >= 0:
                end = lf + 1
            else:
                break
            lines.append(data[start:end])
            start = end
        if start < length:
            self._parts.append(data[start:])
        return lines

    def close(self) -> list[bytes]:
        rest, self._parts = b"".join(self._parts), []
        return [rest] if rest else []

    @property
    def held(self) -> int:
        """Bytes of the line still open."""
        return sum(map(len, self._parts))

    def take(self) -> bytes:
        """The open line so far, as a piece of a line (a CR at its end stays: an LF may follow)."""
        rest = b"".join(self._parts)
        cr = rest.endswith(b"\r")
        self._parts = [b"\r"] if cr else []
        return rest[:-1] if cr else rest


@dataclass
class Piece:
    """Raw bytes ending where a frame ends (plus anything before it), and that frame."""

    raw: bytes
    frames: list[Frame]
    problems: list[FramingError]


class FrameCutter:
    """Cuts a body into pieces of at most one frame each, so the events a decoder returns for
    a piece belong to that frame (frame numbers for the validator, pacing for a replay).

    Nothing over the size limit is held: a frame that outgrows it (reported by the parser)
    is passed on in pieces that end nowhere in particular, as it arrives."""

    def __init__(self, framing: Framing, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.parser = make_parser(framing, max_event_size)
        self.max_event_size = max_event_size
        self._lines = LineSplitter()
        self._pending: list[bytes] = []
        self._pending_size = 0

    def feed(self, chunk: bytes) -> list[Piece]:
        pieces = self._cut_lines(self._lines.feed(chunk))
        if self._lines.held > self.max_event_size:
            pieces += self._cut_lines([self._lines.take()])
        return pieces

    def close(self) -> list[Piece]:
        pieces = self._cut_lines(self._lines.close())
        frames = self.parser.close()
        if self._pending or frames or self.parser.problems:
            pieces.append(self._cut(frames))
        return pieces

    def _cut_lines(self, lines: list[bytes]) -> list[Piece]:
        pieces = []
        for line in lines:
            self._pending.append(line)
            self._pending_size += len(line)
            frames = self.parser.feed(line)
            if frames or self.parser.problems or self._pending_size > self.max_event_size:
                pieces.append(self._cut(frames))
        return pieces

    def _cut(self, frames: list[Frame]) -> Piece:
        problems = list(self.parser.problems)
        self.parser.problems.clear()
        piece = Piece(b"".join(self._pending), frames, problems)
        self._pending, self._pending_size = [], 0
        return piece


def cut_frames(chunks: Iterable[bytes], framing: Framing) -> Iterator[Piece]:
    """The chunks as pieces of at most one frame each (see :class:`FrameCutter`)."""
    cutter = FrameCutter(framing)
    for chunk in chunks:
        yield from cutter.feed(chunk)
    yield from cutter.close()
