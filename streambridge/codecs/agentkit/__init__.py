"""``agentkit``: @dataverse-kit/agent-kit's ``AgentEvent`` stream.

One JSON ``AgentEvent`` per SSE ``data:`` frame (or NDJSON line), no event names, no
``[DONE]``; every event carries ``messageId``; exactly one ``turn_end`` ends the turn with one
of six statuses. Upstream defines no wire: this framing is streambridge's (agentkit.md §2).

Canonical forms (so a cross trip comes back exact): the turn's own ``messageId`` decodes to
``UNSET``; a tool call's ``status`` that follows from ``requiresApproval`` (``proposed`` when
it needs approval, else ``running``) decodes to ``UNSET``; a failure equal to the default one
for its status decodes to ``UNSET``; ``result.provider`` / ``result.model`` equal to the
turn's decode to ``UNSET``.

The package: ``wire`` (the wire shapes, msgspec Structs, and what both directions share),
``decoder``, ``encoder``, ``http`` (requests, routes and upstream URL rules), ``sniff`` (how a
frame shows agentkit) and ``rules`` (its own rules for ``streambridge validate``).
"""

from __future__ import annotations

from ..codec import ARTIFACTS, COMMON_NATIVE, Codec
from .decoder import AgentkitDecoder
from .encoder import AgentkitEncoder
from .http import SURFACE
from .rules import AgentkitRules
from .sniff import sniff
from .wire import DEFAULT_PROVIDER, AgentFrame

__all__ = ["CODEC", "DEFAULT_PROVIDER", "SURFACE", "AgentFrame", "AgentkitDecoder", "AgentkitEncoder"]

CODEC = Codec(
    "agentkit",
    "@dataverse-kit/agent-kit AgentEvent",
    AgentkitDecoder,
    AgentkitEncoder,
    "sse",
    COMMON_NATIVE | ARTIFACTS | {"run-start", "tool-denied", "sources", "citation", "suggestions", "status"},
    SURFACE,
    sniff=sniff,
    rules=AgentkitRules,
)
