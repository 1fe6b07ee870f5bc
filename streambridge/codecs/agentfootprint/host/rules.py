"""The hosting dialect's own part of ``streambridge validate``: its event names, and a finding for
a known frame whose data has another shape (the decoder keeps such a frame whole)."""

from __future__ import annotations

from typing import ClassVar

from ....events import DataPart, Event
from ...codec import Rules
from ...framing import Frame
from .wire import CARRIER_EVENT, EVENT_NAMES, KNOWN, NAME, read_line

__all__ = ["HostRules"]

_SHAPES = {
    "chunk": "{text}",
    "complete": "{output} (without awaiting)",
    "error": "{error, code?}",
    "awaiting": "{awaiting} (without output)",
}


class HostRules(Rules):
    event_names = (*EVENT_NAMES, CARRIER_EVENT)
    #: sessions (and an artifact of another shape) are kept whole by design; a known frame kept
    #: whole is AFH001 instead
    known_passthrough = frozenset({"artifact", "sessions", *KNOWN})
    #: an awaiting frame is a terminal that keeps its ask; an artifact frame's presentation keeps
    #: its whole ArtifactMeta (``ref``, ``digest``, ``createdAt`` …)
    kept_members = frozenset({"awaiting", "artifact"})
    catalogue: ClassVar[dict[str, tuple[str, str, str]]] = {
        "AFH001": (
            "frame-shape",
            "error",
            "agentfootprint:host: a chunk, complete, error or awaiting frame whose data has another shape",
        ),
    }

    def named(self, frame: Frame) -> tuple[str, bytes]:
        if self.check.framing == "ndjson":
            return read_line(frame.data)
        return frame.event, frame.data

    def event(self, event: Event) -> None:
        if type(event) is DataPart and event.origin == NAME and event.name in KNOWN:
            shape = _SHAPES[event.name]
            self.check.add("AFH001", f"a {event.name!r} frame whose data is not {shape}: kept whole")
