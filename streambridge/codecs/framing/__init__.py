"""Incremental SSE and NDJSON framing, sans-IO: bytes in, frames out (and back).

Split by role in the manner of h11's readers and writers: :mod:`.frame` (what is delivered and
reported), :mod:`.sse` and :mod:`.ndjson` (the parsers), :mod:`.detect` (which framing a stream
is in), :mod:`.write` (the writers)."""

from __future__ import annotations

from .detect import FramingDetector, detect_framing, make_parser
from .frame import (
    DEFAULT_MAX_EVENT_SIZE,
    FRAMINGS,
    Frame,
    Framing,
    FramingError,
    FramingProblem,
    PlainConsumer,
    parse_framing,
    size_limit,
)
from .ndjson import NDJSONParser
from .sse import SSEParser
from .write import ndjson_frame, sse_frame

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "FRAMINGS",
    "Frame",
    "Framing",
    "FramingDetector",
    "FramingError",
    "FramingProblem",
    "NDJSONParser",
    "PlainConsumer",
    "SSEParser",
    "detect_framing",
    "make_parser",
    "ndjson_frame",
    "parse_framing",
    "size_limit",
    "sse_frame",
]
