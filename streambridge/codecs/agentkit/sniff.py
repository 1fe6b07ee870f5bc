"""Does a frame look like agentkit? ``{"type": …}`` with a ``messageId`` (every AgentEvent has
one) or one of agentkit's own type names."""

from __future__ import annotations

from ..codec import Likeness
from ..envelope import json_object
from ..framing import Frame

__all__ = ["sniff"]

#: the AgentEvent types that tell agentkit (``tool_result``, a known passthrough, does not)
_TYPES = frozenset(
    {
        "turn_start",
        "text_delta",
        "thinking_delta",
        "tool_call",
        "sources",
        "citation",
        "suggestions",
        "status",
        "turn_end",
    }
)


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.NAMES` for a typed frame with agentkit's names, else :attr:`Likeness.NONE`
    (a ``type`` and ``data`` alone is another protocol's shape)."""
    obj = json_object(frame.data)
    if obj is None:
        return Likeness.NONE
    kind = obj.get("type")
    if isinstance(kind, str) and ("messageId" in obj or kind in _TYPES):
        return Likeness.NAMES
    return Likeness.NONE
