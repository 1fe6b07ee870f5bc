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

from .. import transcripts
from ..transcripts import Detected, Source
from .common import ProgressBar, UserError, note, resolve_protocol

__all__ = ["detect", "open_source", "reading", "refuse_directory", "user_error"]


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


def detect(source: Source, protocol: str | None, option: str = "--from", report: bool = True) -> Detected:
    """The codec and framing of an input: named by the user (with ``option``), or sniffed from
    its first frames (noted on stderr when ``report``)."""
    codec = None if protocol is None else resolve_protocol(protocol, option)
    try:
        detected = transcripts.detect(source, codec)
    except transcripts.TranscriptError as exc:
        raise user_error(exc, option) from None
    if report and codec is None:
        note(f"{source.name}: detected {detected.codec.name} ({detected.framing})")
    return detected


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
