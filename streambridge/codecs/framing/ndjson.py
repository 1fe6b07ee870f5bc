"""Incremental NDJSON parsing: one frame per non-empty line."""

from __future__ import annotations

from .base import Parser, span
from .frame import DEFAULT_MAX_EVENT_SIZE, Frame, FramingError, PlainConsumer, oversize_message

__all__ = ["NDJSONParser"]


class NDJSONParser(Parser):
    """Newline-delimited JSON: one frame per non-empty line (a trailing CR is dropped), after
    a leading BOM.

    A last line without its newline is still delivered at ``close``: a server may write a
    final partial line the same way, and the codec decides whether it parses.
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self.problems: list[FramingError] = []
        self.comments = 0
        self._buf = b""
        self._started = False
        self._pos = 0
        self._index = 0
        self._discarding = False
        self._pending: list[bytes] = []
        self._pending_size = 0
        self.on_plain: PlainConsumer | None = None  # as SSEParser.on_plain

    def feed(self, chunk: bytes) -> list[Frame]:
        if not self._started:
            chunk = self._strip_bom(chunk)
            if not self._started:
                return []
        if b"\n" not in chunk:
            return self._hold(chunk)
        if self._pending:
            data = b"".join([self._buf, *self._pending, chunk])
            self._pending, self._pending_size = [], 0
        else:
            data = self._buf + chunk if self._buf else chunk
        out: list[Frame] = []
        plain = self.on_plain
        start, offer = 0, plain is not None
        if plain is not None and not self._discarding:
            start, offer = self._take_plain(plain, data)
        find = data.find
        while True:
            end = find(b"\n", start)
            if end < 0:
                break
            if self._discarding:
                self._discarding = False
            elif end - start > self.max_event_size:
                self._too_long(data[start : start + 200], self._pos + start)
            else:
                self._line(data[start:end], self._pos + start, out, offer)
            start = end + 1
        self._pos += start
        self._buf = data[start:]
        if len(self._buf) > self.max_event_size:
            self._oversize()
        return out

    def _take_plain(self, plain: PlainConsumer, data: bytes) -> tuple[int, bool]:
        """Offer the chunk's complete lines to ``on_plain``: the offset after those it took, and
        whether the lines after it may still be offered (not once it declined one).

        Only when no line can be over the limit: an oversize line must be reported instead."""
        if len(data) >= self.max_event_size:
            return 0, True
        lines = data.split(b"\n")
        rest = lines.pop()
        taken = plain(lines, 0, None)
        self._index += taken
        if taken == len(lines):
            return len(data) - len(rest), True
        return span(lines, taken, 1), False

    def _hold(self, chunk: bytes) -> list[Frame]:
        if self._discarding:
            self._pos += len(chunk)
            return []
        self._pending.append(chunk)
        self._pending_size += len(chunk)
        if self._pending_size + len(self._buf) > self.max_event_size:
            self._oversize()
        return []

    def _oversize(self) -> None:
        """Report the line being read as over the limit (once) and skip to its end."""
        if not self._discarding:
            self._too_long((self._buf + b"".join(self._pending[:1]))[:200], self._pos)
            self._discarding = True
        self._pos += self._pending_size + len(self._buf)
        self._pending, self._pending_size, self._buf = [], 0, b""

    @property
    def consumed(self) -> int:
        """Bytes of the stream read so far (at the end, its length)."""
        return self._pos + len(self._buf) + self._pending_size

    def _too_long(self, head: bytes, offset: int) -> None:
        self._index += 1
        message = oversize_message("an NDJSON line", self.max_event_size)
        self.problems.append(FramingError(message, index=self._index, offset=offset, raw=head))

    def close(self) -> list[Frame]:
        out: list[Frame] = []
        if self._pending:
            self._buf = b"".join([self._buf, *self._pending])
            self._pending, self._pending_size = [], 0
        if self._buf and not self._discarding:
            self._line(self._buf, self._pos, out)
            if out:
                self.cut_frame = out[-1].index
        self._pos += len(self._buf)
        self._buf = b""
        return out

    def _line(self, line: bytes, offset: int, out: list[Frame], offer: bool = False) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line.strip():
            return
        self._index += 1
        plain = self.on_plain
        if offer and plain is not None and not out and not self.problems and plain((line,), 0, None):
            return
        out.append(Frame(line, "", "", False, self._index, offset))
