"""Implied step brackets: which step brackets an encoder writes by itself, for the protocols whose
clients need steps around content (nest, and the AI SDK, whose readers judge steps the same).

A nest encoder opens a step before content when none is open, and closes and reopens one when
text follows a tool call in the same step (the published client needs both); it never closes a
step before the terminal. A bare bracket (no usage, no id) in such a place says nothing the
event sequence does not already say, so the decoder reads it as *synthetic*: targets without
steps drop it, and nest writes it again in the same place. A real bracket that stands where an
implied one would is written with a carrier, so that it comes back real.

Whether a bracket is implied depends on the event after it, so a bracket that may be implied
waits for the next event. Decoders and encoders use this one judge (:class:`BracketReader`,
:class:`BracketWriter`): an encoder to know what a decoder will read from the frames it writes.
"""

from __future__ import annotations

from typing import Generic, TypeVar, Unpack

from ..events import (
    Event,
    ReasoningDelta,
    ReasoningStart,
    StepFinish,
    StepStart,
    TextDelta,
    TextStart,
    ToolCall,
    ToolInputStart,
)
from .decoder import Decoder, DecoderOptions
from .framing import Framing
from .sinks import EventSink

__all__ = ["OPENS_STEP", "STEP_STATE", "BracketReader", "BracketWriter", "StepJudge", "bare"]

#: events before which a nest encoder opens a step when none is open
OPENS_STEP = frozenset((TextDelta, ReasoningDelta, ToolInputStart, ToolCall, StepFinish))
#: events that change the step state
STEP_STATE = frozenset((StepStart, StepFinish, ToolInputStart, ToolCall, TextDelta, ReasoningDelta))
_TEXT = frozenset((TextDelta, ReasoningDelta))
#: where a part's start is a frame of its own (the AI SDK), content begins there: the step it
#: needs opens before it, so text that follows a tool call starts a new step with its part
_PART_STARTS = frozenset((TextStart, ReasoningStart))
_BARE_START = StepStart()
_BARE_FINISH = StepFinish()


def bare(event: Event) -> bool:
    """A step bracket with nothing but its kind (no usage, no id, no unknown field)."""
    return event in (_BARE_START, _BARE_FINISH)


Item = TypeVar("Item")


class StepJudge(Generic[Item]):
    """Follows the step state a nest stream's reader sees, and holds bare brackets (``Item``:
    whatever the caller needs back) until the event after them decides whether they are implied.
    ``part_starts``: a part's start counts as its content (a protocol whose parts open with a
    frame of their own)."""

    __slots__ = ("opens_step", "pending", "state", "step_open", "text", "tool_in_step")

    def __init__(self, *, part_starts: bool = False) -> None:
        self.step_open = False
        self.tool_in_step = False
        self.pending: list[tuple[type, Item]] = []
        starts = _PART_STARTS if part_starts else frozenset()
        self.text = _TEXT | starts
        self.opens_step = OPENS_STEP | starts
        self.state = STEP_STATE | starts

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
            both = following in self.text
            implied = [both, both or following in self.opens_step]
        elif pending[0][0] is StepStart:
            implied = [following in self.opens_step]
        else:
            implied = [False]  # a step-finish alone is never written by the encoder itself
        for bracket, _ in pending:
            self.follow(bracket)
        return [(bracket, item, flag) for (bracket, item), flag in zip(pending, implied, strict=True)]

    def follow(self, t: type) -> None:
        """The state after an event of type ``t`` (types outside STEP_STATE change nothing)."""
        if t is StepFinish:
            self.step_open = self.tool_in_step = False
        elif t in self.state:
            self.step_open = True
            self.tool_in_step = t is ToolInputStart or t is ToolCall


class BracketReader(Decoder):
    """A decoder's side of the judge: a bare bracket where an encoder would put one by itself
    waits for the event after it, which decides whether it is read as synthetic. A carried
    bracket is what its carrier says."""

    #: whether a part's start is where its content begins (see :class:`StepJudge`)
    part_starts: bool = False

    def __init__(self, framing: Framing | None = None, **options: Unpack[DecoderOptions]) -> None:
        super().__init__(framing, **options)
        self._steps: StepJudge[Event] = StepJudge(part_starts=self.part_starts)

    def _push(self, event: Event, out: EventSink) -> None:
        self._deliver(event, out, carried=self._from_carrier)

    def _judged(self, event: Event) -> type:
        """The type the judge takes a part start for (a protocol whose part starts count as
        content makes those that open no part frame of this message neutral); asked for part
        starts only, so the per-event path stays one ``type()``."""
        return type(event)

    def _accept(self, event: Event) -> None:
        """An event of the hot path (never a terminal or primary text)."""
        t = type(event)
        if t in _PART_STARTS:
            t = self._judged(event)
        steps = self._steps
        if steps.pending or t is StepStart or t is StepFinish:
            self._deliver(event, self._out, carried=False)
            return
        if t in steps.state:
            steps.follow(t)
        super()._accept(event)

    def _before_deltas(self, reasoning: bool) -> None:
        t = ReasoningDelta if reasoning else TextDelta
        if self._steps.pending:
            self._settle(t, self._out)
        self._steps.follow(t)

    def _deliver(self, event: Event, out: EventSink, *, carried: bool) -> None:
        ahead = self._ahead_of_held
        if ahead and event is ahead[0]:  # a rider that passed the held brackets: it came first
            del ahead[0]
            super()._push(event, out)
            return
        t = type(event)
        if t in _PART_STARTS:
            t = self._judged(event)
        steps = self._steps
        if (t is StepStart or t is StepFinish) and not carried and bare(event) and steps.holds(t):
            steps.hold(t, event)
            return
        if steps.pending:
            self._settle(t, out)
        steps.follow(t)
        super()._push(event, out)

    def _passes_held_start(self, events: list[Event]) -> bool:
        """A bare bracket this reader holds back: the riders that passed it may amend the run start."""
        if len(events) != 1 or self._from_carrier:
            return False
        t = type(events[0])
        return (t is StepStart or t is StepFinish) and bare(events[0]) and self._steps.holds(t)

    def _release(self, out: EventSink) -> None:
        """A held run start came before the brackets held back with it."""
        held = self._held
        if held is not None and self._steps.pending:
            self._held = None
            super()._push(held, out)
            return
        super()._release(out)

    def _settle(self, following: type | None, out: EventSink) -> None:
        """The waiting brackets, decided by the type of the event after them (None: the end)."""
        for _, bracket, implied in self._steps.settle(following):
            bracket.synthetic = implied
            super()._push(bracket, out)

    def _settle_at_end(self, out: EventSink) -> None:
        if self._steps.pending:
            self._settle(None, out)


class BracketWriter:
    """An encoder's side of the judge (nest's, and ai-sdk's, whose readers judge steps the same):
    its own and the source's bare brackets are held while a reader may take them for implied,
    and written once the next event decides. The encoder gives ``_steps`` and ``_write_bracket``.

    Riders waiting for a frame with a slot (an encoder that ``rides_forward``) pass the encoder's
    own held brackets: those frames say nothing a reader does not hold back until the event
    after them, so the riders go on that event's frame, marked as ahead of the brackets, instead
    of taking carrier frames of their own before them."""

    _steps: StepJudge[Event | None]
    _riders: list[Event]
    _passed: bytes
    _ahead: int
    _riders_at_hold = 0

    def _write_bracket(self, t: type, e: Event | None, parts: list[bytes], *, implied: bool) -> None:
        raise NotImplementedError

    def _bracket(self, t: type, e: Event | None, parts: list[bytes]) -> None:
        """A step bracket, the encoder's own (``e`` None) or the source's: held while a reader
        may take it for implied (the next event decides), else written."""
        steps = self._steps
        if (e is None or bare(e)) and steps.holds(t):
            if not steps.pending:
                self._riders_at_hold = len(self._riders)
            steps.hold(t, e)
            return
        self._reader(t, parts)
        self._write_bracket(t, e, parts, implied=False)

    def _reader(self, t: type, parts: list[bytes]) -> None:
        """An event of type ``t`` is written next: the held brackets are decided by it."""
        steps = self._steps
        if steps.pending:
            if self._riders_pass(t):
                riders, self._riders = self._riders, []
                frames: list[bytes] = []
                self._write_settled(t, frames)
                self._riders = riders
                self._passed, self._ahead = b"".join(frames), len(riders)
            else:
                self._write_settled(t, parts)
        if t in steps.state:
            steps.follow(t)

    def _write_settled(self, t: type, parts: list[bytes]) -> None:
        for bracket, e, implied in self._steps.settle(t):
            self._write_bracket(bracket, e, parts, implied=implied)

    def _riders_pass(self, following: type) -> bool:
        """Whether the waiting riders may pass the held brackets: all of them came before the
        brackets were held, none changes the step state, the brackets are this encoder's own
        (written bare) and no earlier pass waits, and the event deciding them is no bracket."""
        steps = self._steps
        if not self._riders or self._passed or len(self._riders) != self._riders_at_hold:
            return False
        if following is StepStart or following is StepFinish:
            return False
        return all(e is None for _, e in steps.pending) and not any(type(r) in steps.state for r in self._riders)
