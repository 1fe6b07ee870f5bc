"""``agentfootprint``: the ``toSSE`` envelope stream of footprintjs/agentfootprint (9.62.0).

One SSE frame per bus event: ``event: <type>`` and ``data: {type, payload, meta}``, every type
prefixed ``agentfootprint.``; the stream ends after ``agentfootprint.agent.turn_end`` or
``agentfootprint.error.fatal``; ``: ping`` comments are heartbeats. Turn start and end, LLM call
start and end, tokens, thinking deltas, tool start and end and fatal errors are mapped; the other
~50 bus types are data parts kept byte for byte. Wire facts: /work/shared/protocols/agentfootprint.md
(§2, §4). The hosting dialect (§5: ``chunk``, ``complete``, ``error``, ``awaiting``, ``artifact``)
is not read or written yet.

The package: ``wire`` (envelope, meta and payload Structs), ``mapping`` (event ↔ payload, both
directions, and the stream state payloads are numbered by), ``decoder``, ``encoder``, ``http``,
``sniff``.
"""

from __future__ import annotations

from ..codec import ARTIFACTS, COMMON_NATIVE, Codec
from .decoder import AgentFootprintDecoder
from .encoder import AgentFootprintEncoder
from .http import SURFACE
from .rules import AgentFootprintRules
from .sniff import sniff

__all__ = ["CODEC", "AgentFootprintDecoder", "AgentFootprintEncoder"]

CODEC = Codec(
    "agentfootprint",
    "footprintjs/agentfootprint toSSE envelope stream",
    AgentFootprintDecoder,
    AgentFootprintEncoder,
    "sse",
    COMMON_NATIVE
    | ARTIFACTS
    | {"run-start", "step-start", "step-finish", "elicitation"}
    | {"tool-progress", "budget-exhausted"},
    SURFACE,
    sniff=sniff,
    rules=AgentFootprintRules,
)
