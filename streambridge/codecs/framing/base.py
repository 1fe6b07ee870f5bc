"""What the SSE and NDJSON parsers share: the BOM at a stream's start and span arithmetic."""

from __future__ import annotations

__all__ = ["BOM", "Parser", "span"]

BOM = b"\xef\xbb\xbf"


class Parser:
    """What both parsers share: one UTF-8 BOM at the very start of a stream is skipped (WHATWG
    says so for SSE; for NDJSON it is what Windows tools write), wherever the chunks split it."""

    _buf: bytes
    _pos: int
    _started: bool
    _index: int
    #: the frame the input ended inside, delivered at ``close`` (NDJSON's last line without its
    #: newline: the codec decides whether it reads); 0 when there is none
    cut_frame: int = 0

    @property
    def frames_seen(self) -> int:
        """Frames (and undeliverable frames) read so far: the number of the last one."""
        return self._index

    def _strip_bom(self, chunk: bytes) -> bytes:
        head = self._buf + chunk
        if len(head) < 3 and BOM.startswith(head):
            self._buf = head
            return b""
        self._started = True
        self._buf = b""
        if head.startswith(BOM):
            self._pos = 3
            return head[3:]
        return head


def span(pieces: list[bytes], count: int, separator: int) -> int:
    """Bytes taken by the first ``count`` pieces of a split, each with its separator."""
    return sum(map(len, pieces[:count])) + separator * count
