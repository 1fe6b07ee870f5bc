"""Which nest step brackets are *implied*: written by a nest encoder by itself.

A nest encoder opens a step before content when none is open, and closes and reopens one when
text follows a tool call in the same step (the published client needs both); it never closes a
step before the terminal. A bare bracket (no usage, no id) in such a place says nothing the
event sequence does not already say, so the decoder reads it as *synthetic*: targets without
steps drop it, and nest writes it again in the same place. A real bracket that stands where an
implied one would is written with a carrier, so that it comes back real.

Whether a bracket is implied depends on the event after it, so a bracket that may be implied
waits for the next event. The decoder and the encoder use this one judge: the encoder to know
what the decoder will read from the frames it writes.
"""

from __future__ import annotations

from typing import Generic, TypeVar

from ...events import Event, ReasoningDelta, StepFinish, StepStart, TextDelta, ToolCall, ToolInputStart
from .wire import bare

__all__ = ["OPENS_STEP", "STEP_STATE", "BracketWriter", "StepJudge"]

#: events before which a nest encoder opens a step when none is open
OPENS_STEP = frozenset((TextDelta, ReasoningDelta, ToolInputStart, ToolCall, StepFinish))
#: events that change the step state
STEP_STATE = frozenset((StepStart, StepFinish, ToolInputStart, ToolCall, TextDelta, ReasoningDelta))
_TEXT = (TextDelta, ReasoningDelta)

Item = TypeVar("Item")


class StepJudge(Generic[Item]):
    """Follows the step state a nest stream's reader sees, and holds bare brackets (``Item``:
    whatever the caller needs back) until the event after them decides whether they are implied."""

    __slots__ = ("pending", "step_open", "tool_in_step")

    def __init__(self) -> None:
        self.step_open = False
        self.tool_in_step = False
        self.pending: list[tuple[type, Item]] = []

    def holds(self, bracket: type) -> bool:
        """Whether a bare bracket of this type may be implied (the caller then calls :meth:`hold`):
        a step-start where no step is open (also right after a step-finish that waits), a
        step-finish after a tool call in the step."""
        pending = self.pending
        if bracket is StepStart:
            if not pending:
                return not self.step_open
            return len(pending) == 1 and pending[0][0] is StepFinish
        return not pending and self.step_open and self.tool_in_step

    def hold(self, bracket: type, item: Item) -> None:
        self.pending.append((bracket, item))

    def settle(self, following: type | None) -> list[tuple[type, Item, bool]]:
        """The waiting brackets (type, item), each with whether it is implied, given the type of
        the event after them (None at the end of the stream); the state follows them."""
        pending, self.pending = self.pending, []
        if len(pending) == 2:  # step-finish then step-start: implied together before text
            both = following in _TEXT
            implied = [both, both or following in OPENS_STEP]
        elif pending[0][0] is StepStart:
            implied = [following in OPENS_STEP]
        else:
            implied = [False]  # a step-finish alone is never written by the encoder itself
        for bracket, _ in pending:
            self.follow(bracket)
        return [(bracket, item, flag) for (bracket, item), flag in zip(pending, implied, strict=True)]

    def follow(self, t: type) -> None:
        """The state after an event of type ``t`` (types outside STEP_STATE change nothing)."""
        if t is StepFinish:
            self.step_open = self.tool_in_step = False
        elif t in STEP_STATE:
            self.step_open = True
            self.tool_in_step = t is ToolInputStart or t is ToolCall


class BracketWriter:
    """An encoder's side of the judge (nest's, and ai-sdk's, whose readers judge steps the same):
    its own and the source's bare brackets are held while a reader may take them for implied,
    and written once the next event decides. The encoder gives ``_steps`` and ``_write_bracket``."""

    _steps: StepJudge[Event | None]

    def _write_bracket(self, t: type, e: Event | None, parts: list[bytes], *, implied: bool) -> None:
        raise NotImplementedError

    def _bracket(self, t: type, e: Event | None, parts: list[bytes]) -> None:
        """A step bracket, the encoder's own (``e`` None) or the source's: held while a reader
        may take it for implied (the next event decides), else written."""
        steps = self._steps
        if (e is None or bare(e)) and steps.holds(t):
            steps.hold(t, e)
            return
        self._reader(t, parts)
        self._write_bracket(t, e, parts, implied=False)

    def _reader(self, t: type, parts: list[bytes]) -> None:
        """An event of type ``t`` is written next: the held brackets are decided by it."""
        steps = self._steps
        if steps.pending:
            for bracket, e, implied in steps.settle(t):
                self._write_bracket(bracket, e, parts, implied=implied)
        if t in STEP_STATE:
            steps.follow(t)
