"""What a codec raises and what it reports: :class:`StreamError` (strict decoding, with the frame,
the byte and what was expected), :class:`FrameProblem` (one frame a codec cannot read), and
:class:`Diagnostic` (a problem a lenient decoder or an encoder went on from, kept on it as data)."""

from __future__ import annotations

from typing import Literal

from msgspec import Struct

__all__ = ["MAX_DIAGNOSTICS", "Diagnostic", "FrameProblem", "ProblemKind", "StreamError", "check_utf8", "keep"]

#: what went wrong, for code that reacts differently (a proxy's fault codes): a frame that is
#: not what the protocol says, one that is not UTF-8, one over the size limit, input that
#: ended without its terminal (or inside a frame), or anything after the terminal.
ProblemKind = Literal["malformed", "encoding", "oversize", "truncated", "after-terminal"]


#: how many diagnostics a decoder or encoder keeps until they are taken (the rest are counted)
MAX_DIAGNOSTICS = 1000


class Diagnostic(Struct, frozen=True, gc=False):
    """A problem met and gone on from: a bad frame forwarded as a data part, a missing terminal,
    something after the terminal. Codecs are sans-IO and log nothing: they keep these on
    themselves (``diagnostics``), and the caller (the proxy's log, the CLI's warnings) says them.

    ``frame`` and ``offset`` name the frame (1-based number, stream byte offset) when there is one."""

    codec: str
    kind: ProblemKind
    #: what went wrong, as a clause: ``expected …`` for a bad frame
    message: str
    frame: int | None = None
    offset: int | None = None

    def line(self, offset_shift: int = 0) -> str:
        """One line for people: ``<codec>: frame <n> at byte <offset>: <message>``; ``offset_shift``
        makes the offset one in a file whose body starts that far in (a capture's header block)."""
        if self.frame is None or self.offset is None:
            return f"{self.codec}: {self.message}"
        return f"{self.codec}: frame {self.frame} at byte {self.offset + offset_shift}: {self.message}"


def keep(diagnostics: list[Diagnostic], diagnostic: Diagnostic) -> None:
    """Keep a diagnostic unless ``MAX_DIAGNOSTICS`` are waiting to be taken (a stream of garbage
    must not grow memory without bound; the frames themselves are forwarded all the same)."""
    if len(diagnostics) < MAX_DIAGNOSTICS:
        diagnostics.append(diagnostic)


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
