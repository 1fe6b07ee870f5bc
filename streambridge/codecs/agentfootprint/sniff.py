"""Does a frame look like agentfootprint? Its ``agentfootprint.`` event names and envelope types
are a marker no other protocol writes."""

from __future__ import annotations

from ..codec import Likeness
from ..framing import Frame

__all__ = ["sniff"]

_TYPE_HEAD = b'{"type":"agentfootprint.'


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.MARKER` for an ``agentfootprint.`` event name or envelope type."""
    if frame.event.startswith("agentfootprint.") or frame.data.startswith(_TYPE_HEAD):
        return Likeness.MARKER
    return Likeness.NONE
