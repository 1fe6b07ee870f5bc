"""What framing delivers and reports: a :class:`Frame` (one SSE event or NDJSON line, named by
its number and offset), a :class:`FramingError` (an event it cannot deliver), the framings
and the hot-path consumer type the parsers offer plain events to."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from msgspec import Struct

__all__ = [
    "DEFAULT_MAX_EVENT_SIZE",
    "FRAMINGS",
    "Frame",
    "Framing",
    "FramingError",
    "FramingProblem",
    "PlainConsumer",
    "oversize_message",
    "parse_framing",
    "size_limit",
]

Framing = Literal["sse", "ndjson"]
#: every framing, in the order a user is told them
FRAMINGS: tuple[Framing, ...] = ("sse", "ndjson")
#: what loses an event at the framing level (a subset of the codecs' ``ProblemKind``)
FramingProblem = Literal["oversize", "truncated"]
DEFAULT_MAX_EVENT_SIZE = 16 * 1024 * 1024
_MIB = 1024 * 1024
#: a codec's hot path: ``(blocks, skip, ids)`` → how many payloads (``block[skip:]``) it took;
#: ``ids``, when given, holds each payload's own ``id: <ASCII digits>`` line
PlainConsumer = Callable[[Sequence[bytes], int, "Sequence[bytes] | None"], int]


def parse_framing(value: str) -> Framing:
    """A framing name from outside (a flag, a config file) checked into :data:`Framing`."""
    for framing in FRAMINGS:
        if value == framing:
            return framing
    raise ValueError(f"unknown framing {value!r}: expected 'sse' or 'ndjson'")


class Frame(Struct, gc=False):
    """One delivered SSE event or NDJSON line.

    ``index`` is the 1-based frame number and ``offset`` the stream byte offset where the frame
    starts: both name the frame in error messages. ``own_id`` says whether this frame itself
    carried an ``id:`` line (``last_id`` persists across frames, as in EventSource).
    """

    data: bytes
    event: str = ""
    last_id: str = ""
    own_id: bool = False
    index: int = 0
    offset: int = 0
    retry: int | None = None


class FramingError(Exception):
    """A framing problem that loses an event: ``kind`` is ``oversize`` or ``truncated``."""

    def __init__(self, message: str, *, index: int, offset: int, raw: bytes, kind: FramingProblem = "oversize") -> None:
        super().__init__(message)
        self.index = index
        self.offset = offset
        self.raw = raw
        self.kind = kind


def size_limit(size: int) -> str:
    """A size limit in words: ``16 MiB`` (whole MiB), else ``<n> bytes``."""
    return f"{size // _MIB} MiB" if size >= _MIB and size % _MIB == 0 else f"{size} bytes"


def oversize_message(unit: str, limit: int) -> str:
    """What a frame over the size limit gets (the text after ``expected``)."""
    return f"{unit} within the size limit ({size_limit(limit)}); this one is larger than the limit"
