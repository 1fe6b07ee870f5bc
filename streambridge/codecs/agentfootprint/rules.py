"""agentfootprint's own part of ``streambridge validate``.

The SSE event name of every frame is its envelope type, and the bus has about 60 types in some
two dozen domains (doc §4): a name is the protocol's when it has the ``agentfootprint.`` prefix
(or is streambridge's carrier), and an unmapped type is one the protocol defines when its
domain is one of the bus's. A type of an unknown domain is reported as an unknown kind."""

from __future__ import annotations

from ..codec import Rules
from .mapping import PAYLOADS
from .wire import CARRIER_TYPE, PREFIX

__all__ = ["AgentFootprintRules"]

#: the bus's event domains (``agentfootprint.<domain>.<event>``)
DOMAINS = frozenset(
    [
        "composition",
        "agent",
        "stream",
        "context",
        "memory",
        "tools",
        "skill",
        "map",
        "integrity",
        "validation",
        "permission",
        "credential",
        "risk",
        "fallback",
        "cost",
        "eval",
        "error",
        "reliability",
        "resilience",
        "pause",
        "checkin",
        "middleware",
        "embedding",
        "artifacts",
    ]
)


class AgentFootprintRules(Rules):
    event_names = (*(PREFIX + name for name in PAYLOADS), CARRIER_TYPE)

    def known_name(self, name: str) -> bool:
        return name.startswith(PREFIX) or name == CARRIER_TYPE

    def known_kind(self, kind: str) -> bool:
        return kind.startswith(PREFIX) and kind[len(PREFIX) :].split(".", 1)[0] in DOMAINS
