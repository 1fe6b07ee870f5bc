"""Does a frame look like nest? Its named SSE events and its ``{"kind": …}`` frames are markers
no other protocol writes."""

from __future__ import annotations

from ..codec import Likeness
from ..envelope import json_object
from ..framing import Frame
from .frames import EVENT_NAMES

__all__ = ["sniff"]


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.MARKER` for ``event: meta|done|error``, streambridge's NDJSON form of one,
    or a ``kind`` string; else :attr:`Likeness.NONE`."""
    if frame.event in EVENT_NAMES:
        return Likeness.MARKER  # only nest names its SSE events
    obj = json_object(frame.data)
    if obj is None:
        return Likeness.NONE
    if isinstance(obj.get("event"), str) and "data" in obj and "type" not in obj:
        return Likeness.MARKER  # streambridge's NDJSON form of a named nest event
    if isinstance(obj.get("kind"), str):
        return Likeness.MARKER
    return Likeness.NONE
