"""Does a frame look like oma? A ``StreamEvent`` is ``{"type": …, "data": …}``: a shape, not a
marker, so a protocol with stronger evidence for the same frame wins."""

from __future__ import annotations

import msgspec

from ..codec import Likeness
from ..framing import Frame

__all__ = ["sniff"]

_object_decoder = msgspec.json.Decoder(dict)


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.SHAPE` for a string ``type`` beside ``data``, else :attr:`Likeness.NONE`."""
    try:
        obj = _object_decoder.decode(frame.data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return Likeness.NONE
    return Likeness.SHAPE if isinstance(obj.get("type"), str) and "data" in obj else Likeness.NONE
