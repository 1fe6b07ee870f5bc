"""What the inspector never shows: a stream's credentials, found however its bytes spell them.

A side of a stream (its upstream chunks, or its client writes) is redacted as one text, so a
credential cut across chunks or frames is found whole, in three spellings: its bytes, its JSON
escaping, and as JSON decodes it (``\\u0041``…). The decoded search runs over the string values
of each JSON key in order, joined, so a credential an upstream streamed in two ``delta`` frames
is found too. Every byte of a match is taken out of the chunks that hold it, and the mark put in
the first of them: the chunks keep their order and the frames their framing (the mark holds no
line break, and inside a JSON string it is text).
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import AnyStr

import orjson

__all__ = ["REDACTED", "redact", "redact_pieces"]

REDACTED = "«redacted»"
_MARK = REDACTED.encode()
#: a JSON string (its content in group 1; a key when followed by a colon)
_STRING = re.compile(rb'"((?:[^"\\\r\n]|\\.)*)"(\s*:)?')

Span = tuple[int, int]


def redact(data: bytes, secrets: Iterable[str]) -> bytes:
    """``data`` with every secret (and its JSON-escaped spelling) replaced by :data:`REDACTED`."""
    for secret in secrets:
        for spelling in {secret.encode(), orjson.dumps(secret)[1:-1]}:
            if spelling:
                data = data.replace(spelling, _MARK)
    return data


def redact_pieces(pieces: Sequence[bytes], secrets: Sequence[str]) -> list[bytes]:
    """``pieces`` (one side's chunks, in order) with every spelling of every secret taken out,
    wherever the pieces cut it (see the module's docstring)."""
    secrets = [secret for secret in secrets if secret]
    if not secrets or not pieces:
        return list(pieces)
    data = b"".join(pieces)
    spans = _raw_spans(data, secrets) + _decoded_spans(data, secrets)
    return _cut(pieces, _merged(spans)) if spans else list(pieces)


def _find_all(haystack: AnyStr, needle: AnyStr) -> Iterator[int]:
    at = haystack.find(needle)
    while at != -1:
        yield at
        at = haystack.find(needle, at + 1)


def _raw_spans(data: bytes, secrets: Sequence[str]) -> list[Span]:
    spans = []
    for secret in secrets:
        for spelling in {secret.encode(), orjson.dumps(secret)[1:-1]}:
            spans += [(at, at + len(spelling)) for at in _find_all(data, spelling)]
    return spans


class _Values:
    """The string values of one JSON key across a side, in order: joined, decoded, and where each
    one's content lies in the side's bytes."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.starts: list[int] = []  # where each value starts in the joined text
        self.raws: list[tuple[int, bytes]] = []  # each value's content: its offset and raw bytes
        self.size = 0

    def add(self, offset: int, raw: bytes, value: str) -> None:
        self.starts.append(self.size)
        self.text.append(value)
        self.raws.append((offset, raw))
        self.size += len(value)

    def spans(self, secrets: Sequence[str]) -> list[Span]:
        """The bytes of every match of a secret in the joined text (one span per value it touches)."""
        joined = "".join(self.text)
        found: list[Span] = []
        for secret in secrets:
            for at in _find_all(joined, secret):
                found += self._bytes_of(at, at + len(secret))
        return found

    def _bytes_of(self, start: int, end: int) -> list[Span]:
        spans = []
        index = bisect.bisect_right(self.starts, start) - 1
        while index < len(self.text) and self.starts[index] < end:
            first = max(start - self.starts[index], 0)
            last = min(end - self.starts[index], len(self.text[index]))
            offset, raw = self.raws[index]
            where = _char_offsets(raw, len(self.text[index]))
            spans.append((offset + where[first], offset + where[last]) if where else (offset, offset + len(raw)))
            index += 1
        return spans


def _decoded_spans(data: bytes, secrets: Sequence[str]) -> list[Span]:
    """Matches in the decoded string values of each key (values outside an object: key None)."""
    by_key: dict[bytes | None, _Values] = {}
    key: bytes | None = None
    for match in _STRING.finditer(data):
        raw = match.group(1)
        if match.group(2):
            key = raw
            continue
        try:
            value = orjson.loads(b'"' + raw + b'"')
        except orjson.JSONDecodeError:
            continue
        by_key.setdefault(key, _Values()).add(match.start(1), raw, value)
    return [span for values in by_key.values() for span in values.spans(secrets)]


def _char_offsets(raw: bytes, length: int) -> list[int] | None:
    """Where each decoded character of a JSON string's raw content starts (and the end); None
    when it does not decode to ``length`` characters (the whole value is then redacted)."""
    offsets = []
    at = 0
    while at < len(raw):
        offsets.append(at)
        at += _width(raw, at)
    offsets.append(len(raw))
    return offsets if len(offsets) == length + 1 else None


def _width(raw: bytes, at: int) -> int:
    """The bytes one decoded character takes at ``at``: an escape (a surrogate pair is one
    character), or a UTF-8 sequence."""
    lead = raw[at]
    if lead == 0x5C:  # backslash
        if raw[at + 1 : at + 2] != b"u":
            return 2
        high = 0xD800 <= int(raw[at + 2 : at + 6], 16) < 0xDC00
        return 12 if high and raw[at + 6 : at + 8] == b"\\u" else 6
    return 1 if lead < 0xC0 else 2 if lead < 0xE0 else 3 if lead < 0xF0 else 4


def _merged(spans: list[Span]) -> list[Span]:
    merged: list[Span] = []
    for start, end in sorted(span for span in spans if span[1] > span[0]):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _cut(pieces: Sequence[bytes], spans: list[Span]) -> list[bytes]:
    """The pieces without the bytes of ``spans`` (sorted, apart), a mark where each span begins."""
    out = []
    pos = k = 0
    for piece in pieces:
        start, end = pos, pos + len(piece)
        parts, at = [], start
        while k < len(spans) and spans[k][0] < end:
            span_start, span_end = spans[k]
            if span_start >= at:  # begins in this piece (one begun before has span_start < start)
                parts += [piece[at - start : span_start - start], _MARK]
            at = max(at, min(span_end, end))
            if span_end > end:
                break  # goes on in the next piece
            k += 1
        parts.append(piece[at - start :])
        out.append(b"".join(parts))
        pos = end
    return out
