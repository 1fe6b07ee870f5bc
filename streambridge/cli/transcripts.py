"""The CLI's side of reading transcripts: its errors, notes and progress bars.

The reading itself (capture files, sniffing, cutting frames) is the library's
(:mod:`streambridge.transcripts`); here its :class:`~streambridge.transcripts.TranscriptError`
becomes a :class:`~streambridge.cli.common.UserError` naming the option to use, stdin is the
one typer gives, a sniffed protocol is noted on stderr, and a file being read draws a bar.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import typer

from .. import codecs, transcripts
from ..codecs import Codec
from ..codecs.codec import Likeness
from ..codecs.framing import Frame, detect_framing
from ..transcripts import Detected, Source
from .common import InputFinding, ProgressBar, UserError, note, resolve_protocol

__all__ = [
    "detect",
    "open_source",
    "reading",
    "refuse_contradiction",
    "refuse_directory",
    "refuse_empty",
    "user_error",
]


def user_error(exc: transcripts.TranscriptError, option: str) -> UserError:
    """The library's error as the CLI says it: the option that settles it named."""
    if isinstance(exc, transcripts.ProtocolNotDetected):
        return UserError(f"{exc}; name it with {option}")
    if isinstance(exc, transcripts.FramingNotSupported):
        return UserError(f"{option}: {exc}")
    return UserError(str(exc))


def refuse_directory(arg: str | Path) -> None:
    """A directory where a transcript file goes is a user error."""
    if str(arg) != "-" and Path(arg).is_dir():
        raise UserError(f"{arg}: is a directory (only convert takes a directory)")


def open_source(arg: str | Path) -> Source:
    """``-`` is stdin; anything else a file (an ``OSError`` names it when it cannot be read)."""
    refuse_directory(arg)
    try:
        return transcripts.open_source(arg, stdin=typer.get_binary_stream("stdin"))
    except transcripts.TranscriptError as exc:  # a broken capture header
        raise UserError(str(exc)) from None


def detect(
    source: Source, protocol: str | None, option: str = "--from", report: bool = True, force: bool = False
) -> Detected:
    """The codec and framing of an input: named by the user (with ``option``), or sniffed from
    its first frames (noted on stderr when ``report``). An empty input is an
    :class:`~.common.InputFinding`; a named protocol the first frames clearly contradict is a
    user error unless ``force``."""
    codec = None if protocol is None else resolve_protocol(protocol, option)
    refuse_empty(source)
    if codec is not None and not force:
        refuse_contradiction(source, codec, option)
    try:
        detected = transcripts.detect(source, codec)
    except transcripts.TranscriptError as exc:
        raise user_error(exc, option) from None
    if report and codec is None:
        note(f"{source.name}: detected {detected.codec.name} ({detected.framing})")
    return detected


def refuse_empty(source: Source) -> None:
    """Nothing to translate is not an empty translation (a stream ending before its terminal
    is what a truncated one looks like): an empty input is said as such."""
    if not source.head and not source.read_more():
        what = "its body has no bytes" if source.body_offset else "has no bytes"
        raise InputFinding(f"empty input: {source.name} {what}")


def refuse_contradiction(source: Source, codec: Codec, option: str) -> None:
    """``option`` names a protocol the bytes clearly are not: the first frames that any protocol
    claims by its names or markers (:class:`~streambridge.codecs.codec.Likeness`), none of them
    claimed by ``codec``. Frames no protocol recognises (bad frames of the right one) never
    contradict it."""
    other = _clearly(source, codec)
    if other is not None:
        raise UserError(
            f"{source.name}: this looks like {other}, not {codec.name} "
            f"(use {option} {other}, or --force to decode it as {codec.name} anyway)"
        )


def _clearly(source: Source, codec: Codec) -> str | None:
    """The protocol the first frames clearly are (a codec's names or markers, not a shape
    another may share) when ``codec`` claims none of them, else None. A capture of a failed
    answer (non-2xx) holds an error body, no stream: it contradicts nothing."""
    if source.capture is not None and not 200 <= source.capture.status < 300:
        return None
    if _claims(codec, _frames_read(source)):
        return None  # decided without asking (and so importing) every other protocol
    while not (source.exhausted or len(source.head) >= transcripts.SNIFF_LIMIT):
        if transcripts.sniff(source.head, source.capture, complete=False) is not None:
            break
        source.read_more()
    frames = _frames_read(source)
    if _claims(codec, frames):
        return None
    for frame in frames:
        other = transcripts.protocol_of_frame(frame)
        if other is not None and codecs.get(other).sniff(frame) >= Likeness.NAMES:
            return None if _wire(other) == _wire(codec.name) else other
    return None


def _frames_read(source: Source) -> list[Frame]:
    """The whole frames among the bytes read so far (none when their framing is unknown)."""
    framing = detect_framing(source.head) or transcripts.framing_hint(source.capture)
    if framing is None:
        return []
    return transcripts.first_frames(source.head, framing, complete=source.exhausted)


def _claims(codec: Codec, frames: list[Frame]) -> bool:
    return any(codec.sniff(frame) > Likeness.NONE for frame in frames)


def _wire(name: str) -> str:
    """A variant (``ai-sdk@5``) writes its codec's wire, which sniffing names (``ai-sdk``)."""
    return name.split("@")[0]


@contextlib.contextmanager
def reading(source: Source, streams_stdout: bool = False) -> Iterator[Iterator[bytes]]:
    """The source's chunks, with a progress bar on stderr while a file is read (see
    :class:`~streambridge.cli.common.ProgressBar` for when it is drawn)."""
    if not (source.is_file and source.size):
        yield source.chunks()  # a pipe or an empty file: nothing to measure against
        return
    with ProgressBar(Path(source.name).name, source.size, streams_stdout=streams_stdout) as bar:
        yield _ticking(source, bar)


def _ticking(source: Source, bar: ProgressBar) -> Iterator[bytes]:
    for chunk in source.chunks():
        yield chunk
        bar.update(source.consumed)
