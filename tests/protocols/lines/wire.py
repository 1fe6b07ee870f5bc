"""The wire shape of ``lines``: one object with one of two members."""

from __future__ import annotations

from msgspec import UNSET, Struct, UnsetType

from streambridge.events import RunStatus

__all__ = ["LineFrame"]


class LineFrame(Struct, forbid_unknown_fields=True):
    line: str | UnsetType = UNSET  # a text delta
    end: RunStatus | UnsetType = UNSET  # the terminal
