"""Cursors: each frame a client is written gets a key, so a resume can start right after it.

A client's cursor is the SSE ``id:`` of the last frame it saw (``Last-Event-ID`` or ``?after=``),
or for NDJSON the number of lines it saw. Internally a frame's *key* is twice its number; a frame
left unnumbered (a protocol's named frames that carry no id) gets the odd key after the number
before it, so "after cursor n" is exactly "key > 2n", for numbered and unnumbered frames alike.
The numbering is done here, for every protocol, as the frames are written: the hot path is a few
C-level splits and joins per write, never a loop per frame, unless a frame is named or numbered.
"""

from __future__ import annotations

from itertools import chain

__all__ = ["FINAL", "Numbering", "after_key", "frames_after"]

#: the key of a terminal written by someone other than the run's owner (a reaper, a reader that
#: lost the log): above every cursor, so every reader that has not ended gets it
FINAL = 1 << 62
_MAX_CURSOR = (1 << 53) - 1
_NUMBERED = b"id: %d\n%b\n\n"
#: ids below this have their line made once (a run's frames are numbered by joins, not formats)
_CACHED = 1 << 16
_ID_LINES: list[bytes] = []


def _id_lines() -> list[bytes]:
    """``\\n\\nid: <n>\\n`` for every n below :data:`_CACHED` (built on first use: 3 MB)."""
    if not _ID_LINES:
        _ID_LINES.extend(b"\n\nid: %d\n" % n for n in range(_CACHED))
    return _ID_LINES


def after_key(cursor: str | None) -> int:
    """The key after which a reader with ``cursor`` resumes (0: from the start). Raises
    ValueError for a cursor that is not a non-negative integer."""
    if cursor is None or cursor == "":
        return 0
    cursor = cursor.strip()
    if not cursor.isascii() or not cursor.isdigit() or len(cursor) > 16:
        raise ValueError("expected a non-negative integer")
    return 2 * min(int(cursor), _MAX_CURSOR)


class Numbering:
    """Numbers the frames of one output stream as they are written, and gives each write's
    lowest and highest key. ``framing`` is ``sse`` (``id:`` lines are added) or ``ndjson`` (a
    line's number is its position; nothing is added). With ``skip_named``, SSE frames with an
    ``event:`` name stay unnumbered (its surface's ``unnumbered_named_frames``). A frame
    that already has an ``id:`` of digits keeps it; numbering goes on after the highest seen."""

    __slots__ = ("last", "mode", "skip_named")

    def __init__(self, framing: str, *, skip_named: bool = False) -> None:
        self.mode = framing
        self.skip_named = skip_named
        self.last = 0  # the highest number written

    def number(self, out: bytes) -> tuple[bytes, int, int]:
        """``out`` (whole frames) as written to the client, with its lowest and highest key."""
        last = self.last
        if self.mode != "sse":
            count = out.count(b"\n")
            self.last = last + count
            return out, 2 * last + 2, 2 * self.last
        frames = out.split(b"\n\n")
        frames.pop()  # what follows the last frame's blank line: nothing
        count = len(frames)
        # every frame a plain "data:" one (an id or event line comes first in a frame): one count
        if not out.startswith(b"data:") or out.count(b"\n\ndata:") != count - 1:
            return self._one_by_one(frames)
        end = self.last = last + count
        if count == 1:
            return b"id: %d\n%b\n\n" % (end, frames[0]), 2 * end, 2 * end
        if end < _CACHED:  # id line, frame, blank line and the next id line, frame, ...: one join
            parts: list[bytes] = [b""] * (2 * count + 1)
            parts[0] = b"id: %d\n" % (last + 1)
            parts[2 : 2 * count : 2] = _id_lines()[last + 2 : end + 1]
            parts[1::2] = frames
            parts[-1] = b"\n\n"
            return b"".join(parts), 2 * last + 2, 2 * end
        args: list[object] = [None] * (2 * count)  # number, frame, number, frame, ...: one C-level format
        args[0::2] = range(last + 1, end + 1)
        args[1::2] = frames
        return (_NUMBERED * count) % tuple(args), 2 * last + 2, 2 * end

    def _one_by_one(self, frames: list[bytes]) -> tuple[bytes, int, int]:
        parts: list[bytes] = []
        keys = [self._key(frame, parts) for frame in frames]
        return b"".join(parts), keys[0], keys[-1]

    def _key(self, frame: bytes, parts: list[bytes]) -> int:
        own = _own_id(frame)
        if own is not None:
            self.last = max(self.last, own)
            parts.append(frame + b"\n\n")
            return 2 * own
        if self.skip_named and (frame.startswith(b"event:") or b"\nevent:" in frame):
            parts.append(frame + b"\n\n")
            return 2 * self.last + 1
        self.last += 1
        parts.append(b"id: %d\n%s\n\n" % (self.last, frame))
        return 2 * self.last


def _own_id(frame: bytes) -> int | None:
    """The number of a frame's own ``id:`` line, when it has one of digits."""
    for line in frame.split(b"\n"):
        if line.startswith(b"id:"):
            value = line[3:].strip()
            if value.isdigit() and len(value) <= 16:
                return int(value)
    return None


def frames_after(data: bytes, lo: int, hi: int, after: int, framing: str) -> bytes:
    """What of one logged write (keys ``lo`` to ``hi``) a reader after key ``after`` has not seen."""
    if hi <= after:
        return b""
    if lo > after:
        return data
    sep = b"\n\n" if framing == "sse" else b"\n"
    frames = data.split(sep)
    frames.pop()
    if framing != "sse":
        first_unseen = (after - lo) // 2 + 1
        return sep.join(frames[first_unseen:]) + sep
    keys = _keys(frames, lo)
    return b"".join(chain.from_iterable((f, sep) for f, k in zip(frames, keys, strict=True) if k > after))


def _keys(frames: list[bytes], lo: int) -> list[int]:
    """The keys of logged SSE frames (every one numbered by now, unless named and skipped)."""
    keys: list[int] = []
    last = lo // 2 if lo % 2 else lo // 2 - 1
    for frame in frames:
        own = _own_id(frame)
        if own is not None:
            last = own
            keys.append(2 * own)
        else:
            keys.append(2 * last + 1)
    return keys
