"""Does a frame look like AG-UI? Its event types are SCREAMING_SNAKE names (``RUN_STARTED``,
``TEXT_MESSAGE_CONTENT``…) that no other supported protocol writes: a known one is the marker."""

from __future__ import annotations

import re

from ..codec import Likeness
from ..envelope import json_object
from ..framing import Frame
from .wire import EVENT_TYPES

__all__ = ["sniff"]

_SCREAMING = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.MARKER` for an AG-UI event type, :attr:`Likeness.SHAPE` for another
    SCREAMING_SNAKE ``type`` (a newer AG-UI event, say); else :attr:`Likeness.NONE`. AG-UI
    clients ignore SSE event names, so a named frame is judged by its data too."""
    obj = json_object(frame.data)
    kind = obj.get("type") if obj is not None else None
    if not isinstance(kind, str):
        return Likeness.NONE
    if kind in EVENT_TYPES:
        return Likeness.MARKER
    return Likeness.SHAPE if _SCREAMING.fullmatch(kind) else Likeness.NONE
