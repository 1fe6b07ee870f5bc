"""``oma``: open-multi-agent's ``StreamEvent {type, data, errorInfo?}``.

Eight types; exactly one ``done`` or ``error`` ends a stream. The meaning of ``data`` depends on
the layer that produced the events (model adapter, runner, ``Agent``); ``done`` payloads of the
three layers are told apart by shape and re-emitted exactly as received. Errors are written
explicitly as ``{name, message, code?}`` plus ``errorInfo`` — never ``{}``. OMA defines no wire:
NDJSON lines (default) or SSE ``data:`` frames are streambridge's choice (oma.md §6).

The package: ``wire`` (the wire shapes, msgspec Structs, and what both directions share),
``decoder``, ``encoder``, ``http`` (requests, routes and upstream URL rules), ``sniff`` (how a
frame shows oma) and ``rules`` (its own part of ``streambridge validate``).
"""

from __future__ import annotations

from ..codec import ARTIFACTS, COMMON_NATIVE, Codec
from .decoder import OmaDecoder
from .encoder import OmaEncoder
from .http import SURFACE
from .rules import OmaRules
from .sniff import sniff
from .wire import OmaEventW

__all__ = ["CODEC", "SURFACE", "OmaDecoder", "OmaEncoder", "OmaEventW"]

CODEC = Codec(
    "oma",
    "open-multi-agent StreamEvent",
    OmaDecoder,
    OmaEncoder,
    "ndjson",
    COMMON_NATIVE | ARTIFACTS,
    SURFACE,
    sniff=sniff,
    rules=OmaRules,
)
