"""One captured stream, worked out for the page: each side cut into frames exactly as the bytes
were, every frame decoded, upstream frames linked to the client frames they became, the text the
client shows, and a timeline.

Links come from translating the upstream again frame by frame (translation does not depend on
chunking: a law the tests hold) and matching that output, in order, to what the client was
written. A client frame with no upstream frame behind it is the proxy's own (a run start before
the upstream answered, a fault's terminal, a heartbeat). Sans-IO and only run when a page asks.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import msgspec
import orjson

from .. import codecs
from ..codecs.framing import Framing, make_parser
from ..codecs.http import capture_head
from ..events import DataPart, Event, Malformed, ReasoningDelta, Terminal, TextDelta
from ..translate import Translator
from .capture import StreamCapture
from .redaction import REDACTED, redact, redact_pieces

__all__ = ["REDACTED", "Frame", "analyse", "redact", "split_frames", "transcript"]

#: how far ahead a client frame is looked for among the re-translated ones (skipping what the
#: proxy's own translator did not write: a run start it had already sent, say)
_LOOKAHEAD = 64
#: an SSE frame ends at an empty line (CRLF, LF or a lone CR, mixed as the spec allows)
_FRAME_END = re.compile(rb"(?:\r\n|\n|\r(?!\n))(?:\r\n|\n|\r(?!\n))")
_ID_LINE = re.compile(rb"(?m)^id:[^\r\n]*(?:\r\n|\n|\r)")
_TIMELINE_BUCKETS = 60


@dataclass
class Frame:
    """One frame of one side, as written, with what it decoded to and where it came from."""

    index: int
    raw: bytes
    t: float | None  # seconds since the stream began: when its last byte arrived / was written
    chunks: tuple[int, int] = (0, 0)  # first and last chunk (or write) holding it
    events: list[Event] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    links: list[int] = field(default_factory=list)
    origin: str = "relay"
    wire: str = ""  # the frame's own name for its kind (see wire_kind)

    def kinds(self) -> list[str]:
        if "heartbeat" in self.marks:
            return ["heartbeat"]
        return [tag_of(event) for event in self.events] or ["(none)"]


def wire_kind(raw: bytes, framing: Framing) -> str:
    """A frame's own name for its kind: its SSE event name, else its JSON ``type`` / ``kind``
    (read by the project's own parser, so it is the name a decoder sees)."""
    parser = make_parser(framing)
    parsed = parser.feed(raw) + parser.close()
    if not parsed:
        return "heartbeat" if framing == "sse" and _is_comment(raw) else raw.strip()[:24].decode("utf-8", "replace")
    if parsed[0].event:
        return parsed[0].event
    data = parsed[0].data
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return data[:24].decode("utf-8", "replace")
    if isinstance(value, dict):
        for key in ("type", "kind", "event"):
            if isinstance(value.get(key), str):
                return str(value[key])
    return type(value).__name__


def tag_of(event: Event) -> str:
    return str(type(event).__struct_config__.tag)


def split_frames(data: bytes, framing: Framing) -> list[tuple[int, int]]:
    """Each frame's ``(start, end)`` in ``data``, its terminator included (a last frame the
    stream never ended is the rest). NDJSON empty lines stay with the line before them."""
    spans: list[tuple[int, int]] = []
    start = 0
    if framing == "sse":
        for match in _FRAME_END.finditer(data):
            end = match.end()
            if data[start:end].strip():
                spans.append((start, end))
                start = end
    else:
        pos = 0
        while (nl := data.find(b"\n", pos)) != -1:
            pos = nl + 1
            if data[start:pos].strip():
                spans.append((start, pos))
                start = pos
    if data[start:].strip():
        spans.append((start, len(data)))
    elif spans:
        spans[-1] = (spans[-1][0], len(data))
    return spans


def _is_comment(raw: bytes) -> bool:
    lines = [line for line in raw.splitlines() if line.strip()]
    return bool(lines) and all(line.startswith(b":") for line in lines)


def _frames(pieces: list[tuple[float | None, bytes]], framing: Framing) -> list[Frame]:
    """The side's frames, each with the piece (chunk or write) it ends in and that piece's time."""
    data = b"".join(piece for _, piece in pieces)
    ends: list[int] = []
    total = 0
    for _, piece in pieces:
        total += len(piece)
        ends.append(total)
    frames = []
    first = 0
    for index, (start, end) in enumerate(split_frames(data, framing)):
        while first < len(ends) - 1 and ends[first] <= start:
            first += 1
        last = first
        while last < len(ends) - 1 and ends[last] < end:
            last += 1
        raw = data[start:end]
        frame = Frame(index=index, raw=raw, t=pieces[last][0] if pieces else None, chunks=(first, last))
        frame.wire = wire_kind(raw, framing)
        if framing == "sse" and _is_comment(raw):
            frame.marks.append("heartbeat")
        frames.append(frame)
    return frames


def _decode_each(frames: list[Frame], protocol: str, framing: Framing) -> list[Event]:
    """Decode frame by frame (one decoder: carriers and held events span frames); each frame
    gets the events its last byte completed. Returns the whole side's events."""
    decoder = codecs.get(protocol).decoder(framing, strict=False)
    every: list[Event] = []
    for frame in frames:
        if "heartbeat" in frame.marks:
            continue
        frame.events = decoder.feed(frame.raw)
        every += frame.events
    tail = decoder.close()
    if frames and tail:
        last = next((f for f in reversed(frames) if "heartbeat" not in f.marks), frames[-1])
        last.events += [event for event in tail if not (type(event) is Terminal and event.synthetic)]
        every += tail
    return every


def _mark(frame: Frame, native: frozenset[str]) -> None:
    for event in frame.events:
        kind = type(event)
        tag = tag_of(event)
        if kind is DataPart:
            frame.marks.append("data-part")
        elif kind is Malformed:
            frame.marks.append("malformed")
        elif tag not in native or b'"data-' + tag.encode() + b'"' in frame.raw:
            frame.marks.append("carrier")
        if event.synthetic:
            frame.marks.append("synthetic")
        if kind is Terminal:
            frame.marks.append("terminal")
    frame.marks = list(dict.fromkeys(frame.marks))


def _normal(raw: bytes) -> bytes:
    """A client frame as the translation wrote it (the run log's ``id:`` lines taken out)."""
    return _ID_LINE.sub(b"", raw).strip()


def _expected(capture: StreamCapture, upstream: list[Frame], source_framing: Framing) -> list[tuple[bytes, int | None]]:
    """What translating the upstream frame by frame writes: each client frame with the upstream
    frame it came from (None: the end of input's)."""
    facts = capture.facts
    target_framing: Framing = "ndjson" if facts.framing == "ndjson" else "sse"
    translator = Translator(
        facts.source,
        facts.target,
        source_framing=source_framing,
        target_framing=target_framing,
        fidelity=facts.fidelity,
    )
    if facts.conversation is not None:
        translator.name_thread(facts.conversation, lambda thread: None)
    preamble = b"".join(data for _, data, origin in capture.client if origin == "proxy")
    if preamble.strip():  # the proxy's run start went out first: its translator knew it
        decoder = codecs.get(facts.target).decoder(target_framing, strict=False)
        translator.feed_events(decoder.feed(preamble))
    out: list[tuple[bytes, int | None]] = []

    def add(data: bytes, origin: int | None) -> None:
        for start, end in split_frames(data, target_framing):
            out.append((_normal(data[start:end]), origin))

    for frame in upstream:
        if "heartbeat" not in frame.marks:
            add(translator.feed(frame.raw), frame.index)
    add(translator.close(), None)
    return out


def _link(
    upstream: list[Frame], client: list[Frame], expected: list[tuple[bytes, int | None]], *, faulted: bool
) -> None:
    """Match client frames to the re-translated ones in order; unmatched ones are the proxy's,
    and so is the end of a stream that ``faulted`` (its terminal, which may say what a truncation's
    would: at client fidelity both can be the target's plain error frames)."""
    at = 0
    for frame in client:
        if "heartbeat" in frame.marks:
            frame.origin = "proxy"
            continue
        normal = _normal(frame.raw)
        found = next((k for k in range(at, min(at + _LOOKAHEAD, len(expected))) if expected[k][0] == normal), None)
        if found is None:
            frame.origin = "proxy"
            frame.marks.append("synthetic")
            continue
        at = found + 1
        origin = expected[found][1]
        if origin is None:
            frame.origin = "proxy" if faulted else "end"
            frame.marks.append("synthetic")
            continue
        frame.links.append(origin)
        upstream[origin].links.append(frame.index)


def _assembled(events: Iterable[Event]) -> dict[str, str]:
    text: list[str] = []
    reasoning: list[str] = []
    final: str | None = None
    for event in events:
        if type(event) is TextDelta:
            text.append(event.text)
        elif type(event) is ReasoningDelta:
            reasoning.append(event.text)
        elif type(event) is Terminal and isinstance(event.text, str):
            final = event.text
    shown = "".join(text)
    return {"text": shown or (final or ""), "reasoning": "".join(reasoning)}


def _timeline(capture: StreamCapture, upstream: list[Frame]) -> dict[str, Any]:
    """Events and text over time on the upstream side: buckets, text deltas a second, gaps."""
    if capture.recorded or not capture.upstream:
        return {"recorded": capture.recorded, "buckets": [], "gaps": [], "deltas_per_s": None, "span_ms": 0}
    span = max(capture.elapsed(), capture.upstream[-1][0], 1e-3)
    width = span / _TIMELINE_BUCKETS
    buckets = [{"events": 0, "text": 0} for _ in range(_TIMELINE_BUCKETS)]
    deltas: list[float] = []
    for frame in upstream:
        if frame.t is None:
            continue
        bucket = buckets[min(int(frame.t / width), _TIMELINE_BUCKETS - 1)]
        bucket["events"] += len(frame.events)
        for event in frame.events:
            if type(event) is TextDelta:
                bucket["text"] += 1
                deltas.append(frame.t)
    times = [0.0, *(t for t, _ in capture.upstream)]
    gaps = sorted(
        ({"at_ms": round(a * 1000), "ms": round((b - a) * 1000)} for a, b in itertools.pairwise(times)),
        key=lambda gap: -gap["ms"],
    )[:5]
    rate = None
    if len(deltas) > 1 and deltas[-1] > deltas[0]:
        rate = round((len(deltas) - 1) / (deltas[-1] - deltas[0]), 1)
    return {
        "recorded": False,
        "span_ms": round(span * 1000),
        "bucket_ms": round(width * 1000, 1),
        "buckets": buckets,
        "deltas_per_s": rate,
        "gaps": gaps,
    }


def _frame_view(frame: Frame) -> dict[str, Any]:
    return {
        "i": frame.index,
        "t_ms": _ms(frame.t),
        "chunks": list(frame.chunks),
        "raw": frame.raw.decode("utf-8", "replace"),
        "wire": frame.wire,
        "kinds": frame.kinds(),
        "marks": frame.marks,
        "links": frame.links,
        "origin": frame.origin,
        "events": [orjson.Fragment(msgspec.json.encode(event)) for event in frame.events],
    }


def _source_framing(capture: StreamCapture) -> Framing:
    """The upstream's framing: as its decoder read it, or (a live stream's, before it was known)
    as its first bytes say."""
    known = capture.facts.source_framing
    if known is not None:
        return "ndjson" if known == "ndjson" else "sse"
    head = b"".join(capture.up_chunks[:4]).lstrip()
    return "ndjson" if head[:1] in (b"{", b"[") else codecs.get(capture.facts.source).default_framing


def _ms(t: float | None) -> float | None:
    return None if t is None else round(t * 1000, 1)


def analyse(capture: StreamCapture) -> bytes:
    """The stream's whole view as JSON (secrets redacted)."""
    facts = capture.facts
    source_framing = _source_framing(capture)
    client_framing: Framing = "ndjson" if facts.framing == "ndjson" else "sse"
    timed = not capture.recorded  # a recording has no arrival times
    up_chunks = redact_pieces(capture.up_chunks, capture.secrets)  # before anything reads them
    out_data = redact_pieces(capture.out_data, capture.secrets)
    up_pieces = [(t if timed else None, chunk) for (t, _), chunk in zip(capture.upstream, up_chunks, strict=True)]
    out_pieces = [(t if timed else None, data) for (t, _, _), data in zip(capture.client, out_data, strict=True)]
    upstream = _frames(up_pieces, source_framing)
    client = _frames(out_pieces, client_framing)
    _decode_each(upstream, facts.source, source_framing)
    shown = _decode_each(client, facts.target, client_framing)
    for frames, protocol in ((upstream, facts.source), (client, facts.target)):
        for frame in frames:
            _mark(frame, codecs.get(protocol).native)
    _link(upstream, client, _expected(capture, upstream, source_framing), faulted=bool(capture.faults))
    _mark_faults(capture, upstream, client)
    view = {
        "summary": capture.summary(),
        "facts": {**asdict(facts), "source_framing": source_framing, "client_framing": client_framing},
        "upstream": {
            "frames": [_frame_view(f) for f in upstream],
            "chunks": [{"t_ms": _ms(t), "bytes": len(chunk)} for t, chunk in up_pieces],
        },
        "client": {
            "frames": [_frame_view(f) for f in client],
            "writes": [
                {"t_ms": _ms(t), "bytes": len(data), "origin": origin}
                for (t, data), origin in zip(out_pieces, capture.out_origins, strict=True)
            ],
        },
        "faults": [{"t_ms": _ms(at), "code": code, "detail": detail} for at, code, detail in capture.faults],
        "assembled": _assembled(shown),
        "timeline": _timeline(capture, upstream),
        "kinds": sorted({kind for frame in (*upstream, *client) for kind in frame.kinds()}),
    }
    return redact(orjson.dumps(view), capture.secrets)  # and what the view says of them


def _mark_faults(capture: StreamCapture, upstream: list[Frame], client: list[Frame]) -> None:
    """A fault's terminal (the proxy's, ending a stream the upstream broke), a malformed or
    cut-off upstream frame."""
    for frame in upstream:
        if "malformed" in frame.marks:
            frame.marks.append("fault")
    if upstream and not upstream[-1].events and "heartbeat" not in upstream[-1].marks and capture.faults:
        upstream[-1].marks.append("fault")
    if capture.faults or capture.outcome not in ("live", "completed"):
        for frame in client:
            if "terminal" in frame.marks and frame.origin == "proxy":
                frame.marks.append("fault")


def transcript(capture: StreamCapture, side: str) -> tuple[bytes, str]:
    """One side as a capture file (``HTTP 200``, the headers the protocol's clients expect, an
    empty line, the exact body, secrets redacted) that ``convert``, ``validate`` and ``replay`` read; and a file name."""
    facts = capture.facts
    if side == "upstream":
        protocol, body = facts.source, b"".join(redact_pieces(capture.up_chunks, capture.secrets))
        framing = facts.source_framing or codecs.get(protocol).default_framing
    else:
        protocol, body = facts.target, b"".join(redact_pieces(capture.out_data, capture.secrets))
        framing = facts.framing
    codec = codecs.get(protocol)
    headers = codec.stream_headers("ndjson" if framing == "ndjson" else "sse")
    head = capture_head(200, [(name.lower(), value) for name, value in headers.items()])
    suffix = "sse" if framing == "sse" else "ndjson"
    name = f"{capture.id}-{side}-{codec.name.replace(':', '_').replace('@', '')}.{suffix}.http"
    return redact(head + body, capture.secrets), name
