"""What the CLI writes stays within the frame size limit every reader enforces.

A translated answer can need one frame larger than the limit (agentkit's ``turn_end`` and oma's
``done`` repeat the whole answer). Written, such a frame is what readers, streambridge's own
``validate`` (SB003) and a translation back reject or cut short; so it is refused before it is
written, with a message naming the frame, its size and the limit
(:data:`~streambridge.codecs.framing.DEFAULT_MAX_EVENT_SIZE`, the one limit the parsers use).
"""

from __future__ import annotations

import re

from ..codecs.framing import DEFAULT_MAX_EVENT_SIZE, Framing, make_parser, size_limit
from .common import InputFinding

__all__ = ["FrameGuard", "FrameTooLarge"]

_MIB = 1024 * 1024
_EVENT = re.compile(rb"^event: ?([^\r\n]+)", re.MULTILINE)
_TYPE = re.compile(rb'"(?:type|kind|event)"\s*:\s*"([^"\\]{1,80})"')
_SEPARATOR = {"sse": b"\n\n", "ndjson": b"\n"}


class FrameTooLarge(InputFinding):
    """A frame the target protocol would need that no reader accepts: exit 1, nothing of it written."""


class FrameGuard:
    """Checks each piece of output before it is written (an encoder's output holds whole frames)."""

    def __init__(self, name: str, protocol: str, framing: Framing, limit: int = DEFAULT_MAX_EVENT_SIZE) -> None:
        self.name = name  # the input's, for the message
        self.protocol = protocol
        self.framing = framing
        self.limit = limit

    def check(self, data: bytes) -> None:
        """Raise :class:`FrameTooLarge` when ``data`` holds a frame a reader would reject; a piece
        no longer than the limit cannot hold one, so only a longer one is parsed."""
        if len(data) <= self.limit:
            return
        parser = make_parser(self.framing, self.limit)
        parser.feed(data)
        parser.close()
        if any(problem.kind == "oversize" for problem in parser.problems):
            frame = max(data.split(_SEPARATOR[self.framing]), key=len)
            raise FrameTooLarge(self._message(frame))

    def _message(self, frame: bytes) -> str:
        return (
            f"{self.name}: {self.protocol} cannot carry this stream: its {_name(frame)} frame would be "
            f"{len(frame) / _MIB:.1f} MiB ({len(frame)} bytes), over the {size_limit(self.limit)} frame limit "
            "that readers and streambridge validate (SB003) enforce; it was not written "
            "(convert to a protocol that streams the answer in parts, e.g. ai-sdk or ag-ui)"
        )


def _name(frame: bytes) -> str:
    """The frame's type as its protocol names it (SSE ``event:``, else the JSON ``type``)."""
    head = frame[:4096]
    found = _EVENT.search(head) or _TYPE.search(head)
    return found.group(1).decode("utf-8", "replace").strip() if found else "one"
