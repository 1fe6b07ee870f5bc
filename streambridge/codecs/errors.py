"""What a codec raises: :class:`StreamError` (strict decoding, with the frame, the byte and what
was expected) and :class:`FrameProblem` (one frame a codec cannot read)."""

from __future__ import annotations

from typing import Literal

#: what went wrong, for code that reacts differently (a proxy's fault codes): a frame that is
#: not what the protocol says, one that is not UTF-8, one over the size limit, input that
#: ended without its terminal (or inside a frame), or anything after the terminal.
ProblemKind = Literal["malformed", "encoding", "oversize", "truncated", "after-terminal"]


class StreamError(ValueError):
    """Bad input in strict mode: names the frame number, the byte offset and what was expected.

    ``expected`` says what the protocol wanted there (a noun phrase, maybe followed by what
    came instead); the message reads ``<codec>: frame <n> at byte <offset>: expected …``."""

    def __init__(
        self, codec: str, frame: int, offset: int, expected: str, raw: bytes = b"", kind: ProblemKind = "malformed"
    ) -> None:
        self.codec = codec
        self.frame = frame
        self.offset = offset
        self.expected = expected
        self.raw = raw
        self.kind = kind
        #: what the chunk held before the bad frame, translated (set by ``Translator.feed``)
        self.output = b""
        super().__init__(f"{codec}: frame {frame} at byte {offset}: expected {expected}")


class FrameProblem(Exception):
    """Raised inside a codec's frame decoder; the base class decides lenient vs strict.

    Its text is what was expected, as for :class:`StreamError`."""

    def __init__(self, expected: str, kind: ProblemKind = "malformed") -> None:
        super().__init__(expected)
        self.kind = kind


def check_utf8(data: bytes) -> None:
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FrameProblem(
            f"valid UTF-8; byte 0x{data[exc.start]:02x} at offset {exc.start} of the frame is not", "encoding"
        ) from None
