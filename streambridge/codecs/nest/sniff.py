"""Does a frame look like nest? Its named SSE events and its ``{"kind": …}`` frames are markers
no other protocol writes."""

from __future__ import annotations

from ..codec import Likeness
from ..envelope import json_object
from ..framing import Frame
from .frames import EVENT_NAMES

__all__ = ["sniff"]


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.MARKER` for ``event: meta|done`` or nest's ``error {code?, message}``,
    streambridge's NDJSON form of one, or a ``kind`` string; else :attr:`Likeness.NONE`. (Another
    protocol's ``event: error``, agentfootprint's host's ``{error}``, is only nest's shape.)"""
    if frame.event:
        return _named(frame.event, json_object(frame.data) if frame.event == "error" else None)
    obj = json_object(frame.data)
    if obj is None:
        return Likeness.NONE
    event = obj.get("event")
    if isinstance(event, str) and "data" in obj and "type" not in obj:
        return _named(event, obj["data"])  # streambridge's NDJSON form of a named nest event
    if isinstance(obj.get("kind"), str):
        return Likeness.MARKER
    return Likeness.NONE


def _named(name: str, data: object) -> int:
    if name not in EVENT_NAMES:
        return Likeness.NONE
    if name == "error" and not (isinstance(data, dict) and "message" in data):
        return Likeness.SHAPE
    return Likeness.MARKER
