"""``agentfootprint:host``: the hosting SSE dialect of footprintjs/agentfootprint (9.62.0).

``POST <mount>/invoke {input, sessionId?, decision?}`` answered as SSE built with ``encodeSSE``
(``src/hosting/httpHost.ts``, agentfootprint 9.62.0; docs/mapping.md): ``chunk {text}`` token
deltas, then one of ``complete {output}``, ``error {error, code?}`` or ``awaiting {awaiting}``;
``artifact`` and ``sessions`` frames beside them; ``:`` comments are heartbeats. A variant of the
``agentfootprint`` codec (the ``toSSE`` envelope stream), with the same HTTP surface.

The mapping: ``chunk`` ↔ a primary text delta; ``complete`` ↔ a succeeded terminal (``output``
equal to the streamed text decodes to an unset ``text``); ``error`` ↔ an error terminal whose
failure has the message and code; ``awaiting`` ↔ a succeeded terminal with ``extra["awaiting"]``
(the ``PendingAsk`` as received); ``artifact`` ↔ an artifact presented, its frame kept as
received (``verbatim``); any other name ↔ a data part kept whole. There is no run start:
the decoder invents one. Everything else travels in ``streambridge.carrier`` frames.

The package: ``wire`` (the frame shapes and how a frame is read, for both directions),
``decoder``, ``encoder``, ``sniff`` and ``rules``; the HTTP surface is ``agentfootprint.http``'s.
"""

from __future__ import annotations

from ...codec import Codec
from ..http import SURFACE
from .decoder import HostDecoder
from .encoder import HostEncoder
from .rules import HostRules
from .sniff import sniff
from .wire import NAME

__all__ = ["CODEC", "HostDecoder", "HostEncoder"]

CODEC = Codec(
    NAME,
    "footprintjs/agentfootprint hosting SSE dialect (POST /invoke)",
    HostDecoder,
    HostEncoder,
    "sse",
    frozenset({"text", "terminal"}),
    SURFACE,
    sniff=sniff,
    rules=HostRules,
)
