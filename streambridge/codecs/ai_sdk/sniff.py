"""Does a frame look like the AI SDK UI message stream? Its chunk types (``text-delta`` with an
``id``, ``start-step``, ``tool-input-available``…) are names it defines; the
``x-vercel-ai-ui-message-stream`` response header, when a capture has headers, is its marker
(read by ``rules``)."""

from __future__ import annotations

from ..codec import Likeness
from ..envelope import json_object
from ..framing import Frame
from .profiles import CHUNK_TYPES

__all__ = ["HEADER", "sniff"]

HEADER = "x-vercel-ai-ui-message-stream"
#: types no other supported protocol writes with a ``type`` member
_OWN = frozenset(CHUNK_TYPES) - {"error", "text-delta"}


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.NAMES` for a chunk of one of its types (``text-delta`` with an ``id``),
    :attr:`Likeness.MARKER` when the frame names its message (``start`` with ``messageId``: the
    names outweigh agentkit's reading of any typed frame with a ``messageId`` as its own),
    :attr:`Likeness.SHAPE` for ``[DONE]``; else :attr:`Likeness.NONE`."""
    if frame.event:
        return Likeness.NONE  # the SDK writes no event names
    if frame.data.strip() == b"[DONE]":
        return Likeness.SHAPE
    obj = json_object(frame.data)
    if obj is None:
        return Likeness.NONE
    kind = obj.get("type")
    if not isinstance(kind, str):
        return Likeness.NONE
    if kind in _OWN or (kind == "text-delta" and isinstance(obj.get("id"), str) and "delta" in obj):
        return Likeness.MARKER if "messageId" in obj else Likeness.NAMES
    return Likeness.NONE
