"""Does a frame look like the hosting dialect? Its event names with their members (``chunk`` with
a ``text``, ``complete`` with an ``output``, ``awaiting``, ``artifact``) are names it defines.

``event: error`` is nest's too: only the host's shape (an ``error`` string, no ``message``) is a
marker, and nest's sniffer claims only its own shape (``message``). In NDJSON a
``{"event":…,"data":…}`` line of the dialect's names is a marker (nest names only ``meta``,
``done`` and ``error``). A carrier in
this codec's shape (``{"name":"data-…``) is a marker no other codec writes."""

from __future__ import annotations

from ...codec import Likeness
from ...envelope import json_object
from ...framing import Frame
from .wire import CARRIER_EVENT, read_line

__all__ = ["sniff"]

#: each name and the member its data has (an ``error`` is handled apart)
_MEMBERS = {"chunk": "text", "complete": "output", "awaiting": "awaiting", "artifact": "artifact"}
_STRING_MEMBERS = frozenset({"text", "output"})


def sniff(frame: Frame) -> int:
    """:attr:`Likeness.NAMES` for the dialect's names (:attr:`Likeness.MARKER` for a host-shaped
    ``error``, a carrier of this codec, or any of them in NDJSON), else :attr:`Likeness.NONE`."""
    name, data = frame.event, frame.data
    ndjson = False
    if not name:
        name, data = read_line(data)
        ndjson = bool(name)
    if name == CARRIER_EVENT:
        return Likeness.MARKER if data.startswith(b'{"name":"data-') else Likeness.NONE
    if name != "error" and name not in _MEMBERS:
        return Likeness.NONE
    try:
        obj = json_object(data)
    except RecursionError:  # nested deeper than msgspec reads: no frame of this dialect
        return Likeness.NONE
    if obj is None:
        return Likeness.NONE
    if name == "error":
        error, code = obj.get("error"), obj.get("code", "")
        host = isinstance(error, str) and isinstance(code, str) and "message" not in obj
        return Likeness.MARKER if host else Likeness.NONE
    member = _MEMBERS[name]
    if member not in obj or (member in _STRING_MEMBERS and not isinstance(obj[member], str)):
        return Likeness.NONE
    return Likeness.MARKER if ndjson else Likeness.NAMES
