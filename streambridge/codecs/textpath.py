"""The delta fast path's text buffer: a long answer costs about its own size, each piece copied once."""

from __future__ import annotations

__all__ = ["TextPieces"]


class TextPieces:
    """Keeps a growing list of text deltas small: every few thousand pieces are joined into one
    string, so a long answer costs about its own size in memory rather than an object per
    delta, and each piece is copied once (the terminal needs the whole text at the end)."""

    STEP = 4096

    def __init__(self, pieces: list[str]) -> None:
        self.pieces = pieces
        self._joined = 0  # pieces before this index are already joined chunks
        self._joined_chars = 0
        self._counted = 0  # pieces before this index are counted in _counted_chars
        self._counted_chars = 0

    def compact(self) -> None:
        pieces, start = self.pieces, self._joined
        if len(pieces) - start >= self.STEP:
            chunk = "".join(pieces[start:])
            pieces[start:] = [chunk]
            self._joined = self._counted = len(pieces)
            self._joined_chars += len(chunk)
            self._counted_chars = self._joined_chars

    def chars(self) -> int:
        """How many characters the text has so far (each piece is counted once)."""
        pieces = self.pieces
        if self._counted < len(pieces):
            self._counted_chars += sum(map(len, pieces[self._counted :]))
            self._counted = len(pieces)
        return self._counted_chars

    def text(self) -> str:
        """The whole text, kept as the only piece: asking again (a terminal's text, then the
        check that it says what was streamed) costs no copy."""
        pieces = self.pieces
        if not pieces:
            return ""
        if len(pieces) > 1:
            whole = "".join(pieces)
            pieces[:] = [whole]
            self._joined = self._counted = 1
            self._joined_chars = self._counted_chars = len(whole)
        return pieces[0]
