"""agentfootprint's own part of ``streambridge validate``: its SSE event names.

The validator checks names against a closed list (:attr:`Rules.event_names`), while the bus has
about 60 types (doc §4): the list below is the mapped types and the carrier, so a stream with
other bus types gets SB005 warnings for them. An open, prefix-based check would need the shared
validator to change (noted for review)."""

from __future__ import annotations

from ..codec import Rules
from .mapping import PAYLOADS
from .wire import CARRIER_TYPE, PREFIX

__all__ = ["AgentFootprintRules"]


class AgentFootprintRules(Rules):
    event_names = (*(PREFIX + name for name in PAYLOADS), CARRIER_TYPE)
