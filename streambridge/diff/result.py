"""Comparing two transcript files: :func:`diff_files` and what it found, a :class:`DiffResult`.

Pass one decodes both files chunk by chunk and compares their items in lockstep as they come
(:class:`~.align.Comparison`); it stops at ``limit`` differences. Pass two, only when there are
differences whose events are known only by their piece's frames, decodes just those pieces of
a file again frame by frame, to name each event's frame. Drawing progress is the caller's: a
:data:`Progress` hook is told about the reading (the CLI draws a bar with it).
"""

from __future__ import annotations

import contextlib
import gc
import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from ..codecs import Codec
from ..transcripts import Detected, Source, TranscriptError, detect, open_source
from .align import Comparison, Hunk, Mark
from .normalise import Normaliser, vocabulary_for
from .reading import FrameSpans, Reading

__all__ = ["DEFAULT_MAX", "DiffInputError", "DiffResult", "Progress", "diff_files", "no_progress"]

#: differences reported before a diff stops, unless asked for another number
DEFAULT_MAX = 10
#: bytes read in the first pass above which its decoders are collected before the second
_COLLECT_AFTER = 1 << 20

#: what is told about reading: given the sources being read and what is being done ("comparing",
#: "locating frames"), a context whose value is called after each chunk read (``Source.consumed``
#: says how far each is)
Progress = Callable[[Sequence[Source], str], AbstractContextManager[Callable[[], None]]]


def _nothing() -> None:
    pass


@contextlib.contextmanager
def no_progress(sources: Sequence[Source], description: str) -> Iterator[Callable[[], None]]:
    """The default :data:`Progress`: nothing is drawn."""
    yield _nothing


class DiffInputError(TranscriptError):
    """One side cannot be read as a transcript: ``side`` is 0 for A, 1 for B, ``cause`` the
    :class:`~streambridge.transcripts.TranscriptError` (its message is this one's)."""

    def __init__(self, side: int, cause: TranscriptError) -> None:
        super().__init__(str(cause))
        self.side = side
        self.cause = cause


@dataclass
class DiffResult:
    """What a diff found: the sides, the hunks, whether it stopped early, and its work (item
    comparisons, bytes read of each input in the first pass, the sides read a second time)."""

    names: tuple[str, str]
    codecs: tuple[str, str]
    vocabulary: frozenset[str] | None
    events: tuple[int, int]
    hunks: list[Hunk]
    stopped: bool
    comparisons: int
    read: tuple[int, int]
    frames_located: list[int] = field(default_factory=list)

    @property
    def same(self) -> bool:
        """The two transcripts say the same thing (no difference found)."""
        return not self.hunks

    def lines(self, more: str = "a higher limit shows more") -> list[str]:
        """The result as text: the sides, what was compared, each hunk, and the count (``more``
        says how to see the rest when the diff stopped early)."""
        events = [f"stopped at event {n:,}" if self.stopped else f"{n} events" for n in self.events]
        lines = [
            f"{side}: {name} ({codec}, {count})"
            for side, name, codec, count in zip("AB", self.names, self.codecs, events, strict=True)
        ]
        if self.vocabulary is not None:
            shown = ", ".join(sorted(self.vocabulary - {"data", "malformed"}))
            lines.append(f"compared: what both say natively ({shown}) and passthroughs")
        for hunk in self.hunks:
            lines += hunk.lines()
        if self.stopped:
            lines.append(f"... more difference(s) follow: stopped after {len(self.hunks)} ({more})")
            lines.append(f"stopped after {len(self.hunks)} difference(s)")
        else:
            lines.append(f"{len(self.hunks)} difference(s)" if self.hunks else "no differences")
        return lines


def _open_side(
    arg: str, protocol: str | Codec | None, side: int, stack: contextlib.ExitStack
) -> tuple[Source, Detected]:
    try:
        source = stack.enter_context(open_source(arg))
        return source, detect(source, protocol)
    except TranscriptError as exc:
        raise DiffInputError(side, exc) from exc


def diff_files(
    a: str | os.PathLike[str],
    b: str | os.PathLike[str],
    protocol_a: str | Codec | None = None,
    protocol_b: str | Codec | None = None,
    *,
    exact_ids: bool = False,
    limit: int = DEFAULT_MAX,
    progress: Progress = no_progress,
) -> DiffResult:
    """Compare two transcripts (files; one of them may be ``-``, stdin) by meaning, streaming,
    up to the first ``limit`` differences. A protocol left out is sniffed from the file's first
    frames; a side that cannot be read is a :class:`DiffInputError` (an ``OSError`` when the
    file cannot be opened, the registry's ``UnknownProtocol`` for an unknown protocol name)."""
    if str(a) == "-" and str(b) == "-":
        raise ValueError("only one of A and B can be stdin (-)")
    with contextlib.ExitStack() as stack:
        source_a, detected_a = _open_side(str(a), protocol_a, 0, stack)
        source_b, detected_b = _open_side(str(b), protocol_b, 1, stack)
        vocabulary = vocabulary_for(detected_a.codec, detected_b.codec)
        sides = [
            Reading(s, d, Normaliser(vocabulary, exact_ids))
            for s, d in ((source_a, detected_a), (source_b, detected_b))
        ]
        result = _first_pass(sides, limit, progress)
    locate_frames(result, sides, vocabulary, exact_ids, progress)
    return result


def _first_pass(sides: list[Reading], limit: int, progress: Progress) -> DiffResult:
    """Both sides decoded and compared as they are read; the decoders go when it returns."""
    sources = [side.source for side in sides]
    with progress(sources, "comparing") as tick:
        batches = [side.batches(tick) for side in sides]
        comparison = Comparison(batches[0], batches[1], limit).run()
    return DiffResult(
        (sources[0].name, sources[1].name),
        (sides[0].detected.codec.name, sides[1].detected.codec.name),
        sides[0].normaliser.vocabulary,
        (comparison.a.taken, comparison.b.taken),
        comparison.hunks,
        comparison.stopped,
        comparison.comparisons,
        (sources[0].consumed, sources[1].consumed),
    )


def locate_frames(
    result: DiffResult,
    sides: list[Reading],
    vocabulary: frozenset[str] | None,
    exact_ids: bool,
    progress: Progress = no_progress,
) -> None:
    """Pass two: each file with reported events known only by their piece's frames is decoded
    again, frame by frame in those pieces only, up to the last of them."""
    for side, reading in enumerate(sides):
        marks: dict[int, list[Mark]] = {}
        for hunk in result.hunks:
            for mark_side, mark in hunk.marks():
                if mark_side == side and mark.lo is not None:
                    marks.setdefault(mark.index, []).append(mark)
        if marks:
            if reading.source.consumed > _COLLECT_AFTER:
                gc.collect()  # the first pass's decoders are cyclic garbage holding their texts
            _locate(reading, marks, vocabulary, exact_ids, progress)
            result.frames_located.append(side)


def _locate(
    reading: Reading,
    marks: dict[int, list[Mark]],
    vocabulary: frozenset[str] | None,
    exact_ids: bool,
    progress: Progress,
) -> None:
    last = max(marks)
    wanted = FrameSpans(
        (mark.lo, mark.frame)
        for group in marks.values()
        for mark in group
        if mark.lo is not None and mark.frame is not None
    )
    with open_source(reading.source.name) as source:
        again = Reading(source, reading.detected, Normaliser(vocabulary, exact_ids), reading.aligned)
        with progress([source], "locating frames") as tick:
            for batch in again.batches(tick, wanted):
                for item in batch:
                    for mark in marks.get(item.index, ()):
                        mark.frame, mark.lo = item.frame, item.lo
                if again.normaliser.count > last:
                    return
