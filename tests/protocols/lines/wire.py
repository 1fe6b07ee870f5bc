"""The wire shapes of ``lines``: one msgspec Struct per frame kind, tagged by ``type``, members in
the order the protocol writes them (that order is what makes decode → encode give the same bytes)."""

from __future__ import annotations

from msgspec import Struct

from streambridge.events import RunStatus

__all__ = ["EndW", "LineW", "LinesFrame"]

_WIRE = {"tag_field": "type", "forbid_unknown_fields": True, "gc": False}


class LineW(Struct, tag="line", **_WIRE):
    """``{"type":"line","text":…}``: a text delta."""

    text: str


class EndW(Struct, tag="end", **_WIRE):
    """``{"type":"end","status":…}``: the terminal."""

    status: RunStatus


#: every frame kind the decoder reads (each has its reader: checked when the decoder class is made)
LinesFrame = LineW | EndW
