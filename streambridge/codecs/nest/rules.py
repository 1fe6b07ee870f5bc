"""nest's own rules for ``streambridge validate`` (ids in its catalogue, docs/cli.md).

The run opens with ``event: meta`` (SB012), once (SB013), naming the run and thread the capture's
headers name (SB032); ``id:`` sequence numbers rise strictly on data frames only (SB033, SB034);
steps are balanced (SB015) and hold the content (SB016). The catalogue's ``SB`` ids predate
protocol catalogues (a new rule takes a prefix of its own); the start rules (SB012, SB013) are
shared with agentkit and live in the shared catalogue (:mod:`streambridge.validate.rules`).
"""

from __future__ import annotations

from typing import ClassVar

from ...events import (
    Event,
    ReasoningDelta,
    RunStart,
    StepFinish,
    StepStart,
    TextDelta,
    ToolCall,
    ToolDenied,
    ToolError,
    ToolInputDelta,
    ToolInputStart,
    ToolOutput,
)
from ..codec import RuleContext, Rules
from ..envelope import json_object
from ..framing import Frame
from .frames import EVENT_NAMES, named_event
from .http import SURFACE

__all__ = ["NestRules"]

_IN_STEP = (TextDelta, ReasoningDelta, ToolInputStart, ToolInputDelta, ToolCall, ToolOutput, ToolError, ToolDenied)
_RUNS = SURFACE.runs
assert _RUNS is not None  # nest's chats are runs
#: meta's keys and the capture headers that must repeat them (captures keep header names in lower case)
_ID_HEADERS = (("runId", _RUNS.run_id_header.lower()), ("threadId", _RUNS.thread_id_header.lower()))


class NestRules(Rules):
    event_names = EVENT_NAMES
    known_passthrough = frozenset({"cancelled"})
    catalogue: ClassVar[dict[str, tuple[str, str, str]]] = {
        "SB015": (
            "step-unbalanced",
            "error",
            "nest: step-finish without an open step, or step-start inside an open step",
        ),
        "SB016": ("content-outside-step", "warning", "nest: text, reasoning or tool frames outside a step"),
        "SB032": (
            "run-id-mismatch",
            "error",
            "nest: the meta runId/threadId differ from the X-Agent-Run-Id/X-Agent-Thread-Id headers",
        ),
        "SB033": (
            "sequence-order",
            "error",
            "nest: id: sequence numbers that are not strictly increasing positive integers",
        ),
        "SB034": ("sequence-on-control", "error", "nest: an id: line on a meta, done or error frame"),
    }

    def __init__(self, check: RuleContext) -> None:
        super().__init__(check)
        self._last_seq = 0
        self._step_open = False

    def named(self, frame: Frame) -> tuple[str, bytes]:
        return named_event(frame, self.check.framing)

    def frame(self, frame: Frame, name: str, data: bytes) -> None:
        if frame.index == 1 and name != "meta":
            self.check.add("SB012", "the stream does not open with event: meta")
        if name == "meta":
            self._meta(data)
        self._sequence(frame, name)

    def run_start(self, event: RunStart) -> None:
        """Counted on the meta frames themselves (a meta that does not decode still opens the run)."""

    def event(self, event: Event) -> None:
        kind = type(event)  # a carried synthetic step still has its step frame on the wire
        if kind is StepStart:
            if self._step_open:
                self.check.add("SB015", "step-start while a step is open")
            self._step_open = True
        elif kind is StepFinish:
            if not self._step_open:
                self.check.add("SB015", "step-finish without an open step")
            self._step_open = False
        elif isinstance(event, _IN_STEP) and not self._step_open:
            self.check.add("SB016", f"a {event.__struct_config__.tag} frame outside a step")

    def _meta(self, data: bytes) -> None:
        self.check.start()
        meta = json_object(data)
        if meta is None:
            return
        for key, header in _ID_HEADERS:
            value = self.check.header(header)
            if value is not None and meta.get(key) != value:
                self.check.add("SB032", f"meta {key} {meta.get(key)!r} but {header}: {value!r}")

    def _sequence(self, frame: Frame, name: str) -> None:
        if not frame.own_id:
            return
        if name in EVENT_NAMES:
            self.check.add("SB034", f"id: {frame.last_id!r} on an event: {name} frame")
            return
        if not frame.last_id.isdigit() or int(frame.last_id) < 1:
            self.check.add("SB033", f"id: {frame.last_id!r} is not a positive integer")
            return
        seq = int(frame.last_id)
        if seq <= self._last_seq:
            self.check.add("SB033", f"id: {seq} after id: {self._last_seq}")
        self._last_seq = max(seq, self._last_seq)
