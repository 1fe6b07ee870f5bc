"""``agentfootprint``: the ``toSSE`` envelope stream of footprintjs/agentfootprint (9.62.0).

One SSE frame per bus event: ``event: <type>`` and ``data: {type, payload, meta}``, every type
prefixed ``agentfootprint.``; the stream ends after ``agentfootprint.agent.turn_end`` or
``agentfootprint.error.fatal``; ``: ping`` comments are heartbeats. Turn start and end, LLM call
start and end, tokens, thinking deltas, tool start, progress and end, budget exhaustion, pause
requests, artifacts presented and refused, and fatal errors are mapped; the other bus types are
data parts kept byte for byte (docs/mapping.md). The hosting dialect is its own codec,
``agentfootprint:host`` (:mod:`.host`).

The package: ``wire`` (envelope, meta and payload Structs), ``mapping`` (event ↔ payload, both
directions, and the tally of the stream that payloads are numbered and summed by), ``decoder``,
``encoder``, ``http``, ``sniff``, ``rules``.
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
