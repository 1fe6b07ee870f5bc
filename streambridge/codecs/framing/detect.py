"""Which framing a stream is in, from its first significant byte, and the parser for it."""

from __future__ import annotations

import re
from collections.abc import Callable

from .base import BOM
from .frame import DEFAULT_MAX_EVENT_SIZE, Frame, Framing, FramingError, PlainConsumer
from .ndjson import NDJSONParser
from .sse import SSEParser

__all__ = ["FramingDetector", "detect_framing", "make_parser"]

_SIGNIFICANT = re.compile(rb"[^ \t\n\r\x0b\x0c]")  # what bytes.strip() keeps


def make_parser(framing: Framing, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> SSEParser | NDJSONParser:
    if framing == "sse":
        return SSEParser(max_event_size)
    if framing == "ndjson":
        return NDJSONParser(max_event_size)
    raise ValueError(f"unknown framing {framing!r}: expected 'sse' or 'ndjson'")


def detect_framing(head: bytes) -> Framing | None:
    """The framing a stream's first bytes say: ``ndjson`` when its first significant byte (after
    a UTF-8 BOM and whitespace) opens JSON, else ``sse`` (an SSE stream starts with a field or a
    comment); None while ``head`` holds nothing significant yet.

    Oma travels as SSE over HTTP though its own framing is NDJSON, so a reader that is not told
    must look; one byte tells them apart, so this is the only rule (decoders and the CLI)."""
    start = 3 if head.startswith(BOM) else 0
    if not start and BOM.startswith(head):
        return None  # empty, or the start of a BOM
    found = _SIGNIFICANT.search(head, start)
    if found is None:
        return None
    return "ndjson" if head[found.start()] in b"{[" else "sse"


class FramingDetector:
    """A parser's stand-in while the framing is unknown: holds the bytes until
    :func:`detect_framing` decides, then makes the real parser, feeds it everything held (so
    offsets count from the stream start) and hands it to ``on_detected``, whose owner puts it
    in this one's place: after that nothing of this runs. At ``close`` with nothing decided,
    or after ``max_event_size`` bytes of nothing significant, ``default`` is the framing."""

    def __init__(
        self, default: Framing, max_event_size: int, on_detected: Callable[[Framing, SSEParser | NDJSONParser], None]
    ) -> None:
        self.default = default
        self.max_event_size = max_event_size
        self.on_detected = on_detected
        self.problems: list[FramingError] = []
        self.comments = 0
        self.on_plain: PlainConsumer | None = None
        self._held: list[bytes] = []
        self._held_size = 0
        self._head = b""  # the first bytes held (at most 3): all detect_framing needs of them

    def feed(self, chunk: bytes) -> list[Frame]:
        self._held.append(chunk)
        self._held_size += len(chunk)
        # what is held decided nothing: a BOM (or its start) and whitespace, which its first
        # three bytes say as well as the whole, so a long blank start costs linear time
        probe = self._head + chunk
        framing = detect_framing(probe)
        if framing is None:
            if self._held_size <= self.max_event_size:
                self._head = probe[:3]
                return []
            framing = self.default
        return self._start(framing).feed(b"".join(self._held))

    def close(self) -> list[Frame]:
        parser = self._start(self.default)
        frames = parser.feed(b"".join(self._held))
        return frames + parser.close()

    def _start(self, framing: Framing) -> SSEParser | NDJSONParser:
        parser = make_parser(framing, self.max_event_size)
        parser.on_plain = self.on_plain
        self.on_detected(framing, parser)
        return parser
