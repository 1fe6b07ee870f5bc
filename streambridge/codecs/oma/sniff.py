"""Does a frame look like oma? A ``StreamEvent`` is ``{"type": …, "data": …}``: a shape, not a
marker, so a protocol with stronger evidence for the same frame wins."""

from __future__ import annotations

from ..codec import Likeness
from ..envelope import json_object
from ..framing import Frame

__all__ = ["sniff"]


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.SHAPE` for a string ``type`` beside ``data``, else :attr:`Likeness.NONE`."""
    obj = json_object(frame.data)
    if obj is None:
        return Likeness.NONE
    return Likeness.SHAPE if isinstance(obj.get("type"), str) and "data" in obj else Likeness.NONE
