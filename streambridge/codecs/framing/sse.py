"""Incremental SSE parsing on bytes, after the WHATWG EventSource rules (BOM, CR / LF / CRLF
line ends, one optional space after the colon, ``id`` with NUL ignored, ``retry`` digits only,
last event id persisting across events, no dispatch without data). No maintained Python
library does all of that on raw bytes, so it is written here (see docs/design.md). Unlike a
browser it reports what it cannot deliver (an event cut off at EOF, an event over the size
limit) instead of silently discarding it."""

from __future__ import annotations

from bisect import bisect_left
from itertools import accumulate
from itertools import count as counting
from operator import add

from .base import Parser, span
from .frame import DEFAULT_MAX_EVENT_SIZE, Frame, FramingError, PlainConsumer, oversize_message

__all__ = ["SSEParser"]


class SSEParser(Parser):
    """WHATWG-compliant incremental SSE parser working on bytes.

    ``feed`` returns the frames completed by a chunk; ``close`` returns nothing more but lists,
    in ``problems``, an event left unterminated at EOF. Oversize events are reported in
    ``problems`` too and skipped up to their end, so parsing goes on.
    """

    def __init__(self, max_event_size: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.max_event_size = max_event_size
        self.problems: list[FramingError] = []
        self.comments = 0
        self._buf = b""
        self._started = False
        self._skip_lf = False
        self._data: list[bytes] = []
        self._event = ""
        self._id_buffer = ""
        self._last_id = ""
        self._own_id = False
        self._retry: int | None = None
        self._event_size = 0
        self._event_offset = 0
        self._has_fields = False
        self._discarding = False
        self._in_line = False  # the bytes of a line of a skipped event were dropped up to here
        self._pos = 0  # stream offset of the start of self._buf, CRLF counted as one byte
        self._index = 0
        self._pending: list[bytes] = []
        self._pending_size = 0
        # the bytes CRLF line ends lost to LF: those before the event being read (a count), the
        # offsets (as parsed) of the line ends that lost one since, and chunks not yet looked at
        # (their parsed offset and received bytes): offsets are worked out only when asked for
        self._lost = 0
        self._lost_at: list[int] = []
        self._crlf: list[tuple[int, bytes]] = []
        #: optional hot-path consumer of one-line ``data:`` events (alone or after their own
        #: ``id:`` line): ``on_plain(blocks, skip, ids)`` takes payloads (each ``block[skip:]``)
        #: from the front, in order, and returns how many it took; the rest become frames.
        #: Called only while no other frame of the same feed is pending, so order is kept.
        self.on_plain: PlainConsumer | None = None

    def feed(self, chunk: bytes) -> list[Frame]:
        reported = len(self.problems)
        frames = self._feed(chunk)
        if self._lost or self._lost_at or self._crlf:
            self._received_offsets(frames, reported)
        return frames

    def _feed(self, chunk: bytes) -> list[Frame]:
        if not self._started:
            chunk = self._strip_bom(chunk)
            if not self._started:
                return []
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":  # the LF of a CRLF split across chunks
                chunk = chunk[1:]
                self._spell_out()
                self._lost_at.append(self._pos + len(self._buf) - 1)
        if b"\n" not in chunk and b"\r" not in chunk:
            return self._hold(chunk)
        data = self._take_pending(chunk)
        if b"\r" in data:
            data = self._normalise_cr(data)
        if self._has_fields or self._discarding:
            return self._feed_lines(data)
        return self._feed_blocks(data)

    def _received_offsets(self, frames: list[Frame], reported: int) -> None:
        """Offsets as received: each CRLF before a frame counts two bytes, not one. What no
        later frame can start before is folded into a count, so little is kept."""
        if not (frames or len(self.problems) > reported or self._has_fields or b"\n" in self._buf):
            lost = len(self._lost_at)  # every line end read is behind: only their number matters
            for _, raw in self._crlf:
                lost += raw.count(b"\r\n")
            self._lost += lost
            self._lost_at, self._crlf = [], []
            return
        self._spell_out()
        items: tuple[Frame | FramingError, ...] = (*frames, *self.problems[reported:])
        for item in items:
            item.offset = self.received(item.offset)
        keep = self._event_offset if self._has_fields else self._pos
        folded = bisect_left(self._lost_at, keep)
        self._lost += folded
        del self._lost_at[:folded]

    def _spell_out(self) -> None:
        """Where each CRLF of the chunks not looked at yet lost its byte: the k-th becomes the
        LF after the parts up to it and the k LFs between them."""
        for start, raw in self._crlf:
            parts = raw.split(b"\r\n")
            self._lost_at.extend(map(add, accumulate(map(len, parts[:-1])), counting(start)))
        self._crlf = []

    def received(self, offset: int) -> int:
        """The stream offset of a parsed offset (of the event being read, or later)."""
        self._spell_out()
        return offset + self._lost + bisect_left(self._lost_at, offset)

    @property
    def consumed(self) -> int:
        """Bytes of the stream read so far (at the end, its length)."""
        return self.received(self._pos + len(self._buf) + self._pending_size)

    def _hold(self, chunk: bytes) -> list[Frame]:
        """A chunk with no line end completes nothing: keep it without copying the buffer
        (a large frame arriving in small pieces must not cost quadratic time)."""
        if chunk:
            self._pending.append(chunk)
            self._pending_size += len(chunk)
        if self._pending_size + len(self._buf) + self._event_size > self.max_event_size and not self._discarding:
            self._oversize()
        if self._discarding:
            self._drop()
        return []

    def _drop(self) -> None:
        """Skip the held bytes of an oversize event, keeping offsets (its end is still to come)."""
        size = self._pending_size + len(self._buf)
        if size:
            last = self._pending[-1] if self._pending else self._buf
            self._in_line = not last.endswith(b"\n")
        self._pos += size
        self._pending, self._pending_size, self._buf = [], 0, b""

    def _event_start(self) -> int:
        """The stream offset of the event being read: its first line, or (none read yet) the
        first held byte that is no line end."""
        if self._has_fields:
            return self._event_offset
        return self._pos + len(self._buf) - len(self._buf.lstrip(b"\n"))

    def _take_pending(self, chunk: bytes) -> bytes:
        if self._pending:
            data = b"".join([self._buf, *self._pending, chunk])
            self._pending, self._pending_size = [], 0
            return data
        return self._buf + chunk if self._buf else chunk

    def _feed_blocks(self, data: bytes) -> list[Frame]:
        """At an event boundary: split whole events at blank lines; one-line ``data:`` events
        (nearly all of them) become frames directly, others go through the line rules."""
        blocks = data.split(b"\n\n")
        rest = blocks.pop()
        plain = self.on_plain
        if plain is not None:
            taken, offered = self._offer_run(plain, data, rest, blocks)
            if taken == len(blocks) and taken:  # all of them: the common case
                self._index += taken
                self._last_id = self._id_buffer
                self._pos += len(data) - len(rest)
                return self._keep_rest(rest, [])
            if taken:
                self._index += taken
                self._pos += span(blocks, taken, 2)
                blocks = blocks[taken:]
            if taken < offered:
                plain = None  # it declined one: what follows must wait for that frame
        out: list[Frame] = []
        self._frame_blocks(blocks, plain, out)
        return self._keep_rest(rest, out)

    def _offer_run(self, plain: PlainConsumer, data: bytes, rest: bytes, blocks: list[bytes]) -> tuple[int, int]:
        """Offer the leading one-line ``data:`` events (or numbered ones) to the hot path as a
        run: how many it took and how many it was offered."""
        whole = len(data) < self.max_event_size
        if whole and self._all_plain(data, rest, len(blocks)):  # two C-level counts per chunk
            return plain(blocks, 6, None), len(blocks)
        if offered := self._plain_prefix(blocks):
            return plain(blocks[:offered], 6, None), offered
        if whole and (numbered := self._all_numbered(data, rest, len(blocks))):
            data_lines, id_lines = numbered
            taken = plain(data_lines, 6, id_lines)
            if taken:
                self._id_buffer = id_lines[taken - 1][4:].decode()
            return taken, len(blocks)
        return 0, 0

    def _frame_blocks(self, blocks: list[bytes], plain: PlainConsumer | None, out: list[Frame]) -> None:
        """Frames of whole events: one-line ones directly (the first offered to ``plain`` while
        nothing else is pending), others through the line rules."""
        append = out.append
        pos, index, last_id = self._pos, self._index, self._id_buffer
        limit = self.max_event_size
        for block in blocks:
            if block.startswith(b"data: ") and 10 not in block and len(block) < limit:  # (10: LF, fast)
                index += 1
                if not (plain is not None and not out and not self.problems and plain((block,), 6, None)):
                    append(Frame(block[6:], "", last_id, False, index, pos))
            elif (cut := _named_cut(block, limit)) > 0:
                index += 1
                append(Frame(block[cut + 7 :], block[7:cut].decode("utf-8", "replace"), last_id, False, index, pos))
            else:
                self._index = index
                self._block_lines(block, pos, out)
                index, last_id = self._index, self._id_buffer
            pos += len(block) + 2
        self._index = index
        self._last_id = last_id
        self._pos = pos

    def _keep_rest(self, rest: bytes, out: list[Frame]) -> list[Frame]:
        """Buffer the incomplete event after the last blank line (lines over the limit are
        reported by the line rules)."""
        if len(rest) > self.max_event_size:
            self._buf = b""
            return out + self._feed_lines(rest)
        self._buf = rest
        return out

    def _plain_prefix(self, blocks: list[bytes]) -> int:
        """How many leading blocks are one ``data:`` line under the size limit."""
        limit = self.max_event_size
        for count, block in enumerate(blocks):
            if not (block.startswith(b"data: ") and 10 not in block and len(block) < limit):  # (10: LF)
                return count
        return len(blocks)

    @staticmethod
    def _all_numbered(data: bytes, rest: bytes, blocks: int) -> tuple[list[bytes], list[bytes]] | None:
        """When every complete block is an ``id:`` line of ASCII digits then one ``data:`` line
        (some servers number every event so): the data lines and the id lines. JSON holds no raw
        line end, so with three line ends per block the complete part splits into lines that
        must be id, data, blank, id, ...: each checked with C-level joins and counts."""
        end = len(data) - len(rest)
        if not blocks or data.count(b"\n", 0, end) != 3 * blocks or not data.startswith(b"id: "):
            return None
        lines = data[: end - 2].split(b"\n")
        id_lines, data_lines = lines[0::3], lines[1::3]
        if b"".join(lines[2::3]) or (b"\n" + b"\n".join(data_lines)).count(b"\ndata: ") != blocks:
            return None
        ids = b"\n" + b"\n".join(id_lines)  # each line starts with "id: " and has digits after it
        if ids.count(b"\nid: ") != blocks or min(map(len, id_lines)) < 5 or not ids.replace(b"\nid: ", b"").isdigit():
            return None
        return data_lines, id_lines

    @staticmethod
    def _all_plain(data: bytes, rest: bytes, blocks: int) -> bool:
        """Whether each complete block is exactly one ``data: `` line: then the complete part
        has two line ends per block, and every block after the first follows a blank line
        with ``data: `` (JSON text holds no raw line end, so these counts cannot be fooled)."""
        if not blocks or data.count(b"\n") - rest.count(b"\n") != 2 * blocks:
            return False
        return data.startswith(b"data: ") + data.count(b"\n\ndata: ", 0, len(data) - len(rest)) == blocks

    def _block_lines(self, block: bytes, pos: int, out: list[Frame]) -> None:
        for line in block.split(b"\n"):
            self._line(line, pos, out)
            pos += len(line) + 1
        self._line(b"", pos, out)

    def _feed_lines(self, data: bytes) -> list[Frame]:
        lines = data.split(b"\n")
        self._buf = lines.pop()
        out: list[Frame] = []
        pos = self._pos
        for line in lines:
            if self._in_line:  # the end of a line whose start was dropped
                self._in_line = False
            else:
                self._line(line, pos, out)
            pos += len(line) + 1
        self._pos = pos
        self._check_rest()
        return out

    def _check_rest(self) -> None:
        """The partial line after the last line end: over the limit, or part of a skipped event."""
        if not self._discarding and len(self._buf) + self._event_size > self.max_event_size:
            self._oversize()
        if self._discarding:
            self._drop()

    def close(self) -> list[Frame]:
        """End of input: an unterminated event is reported in ``problems``, never dispatched.
        Its lines go through the line rules first, so its offset is where it starts."""
        reported = len(self.problems)
        self._close()
        if self._lost or self._lost_at or self._crlf:
            self._received_offsets([], reported)
        return []

    def _close(self) -> None:
        rest = self._take_pending(b"")
        self._buf = b""
        *lines, last = rest.split(b"\n")  # no event ends in it: no blank line after a field
        pos = self._pos
        for line in lines:
            if not self._discarding:
                self._line(line, pos, [])
            pos += len(line) + 1
        if last and not self._discarding:
            raw = b"\n".join([b"data: " + d for d in self._data])
            raw = raw + (b"\n" if raw else b"") + last
            self._line(last, pos, [])
        else:
            raw = b"\n".join([b"data: " + d for d in self._data])
        self._pos = pos + len(last)
        if self._has_fields and not self._discarding:  # blank lines between events are no event
            message = "the blank line that ends an SSE event; the stream ended inside the event"
            self.problems.append(
                FramingError(message, index=self._index + 1, offset=self._event_offset, raw=raw, kind="truncated")
            )
        self._reset_event()

    # -- internals -----------------------------------------------------------------------

    def _normalise_cr(self, data: bytes) -> bytes:
        """LF line ends only (the fast rules need them); where each CRLF lost a byte is kept."""
        if data.endswith(b"\r"):
            self._skip_lf = True  # a CRLF may be split across chunks
        if b"\r\n" in data:
            self._crlf.append((self._pos, data))  # where its CRLFs lost a byte: worked out if asked
            data = data.replace(b"\r\n", b"\n")
        return data.replace(b"\r", b"\n")

    def _line(self, line: bytes, offset: int, out: list[Frame]) -> None:
        if not line:
            self._dispatch(out)
            return
        if self._discarding:
            return
        if not self._has_fields:
            self._has_fields = True
            self._event_offset = offset
        self._event_size += len(line) + 1
        if self._event_size > self.max_event_size:
            self._oversize()
            return
        if line[0] == 58:  # b":" comment
            self.comments += 1
            return
        colon = line.find(b":")
        if colon < 0:
            field, value = line, b""
        else:
            field = line[:colon]
            value = line[colon + 1 :]
            if value[:1] == b" ":
                value = value[1:]
        if field == b"data":
            self._data.append(value)
        elif field == b"event":
            self._event = value.decode("utf-8", "replace")
        elif field == b"id" and b"\x00" not in value:
            self._id_buffer = value.decode("utf-8", "replace")
            self._own_id = True
        elif field == b"retry" and value and value.isdigit():
            self._retry = int(value)

    def _dispatch(self, out: list[Frame]) -> None:
        if self._discarding:
            self._discarding = False
            self._reset_event()
            return
        self._last_id = self._id_buffer
        if self._data:
            self._index += 1
            data = self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
            out.append(
                Frame(data, self._event, self._last_id, self._own_id, self._index, self._event_offset, self._retry)
            )
        self._data = []
        if self._event:
            self._event = ""
        self._own_id = False
        self._retry = None
        self._event_size = 0
        self._has_fields = False

    def _reset_event(self) -> None:
        self._data = []
        self._event = ""
        self._own_id = False
        self._retry = None
        self._event_size = 0
        self._has_fields = False

    def _oversize(self) -> None:
        """Report the event being read as over the limit (its head kept) and skip to its end."""
        self._index += 1
        head = b"\n".join(self._data) if self._data else self._buf.lstrip(b"\n") + b"".join(self._pending[:1])
        message = oversize_message("an SSE event", self.max_event_size)
        self.problems.append(FramingError(message, index=self._index, offset=self._event_start(), raw=head[:200]))
        self._discarding = True
        self._data = []


def _named_cut(block: bytes, limit: int) -> int:
    """Where ``\ndata: `` starts in a named one-line event (``event:`` then ``data:``, as
    agentfootprint writes every frame), else -1: such an event needs no line rules either."""
    if block.startswith(b"event: ") and block.count(b"\n") == 1 and len(block) < limit:
        return block.find(b"\ndata: ")
    return -1
